import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import Testing

/// Connection storms: every affected client is counted, its recovery timed, and the accounting
/// closes; the results carry the recovery percentiles and the per-100 ms curve.
@Suite(.serialized)
struct StormTests {
    func expectFullRecovery(_ o: RunOutcome, clients: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(o.exitCode == 0, sourceLocation: sourceLocation)
        let storm = try #require(o.summary.storms.first, sourceLocation: sourceLocation)
        #expect(storm.affected == UInt64(clients), sourceLocation: sourceLocation)
        #expect(storm.recovered == UInt64(clients), sourceLocation: sourceLocation)
        #expect(storm.gaveUp == 0, sourceLocation: sourceLocation)
        let p50 = try #require(storm.recoveryMs["p50"] ?? nil, sourceLocation: sourceLocation)
        let p100 = try #require(storm.recoveryMs["p100"] ?? nil, sourceLocation: sourceLocation)
        #expect(p50 > 0 && p50 <= p100, sourceLocation: sourceLocation)
        #expect(o.summary.messages.accountingClosed, sourceLocation: sourceLocation)
        #expect(o.summary.counters["reconnected"] == UInt64(clients), sourceLocation: sourceLocation)
        let folder = try #require(o.resultsFolder, sourceLocation: sourceLocation)
        let csv = try String(contentsOf: folder.appendingPathComponent("storm-1.csv"), encoding: .utf8)
        let rows = csv.split(separator: "\n").dropFirst().map { $0.split(separator: ",").compactMap { UInt64($0) } }
        #expect(rows.reduce(0) { $0 + $1[2] } == UInt64(clients), "successes per 100 ms add up", sourceLocation: sourceLocation)
        #expect(rows.last?[3] == UInt64(clients), sourceLocation: sourceLocation)
    }

    @Test(arguments: [StormMode.reset, .close])
    func chatClientsHitByAStormAllReconnect(_ mode: StormMode) throws {
        var s = chatScenario(name: "chat-storm-\(mode.rawValue)", clients: 20, duration: 2, rate: 40)
        s.reconnect = .delays([0, 0.2, 0.5])
        s.events = [ScenarioEvent(atSeconds: 0.5, kind: .storm(fraction: 1, mode: mode))]
        try expectFullRecovery(try run(s), clients: 20)
    }

    @Test(arguments: [StormMode.reset, .close])
    func hubClientsHitByAStormAllReconnect(_ mode: StormMode) throws {
        var s = hubScenario("hub-storm-\(mode.rawValue)", target: .embedded, transport: .webSockets, protocolKind: .json, clients: 10,
                            duration: 2, rate: 40, operation: .invoke, method: "Echo", arguments: [.stamp])
        s.hub?.reconnect = .signalRDefault
        s.events = [ScenarioEvent(atSeconds: 0.5, kind: .storm(fraction: 1, mode: mode))]
        try expectFullRecovery(try run(s), clients: 10)
    }

    @Test func clientsWithoutAReconnectPolicyGiveUpAndAreCounted() throws {
        var s = chatScenario(name: "chat-storm-no-policy", clients: 10, duration: 1.5, rate: 20)
        s.events = [ScenarioEvent(atSeconds: 0.5, kind: .storm(fraction: 1, mode: .reset))]
        let o = try run(s)
        let storm = try #require(o.summary.storms.first)
        #expect(storm.affected == 10 && storm.recovered == 0 && storm.gaveUp == 10)
        #expect(storm.recoveryMs["p50"] == .some(nil))
        #expect(o.summary.messages.accountingClosed)
    }
}

/// Messages that fall due while clients reconnect are either dropped and counted, or queued and
/// sent after the reconnect (their latency counted from the intended time); the accounting
/// closes either way.
@Suite(.serialized)
struct DisconnectedSendsTests {
    func stormScenario(_ mode: DisconnectedSends) -> Scenario {
        var s = chatScenario(name: "disconnected-\(mode.rawValue)", clients: 10, duration: 2, rate: 40)
        s.reconnect = .delays([0.6])
        s.whileDisconnected = mode
        s.events = [ScenarioEvent(atSeconds: 0.5, kind: .storm(fraction: 1, mode: .reset))]
        return s
    }

    @Test func droppedMessagesAreCountedLostWithTheirReason() throws {
        let o = try run(stormScenario(.drop))
        let m = o.summary.messages
        #expect(m.accountingClosed)
        #expect(m.lostByReason["dropped_while_disconnected"]! >= 10)
        #expect(o.summary.storms.first?.recovered == 10)
    }

    @Test func queuedMessagesAreSentAfterTheReconnectAndDelivered() throws {
        let o = try run(stormScenario(.queue))
        let m = o.summary.messages
        #expect(m.accountingClosed)
        #expect(m.lostByReason["dropped_while_disconnected"] == 0)
        #expect(m.delivered + m.lostByReason["connection_closed"]! == m.sent)
        // The queued messages waited out the gap: their corrected latency shows it.
        #expect(try #require(o.summary.latencyMicros["round_trip"]).max >= 300_000)
    }
}
