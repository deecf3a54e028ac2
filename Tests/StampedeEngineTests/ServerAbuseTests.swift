import Foundation
import Testing
import StampedeLoop
import StampedeServers
#if canImport(Glibc)
import Glibc
#endif

// The reference servers against abusive clients (issue 10): clients that flood and never read
// are dropped as slow consumers and counted, the servers' queued output stays under the stated
// bound meanwhile, and silent or slow-head connections are closed by the idle and header
// timeouts. Small limits and timeouts keep each test short; waits have generous upper bounds
// and nothing asserts that anything was fast.
@Suite(.serialized) struct ServerAbuseTests {
    /// Limits small enough for tests: a slow consumer is found within a second.
    static let small = ServerLimits(maxOutputBytes: 256 * 1024, sendTimeout: 0.5, headerTimeout: 0.2, idleTimeout: 0.3)
    /// The same with a send timeout too long to matter: only the output limit can drop anyone.
    static let outputLimitOnly = ServerLimits(maxOutputBytes: 256 * 1024, sendTimeout: 60, headerTimeout: 30, idleTimeout: 30)

    @Test func chatClientThatFloodsAndNeverReadsIsDroppedAtTheOutputLimitWhileQueuedBytesStayBounded() throws {
        let chat = try RefChatServer(limits: Self.outputLimitOnly)
        defer { chat.stop() }
        let abuser = try Abuser.webSocket(chat.server.port, "/chat")
        let normal = try RefChatServer.connect(chat.server.port)
        try waitFor { chat.loop.submitAndWait { [s = chat.server] _ in s.statistics.open } == 2 }
        let big = RefChatServer.message(String(repeating: "x", count: 60_000))
        let flood = Abuser.frame(RefChatServer.message(String(repeating: "y", count: 1000)))
        var maxQueued = 0
        let deadline = Date().addingTimeInterval(20)
        while chat.server.statisticsSnapshot().limits.slowConsumersDropped == 0 && Date() < deadline {
            abuser.push(flood, within: 0.01)
            normal.sendFrame(opcode: 1, big)
            drain(normal)  // the normal client reads what it is sent
            maxQueued = max(maxQueued, chat.loop.submitAndWait { $0.queuedBytes })
        }
        let stats = chat.server.statisticsSnapshot()
        #expect(stats.limits.slowConsumersDropped == 1)
        #expect(stats.open == 1)
        #expect(abuser.waitUntilClosed())
        // Two connections, each at most the output limit.
        #expect(maxQueued <= 2 * chat.server.limits.maxOutputBytes, "queued \(maxQueued)")
        drain(normal)
        normal.pending.removeAll()
        normal.sendFrame(opcode: 1, RefChatServer.message("still here"))
        var echoed = false
        let until = Date().addingTimeInterval(10)
        while !echoed && Date() < until { echoed = String(decoding: try normal.readFrame().payload, as: UTF8.self).contains("still here") }
        #expect(echoed)
    }

    @Test func chatClientThatFloodsAloneAndNeverReadsIsStoppedThenDroppedBySendTimeout() throws {
        let chat = try RefChatServer(limits: Self.small)
        defer { chat.stop() }
        let abuser = try Abuser.webSocket(chat.server.port, "/chat")
        let flood = Abuser.frame(RefChatServer.message(String(repeating: "y", count: 1000)))
        var maxQueued = 0
        let deadline = Date().addingTimeInterval(20)
        while chat.server.statisticsSnapshot().limits.slowConsumersDropped == 0 && Date() < deadline {
            // Blocks (up to its timeout) once the server stops reading: TCP backpressure.
            abuser.push(flood)
            maxQueued = max(maxQueued, chat.loop.submitAndWait { $0.queuedBytes })
        }
        #expect(chat.server.statisticsSnapshot().limits.slowConsumersDropped == 1)
        #expect(abuser.waitUntilClosed())
        #expect(maxQueued <= chat.server.limits.maxOutputBytes, "queued \(maxQueued)")
    }

    @Test func hubWebSocketClientThatFloodsAndNeverReadsIsDroppedAndTheOthersCarryOn() throws {
        let hub = try RefHubServer { $0.limits = Self.small; $0.statefulReconnectBufferSize = 256 * 1024 }
        defer { hub.stop() }
        let abuser = try Abuser.webSocket(hub.port, "/hub")
        abuser.push(Abuser.frame(Array("{\"protocol\":\"json\",\"version\":1}\u{1e}".utf8)))
        var normal = try RefHubClient.connectWebSocket(hub.port)
        let flood = Abuser.frame(Self.sendMessage(String(repeating: "z", count: 1000)))
        var maxQueued = 0
        let deadline = Date().addingTimeInterval(20)
        while hub.server.statisticsSnapshot().limits.slowConsumersDropped == 0 && Date() < deadline {
            abuser.push(flood, within: 0.01)
            maxQueued = max(maxQueued, hub.loop.submitAndWait { $0.queuedBytes })
            drain(normal.socket)  // the normal client keeps reading its copies
        }
        #expect(hub.server.statisticsSnapshot().limits.slowConsumersDropped == 1)
        #expect(abuser.waitUntilClosed())
        #expect(maxQueued <= 2 * hub.server.limits.maxOutputBytes, "queued \(maxQueued)")
        try expectEcho(&normal)
    }

    @Test func hubServerSentEventsStreamNobodyReadsIsDroppedWhileAnotherClientSends() throws {
        let hub = try RefHubServer { $0.limits = Self.outputLimitOnly; $0.statefulReconnectBufferSize = 256 * 1024 }
        defer { hub.stop() }
        let token = try RefHubHTTP.negotiateToken(hub.port)
        let stream = try Abuser(hub.port)
        stream.push(Array("GET /hub?id=\(token) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".utf8))
        let handshake = Array("{\"protocol\":\"json\",\"version\":1}\u{1e}".utf8)
        try waitFor { hub.server.statisticsSnapshot().connectionsServerSentEvents == 1 }
        #expect(try RefHubHTTP.request(hub.port, "POST", "/hub?id=\(token)", body: handshake).status == 200)
        var sender = try RefHubClient.connectWebSocket(hub.port)
        try waitFor { hub.server.statisticsSnapshot().open == 2 }
        let big = Self.sendMessage(String(repeating: "s", count: 30_000))
        let deadline = Date().addingTimeInterval(20)
        var maxQueued = 0
        while hub.server.statisticsSnapshot().limits.slowConsumersDropped == 0 && Date() < deadline {
            sender.socket.sendFrame(opcode: 1, big)
            drain(sender.socket)
            maxQueued = max(maxQueued, hub.loop.submitAndWait { $0.queuedBytes })
        }
        let stats = hub.server.statisticsSnapshot()
        #expect(stats.limits.slowConsumersDropped == 1)
        #expect(stats.open == 1)
        #expect(stream.waitUntilClosed())
        #expect(maxQueued <= 2 * hub.server.limits.maxOutputBytes, "queued \(maxQueued)")
        try expectEcho(&sender)
    }

    @Test func restClientThatPipelinesAndNeverReadsIsThrottledThenDroppedAndQueuedBytesStayBounded() throws {
        let loop = try EventLoop(index: 0)
        let server = try RestServer(loop: loop, address: .ipv4(0x7F00_0001, port: 0),
                                    configuration: RestServer.Configuration(bodySize: 16 * 1024, limits: Self.small))
        loop.start(name: "rest-abuse")
        defer { loop.stop(); loop.join() }
        let abuser = try Abuser(server.port)
        let requests = Array(String(repeating: "GET /api/items HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", count: 200).utf8)
        var maxQueued = 0
        let deadline = Date().addingTimeInterval(20)
        while server.statisticsSnapshot().limits.slowConsumersDropped == 0 && Date() < deadline {
            abuser.push(requests)
            maxQueued = max(maxQueued, loop.submitAndWait { $0.queuedBytes })
        }
        let stats = server.statisticsSnapshot()
        #expect(stats.limits.slowConsumersDropped == 1)
        #expect(abuser.waitUntilClosed())
        // Answers stop at the high-water mark, plus one answer: far below the limit.
        #expect(maxQueued <= loop.configuration.highWaterMark + 64 * 1024, "queued \(maxQueued)")
        #expect(maxQueued <= server.limits.maxOutputBytes)
        let ok = try RefHubHTTP.request(server.port, "GET", "/api/items")
        #expect(ok.status == 200)
    }

    @Test(arguments: ServerKind.allCases)
    func silentConnectionIsClosedByTheIdleTimeoutAndASlowHeadByTheHeaderTimeout(_ kind: ServerKind) throws {
        let server = try kind.start(Self.small)
        defer { server.stop() }
        let silent = try RefHubSocket(port: server.port)
        let slowHead = try RefHubSocket(port: server.port)
        slowHead.write("GET \(kind.path) HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        #expect(slowHead.waitForEOF(timeout: 10))
        #expect(silent.waitForEOF(timeout: 10))
        try waitFor { server.limitStatistics().idleTimeouts == 1 && server.limitStatistics().headerTimeouts == 1 }
        #expect(server.limitStatistics().slowConsumersDropped == 0)
    }

    @Test func keepAliveRestConnectionIsClosedByTheIdleTimeoutAfterItsAnswer() throws {
        let server = try ServerKind.rest.start(Self.small)
        defer { server.stop() }
        let s = try RefHubSocket(port: server.port)
        s.write("GET /api/items HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(try s.readResponse().status == 200)
        #expect(s.waitForEOF(timeout: 10))
        try waitFor { server.limitStatistics().idleTimeouts == 1 }
        #expect(server.limitStatistics().headerTimeouts == 0)
    }

    @Test func serveReportsLimitCountersInStatusAndRefusesBadLimitFlagsWithExitCode2() throws {
        for (arguments, message) in [
            (["--max-output-bytes", "1000"], "--max-output-bytes must be"),
            (["--header-timeout", "0"], "--header-timeout must be"),
            (["--idle-timeout", "nan"], "--idle-timeout must be"),
            (["--send-timeout", "4000"], "--send-timeout must be"),
        ] {
            let r = try runProcess(stampedeBinary.path, ["serve", "--port", "0"] + arguments, timeout: 30)
            #expect(r.status == 2, "\(arguments)")
            #expect(r.stderr.contains(message), "\(arguments): \(r.stderr)")
        }
        let serve = try BackgroundProcess(stampedeBinary.path, ["serve", "--port", "0", "--admin-port", "0", "--idle-timeout", "0.2",
                                                                "--max-output-bytes", "1048576", "--max-seconds", "60"])
        defer { serve.stop() }
        let listening = try serve.waitForLine(prefix: "listening on ws://127.0.0.1:", timeout: 30)
        let port = try #require(UInt16(listening.split(separator: ":").last!.split(separator: "/").first!))
        let adminLine = try serve.waitForLine(prefix: "admin on http://127.0.0.1:", timeout: 5)
        let adminPort = try #require(UInt16(adminLine.split(separator: ":").last!))
        let silent = try RefHubSocket(port: port)
        #expect(silent.waitForEOF(timeout: 10))
        let status = try RefHubHTTP.request(adminPort, "GET", "/status").jsonObject()
        #expect(status["idleTimeouts"] as? Int == 1)
        #expect(status["slowConsumersDropped"] as? Int == 0)
        #expect(status["headerTimeouts"] as? Int == 0)
    }

    // MARK: Helpers

    static func sendMessage(_ text: String) -> [UInt8] {
        Array("{\"type\":1,\"target\":\"SendMessage\",\"arguments\":[\"abuser\",\"\(text)\"]}\u{1e}".utf8)
    }

    func expectEcho(_ client: inout RefHubClient) throws {
        client.socket.pending.removeAll()
        client.socket.sendFrame(opcode: 1, Array("{\"type\":1,\"invocationId\":\"77\",\"target\":\"Echo\",\"arguments\":[\"ok\"]}\u{1e}".utf8))
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let frame = try client.socket.readFrame()
            if RefHubJSON.messages(frame.payload).contains(where: { $0["type"] as? Int == 3 && $0["invocationId"] as? String == "77" }) { return }
        }
        Issue.record("no completion for Echo")
    }
}

/// Reads whatever has arrived, without waiting, and forgets it.
func drain(_ s: RefHubSocket) {
    var chunk = [UInt8](repeating: 0, count: 65536)
    while chunk.withUnsafeMutableBytes({ recv(s.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
}

func waitFor(timeout: Double = 10, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while try !condition() {
        guard Date() < deadline else { throw RefHubError("condition not met within \(timeout) s") }
        Thread.sleep(forTimeInterval: 0.01)
    }
}

/// One of the three reference servers, started with given limits, for tests that apply to all.
enum ServerKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case chat, hub, rest

    var testDescription: String { rawValue }
    var path: String { self == .chat ? "/chat" : self == .hub ? "/hub" : "/api" }

    struct Running {
        let port: UInt16
        let loop: EventLoop
        let limitStatistics: () -> LimitStatistics
        func stop() { loop.stop(); loop.join() }
    }

    func start(_ limits: ServerLimits) throws -> Running {
        let loop = try EventLoop(index: 0)
        let address = SocketAddress.ipv4(0x7F00_0001, port: 0)
        let running: Running
        switch self {
        case .chat:
            let s = try ChatServer(loop: loop, address: address, limits: limits)
            running = Running(port: s.port, loop: loop) { s.statisticsSnapshot().limits }
        case .hub:
            var c = HubServer.Configuration()
            c.limits = limits
            let s = try HubServer(loop: loop, address: address, configuration: c)
            running = Running(port: s.port, loop: loop) { s.statisticsSnapshot().limits }
        case .rest:
            let s = try RestServer(loop: loop, address: address, configuration: RestServer.Configuration(limits: limits))
            running = Running(port: s.port, loop: loop) { s.statisticsSnapshot().limits }
        }
        loop.start(name: "abuse-\(rawValue)")
        return running
    }
}

/// A client that writes and never reads: a small receive buffer so the server's queue fills
/// soon, and a send timeout so a server that stops reading only makes `push` give up.
final class Abuser {
    let fd: Int32

    init(_ port: UInt16) throws {
        guard let fd = connectLoopback(port: port, receiveBuffer: 4096, sendTimeout: true) else { throw RefHubError("connect to \(port) failed") }
        self.fd = fd
    }

    deinit { Glibc.close(fd) }

    /// A WebSocket upgraded on `path`; only the 101's head is read.
    static func webSocket(_ port: UInt16, _ path: String) throws -> Abuser {
        let a = try Abuser(port)
        a.push(Array(("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8))
        var head: [UInt8] = []
        var byte: UInt8 = 0
        let deadline = Date().addingTimeInterval(10)
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) && Date() < deadline {
            if recv(a.fd, &byte, 1, 0) == 1 { head.append(byte) }
        }
        guard head.starts(with: Array("HTTP/1.1 101".utf8)) else { throw RefHubError("upgrade failed: \(String(decoding: head, as: UTF8.self))") }
        return a
    }

    /// A masked text frame.
    static func frame(_ payload: [UInt8]) -> [UInt8] {
        var f: [UInt8] = [0x81]
        if payload.count < 126 { f.append(0x80 | UInt8(payload.count)) } else { f += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] }
        return f + [0, 0, 0, 0] + payload
    }

    /// Writes what the socket takes within `within` seconds; false once the server has closed.
    @discardableResult
    func push(_ bytes: [UInt8], within: Double = 1) -> Bool {
        bytes.withUnsafeBytes { b in
            var off = 0
            let deadline = Date().addingTimeInterval(within)
            while off < b.count && Date() < deadline {
                let n = send(fd, b.baseAddress! + off, b.count - off, Int32(MSG_NOSIGNAL))
                if n > 0 { off += n } else if n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR { return false }
            }
            return true
        }
    }

    /// Whether the server closes the connection within `timeout` (unread data is discarded).
    func waitUntilClosed(timeout: Double = 10) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return true }
            if n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR { return true }
        }
        return false
    }
}
