import Foundation
import StampedeLoop
import StampedeServers
import Testing

/// `stampede serve --max-connections` (a known connection capacity: 503 past the limit, exact
/// across `--processes`) and `--connection-cost` (CPU per open connection). Only outcomes are
/// asserted, never how long anything took.
@Suite(.serialized)
struct ServeConnectionLimitTests {
    /// `stampede serve` with an admin endpoint: the process, its port and the admin's.
    static func serve(_ extra: [String]) throws -> (process: BackgroundProcess, port: UInt16, admin: UInt16) {
        let p = try BackgroundProcess(stampedeBinary.path, ["serve", "--port", "0", "--admin-port", "0", "--max-seconds", "60"] + extra)
        let listening = try p.waitForLine(prefix: "listening on ", timeout: 30)
        let port = UInt16(listening.split(separator: ":").last?.split(separator: "/").first ?? "") ?? 0
        let admin = try p.waitForLine(prefix: "admin on ", timeout: 5)
        return (p, port, UInt16(admin.split(separator: ":").last ?? "") ?? 0)
    }

    static func status(_ admin: UInt16) throws -> [String: Any] { try RefHubHTTP.request(admin, "GET", "/status").jsonObject() }

    /// Waits (at most 10 s) until the admin's status satisfies `condition`.
    static func waitForStatus(_ admin: UInt16, _ condition: ([String: Any]) -> Bool) throws {
        let deadline = Date().addingTimeInterval(10)
        while true {
            let s = try status(admin)
            if condition(s) { return }
            guard Date() < deadline else { throw RefHubError("status never got there: \(s)") }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// The WebSocket upgrade request of each server: chat, hub without negotiate, Socket.IO.
    static let upgradeTargets: [String: String] = ["chat": "/chat", "hub": "/hub", "socketio": "/socket.io/?EIO=4&transport=websocket"]

    @Test(arguments: [("chat", 1, 3), ("chat", 2, 4), ("hub", 1, 2), ("socketio", 1, 2)])
    func anUpgradePastMaxConnectionsGets503UntilOneCloses(server: String, processes: Int, limit: Int) throws {
        let flags = server == "chat" ? [] : ["--\(server)"]
        let target = try #require(Self.upgradeTargets[server])
        let (serve, port, admin) = try Self.serve(flags + ["--max-connections", String(limit), "--processes", String(processes)])
        defer { serve.stop() }
        var open: [RefHubSocket] = []
        defer { open.forEach { $0.close() } }
        for i in 0..<limit {
            let (s, r) = try RefHubSocket.openWebSocket(port, target)
            #expect(r.status == 101, "connection \(i + 1) of \(limit)")
            open.append(s)
        }
        // However the kernel spread them over the processes, one more is past the limit.
        let (refused, answer) = try RefHubSocket.openWebSocket(port, target)
        #expect(answer.status == 503)
        #expect(answer.headers["connection"] == "close")
        #expect(String(decoding: answer.body, as: UTF8.self).contains("connection limit"), "\(String(decoding: answer.body, as: UTF8.self))")
        #expect(refused.waitForEOF())
        if server == "hub" {
            #expect(try RefHubHTTP.request(port, "POST", "/hub/negotiate?negotiateVersion=1").status == 503, "a negotiate past the limit is refused too")
        }
        // Closing one gives its slot back at once.
        open.removeFirst().close()
        try Self.waitForStatus(admin) { $0["open"] as? Int == limit - 1 }
        let (again, reply) = try RefHubSocket.openWebSocket(port, target)
        #expect(reply.status == 101, "the freed slot is taken")
        open.append(again)
        let status = try Self.status(admin)
        #expect(status["connectionsRefused"] as? Int == (server == "hub" ? 2 : 1), "\(status)")
        serve.stop()
        if server == "chat" {
            #expect(serve.lines.withLock { $0.contains { $0.contains(" 1 refused by --max-connections") } }, "\(serve.lines.withLock { $0 })")
            if processes == 1 { #expect(status["maxConnections"] as? Int == limit) }
        }
    }

    @Test func twoMappingsOfTheCountFileShareOneExactCount() throws {
        let file = temporaryFolder("quota").appendingPathComponent("connections").path
        let supervisor = try ConnectionQuota(limit: 3, sharedFile: file, create: true)
        let process = try ConnectionQuota(limit: 3, sharedFile: file, create: false)
        #expect(throws: LoopError.self, "the supervisor's file is made once") { try ConnectionQuota(limit: 3, sharedFile: file, create: true) }
        #expect(supervisor.acquire() && process.acquire() && process.acquire())
        #expect(!supervisor.acquire() && !process.acquire(), "three taken, by whichever mapping")
        supervisor.release()
        #expect(process.current == 2 && process.acquire())
    }

    @Test func aDropGivesEverySlotBack() throws {
        let chat = try RefChatServer()
        defer { chat.stop() }
        let quota = ConnectionQuota(limit: 2)
        chat.loop.submitAndWait { [server = chat.server] _ in server.connectionQuota = quota }
        var held = try (0..<2).map { _ in try RefChatServer.connect(chat.port) }
        #expect(try RefHubSocket.openWebSocket(chat.port, "/chat").response.status == 503)
        chat.loop.execute { [server = chat.server] _ in server.apply(.drop(reset: true)) }
        try chat.waitUntilOpen(0)
        #expect(quota.current == 0)
        held = try (0..<2).map { _ in try RefChatServer.connect(chat.port) }
        #expect(quota.current == 2 && chat.server.statisticsSnapshot().connectionsRefused == 1)
        held.forEach { $0.close() }
    }

    @Test func ourClientCountsAnUpgradePastTheLimitAsRejectedWith503() throws {
        let (serve, port, _) = try Self.serve(["--max-connections", "2"])
        defer { serve.stop() }
        let folder = temporaryFolder("max-connections")
        let scenario = folder.appendingPathComponent("four.yaml")
        try """
            name: four-clients-two-slots
            target: ws://127.0.0.1:\(port)/chat
            workload: chat
            clients: 4
            duration: 1s
            message:
              rate: 5
              size: 64
            drain: 1s
            """.write(to: scenario, atomically: true, encoding: .utf8)
        let results = folder.appendingPathComponent("results")
        let run = try runProcess(stampedeBinary.path, ["run", scenario.path, "--results", results.path, "--quiet"], timeout: 60)
        let runFolder = try #require(try FileManager.default.contentsOfDirectory(at: results, includingPropertiesForKeys: nil).first, "\(run.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: runFolder.appendingPathComponent("summary.json"))) as? [String: Any])
        // Two of the four get a slot; the others' upgrades are refused, each counted as
        // upgrade_rejected with its status (they may retry by the reconnect policy: at least two).
        let errors = try #require(summary["errors"] as? [String: Any], "\(summary.keys.sorted())")
        #expect((errors["upgrade_rejected"] as? Int ?? 0) >= 2, "\(errors)")
        let statuses = try #require(summary["upgrade_statuses"] as? [String: Any], "\(summary)")
        #expect((statuses["503"] as? Int ?? 0) >= 2, "\(statuses)")
        #expect(statuses.keys.sorted() == ["503"], "\(statuses)")
    }

    @Test func connectionCostSpinsForOpenConnectionsOnly() throws {
        let loop = try EventLoop(index: 0)
        let server = try ChatServer(loop: loop, address: .ipv4(0x7F00_0001, port: 0))
        server.setConnectionCost(microseconds: 2000)
        loop.start(name: "cost-test")
        defer { loop.stop(); loop.join() }
        Thread.sleep(forTimeInterval: 0.1)
        #expect(server.statisticsSnapshot().connectionCostSpunMicroseconds == 0, "no connections, no spin")
        var clients = try (0..<4).map { _ in try RefChatServer.connect(server.port) }
        // 4 connections × 2 ms per second: 8 ms of spin a second, however the ticks fall.
        let deadline = Date().addingTimeInterval(10)
        while server.statisticsSnapshot().connectionCostSpunMicroseconds < 2000 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        #expect(server.statisticsSnapshot().connectionCostSpunMicroseconds >= 2000)
        clients.forEach { $0.close() }
        clients.removeAll()
        while server.statisticsSnapshot().open > 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        let spent = server.statisticsSnapshot().connectionCostSpunMicroseconds
        Thread.sleep(forTimeInterval: 0.1)
        #expect(server.statisticsSnapshot().connectionCostSpunMicroseconds == spent, "with every connection closed the spin stops")
    }

    @Test func serveReportsTheConnectionCostItSpent() throws {
        let r = try runProcess(stampedeBinary.path, ["serve", "--port", "0", "--max-seconds", "0.5", "--connection-cost", "100"], timeout: 30)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("0 ms spent by --connection-cost"), "\(r.stdout)")
    }

    @Test func badConnectionFlagsExitTwoNamingTheFlag() throws {
        for (args, flag) in [(["--max-connections", "0"], "--max-connections"), (["--max-connections", "10000001"], "--max-connections"),
                             (["--max-connections", "many"], "--max-connections"), (["--rest", "--max-connections", "5"], "--max-connections"),
                             (["--connection-cost", "-1"], "--connection-cost"), (["--connection-cost", "10001"], "--connection-cost"),
                             (["--connection-cost", "nan"], "--connection-cost"), (["--hub", "--connection-cost", "5"], "--connection-cost"),
                             (["--socketio", "--connection-cost", "5"], "--connection-cost")] {
            let r = try runProcess(stampedeBinary.path, ["serve", "--port", "0", "--max-seconds", "1"] + args, timeout: 20)
            #expect(r.status == 2, "\(args): \(r.stderr)")
            #expect(r.stderr.contains(flag), "\(args): \(r.stderr)")
        }
    }
}
