import Foundation
import StampedeLive
import StampedeMetrics
import Testing

/// The renderer, from a fixed snapshot to exact text: names, metadata, bucket arithmetic,
/// escaping and format negotiation.
@Suite struct OpenMetricsTextTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// A small run: a few messages, one lost, two errors, six round trips (50 µs ×3, 150 µs ×2,
    /// 1.5 ms), every value exact in the HdrHistogram (below 2048 µs).
    static func fixtureSnapshot() -> LiveSnapshot {
        var shard = MetricsShard()
        shard.count(.messagesSent, 10)
        shard.count(.messagesDelivered, 6)
        shard.count(.fanoutReceived, 18)
        shard.lose(.timedOut)
        shard.count(.messagesLost)
        shard.error(.connectRefused)
        shard.error(.connectRefused)
        shard.count(.connectAttempts, 4)
        shard.count(.connected, 2)
        shard.count(.connectFailed, 2)
        shard.count(.bytesSent, 1234)
        shard.count(.bytesReceived, 5678)
        for (v, n) in [(50, 3), (150, 2), (1500, 1)] {
            for _ in 0..<n { shard.record(.roundTrip, nanoseconds: UInt64(v) * 1000) }
        }
        var s = LiveSnapshot(scenario: "chat broadcast", workload: "chat", phase: "messages")
        s.totals = shard
        s.elapsedSeconds = 3.5
        s.open = 2
        s.connecting = 1
        s.reconnecting = 0
        s.clients = 3
        s.timerLagSeconds = 0.00025
        s.processCPURatio = 0.5
        s.clientLoopCPURatio = 0.125
        s.loops = 2
        s.residentBytes = 52_428_800
        return s
    }

    /// Compares with the fixture; STAMPEDE_UPDATE_FIXTURES=1 rewrites it (review the diff).
    func expectFixture(_ text: String, _ name: String) throws {
        let url = Self.fixtures.appendingPathComponent(name)
        if ProcessInfo.processInfo.environment["STAMPEDE_UPDATE_FIXTURES"] == "1" {
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOf: url, encoding: .utf8)
        #expect(text == expected)
    }

    @Test func aSnapshotRendersAsTheFixtureOpenMetricsText() throws {
        let text = OpenMetricsText.render(Self.fixtureSnapshot())
        try expectFixture(text, "snapshot.openmetrics")
        #expect(text.hasSuffix("# EOF\n"))
    }

    /// A run of several populations: one exposition, each family once, with every
    /// population's samples under it, told apart by their `population` label.
    @Test func severalSnapshotsRenderEachFamilyOnceWithEverySnapshotsSamples() throws {
        var a = Self.fixtureSnapshot(), b = Self.fixtureSnapshot()
        a.labels["population"] = "listeners"
        b.labels["population"] = "publishers"
        let text = OpenMetricsText.render([a, b])
        #expect(text.hasSuffix("# EOF\n") && text.components(separatedBy: "# EOF").count == 2)
        var seen: Set<String> = [], current = ""
        for line in text.split(separator: "\n").map(String.init) {
            if line.hasPrefix("# TYPE ") {
                current = String(line.split(separator: " ")[2])
                #expect(seen.insert(current).inserted, "family \(current) twice")
            } else if !line.hasPrefix("#") {
                #expect(line.hasPrefix(current), "\(line) outside its family \(current)")
            }
        }
        let sent = text.split(separator: "\n").filter { $0.hasPrefix("stampede_messages_sent_total{") }
        #expect(sent.count == 2)
        #expect(sent.contains { $0.contains("population=\"listeners\"") } && sent.contains { $0.contains("population=\"publishers\"") })
        // One snapshot alone renders as it always did.
        #expect(OpenMetricsText.render([a]) == OpenMetricsText.render(a))
    }

    @Test func aSnapshotRendersAsTheFixturePrometheusText() throws {
        let text = OpenMetricsText.render(Self.fixtureSnapshot(), format: .prometheusText)
        try expectFixture(text, "snapshot.prom")
        #expect(!text.contains("# EOF"))
        #expect(!text.contains("# UNIT"))
    }

    @Test func bucketsAreCumulativeMonotoneAndEndWithTheCount() {
        var h = makeLatencyHistogram()
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            // Spread over 1 µs … 100 s on a log scale.
            let v = UInt64(pow(10.0, Double.random(in: 0...8, using: &rng)))
            _ = h.record(max(1, v))
        }
        let buckets = OpenMetricsText.cumulativeBuckets(h)
        #expect(buckets.count == OpenMetricsText.latencyBounds.count + 1)
        #expect(zip(buckets, buckets.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(buckets.last == h.totalCount)
        // Each bucket holds exactly the values at or below its bound (exact below 2048 µs).
        #expect(buckets[0] == h.count(within: 0...100))
        #expect(buckets[3] == h.count(within: 0...1000))
    }

    /// What makes the buckets mergeable: two generators' buckets add up to the buckets of
    /// their merged histogram, exactly.
    @Test func bucketsOfTwoHistogramsAddUpToTheBucketsOfTheirSum() {
        var a = makeLatencyHistogram(), b = makeLatencyHistogram()
        var rng = SystemRandomNumberGenerator()
        for i in 0..<4000 {
            let v = max(1, UInt64(pow(10.0, Double.random(in: 0...8, using: &rng))))
            _ = i % 3 == 0 ? a.record(v) : b.record(v)
        }
        var sum = a
        sum.add(b)
        let added = zip(OpenMetricsText.cumulativeBuckets(a), OpenMetricsText.cumulativeBuckets(b)).map { $0 + $1 }
        #expect(added == OpenMetricsText.cumulativeBuckets(sum))
    }

    @Test func aValueOnABoundCountsInThatBucketAndBeyondTheLastOnlyInInf() {
        var h = makeLatencyHistogram()
        _ = h.record(100)          // exactly 0.0001 s
        _ = h.record(101)
        _ = h.record(100_000_000)  // 100 s: past 60 s
        let b = OpenMetricsText.cumulativeBuckets(h)
        #expect(b[0] == 1)
        #expect(b[1] == 2)
        #expect(b[OpenMetricsText.latencyBounds.count - 1] == 2)
        #expect(b[OpenMetricsText.latencyBounds.count] == 3)
    }

    @Test func theBoundsAreTheirLabelsInSeconds() {
        #expect(OpenMetricsText.latencyBounds.count == OpenMetricsText.latencyBoundsMicros.count)
        for (text, micros) in zip(OpenMetricsText.latencyBounds, OpenMetricsText.latencyBoundsMicros) {
            #expect(Double(text) == Double(micros) / 1e6)
        }
    }

    @Test func labelValuesAreEscaped() {
        var s = LiveSnapshot(scenario: "a\"b\\c\nd", workload: "chat")
        s.labels = ["step": "3", "bad-name": "x", "le": "1", "__x": "y"]
        let text = OpenMetricsText.render(s)
        #expect(text.contains(#"stampede_messages_sent_total{scenario="a\"b\\c\nd",workload="chat",step="3"} 0"#))
        #expect(!text.contains("bad-name"))
        #expect(!text.contains("__x"))
        #expect(!text.contains(#"le="1""#))
        // No raw line feed inside a label: every line is a comment or a sample.
        for line in text.split(separator: "\n") { #expect(line.hasPrefix("#") || line.hasPrefix("stampede_")) }
    }

    @Test func onlyLatenciesWithSamplesGetAHistogram() {
        let text = OpenMetricsText.render(Self.fixtureSnapshot())
        #expect(text.contains("# TYPE stampede_round_trip_seconds histogram"))
        #expect(!text.contains("stampede_fanout_seconds"))
        #expect(!text.contains("stampede_tcp_connect_seconds"))
    }

    @Test func anUnknownPhaseIsAStateOfItsOwn() {
        let text = OpenMetricsText.render(LiveSnapshot(scenario: "s", workload: "chat", phase: "warming"))
        #expect(text.contains(#"stampede_run_phase{scenario="s",workload="chat",stampede_run_phase="warming"} 1"#))
        #expect(text.contains(#"stampede_run_phase{scenario="s",workload="chat",stampede_run_phase="starting"} 0"#))
    }

    @Test func theAcceptHeaderPicksTheFormat() {
        #expect(ExpositionFormat.negotiate(accept: nil) == .openMetrics)
        #expect(ExpositionFormat.negotiate(accept: "*/*") == .openMetrics)
        #expect(ExpositionFormat.negotiate(accept: "text/plain") == .prometheusText)
        #expect(ExpositionFormat.negotiate(accept: "text/plain;version=0.0.4;q=1,*/*;q=0.1") == .prometheusText)
        // What Prometheus 2.x sends.
        #expect(ExpositionFormat.negotiate(accept: "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1") == .openMetrics)
        #expect("\(ExpositionFormat.openMetrics.contentType)" == "application/openmetrics-text; version=1.0.0; charset=utf-8")
    }
}

@Suite struct OpenMetricsNamedTests {
    @Test func namedLatenciesFlowCountersAndServerClosesHaveTheirFamilies() {
        var s = LiveSnapshot(scenario: "flow", workload: "websocket", phase: "messages")
        s.totals.named = NamedMetrics(latencyKeys: ["ack", "connect_flow"], counterKeys: ["flow.ack.matched"])
        s.totals.named.record(0, nanoseconds: 3_000_000)
        s.totals.named.count(0, 4)
        s.totals.countClose(code: 4401, reason: "auth \"first\"", 2)
        let text = OpenMetricsText.render(s)
        #expect(text.contains("# TYPE stampede_latency_seconds histogram"))
        #expect(text.contains("stampede_latency_seconds_count{scenario=\"flow\",workload=\"websocket\",metric=\"ack\"} 1"))
        #expect(text.contains("stampede_latency_seconds_bucket{scenario=\"flow\",workload=\"websocket\",metric=\"ack\",le=\"0.005\"} 1"))
        #expect(!text.contains("metric=\"connect_flow\""))  // no samples yet
        #expect(text.contains("stampede_flow_events_total{scenario=\"flow\",workload=\"websocket\",counter=\"flow.ack.matched\"} 4"))
        #expect(text.contains("stampede_server_closes_total{scenario=\"flow\",workload=\"websocket\",close=\"4401 auth \\\"first\\\"\"} 2"))
        #expect(text.hasSuffix("# EOF\n"))
    }
}
