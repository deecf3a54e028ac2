import StampedeScenario
import Testing

/// The `thresholds:` block: every form the issue shows loads as written, and every mistake names
/// its line and field (a misspelt metric with a suggestion).
private let head = "target: embedded\nclients: 10\nduration: 60s\n"

private func load(_ thresholds: String) throws(ScenarioError) -> Scenario {
    try ScenarioLoader.parse(yaml: head + "thresholds:\n" + thresholds, file: "t.yaml")
}

private func refusal(_ thresholds: String) -> ScenarioError? {
    do { _ = try load(thresholds); return nil } catch { return error }
}

@Test func everyThresholdFormOfTheIssueLoads() throws {
    let s = try load("""
          round_trip: ["p(99) < 50ms", "p(99.9) < 200ms"]
          fanout: ["p(99)<100"]
          errors: ["rate < 0.1%"]
          errors.tls_verify_failed: ["count == 0"]
          messages.lost: ["count == 0", "rate <= 0.001"]
          connections.failed: ["rate < 1%"]
          storms.recovery_p100: ["max < 5s"]
          round_trip@steady: {conditions: ["p(99) < 40ms"], after: 30s, window: 10s}
          tcp_connect: {conditions: ["p(95) < 5ms", "mean >= 250us", "max != 2s"], abort_on_fail: true, delay: 10s}
          round_trip_uncorrected: ["min > 1µs", "count >= 100"]
          counters.reconnected: ["count == 0"]
        """)
    #expect(s.thresholds.map(\.key) == [
        "round_trip", "fanout", "errors", "errors.tls_verify_failed", "messages.lost", "connections.failed",
        "storms.recovery_p100", "round_trip@steady", "tcp_connect", "round_trip_uncorrected", "counters.reconnected",
    ])
    let rt = s.thresholds[0]
    #expect(rt.conditions.map(\.statistic) == [.percentile(99), .percentile(99.9)])
    #expect(rt.conditions.map(\.limit) == [50_000, 200_000])
    #expect(rt.conditions[0].comparison == .less && !rt.isWindowed && !rt.abortOnFail && rt.line == 5)
    #expect(s.thresholds[1].conditions[0].limit == 100_000, "a plain number is milliseconds")
    #expect(s.thresholds[2].conditions[0].limit == 0.001 && s.thresholds[2].conditions[0].statistic == .rate)
    #expect(s.thresholds[4].conditions[1].limit == 0.001 && s.thresholds[4].conditions[1].comparison == .lessOrEqual)
    #expect(s.thresholds[6].conditions[0].limit == 5_000_000)
    let steady = s.thresholds[7]
    #expect(steady.metric == "round_trip" && steady.label == "steady" && steady.afterSeconds == 30 && steady.windowSeconds == 10)
    let connect = s.thresholds[8]
    #expect(connect.abortOnFail && connect.delaySeconds == 10 && !connect.isWindowed)
    #expect(connect.conditions.map(\.comparison) == [.less, .greaterOrEqual, .notEqual])
    #expect(connect.conditions.map(\.limit) == [5000, 250, 2_000_000])
    #expect(s.thresholds[9].conditions.map(\.limit) == [1, 100])
}

@Test func aMisspeltMetricIsRefusedWithASuggestionAndItsLine() throws {
    let e = try #require(refusal("  round_trip: [\"p(99) < 50ms\"]\n  round_trp: [\"p(99) < 50ms\"]\n"))
    #expect(e.line == 6 && e.field == "thresholds.round_trp")
    #expect(e.message == "unknown metric 'round_trp': did you mean 'round_trip'?")
    #expect(refusal("  errors.tls_verify_faild: [\"count == 0\"]\n")?.message.contains("did you mean 'errors.tls_verify_failed'?") == true)
    #expect(refusal("  nonsense_metric_name: [\"count == 0\"]\n")?.message.contains("counters.<key>") == true)
}

@Test func badConditionsAreRefusedNamingTheConditionField() throws {
    let cases: [(String, String)] = [
        ("round_trip: [\"p(99) 50ms\"]", "expected an operator"),
        ("round_trip: [\"p(0) < 50ms\"]", "0 < N ≤ 100"),
        ("round_trip: [\"p(101) < 50ms\"]", "0 < N ≤ 100"),
        ("round_trip: [\"avg < 50ms\"]", "did you mean 'mean'?"),
        ("round_trip: [\"rate < 1%\"]", "'rate' does not apply"),
        ("round_trip: [\"p(99) < 50 parsecs\"]", "expected a duration"),
        ("round_trip: [\"p(99) < -5ms\"]", "expected a duration"),
        ("errors: [\"p(99) < 5ms\"]", "does not apply"),
        ("errors: [\"rate < lots\"]", "percentage"),
        ("messages.lost: [\"count == many\"]", "expected a count"),
        ("storms.recovery_p99: [\"mean < 5s\"]", "does not apply"),
        ("round_trip: [\"p(99) =< 50ms\"]", "expected"),
    ]
    for (entry, expected) in cases {
        let e = try #require(refusal("  \(entry)\n"), "\(entry) was accepted")
        #expect(e.line == 5 && e.field.hasSuffix("[0]"), "\(entry): \(e)")
        #expect(e.message.contains(expected), "\(entry): \(e.message)")
    }
}

@Test func badThresholdShapesAndSettingsAreRefused() throws {
    let cases: [(String, String, String)] = [
        ("  round_trip: \"p(99) < 50ms\"\n", "thresholds.round_trip", "expected a list of conditions"),
        ("  round_trip: []\n", "thresholds.round_trip", "expected a list of conditions"),
        ("  round_trip: {after: 10s}\n", "thresholds.round_trip.conditions", "missing required field 'conditions'"),
        ("  round_trip: {conditions: [\"max < 1s\"], windw: 10s}\n", "thresholds.round_trip.windw", "did you mean 'window'?"),
        ("  round_trip: {conditions: [\"max < 1s\"], window: 500ms}\n", "thresholds.round_trip.window", "at least 1s"),
        ("  round_trip: {conditions: [\"max < 1s\"], delay: 5s}\n", "thresholds.round_trip.delay", "abort_on_fail"),
        ("  round_trip: {conditions: [\"max < 1s\"], after: 90s}\n", "thresholds.round_trip.after", "not before the end"),
        ("  round_trip: {conditions: [\"max < 1s\"], abort_on_fail: yes please}\n", "thresholds.round_trip.abort_on_fail", "true or false"),
        ("  storms.recovery_p50: {conditions: [\"max < 1s\"], window: 10s}\n", "thresholds.storms.recovery_p50", "no windows"),
        ("  round_trip@: [\"max < 1s\"]\n", "thresholds.round_trip@", "label"),
        ("  round_trip@a b: [\"max < 1s\"]\n", "thresholds.round_trip@a b", "label"),
    ]
    for (entry, field, expected) in cases {
        let e = try #require(refusal(entry), "\(entry) was accepted")
        #expect(e.line == 5 && e.field == field, "\(entry): \(e)")
        #expect(e.message.contains(expected), "\(entry): \(e.message)")
    }
    #expect((try? ScenarioLoader.parse(yaml: head + "thresholds: [round_trip]\n", file: "t.yaml")) == nil)
}
