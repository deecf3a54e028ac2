import StampedeMetrics
import Testing

struct MetricsShardTests {
    @Test func addingShardsMergesHistogramsExactlyInsteadOfAveragingPercentiles() {
        var fast = MetricsShard(), slow = MetricsShard()
        for _ in 0..<99 { fast.record(.roundTrip, nanoseconds: 1_000_000) }     // 1 ms
        slow.record(.roundTrip, nanoseconds: 500_000_000)                         // 500 ms
        var merged = fast
        merged.add(slow)
        let h = merged.histograms[LatencyMetric.roundTrip.rawValue]
        #expect(h.totalCount == 100)
        #expect(h.valueAtPercentile(50) == fast.histograms[LatencyMetric.roundTrip.rawValue].valueAtPercentile(50))
        // The single slow sample is the maximum: merging keeps the tail a per-loop average would hide.
        #expect(h.max >= 499_000 && h.max <= 501_000)
    }

    @Test func countersLossesAndErrorsAddUp() {
        var a = MetricsShard(), b = MetricsShard()
        a.count(.messagesSent, 5); b.count(.messagesSent, 7)
        a.lose(.timedOut, 2); b.lose(.connectionClosed)
        a.error(.protocolError); b.error(.protocolError)
        b.upgradeStatuses[503] = 4
        a.add(b)
        #expect(a[.messagesSent] == 12)
        #expect(a[.messagesLost] == 3)
        #expect(a.lostCount(.timedOut) == 2 && a.lostCount(.connectionClosed) == 1)
        #expect(a.errorCount(.protocolError) == 2)
        #expect(a.upgradeStatuses[503] == 4)
    }

    @Test func recordClampsToTheHistogramRangeAndStoresMicroseconds() {
        var s = MetricsShard()
        s.record(.fanout, nanoseconds: 0)                  // below 1 µs: recorded as 1 µs
        s.record(.fanout, nanoseconds: 7_200_000_000_000)  // two hours: clamped to one hour
        let h = s.histograms[LatencyMetric.fanout.rawValue]
        #expect(h.totalCount == 2)
        #expect(h.min == 1)
        #expect(h.max >= 3_590_000_000)
    }

    @Test func resetClearsEverythingButKeepsWorking() {
        var s = MetricsShard()
        s.count(.connected, 3); s.error(.ioError); s.record(.upgrade, nanoseconds: 5_000)
        s.upgradeStatuses[404] = 1
        s.reset()
        #expect(s[.connected] == 0)
        #expect(s.errors.allSatisfy { $0 == 0 })
        #expect(s.upgradeStatuses.isEmpty)
        #expect(s.histograms.allSatisfy { $0.totalCount == 0 })
        s.record(.upgrade, nanoseconds: 5_000)
        #expect(s.histograms[LatencyMetric.upgrade.rawValue].totalCount == 1)
    }

    @Test func everyEnumCaseHasADistinctKey() {
        #expect(Set(Counter.allCases.map(\.key)).count == Counter.allCases.count)
        #expect(Set(ErrorClass.allCases.map(\.key)).count == ErrorClass.allCases.count)
        #expect(Set(LatencyMetric.allCases.map(\.key)).count == LatencyMetric.allCases.count)
        #expect(Set(LossReason.allCases.map(\.key)).count == LossReason.allCases.count)
    }
}
