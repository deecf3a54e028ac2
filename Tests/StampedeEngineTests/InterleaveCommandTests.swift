import Foundation
import StampedeEngine
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `stampede interleave` end to end, against `stampede serve`s it starts and stops itself.
@Suite(.serialized) struct InterleaveCommandTests {
    /// A chat scenario small enough for a two-second run.
    static func scenario(in folder: URL, port: Int) throws -> URL {
        let file = folder.appendingPathComponent("tiny.yaml")
        try """
            name: interleave-tiny
            target: ws://127.0.0.1:\(port)/chat
            workload: chat
            clients: 5
            duration: 2s
            message:
              rate: 20
              size: 64
            drain: 1s
            """.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    /// Two distinct free loopback ports.
    static func twoPorts() -> (Int, Int) {
        let a = unusedPort()
        var b = unusedPort()
        while b == a { b = unusedPort() }
        return (a, b)
    }

    static func serve(_ port: Int) -> String { "exec '\(stampedeBinary.path)' serve --port \(port) --max-seconds 60" }

    @Test func twoPairsAlternateBetweenServersItStartsAndStops() throws {
        let folder = temporaryFolder("interleave")
        let (pb, pc) = Self.twoPorts()
        let scenario = try Self.scenario(in: folder, port: pb)
        let dir = folder.appendingPathComponent("ab").path
        let r = try runProcess(stampedeBinary.path, [
            "interleave", scenario.path, "--runs", "2", "--results", dir,
            "--baseline-target", "ws://127.0.0.1:\(pb)/chat", "--current-target", "ws://127.0.0.1:\(pc)/chat",
            "--baseline-command", Self.serve(pb), "--current-command", Self.serve(pc), "--", "--duration", "2s",
        ], timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.split(separator: "\n").last.map(String.init) == "stampede compare --baseline \(dir)/baseline --current \(dir)/current")
        for side in ["baseline", "current"] {
            let runs = try FileManager.default.contentsOfDirectory(atPath: "\(dir)/\(side)").sorted()
            #expect(runs.count == 2, "\(side): \(runs)")
            for run in runs { #expect(FileManager.default.fileExists(atPath: "\(dir)/\(side)/\(run)/summary.json")) }
            #expect(FileManager.default.fileExists(atPath: "\(dir)/\(side)-server-2.log"))
            let runLog = (try? String(contentsOfFile: "\(dir)/\(side)-run-1.log", encoding: .utf8)) ?? ""
            #expect(runLog.contains("results: "), "\(side)-run-1.log: \(runLog)")
        }
        let record = try JSONDecoder().decode(InterleaveRecord.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/runs.json")))
        #expect(record.schema == "stampede.interleave/1" && !record.partial)
        #expect(record.pairs.map(\.order) == [.baselineFirst, .currentFirst])
        #expect(record.pairs.allSatisfy { $0.baseline?.exit == 0 && $0.current?.exit == 0 }, "\(record)")
        #expect(record.pairs.first?.current?.target == "ws://127.0.0.1:\(pc)/chat")
        #expect(record.pairs.allSatisfy { $0.baseline?.folder.hasPrefix("baseline/") == true }, "\(record)")
        #expect(r.stderr.contains("pair 2/2 baseline: "), "\(r.stderr)")
        // Both servers were stopped.
        for port in [pb, pc] {
            let fd = connectLoopback(port: UInt16(port))
            if let fd { close(fd) }
            #expect(fd == nil, "port \(port) still accepts connections")
        }
    }

    /// The arguments for a set of `pairs` against two `stampede serve`s on `pb` and `pc`.
    static func servedSet(_ scenario: URL, dir: String, pairs: Int, _ pb: Int, _ pc: Int) -> [String] {
        ["interleave", scenario.path, "--runs", String(pairs), "--results", dir,
         "--baseline-target", "ws://127.0.0.1:\(pb)/chat", "--current-target", "ws://127.0.0.1:\(pc)/chat",
         "--baseline-command", serve(pb), "--current-command", serve(pc)]
    }

    static func portsAreFree(_ ports: [Int]) -> Bool {
        ports.allSatisfy { port in
            guard let fd = connectLoopback(port: UInt16(port)) else { return true }
            close(fd)
            return false
        }
    }

    @Test func aRunWhoseThresholdFailsIsRecordedAndTheSetGoesOn() throws {
        let folder = temporaryFolder("interleave-99")
        let (pb, pc) = Self.twoPorts()
        let scenario = folder.appendingPathComponent("strict.yaml")
        try """
            name: interleave-strict
            target: ws://127.0.0.1:\(pb)/chat
            workload: chat
            clients: 2
            duration: 1s
            message:
              rate: 10
              size: 64
            drain: 1s
            thresholds:
              messages.delivered: ["count < 1"]
            """.write(to: scenario, atomically: true, encoding: .utf8)
        let dir = folder.appendingPathComponent("ab").path
        let r = try runProcess(stampedeBinary.path, Self.servedSet(scenario, dir: dir, pairs: 1, pb, pc), timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        let record = try JSONDecoder().decode(InterleaveRecord.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/runs.json")))
        #expect(record.pairs.count == 1 && record.pairs[0].baseline?.exit == 99 && record.pairs[0].current?.exit == 99, "\(record)")
        #expect(r.stderr.contains("(exit 99)"), "\(r.stderr)")
    }

    @Test func anInterruptedSetStopsItsServerAndMarksRunsJsonPartial() throws {
        let folder = temporaryFolder("interleave-int")
        let (pb, pc) = Self.twoPorts()
        let scenario = try Self.scenario(in: folder, port: pb)
        let dir = folder.appendingPathComponent("ab").path
        let set = try BackgroundProcess(stampedeBinary.path, Self.servedSet(scenario, dir: dir, pairs: 2, pb, pc) + ["--", "--duration", "5s"])
        defer { set.stop() }
        // Interrupted during pair 1's current run, while the current server is up.
        let deadline = Date().addingTimeInterval(30)
        while !set.errors.withLock({ $0.contains("pair 1/2 baseline") }) && set.process.isRunning && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        Thread.sleep(forTimeInterval: 1)
        set.process.interrupt()
        let status = set.wait(timeout: 30)
        #expect(status == 130, "\(set.errors.withLock { $0 })")
        let record = try JSONDecoder().decode(InterleaveRecord.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/runs.json")))
        #expect(record.partial && record.pairs.count == 1 && record.pairs[0].baseline?.exit == 0, "\(record)")
        #expect(Self.portsAreFree([pb, pc]))
    }

    @Test func aServerThatNeverListensFailsNamingItsSideAndIsStopped() throws {
        let folder = temporaryFolder("interleave-ready")
        let (pb, pc) = Self.twoPorts()
        let scenario = try Self.scenario(in: folder, port: pc)
        let dir = folder.appendingPathComponent("ab").path
        let pidFile = folder.appendingPathComponent("sleep.pid").path
        let r = try runProcess(stampedeBinary.path, [
            "interleave", scenario.path, "--runs", "1", "--results", dir, "--ready-timeout", "1s",
            "--baseline-target", "ws://127.0.0.1:\(pb)/chat", "--baseline-command", "echo $$ > '\(pidFile)'; exec sleep 30",
        ], timeout: 30)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("baseline server command") && r.stderr.contains("baseline-server-1.log"), "\(r.stderr)")
        let pid = try #require(Int32(String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(kill(pid, 0) != 0 && errno == ESRCH, "the sleep (pid \(pid)) is still there")
        let record = try JSONDecoder().decode(InterleaveRecord.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/runs.json")))
        #expect(record.partial && record.pairs.isEmpty)
    }

    @Test(arguments: [
        (["--runs", "0"], "--runs"),
        (["--runs", "101"], "--runs"),
        (["--runs", "1", "--ready-timeout", "soon"], "--ready-timeout"),
        (["--runs", "1", "--", "--target", "ws://127.0.0.1:1/chat"], "--target"),
        (["--runs", "1"], "both sides"),
    ])
    func badFlagsExitTwoNamingTheFlag(flags: [String], named: String) throws {
        let folder = temporaryFolder("interleave-flags")
        let scenario = try Self.scenario(in: folder, port: unusedPort())
        let r = try runProcess(stampedeBinary.path, ["interleave", scenario.path, "--results", folder.appendingPathComponent("ab").path] + flags, timeout: 30)
        #expect(r.status == 2, "\(r.stderr)")
        #expect(r.stderr.contains(named), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("ab").path))
    }

    @Test func aMissingScenarioFileExitsTwo() throws {
        let r = try runProcess(stampedeBinary.path, ["interleave", "/nonexistent/x.yaml", "--runs", "1", "--results", "/tmp/never",
                                                     "--current-target", "ws://127.0.0.1:1/chat"], timeout: 30)
        #expect(r.status == 2 && r.stderr.contains("/nonexistent/x.yaml"), "\(r.stderr)")
    }
}
