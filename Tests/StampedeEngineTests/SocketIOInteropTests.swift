import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import Testing

/// `Tests/peers/socketio_server.py` (python-socketio's AsyncServer on aiohttp) on a free
/// loopback port: namespace /live, auth token demo-token (the shipped scenario's), and `arguments`.
func startPythonSocketIOServer(_ arguments: [String] = []) throws -> (BackgroundProcess, Int) {
    try startListeningPeer("socketio", "socketio_server.py", ["--namespace", "/live", "--token", "demo-token"] + arguments)
}

/// The counts the peer prints as its last line when stopped.
func stoppedServerCounts(_ server: BackgroundProcess) throws -> [String: Any] {
    server.stop()
    let last = try #require(server.lines.withLock { $0.last { $0.hasPrefix("{") } }, "no counts line")
    return try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
}

func count(_ counts: [String: Any], _ path: String...) -> Int {
    var node: Any? = counts
    for key in path { node = (node as? [String: Any])?[key] }
    return (node as? Int) ?? 0
}

/// The shipped Socket.IO scenario pointed at the python-socketio server on `port`.
func socketIOChatAgainstPython(port: Int, transports: [SocketIOSpec.Transport], clients: Int = 20) throws -> Scenario {
    var s = try shippedScenario("socketio-chat.yaml", clients: clients, duration: 2, drain: 3)
    s.name = "sio-python-\(transports.map(\.rawValue).joined(separator: "-"))"
    s.target = .http(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/"))
    s.message.ratePerSecond = 40
    s.thresholds = []  // a debug build on a busy machine: accounting is the point here
    s.socketio?.transports = transports
    return s
}

/// Stampede's Socket.IO clients against python-socketio's server: every transport, acks, rooms,
/// broadcast fan-out, a refused namespace, binary attachments, and the server going silent.
@Suite(.serialized)
struct SocketIOInteropTests {
    @Test(arguments: [[SocketIOSpec.Transport.polling, .websocket], [.websocket], [.polling]])
    func everyEmitIsAckedAndEverySaidArrivesOverEachTransport(_ transports: [SocketIOSpec.Transport]) throws {
        let (server, port) = try startPythonSocketIOServer()
        defer { server.stop() }
        let o = try run(try socketIOChatAgainstPython(port: port, transports: transports))
        let counts = try stoppedServerCounts(server)
        let m = o.summary.messages
        #expect(o.exitCode == 0, "\(o.summary.errors.filter { $0.value > 0 })")
        #expect(o.summary.connections.connected == 20)
        #expect(m.sent > 0 && m.delivered == m.sent && m.lost == 0 && m.failed == 0 && m.accountingClosed)
        #expect(o.summary.errorsTotal == 0)
        // Every emit reached the server once and was acked; every `said` to a client arrived.
        #expect(count(counts, "events_received", "say") == Int(m.sent))
        #expect(count(counts, "events_received", "join") == 20)
        #expect(o.summary.latencyMicros["ack"]?.count == m.sent)
        #expect(o.summary.latencyMicros["round_trip"]?.count == m.sent, "each client's own said")
        #expect(Int(m.fanoutReceived) == count(counts, "said_emitted") - Int(m.sent), "every other room member's said")
        #expect(o.summary.latencyMicros["eio_handshake"]?.count == 20)
        #expect(o.summary.latencyMicros["namespace_connect"]?.count == 20)
        let c = o.summary.counters
        switch transports {
        case [.websocket]:
            #expect(c["connected_websockets"] == 20 && c["connected_long_polling", default: 0] == 0)
        case [.polling]:
            #expect(c["connected_long_polling"] == 20 && c["upgraded", default: 0] == 0)
        default:
            #expect(c["upgraded"] == 20 && count(counts, "upgrades") == 20)
            #expect(o.summary.latencyMicros["ws_upgrade"]?.count == 20)
        }
    }

    @Test func aRefusedNamespaceIsCountedWithTheServersMessageAndNotRetried() throws {
        let (server, port) = try startListeningPeer("socketio", "socketio_server.py", ["--namespace", "/live", "--token", "another-token"])
        defer { server.stop() }
        var s = try socketIOChatAgainstPython(port: port, transports: [.websocket], clients: 6)
        s.message.ratePerSecond = 0
        let o = try run(s)
        #expect(o.summary.errors["namespace_refused"] == 6, "\(o.summary.errors.filter { $0.value > 0 })")
        #expect(o.summary.connectErrors == ["not authorized": 6])
        #expect(o.summary.messages.accountingClosed)
        #expect(count(try stoppedServerCounts(server), "connects_refused") == 6, "socket.io-client does not retry a refused CONNECT")
    }

    @Test func binaryAttachmentsGoOutAsABinaryEventAndComeBackInABinaryAck() throws {
        let (server, port) = try startPythonSocketIOServer()
        defer { server.stop() }
        var s = try socketIOScenario(name: "sio-python-binary", target: "http://127.0.0.1:\(port)", clients: 6, section: """
              namespace: /live
              auth: {token: demo-token}
              emit: {event: echo, args: ["{stamp}"], binary: ["00 ff {sequence:u32} {random:16}"], ack: true}
            """)
        s.thresholds = []
        let o = try run(s)
        let counts = try stoppedServerCounts(server)
        let m = o.summary.messages
        #expect(m.sent > 0 && m.delivered == m.sent && m.lost == 0 && m.accountingClosed, "\(o.summary.errors.filter { $0.value > 0 })")
        #expect(count(counts, "binary_args_received") == Int(m.sent))
        #expect(o.summary.latencyMicros["ack"]?.count == m.sent)
    }

    @Test func theServersSilenceEndsEachConnectionAsServerTimeout() throws {
        let (server, port) = try startPythonSocketIOServer(["--stall-after", "1", "--ping-interval", "1", "--ping-timeout", "1"])
        defer { server.stop() }
        var s = try socketIOChatAgainstPython(port: port, transports: [.websocket], clients: 4)
        s.durationSeconds = 5
        s.socketio?.reconnect = .none
        let o = try run(s)
        #expect(o.summary.errors["server_timeout"] == 4, "\(o.summary.errors.filter { $0.value > 0 })")
        #expect(o.summary.messages.accountingClosed)
    }
}
