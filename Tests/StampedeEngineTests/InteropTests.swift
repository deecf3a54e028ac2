import Foundation
import StampedeEngine
import StampedeLoop
import StampedeReport
import StampedeScenario
import StampedeServers
import Testing

/// Stampede against third-party WebSocket code, both ways, on 127.0.0.1. The peers install
/// themselves into git-ignored venvs under .peers/ (Tests/peers/ensure-venv.sh).
@Suite(.serialized)
struct InteropTests {
    @Test func chatClientsAgainstPythonWebsocketsServerAccountForEveryMessage() throws {
        let python = try peerPython("websockets")
        let server = try BackgroundProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/chat_server.py").path,
                                                    "--port", "0", "--max-seconds", "120"])
        defer { server.stop() }
        let line = try server.waitForLine(prefix: "LISTENING ", timeout: 30)
        let port = try #require(Int(line.dropFirst("LISTENING ".count)))
        let s = chatScenario(name: "python-websockets-server",
                             target: .webSocket(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/chat")),
                             clients: 30, duration: 2, rate: 30)
        let o = try run(s)
        #expect(o.exitCode == 0)
        expectExactAccounting(o, clients: 30)
        // The Python server adds its own date and id; our parser must still find every stamp.
        #expect(o.summary.messages.unparsed == 0)
    }

    @Test func pythonWebsocketsClientsAgainstReferenceServerReceiveEveryBroadcast() throws {
        let python = try peerPython("websockets")
        let loop = try EventLoop(index: 0)
        let server = try ChatServer(loop: loop, address: .ipv4(0x7F00_0001, port: 0))
        loop.start()
        defer { loop.stop(); loop.join() }
        let result = try runProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/chat_clients.py").path,
                                             "--url", "ws://127.0.0.1:\(server.port)/chat", "--clients", "25", "--messages", "8",
                                             "--size", "64", "--timeout", "60"], timeout: 90)
        #expect(result.status == 0, "chat_clients.py: \(result.stdout) \(result.stderr.suffix(2000))")
        let json = try #require(result.stdout.split(separator: "\n").last)
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(fields["ok"] as? Bool == true)
        #expect(fields["missing"] as? Int == 0)
        #expect(fields["duplicates"] as? Int == 0)
        #expect(fields["received_total"] as? Int == 25 * 25 * 8)
        let stats = server.statisticsSnapshot()
        #expect(stats.messagesReceived == 25 * 8)
        #expect(stats.invalidMessages == 0)
    }

    @Test func referenceServerDropsInvalidJsonAndKeepsServing() throws {
        let python = try peerPython("websockets")
        let loop = try EventLoop(index: 0)
        let server = try ChatServer(loop: loop, address: .ipv4(0x7F00_0001, port: 0))
        loop.start()
        defer { loop.stop(); loop.join() }
        let script = """
            import asyncio, json, sys
            from websockets.asyncio.client import connect
            async def main():
                async with connect(sys.argv[1]) as ws:
                    await ws.send("not json")
                    await ws.send('{"message": "hi", "user": "u"}')
                    await ws.send(json.dumps({"message": "ok", "user": "u", "userID": "00000000-0000-4000-8000-000000000000"}))
                    reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
                    assert reply["message"] == "ok" and "date" in reply and "id" in reply, reply
                    print("OK")
            asyncio.run(main())
            """
        let result = try runProcess(python, ["-c", script, "ws://127.0.0.1:\(server.port)/chat"], timeout: 60)
        #expect(result.stdout.contains("OK"), "\(result.stderr.suffix(2000))")
        let stats = server.statisticsSnapshot()
        #expect(stats.invalidMessages == 2)
        #expect(stats.messagesReceived == 3)
    }

    /// Autobahn client conformance, every case group but compression (12 and 13: Stampede does
    /// not offer permessage-deflate): 1–7, 9 (limits: messages up to 16 MiB) and 10. kosoku
    /// from PyPI serves the cases; the report's summary is kept in results/autobahn-<time>/.
    @Test func autobahnEveryCaseGroupButCompressionIsOkNonStrictOrInformational() throws {
        let python = try peerPython("kosoku")
        let kosoku = URL(fileURLWithPath: python).deletingLastPathComponent().appendingPathComponent("kosoku").path
        let reports = temporaryFolder("autobahn")
        let port = unusedPort()
        var args = ["-m", "fuzzingserver"]
        for group in ["1", "2", "3", "4", "5", "6", "7", "9", "10"] { args += ["-i", "\(group).*"] }
        args += ["-o", reports.path, "127.0.0.1:\(port)"]
        let server = try BackgroundProcess(kosoku, args)
        defer { server.stop() }
        try waitForListener(port: port, timeout: 30)
        let outcome = try AutobahnClient.run(port: port, agent: "stampede", caseTimeoutSeconds: 30)
        #expect(outcome.caseCount > 250)
        #expect(outcome.casesTimedOut == 0)
        _ = server.wait(timeout: 30)
        let report = try runProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/autobahn_report.py").path, reports.path, "stampede",
                                                      "--expect-cases", "\(outcome.caseCount)"], timeout: 60)
        #expect(report.status == 0, "autobahn: \(report.stdout) \(report.stderr.suffix(2000))")
        let kept = repositoryRoot.appendingPathComponent("results/autobahn-\(ResultsWriter.folderName(scenarioName: "client", startedAt: Date()))")
        try? FileManager.default.createDirectory(at: kept, withIntermediateDirectories: true)
        try? Data(report.stdout.utf8).write(to: kept.appendingPathComponent("summary.json"))
        print("autobahn groups 1-7, 9, 10: \(report.stdout)")
    }
}

/// Polls until something accepts TCP connections on 127.0.0.1:port.
func waitForListener(port: Int, timeout: Double) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(port).bigEndian
        let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        close(fd)
        if r == 0 { return }
        Thread.sleep(forTimeInterval: 0.1)
    }
    throw PeerError("nothing listening on 127.0.0.1:\(port) after \(timeout)s")
}
