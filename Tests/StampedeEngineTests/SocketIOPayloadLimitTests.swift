import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import Testing

/// The server's `maxPayload` (its open packet) bounds what a client sends: python-socketio ends a
/// session whose POST body or WebSocket message is larger. Emits that fit are split over as many
/// POSTs as needed; an emit that cannot fit is never sent and counts as failed.
@Suite(.serialized)
struct SocketIOPayloadLimitTests {
    /// A scenario whose emits carry `{stamp:size}` against a server with maxPayload 300.
    func scenario(port: Int, transports: String, size: Int, rate: Double = 200) throws -> Scenario {
        var s = try socketIOScenario(name: "sio-max-payload", target: "http://127.0.0.1:\(port)", clients: 4, duration: 1.5, rate: rate,
                                     section: """
              namespace: /live
              transports: \(transports)
              auth: {token: demo-token}
              emit: {event: echo, args: ["{stamp:\(size)}"], ack: true}
            """)
        s.thresholds = []
        return s
    }

    @Test func emitsThatFitArePostedWithinTheServersMaxPayload() throws {
        let (server, port) = try startPythonSocketIOServer(["--max-payload", "300"])
        defer { server.stop() }
        // Each emit is about 170 bytes: two never share a POST, and every one is acked. At 250
        // emits/s per client, emits fall due while a POST is out and queue up behind it.
        let o = try run(try scenario(port: port, transports: "[polling]", size: 140, rate: 1000))
        let m = o.summary.messages
        #expect(m.sent > 0 && m.delivered == m.sent && m.failed == 0 && m.lost == 0 && m.accountingClosed,
                "\(o.summary.errors.filter { $0.value > 0 }) \(m)")
        #expect(o.summary.errorsTotal == 0)
    }

    @Test(arguments: ["[polling]", "[websocket]"])
    func anEmitLargerThanMaxPayloadFailsWithoutBeingSent(_ transports: String) throws {
        let (server, port) = try startPythonSocketIOServer(["--max-payload", "300"])
        defer { server.stop() }
        let o = try run(try scenario(port: port, transports: transports, size: 400))
        let counts = try stoppedServerCounts(server)
        let m = o.summary.messages
        #expect(m.sent > 0 && m.failed == m.sent && m.accountingClosed, "\(m)")
        #expect(o.summary.errors["message_too_big"] == m.sent)
        #expect(o.summary.connections.connected == 4 && o.summary.counters["disconnected"] == 4, "the sessions stayed up to the end")
        #expect(count(counts, "events_received", "echo") == 0)
    }
}
