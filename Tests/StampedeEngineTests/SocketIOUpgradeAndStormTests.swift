import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import Testing

/// Stampede's Socket.IO clients against python-socketio's server when the upgrade is refused,
/// and through storms and churn over long polling with the upgrade.
@Suite(.serialized)
struct SocketIOUpgradeAndStormTests {
    @Test func aRefusedUpgradeIsCountedAndTheClientsCarryOnOverLongPolling() throws {
        let (server, port) = try startPythonSocketIOServer(["--refuse-upgrade"])
        defer { server.stop() }
        let o = try run(try socketIOChatAgainstPython(port: port, transports: [.polling, .websocket], clients: 10))
        let counts = try stoppedServerCounts(server)
        let m = o.summary.messages
        let c = o.summary.counters
        #expect(c["upgrades_failed"] == 10 && c["upgraded", default: 0] == 0, "\(c.filter { $0.key.hasPrefix("upgrade") })")
        #expect(count(counts, "upgrades_refused") == 10)
        #expect(m.sent > 0 && m.delivered == m.sent && m.lost == 0 && m.failed == 0 && m.accountingClosed,
                "\(o.summary.errors.filter { $0.value > 0 }) \(m)")
        #expect(c["sent_long_polling"] == m.sent)
    }

    @Test func clientsHitByStormsAndChurnComeBackAndEveryEmitIsAccountedFor() throws {
        let (server, port) = try startPythonSocketIOServer()
        defer { server.stop() }
        var s = try socketIOChatAgainstPython(port: port, transports: [.polling, .websocket], clients: 12)
        s.durationSeconds = 4
        s.socketio?.reconnect = .delays([0, 0.2, 0.5])
        s.events = [ScenarioEvent(atSeconds: 0.5, kind: .storm(fraction: 1, mode: .reset)),
                    ScenarioEvent(atSeconds: 1.5, kind: .storm(fraction: 0.5, mode: .close)),
                    ScenarioEvent(atSeconds: 2.5, kind: .churn(ratePerSecond: 4, durationSeconds: 1))]
        let o = try run(s)
        let m = o.summary.messages
        #expect(o.summary.storms.count == 2)
        for storm in o.summary.storms { #expect(storm.affected > 0 && storm.recovered == storm.affected && storm.gaveUp == 0) }
        #expect(o.summary.counters["churn_left", default: 0] > 0 && o.summary.counters["churn_joined"] == o.summary.counters["churn_left"])
        #expect(m.sent > 0 && m.failed == 0 && m.accountingClosed, "\(m)")
        // Emits due while a client was away are dropped (whileDisconnected: drop), and an emit
        // awaiting its ack when a storm cut the connection is lost with it (Socket.IO does not
        // resend); no emit is lost for any other reason.
        let expectedReasons: Set<String> = ["dropped_while_disconnected", "connection_closed"]
        #expect(m.lost == m.lostByReason.filter { expectedReasons.contains($0.key) }.values.reduce(0, +), "\(m.lostByReason)")
    }
}
