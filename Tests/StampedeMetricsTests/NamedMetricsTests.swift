import StampedeMetrics
import Testing

@Suite struct NamedMetricsTests {
    static func ack() -> NamedMetrics { NamedMetrics(latencyKeys: ["ack", "ack_uncorrected"], counterKeys: ["flow.ack.matched"]) }

    @Test func recordAndCountGoToTheirIndex() {
        var n = Self.ack()
        n.record(1, nanoseconds: 2_000_000)
        n.count(0, 5)
        #expect(n.histogram("ack")?.totalCount == 0)
        #expect(n.histogram("ack_uncorrected")?.totalCount == 1)
        #expect(n.histogram("ack_uncorrected")?.max ?? 0 >= 1999)
        #expect(n.counter("flow.ack.matched") == 5)
        #expect(n.histogram("nope") == nil && n.counter("nope") == nil)
    }

    @Test func addingShardsWithTheSameKeysAddsByPosition() {
        var a = Self.ack(), b = Self.ack()
        a.record(0, nanoseconds: 1_000_000); b.record(0, nanoseconds: 3_000_000)
        a.count(0); b.count(0, 2)
        a.add(b)
        #expect(a.latencyKeys == ["ack", "ack_uncorrected"])
        #expect(a.histograms[0].totalCount == 2 && a.counters == [3])
    }

    @Test func addingShardsWithOtherKeysAddsByKeyAndAdoptsNewOnes() {
        var total = NamedMetrics()
        var a = Self.ack()
        a.record(0, nanoseconds: 1_000_000); a.count(0, 4)
        var b = NamedMetrics(latencyKeys: ["event", "ack"], counterKeys: ["flow.unrecognised", "flow.ack.matched"])
        b.record(0, nanoseconds: 5_000_000); b.record(1, nanoseconds: 2_000_000); b.count(0, 7); b.count(1, 1)
        total.add(a)
        total.add(b)
        #expect(total.latencyKeys == ["ack", "ack_uncorrected", "event"])
        #expect(total.histogram("ack")?.totalCount == 2 && total.histogram("event")?.totalCount == 1)
        #expect(total.counter("flow.ack.matched") == 5 && total.counter("flow.unrecognised") == 7)
    }

    @Test func resetKeepsKeysAndClearsValues() {
        var n = Self.ack()
        n.record(0, nanoseconds: 1_000_000); n.count(0)
        n.reset()
        #expect(n.latencyKeys == ["ack", "ack_uncorrected"] && n.counterKeys == ["flow.ack.matched"])
        #expect(n.histograms.allSatisfy { $0.totalCount == 0 } && n.counters == [0])
    }

    @Test func aShardAddsAndResetsItsNamedMetrics() {
        var total = MetricsShard()
        var s = MetricsShard()
        s.named = Self.ack()
        s.named.record(0, nanoseconds: 1_000_000)
        total.add(s)
        total.add(s)
        #expect(total.named.histogram("ack")?.totalCount == 2)
        #expect(total.latenciesWithSamples.map(\.key) == ["ack"])
        #expect(total.latencyHistogram(key: "ack")?.totalCount == 2)
        total.reset()
        #expect(total.named.latencyKeys == ["ack", "ack_uncorrected"] && total.latenciesWithSamples.isEmpty)
    }
}

@Suite struct CloseCodeCountTests {
    @Test func closesCountByCodeAndReason() {
        var s = MetricsShard()
        s.countClose(code: 4401, reason: "auth first", 20)
        s.countClose(code: 1000, reason: "")
        s.countClose(code: nil, reason: "")
        #expect(s.closeCodes == ["4401 auth first": 20, "1000": 1, "no code": 1])
    }

    @Test func atMostAHundredDistinctClosesThenOther() {
        var s = MetricsShard()
        for i in 0..<150 { s.countClose(code: 4000, reason: "r\(i)") }
        #expect(s.closeCodes.count == MetricsShard.maxDistinctHubErrors + 1)
        #expect(s.closeCodes["(other)"] == 50)
        // A key already counted keeps counting under its own name.
        s.countClose(code: 4000, reason: "r0")
        #expect(s.closeCodes["4000 r0"] == 2)
    }

    @Test func aLongReasonIsCutOnACharacterBoundary() {
        var s = MetricsShard()
        s.countClose(code: 4000, reason: String(repeating: "é", count: 100))  // 200 bytes
        let key = try! #require(s.closeCodes.keys.first)
        #expect(key.hasPrefix("4000 é") && key.hasSuffix("…"))
        #expect(key.utf8.count <= 5 + MetricsShard.maxCloseReasonBytes)
    }

    @Test func shardsAddTheirClosesStepErrorsAndSamples() {
        var a = MetricsShard(), b = MetricsShard()
        a.countClose(code: 4401, reason: "auth first")
        b.countClose(code: 4401, reason: "auth first", 2)
        b.countStepError("expect_timeout: connect step 2")
        for text in ["one", "two", "three", "four"] {
            Array(text.utf8).withUnsafeBytes { b.keepSample($0, isText: true) }
        }
        a.add(b)
        #expect(a.closeCodes == ["4401 auth first": 3])
        #expect(a.stepErrors == ["expect_timeout: connect step 2": 1])
        #expect(a.samples == ["one", "two", "three"])
        a.reset()
        #expect(a.closeCodes.isEmpty && a.stepErrors.isEmpty && a.samples.isEmpty)
    }

    @Test func aBinarySampleIsKeptAsHexCut() {
        var s = MetricsShard()
        [UInt8](repeating: 0xAB, count: 300).withUnsafeBytes { s.keepSample($0, isText: false) }
        #expect(s.samples == [String(repeating: "ab", count: 100)])
    }
}
