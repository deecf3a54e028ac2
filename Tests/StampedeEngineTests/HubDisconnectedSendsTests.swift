import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import Testing

/// Hub clients honour `while_disconnected` (issue 4, item 4): calls that fall due while a client
/// reconnects after a storm are either dropped and counted, or queued and sent after the
/// handshake with their latency counted from the intended time; the accounting closes either way.
@Suite(.serialized)
struct HubDisconnectedSendsTests {
    /// 10 clients at 40 calls/s in all (one call per client every 250 ms); every WebSocket is reset
    /// at 0.5 s and each client waits `delay` before its full restart.
    func stormScenario(_ mode: DisconnectedSends, delay: Double = 0.6, duration: Double = 2) -> Scenario {
        var s = hubScenario("hub-disconnected-\(mode.rawValue)", target: .embedded, transport: .webSockets, protocolKind: .json,
                            clients: 10, duration: duration, rate: 40, operation: .invoke, method: "Echo", arguments: [.stamp])
        s.hub?.reconnect = .delays([delay])
        s.whileDisconnected = mode
        s.events = [ScenarioEvent(atSeconds: 0.5, kind: .storm(fraction: 1, mode: .reset))]
        return s
    }

    @Test func droppedCallsAreCountedSentAndLostWhileDisconnected() throws {
        let o = try run(stormScenario(.drop))
        let m = o.summary.messages
        #expect(o.exitCode == 0)
        #expect(o.summary.storms.first?.recovered == 10)
        let dropped = try #require(m.lostByReason["dropped_while_disconnected"])
        // Each client misses at least two of its 250 ms slots during its 0.6 s gap.
        #expect(dropped >= 10, "\(m.lostByReason)")
        #expect(m.sent == m.delivered + m.failed + m.lost, "sent \(m.sent) delivered \(m.delivered) failed \(m.failed) lost \(m.lost)")
        #expect(m.accountingClosed)
        // Dropped calls never reached the transport.
        #expect(o.summary.counters["sent_websockets"] == m.sent - dropped)
    }

    @Test func queuedCallsAreSentAfterTheReconnectAndDelivered() throws {
        let o = try run(stormScenario(.queue))
        let m = o.summary.messages
        #expect(o.exitCode == 0)
        #expect(o.summary.storms.first?.recovered == 10)
        #expect(m.lostByReason["dropped_while_disconnected"] == 0, "\(m.lostByReason)")
        #expect(m.sent == m.delivered + m.failed + m.lost, "sent \(m.sent) delivered \(m.delivered) failed \(m.failed) lost \(m.lost)")
        #expect(m.accountingClosed)
        // Every call went over the transport; only those in flight at the reset were lost.
        #expect(o.summary.counters["sent_websockets"] == m.sent)
        #expect(m.delivered + (m.lostByReason["connection_closed"] ?? 0) == m.sent)
        // The queued calls waited out the gap: their latency, counted from the intended time, shows it.
        #expect(try #require(o.summary.latencyMicros["round_trip"]).max >= 300_000)
    }

    @Test func queuedCallsOfAClientThatNeverGetsBackAreCountedLostAtTheEnd() throws {
        // The reconnect delay outlasts the run: the queue is still waiting when the run closes.
        let o = try run(stormScenario(.queue, delay: 30, duration: 1.5))
        let m = o.summary.messages
        #expect(o.exitCode == 0)
        #expect(o.summary.storms.first?.recovered == 0)
        #expect(try #require(m.lostByReason["dropped_while_disconnected"]) >= 10, "\(m.lostByReason)")
        #expect(m.sent == m.delivered + m.failed + m.lost)
        #expect(m.accountingClosed)
    }

    /// Closed model: nothing is due while disconnected (so nothing is dropped), and a client that
    /// reconnects starts calling again (its chain used to stop at the drop).
    @Test func closedModelClientsDropNothingAndCallAgainAfterTheReconnect() throws {
        var s = stormScenario(.drop, delay: 0.2, duration: 3)
        s.loadModel = .closed
        s.thinkTimeSeconds = 0.05
        let o = try run(s)
        let m = o.summary.messages
        #expect(o.exitCode == 0)
        #expect(o.summary.storms.first?.recovered == 10)
        #expect(m.lostByReason["dropped_while_disconnected"] == 0, "\(m.lostByReason)")
        #expect(m.accountingClosed)
        // Calls were sent well after the storm at 0.5 s.
        let folder = try #require(o.resultsFolder)
        let csv = try String(contentsOf: folder.appendingPathComponent("timeseries.csv"), encoding: .utf8)
        var late: UInt64 = 0
        for line in csv.split(separator: "\n").dropFirst() {
            let cells = line.split(separator: ",")
            guard cells.count > 2, let elapsed = Double(cells[0]), elapsed > 1.5 else { continue }
            late += UInt64(cells[2]) ?? 0
        }
        #expect(late > 0)
    }
}
