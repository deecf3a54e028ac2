import Foundation
import StampedeEngine
import StampedeScenario
import Testing
#if canImport(Glibc)
import Glibc
#endif

// `stampede serve --processes N` (ServeProcesses.swift, ServerGroup, ServerProcessLink): server
// processes sharing one port, chat broadcasts crossing between them, faults reaching all, no
// process left behind; and the embedded target taking several when descriptors run short.

@Suite struct ServeProcessesTests {
    /// A `stampede serve --processes` supervisor, its port, admin port and server pids.
    struct Group {
        let process: BackgroundProcess
        let port: Int
        let adminPort: Int
        let pids: [Int32]

        init(_ extra: [String] = [], processes: Int = 2) throws {
            process = try BackgroundProcess(stampedeBinary.path, ["serve", "--processes", String(processes), "--port", "0", "--admin-port", "0", "--max-seconds", "120"] + extra)
            let listening = try process.waitForLine(prefix: "listening on ", timeout: 30)
            port = Int(listening.split(separator: ":").last?.split(separator: "/").first ?? "") ?? 0
            let line = try process.waitForLine(prefix: "processes: ", timeout: 5)
            let inside = line.split(separator: "(")[1].split(separator: ")")[0].dropFirst("pids ".count)
            pids = inside.split(separator: ",").compactMap { Int32($0.trimmingCharacters(in: .whitespaces)) }
            let admin = try process.waitForLine(prefix: "admin on ", timeout: 5)
            adminPort = Int(admin.split(separator: ":").last ?? "") ?? 0
        }

        func status() throws -> [String: Any] { try RefHubHTTP.request(UInt16(adminPort), "GET", "/status").jsonObject() }
    }

    /// Whether `pid` is gone (or a zombie no one has reaped yet).
    static func isGone(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
    }

    static func waitUntilGone(_ pids: [Int32], seconds: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if pids.allSatisfy(isGone) { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    static func summary(_ folder: URL) throws -> [String: Any] {
        let run = try #require(try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil).first)
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: run.appendingPathComponent("summary.json"))) as? [String: Any])
    }

    @Test func twoServerProcessesOnOnePortGiveEveryClientEveryBroadcastAndTakeEveryFault() throws {
        let group = try Group()
        defer { group.process.stop() }
        #expect(group.pids.count == 2)
        // A fault through the supervisor's admin reaches both processes before the run.
        #expect(try RefHubHTTP.request(UInt16(group.adminPort), "POST", "/fault/delay?ms=2").status == 200)
        let folder = temporaryFolder("serve-processes")
        let scenario = folder.appendingPathComponent("two.yaml")
        try """
            name: two-processes
            target: ws://127.0.0.1:\(group.port)/chat
            workload: chat
            clients: 120
            connect_rate: 1000
            duration: 2s
            message:
              rate: 30
              size: 64
            """.write(to: scenario, atomically: true, encoding: .utf8)
        let results = folder.appendingPathComponent("results")
        let run = try runProcess(stampedeBinary.path, ["run", scenario.path, "--results", results.path, "--quiet"], timeout: 120)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        let messages = try #require(try Self.summary(results)["messages"] as? [String: Any])
        #expect(messages["accounting_closed"] as? Bool == true)
        #expect(messages["fanout_missing"] as? Int == 0)
        #expect((messages["fanout_expected"] as? Int ?? 0) > 0)

        let status = try group.status()
        #expect(status["processes"] as? Int == 2)
        #expect(status["upgraded"] as? Int == 120)
        let each = try #require(status["perProcess"] as? [[String: Any]])
        #expect(each.count == 2)
        for p in each {
            // The kernel spread the clients over both, and each sent the other's broadcasts.
            #expect((p["upgraded"] as? Int ?? 0) > 0)
            #expect((p["remoteBroadcasts"] as? Int ?? 0) > 0)
            #expect(p["delayMs"] as? Int == 2)
            #expect(p["delayUs"] as? Int == 2000)
            #expect(p["faultsApplied"] as? Int == 1)
        }
        #expect(try RefHubHTTP.request(UInt16(group.adminPort), "POST", "/fault/reject?seconds=30").status == 200)
        for p in try #require(try group.status()["perProcess"] as? [[String: Any]]) {
            #expect((p["rejectingSeconds"] as? Int ?? 0) > 0)
        }
    }

    @Test func aKilledSupervisorLeavesNoServerProcessBehind() throws {
        let group = try Group()
        defer { group.process.stop() }
        #expect(group.pids.count == 2 && !group.pids.contains(where: Self.isGone))
        kill(group.process.process.processIdentifier, SIGKILL)
        #expect(Self.waitUntilGone(group.pids))

        // SIGTERM (or Ctrl-C): the supervisor ends its processes and exits 0 after them.
        let other = try Group()
        defer { other.process.stop() }
        kill(other.process.process.processIdentifier, SIGTERM)
        #expect(other.process.wait(timeout: 15) == 0)
        #expect(Self.waitUntilGone(other.pids))
    }

    @Test func aServerProcessThatDiesIsReportedAndTheOthersEnd() throws {
        let group = try Group()
        defer { group.process.stop() }
        kill(group.pids[1], SIGKILL)
        #expect(group.process.wait(timeout: 15) == 1)
        #expect(Self.waitUntilGone(group.pids))
        #expect(group.process.errors.withLock { $0 }.contains("server process 1 (pid \(group.pids[1])) was killed by signal 9"))
    }

    @Test func theEmbeddedTargetTakesSeveralServerProcessesWhenDescriptorsRunShort() throws {
        // 100,000 chat clients on this machine's 20,000 files per process: six server processes.
        #expect(RunPlan(scenario: chatScenario(name: "plan", clients: 100_000), loops: 2, openFilesLimit: 20_000, canSpawnTarget: true).targetProcesses == 6)
        #expect(RunPlan(scenario: chatScenario(name: "plan", clients: 1_000), loops: 2, openFilesLimit: 20_000, canSpawnTarget: true).targetProcesses == 1)

        // End to end, under a 1,000-file limit: 800 clients and both ends take two server processes.
        let folder = temporaryFolder("embedded-processes")
        let scenario = folder.appendingPathComponent("embedded.yaml")
        try """
            name: embedded-two
            target: embedded
            workload: chat
            clients: 800
            connect_rate: 2000
            duration: 2s
            message:
              rate: 10
              size: 64
            """.write(to: scenario, atomically: true, encoding: .utf8)
        let results = folder.appendingPathComponent("results")
        let run = try runProcess("/bin/sh", ["-c", "ulimit -n 1000 && exec \"$0\" run \"$1\" --results \"$2\" --plain", stampedeBinary.path, scenario.path, results.path], timeout: 120)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect((run.stdout + run.stderr).contains("2 server processes"), "\(run.stderr)")
        let messages = try #require(try Self.summary(results)["messages"] as? [String: Any])
        #expect(messages["accounting_closed"] as? Bool == true)
        #expect(messages["fanout_missing"] as? Int == 0)
    }

    @Test func processCountsOutOfRangeAreBadInputNamingTheFlag() throws {
        for n in ["0", "65"] {
            let r = try runProcess(stampedeBinary.path, ["serve", "--processes", n, "--port", "0"], timeout: 30)
            #expect(r.status == 2)
            #expect(r.stderr.contains("--processes must be from 1 to 64"), "\(r.stderr)")
        }
    }

    @Test func hubBroadcastsCrossServerProcessesForClientsThatSkipNegotiation() throws {
        let group = try Group(["--hub"])
        defer { group.process.stop() }
        let folder = temporaryFolder("hub-processes")
        let scenario = folder.appendingPathComponent("hub.yaml")
        try """
            name: hub-two-processes
            target: http://127.0.0.1:\(group.port)/hub
            workload: hub
            clients: 60
            connect_rate: 1000
            duration: 2s
            message:
              rate: 20
              size: 64
            hub:
              transports: [websockets]
              skip_negotiation: true
              protocol: messagepack
              operation: send
              method: SendMessage
              arguments: ["{user}", "{stamp}"]
              receive: ReceiveMessage
            """.write(to: scenario, atomically: true, encoding: .utf8)
        let results = folder.appendingPathComponent("results")
        let run = try runProcess(stampedeBinary.path, ["run", scenario.path, "--results", results.path, "--quiet"], timeout: 120)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        let messages = try #require(try Self.summary(results)["messages"] as? [String: Any])
        #expect(messages["accounting_closed"] as? Bool == true)
        #expect(messages["fanout_missing"] as? Int == 0)
        #expect((messages["fanout_expected"] as? Int ?? 0) > 0)
        for p in try #require(try group.status()["perProcess"] as? [[String: Any]]) {
            #expect((p["remoteBroadcasts"] as? Int ?? 0) > 0)
        }

        // The embedded target takes several processes only for hub clients that can use them.
        var s = chatScenario(name: "hub-plan", clients: 19_000)
        s.workload = .hub
        s.hub = HubSpec(transports: [.webSockets], receiveMethod: "ReceiveMessage")
        let negotiating = RunPlan(scenario: s, loops: 2, openFilesLimit: 20_000, canSpawnTarget: true)
        #expect(negotiating.targetProcesses == 2)
        #expect(negotiating.problem?.contains("skip_negotiation: true") == true)
        s.hub?.skipNegotiation = true
        #expect(RunPlan(scenario: s, loops: 2, openFilesLimit: 20_000, canSpawnTarget: true).problem == nil)
    }
}
