import StampedeMetrics
import Testing

/// The statistics compiled here for `UInt64` counts give exactly what the package's generic
/// ones give, and clearing a histogram by swapping in the shared empty one behaves as `reset()`.
struct LatencyHistogramStatisticsTests {
    /// Histograms of several shapes: one value, a tight cluster, a long tail, values near the
    /// top of the range, and a bimodal mix.
    static func shapes() -> [LatencyHistogram] {
        var random = SystemRandomNumberGenerator()
        var one = makeLatencyHistogram(); _ = one.record(1234)
        var cluster = makeLatencyHistogram(); for _ in 0..<5_000 { _ = cluster.record(UInt64.random(in: 180...260, using: &random)) }
        var tail = makeLatencyHistogram()
        for _ in 0..<20_000 { _ = tail.record(UInt64(Double.random(in: 0...1, using: &random).squareRoot() * 900) + 1) }
        for _ in 0..<40 { _ = tail.record(UInt64.random(in: 50_000...2_000_000_000, using: &random)) }
        var high = makeLatencyHistogram(); for v: UInt64 in [3_599_999_999, 3_000_000_000, 1_000_000_007] { _ = high.record(v) }
        var bimodal = makeLatencyHistogram(); for i in 0..<1_000 { _ = bimodal.record(i % 2 == 0 ? 2 : 70_000) }
        return [one, cluster, tail, high, bimodal]
    }

    static let percentiles: [Double] = [0, 0.001, 1, 25, 50, 75, 90, 99, 99.9, 99.99, 99.999, 100]

    @Test func meanStandardDeviationAndPercentilesEqualThePackages() {
        for h in Self.shapes() {
            #expect(h.latencyMean == h.mean)
            #expect(h.latencyStandardDeviation == h.stdDeviation)
            for p in Self.percentiles { #expect(h.latencyValue(atPercentile: p) == h.valueAtPercentile(p), "p\(p)") }
        }
        let empty = makeLatencyHistogram()
        #expect(empty.latencyMean == 0 && empty.latencyStandardDeviation == 0)
        for p in Self.percentiles { #expect(empty.latencyValue(atPercentile: p) == empty.valueAtPercentile(p)) }
    }

    @Test func clearingEmptiesTheHistogramAndLeavesCopiesAlone() {
        var h = makeLatencyHistogram()
        for v: UInt64 in [10, 20, 30_000] { _ = h.record(v) }
        let copy = h
        var reset = h
        reset.reset()
        clearLatencyHistogram(&h)
        #expect(h.totalCount == 0 && h.maxRecorded == reset.maxRecorded && h.min == reset.min && h.minNonZero == reset.minNonZero)
        #expect(h.countForValue(10) == 0 && h.countForValue(30_000) == 0)
        #expect(copy.totalCount == 3 && copy.countForValue(30_000) == 1)
        _ = h.record(42)
        #expect(h.totalCount == 1 && h.valueAtPercentile(50) == 42 && makeLatencyHistogram().totalCount == 0)
    }
}
