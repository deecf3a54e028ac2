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
