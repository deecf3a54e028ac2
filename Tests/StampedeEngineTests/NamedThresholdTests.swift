import StampedeEngine
import StampedeMetrics
import StampedeScenario
import Testing

/// Thresholds on what a scenario names (a WebSocket flow's `ack` reply and rule counters).
@Suite struct NamedThresholdTests {
    static let names = ThresholdNames(latencies: ["ack", "ack_uncorrected"], counters: ["flow.ack.matched"])

    static func slo(_ text: String) throws -> ThresholdSpec {
        switch ThresholdSpec.parseSLO(text, names: names) {
        case .success(let spec): return spec
        case .failure(let p): throw p
        }
    }

    /// Intervals of `ack` latencies (ms) and matched counts.
    static func judge(_ specs: [ThresholdSpec], ackMillis: [UInt64], matched: UInt64) -> [Bool] {
        var evaluator = ThresholdEvaluator(specs)
        var totals = MetricsShard()
        var m = MetricsShard()
        m.named = NamedMetrics(latencyKeys: ["ack", "ack_uncorrected"], counterKeys: ["flow.ack.matched"])
        for ms in ackMillis { m.named.record(0, nanoseconds: ms * 1_000_000) }
        m.named.count(0, matched)
        totals.add(m)
        evaluator.add(interval: m, messageSeconds: (0, 1), runSeconds: 1, totals: totals)
        return (evaluator.finish(totals: totals, storms: [], messageSeconds: 1) ?? []).map(\.passed)
    }

    @Test func aDeclaredLatencyNameIsAcceptedAndAnUndeclaredOneIsNot() {
        #expect(ThresholdMetricKind("ack", names: Self.names) == .named("ack"))
        #expect(ThresholdMetricKind("counters.flow.ack.matched", names: Self.names) == .counter("flow.ack.matched"))
        #expect(ThresholdMetricKind("confirm") == nil)
        #expect(ThresholdMetricKind("ack") == .latency("ack"), "Socket.IO's built-in, unless a flow declares its own")
        #expect(ThresholdMetricKind("round_trip", names: Self.names) == .latency("round_trip"))
        if case .success = ThresholdSpec.parseSLO("confirm p(99) < 50ms") { Issue.record("an undeclared name was accepted") }
    }

    @Test func aThresholdOnANamedLatencyPassesAndFails() throws {
        let spec = try Self.slo("ack p(99) < 50ms")
        #expect(spec.kind == .named("ack"))
        #expect(Self.judge([spec], ackMillis: [5, 10, 20], matched: 3) == [true])
        #expect(Self.judge([spec], ackMillis: [5, 10, 200], matched: 3) == [false])
    }

    @Test func aThresholdOnANamedCounterPassesAndFails() throws {
        let spec = try Self.slo("counters.flow.ack.matched count > 2")
        #expect(Self.judge([spec], ackMillis: [5], matched: 3) == [true])
        #expect(Self.judge([spec], ackMillis: [5], matched: 1) == [false])
    }

    @Test func aNamedLatencyWithNoSamplesDoesNotPass() throws {
        let spec = try Self.slo("ack_uncorrected p(99) < 50ms")
        #expect(Self.judge([spec], ackMillis: [5], matched: 1) == [false])
    }
}
