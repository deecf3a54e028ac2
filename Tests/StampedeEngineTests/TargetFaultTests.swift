import Foundation
import StampedeLoop
import StampedeServers
import Testing
#if canImport(Glibc)
import Glibc
#endif

// The reference servers' fault switch: `apply(_:)` on ChatServer and HubServer, the admin
// endpoint (TargetAdmin) and `stampede serve --admin-port`. Raw sockets on the client side, so
// what a client sees (RST, close codes, 503s, silence) is checked byte for byte.

@Suite struct TargetFaultTests {
    @Test func chatDropWithResetResetsEveryClientConnection() throws {
        let chat = try RefChatServer()
        defer { chat.stop() }
        let clients = try (0..<3).map { _ in try RefChatServer.connect(chat.port) }
        try chat.waitUntilOpen(3)
        chat.loop.execute { [server = chat.server] _ in server.apply(.drop(reset: true)) }
        for c in clients { #expect(endOfStream(c) == ECONNRESET) }
        let s = chat.server.statisticsSnapshot()
        #expect(s.faultsApplied == 1 && s.connectionsDropped == 3 && s.open == 0)
    }

    @Test func chatDropWithCloseSendsWebSocketClose1012ServiceRestart() throws {
        let chat = try RefChatServer()
        defer { chat.stop() }
        let client = try RefChatServer.connect(chat.port)
        try chat.waitUntilOpen(1)
        chat.loop.execute { [server = chat.server] _ in server.apply(.drop(reset: false)) }
        let frame = try client.readFrame()
        #expect(frame.opcode == 8)
        #expect(Array(frame.payload.prefix(2)) == [0x03, 0xF4])  // 1012
        #expect(String(decoding: frame.payload.dropFirst(2), as: UTF8.self) == "service restart")
        // The client answers; the server completes the close handshake by closing TCP.
        client.sendFrame(opcode: 8, [0x03, 0xF4])
        #expect(endOfStream(client) == 0)
        let s = chat.server.statisticsSnapshot()
        #expect(s.connectionsDropped == 1 && s.open == 0)
    }

    @Test func chatRejectAnswers503WithRetryAfterWhileExistingClientsGoOnThenAcceptsAgain() throws {
        let chat = try RefChatServer()
        defer { chat.stop() }
        let existing = try RefChatServer.connect(chat.port)
        try chat.waitUntilOpen(1)
        chat.loop.execute { [server = chat.server] _ in server.apply(.reject(seconds: 0.6)) }
        try chat.waitFor { $0.faultsApplied == 1 }
        let (refused, response) = try RefHubSocket.openWebSocket(chat.port, "/chat")
        #expect(response.status == 503)
        #expect(response.headers["retry-after"] == "1")
        #expect(refused.waitForEOF())
        // The connection that was already open still gets its broadcast.
        existing.sendFrame(opcode: 1, RefChatServer.message("still here"))
        #expect(String(decoding: try existing.readFrame().payload, as: UTF8.self).contains("still here"))
        Thread.sleep(forTimeInterval: 0.7)
        _ = try RefChatServer.connect(chat.port)
        let s = chat.server.statisticsSnapshot()
        #expect(s.requestsRejected == 1 && s.upgraded == 2)
    }

    @Test func stallThroughTheAdminEndpointHoldsAnEchoUntilItEnds() throws {
        let chat = try RefChatServer()
        defer { chat.stop() }
        let admin = try TargetAdmin(target: chat.server)
        defer { admin.stop() }
        let client = try RefChatServer.connect(chat.port)
        try chat.waitUntilOpen(1)
        let reply = try RefHubHTTP.request(admin.port, "POST", "/fault/stall?seconds=1.2")
        #expect(reply.status == 200)
        #expect(try reply.jsonObject()["fault"] as? String == "stall")
        let sent = Date()
        client.sendFrame(opcode: 1, RefChatServer.message("held"))
        #expect(throws: (any Error).self) { try client.readFrame(timeout: 0.7) }
        let echo = try client.readFrame(timeout: 5)
        #expect(String(decoding: echo.payload, as: UTF8.self).contains("held"))
        #expect(Date().timeIntervalSince(sent) > 0.8)
        #expect(chat.server.statisticsSnapshot().faultsApplied == 1)
    }

    @Test func hubDropWithCloseSendsCloseAllowingReconnectAndRejectRefusesOnlyNewConnections() throws {
        let hub = try RefHubServer()
        defer { hub.stop() }
        let client = try RefHubClient.connectWebSocket(hub.port)
        hub.loop.execute { [server = hub.server] _ in server.apply(.reject(seconds: 30)) }
        let refused = try RefHubHTTP.request(hub.port, "POST", "/hub/negotiate?negotiateVersion=1")
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "30")
        // The open connection is untouched by the reject.
        #expect(try client.invoke(#"{"type":1,"invocationId":"1","target":"Echo","arguments":["x"]}"#)["result"] as? String == "x")

        hub.loop.execute { [server = hub.server] _ in server.apply(.drop(reset: false)) }
        let close = try #require(RefHubJSON.messages(try client.socket.readFrame().payload).first { $0["type"] as? Int == 7 })
        #expect(close["allowReconnect"] as? Bool == true)
        #expect(try client.socket.readFrame().opcode == 8)
        #expect(client.socket.waitForEOF())
        let s = hub.server.statisticsSnapshot()
        #expect(s.faultsApplied == 2 && s.connectionsDropped == 1 && s.requestsRejected == 1 && s.open == 0)
    }

    @Test func adminAnswers400ForBadQueries404ForUnknownPaths405ForWrongMethodsAndStatusJSON() throws {
        let hub = try RefHubServer()
        defer { hub.stop() }
        let admin = try TargetAdmin(target: hub.server)
        defer { admin.stop() }
        for query in ["/fault/stall", "/fault/stall?seconds=", "/fault/stall?seconds=abc", "/fault/reject?seconds=0",
                      "/fault/reject?seconds=-1", "/fault/stall?seconds=3601", "/fault/stall?seconds=nan", "/fault/drop?mode=maybe"] {
            let r = try RefHubHTTP.request(admin.port, "POST", query)
            #expect(r.status == 400, "\(query)")
            #expect(try r.jsonObject()["ok"] as? Bool == false, "\(query)")
        }
        #expect(try RefHubHTTP.request(admin.port, "POST", "/fault/explode").status == 404)
        let wrong = try RefHubHTTP.request(admin.port, "GET", "/fault/drop")
        #expect(wrong.status == 405 && wrong.headers["allow"] == "POST")
        #expect(try RefHubHTTP.request(admin.port, "POST", "/status").status == 405)
        #expect(try RefHubHTTP.request(admin.port, "POST", "/fault/reject?seconds=0.5").status == 200)
        let status = try RefHubHTTP.request(admin.port, "GET", "/status")
        #expect(status.status == 200 && status.headers["content-type"] == "application/json")
        let json = try status.jsonObject()
        #expect(json["server"] as? String == "hub")
        #expect(json["faultsApplied"] as? Int == 1)
        #expect(json["rejectingSeconds"] as? Int == 1)
        #expect(json["open"] as? Int == 0)
    }

    @Test func adminListensOn127001Only() throws {
        let chat = try RefChatServer()
        defer { chat.stop() }
        #expect(throws: TargetAdminError.self) { try TargetAdmin(target: chat.server, address: .ipv4(0, port: 0)) }
        #expect(throws: TargetAdminError.self) { try TargetAdmin(target: chat.server, address: .ipv4(0x7F00_0002, port: 0)) }
        let admin = try TargetAdmin(target: chat.server)
        defer { admin.stop() }
        // Bound to the one address, not the whole of 127/8: another loopback address is refused.
        #expect(tcpConnects("127.0.0.1", admin.port))
        #expect(!tcpConnects("127.0.0.2", admin.port))
    }

    @Test func serveWithAdminPortPrintsTheAdminURLAndAPostDropsConnections() throws {
        let serve = try BackgroundProcess(stampedeBinary.path, ["serve", "--port", "0", "--admin-port", "0", "--max-seconds", "60"])
        defer { serve.stop() }
        let listening = try serve.waitForLine(prefix: "listening on ", timeout: 20)
        let adminLine = try serve.waitForLine(prefix: "admin on http://127.0.0.1:", timeout: 5)
        #expect(serve.lines.withLock { $0.firstIndex(of: listening)! < $0.firstIndex(of: adminLine)! })
        let chatPort = try #require(UInt16(listening.split(separator: ":").last!.split(separator: "/").first!))
        let adminPort = try #require(UInt16(adminLine.split(separator: ":").last!))
        let client = try RefChatServer.connect(chatPort)
        // What `curl -X POST 'http://127.0.0.1:<port>/fault/drop?mode=reset'` sends.
        let r = try RefHubHTTP.request(adminPort, "POST", "/fault/drop?mode=reset")
        #expect(r.status == 200)
        #expect(try r.jsonObject()["mode"] as? String == "reset")
        #expect(endOfStream(client) == ECONNRESET)
        let status = try RefHubHTTP.request(adminPort, "GET", "/status").jsonObject()
        #expect(status["connectionsDropped"] as? Int == 1)
    }
}

// MARK: - Helpers

/// A ChatServer on its own loop, on 127.0.0.1 and a free port.
final class RefChatServer: @unchecked Sendable {
    let loop: EventLoop
    let server: ChatServer
    var port: UInt16 { server.port }

    init(limits: ServerLimits = ServerLimits()) throws {
        loop = try EventLoop(index: 0)
        server = try ChatServer(loop: loop, address: .ipv4(0x7F00_0001, port: 0), limits: limits)
        loop.start(name: "chat-test")
    }

    func stop() {
        loop.stop()
        loop.join()
    }

    func waitFor(timeout: Double = 5, _ condition: (ChatServer.Statistics) -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition(server.statisticsSnapshot()) {
            guard Date() < deadline else { throw RefHubError("chat server statistics never got there: \(server.statisticsSnapshot())") }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    func waitUntilOpen(_ n: Int) throws { try waitFor { $0.open == n } }

    /// An upgraded WebSocket client of `/chat`.
    static func connect(_ port: UInt16) throws -> RefHubSocket {
        let (s, r) = try RefHubSocket.openWebSocket(port, "/chat")
        guard r.status == 101 else { throw RefHubError("chat upgrade answered \(r.status)") }
        return s
    }

    static func message(_ text: String) -> [UInt8] {
        Array(#"{"message":"\#(text)","user":"tester","userID":"1"}"#.utf8)
    }
}

/// Reads until the server ends the stream: 0 for a clean end of file, the errno of a failed
/// read (ECONNRESET for RST), -1 if it is still open after `timeout` seconds.
func endOfStream(_ s: RefHubSocket, timeout: Double = 5) -> Int32 {
    let deadline = Date().addingTimeInterval(timeout)
    var chunk = [UInt8](repeating: 0, count: 4096)
    while Date() < deadline {
        let n = chunk.withUnsafeMutableBytes { recv(s.fd, $0.baseAddress, $0.count, 0) }
        if n == 0 { return 0 }
        if n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR { return errno }
    }
    return -1
}

/// Whether a TCP connect to `host:port` succeeds.
func tcpConnects(_ host: String, _ port: UInt16) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = port.bigEndian
    addr.sin_addr.s_addr = inet_addr(host)
    return withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}
