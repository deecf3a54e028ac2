import Foundation
@testable import StampedeReport
import StampedeMetrics
import Testing
#if canImport(FoundationXML)
import FoundationXML
#endif

/// `stampede compare`'s statistics on histograms small enough to check by hand, the verdict
/// rule on synthetic runs, and every output format parsing back.
@Suite struct CompareStatisticsTests {
    static func histogram(_ values: [UInt64]) -> LatencyHistogram {
        var h = makeLatencyHistogram()
        for v in values { _ = h.record(v) }
        return h
    }

    /// `intervals` histograms of `perInterval` values around `center` µs (± `spread`), from a fixed seed.
    static func run(intervals: Int = 10, perInterval: Int = 200, center: Double, spread: Double, seed: UInt64,
                    tail: (share: Double, value: Double)? = nil) -> [LatencyHistogram] {
        var rng = SplitMix64(seed: seed)
        return (0..<intervals).map { _ in
            var h = makeLatencyHistogram()
            for _ in 0..<perInterval {
                let u = Double(rng.next() % 1_000_000) / 1_000_000
                var v = center + (u - 0.5) * 2 * spread
                if let tail, Double(rng.next() % 1_000_000) / 1_000_000 < tail.share { v = tail.value }
                _ = h.record(UInt64(max(1, v)))
            }
            return h
        }
    }

    @Test func kolmogorovSmirnovAndWassersteinMatchHandComputedValues() {
        let a = Self.histogram([1, 2, 3]), b = Self.histogram([2, 3, 4])
        // CDFs at 1,2,3,4: a 1/3 2/3 1 1, b 0 1/3 2/3 1 → largest gap 1/3; area 3 × 1/3 × 1 µs = 1 µs.
        #expect(abs(HistogramStatistics.kolmogorovSmirnov(a, b) - 1.0 / 3) < 1e-12)
        #expect(abs(HistogramStatistics.wasserstein(a, b) - 1) < 1e-12)
        let c = Self.histogram(Array(repeating: 100, count: 10)), d = Self.histogram(Array(repeating: 200, count: 10))
        #expect(HistogramStatistics.kolmogorovSmirnov(c, d) == 1)
        #expect(HistogramStatistics.wasserstein(c, d) == 100)
        #expect(HistogramStatistics.kolmogorovSmirnov(a, a) == 0 && HistogramStatistics.wasserstein(a, a) == 0)
        // Half the mass moves by 10 µs: W = 0.5 × 10.
        #expect(HistogramStatistics.wasserstein(Self.histogram([10, 20]), Self.histogram([10, 30])) == 5)
        #expect(HistogramStatistics.kolmogorovSmirnov(a, makeLatencyHistogram()) == 0)
    }

    @Test func bootstrapIsDeterministicForItsSeedAndBracketsTheWholeRunValue() {
        let intervals = Self.run(center: 1000, spread: 300, seed: 1)
        let one = HistogramStatistics.bootstrap(intervals: intervals, percentiles: [50, 90], resamples: 300, seed: 42)
        let two = HistogramStatistics.bootstrap(intervals: intervals, percentiles: [50, 90], resamples: 300, seed: 42)
        #expect(one.map(\.low) == two.map(\.low) && one.map(\.high) == two.map(\.high))
        let merged = MetricComparison.merge(intervals)
        #expect(one[0].low <= merged.valueAtPercentile(50) && merged.valueAtPercentile(50) <= one[0].high)
        #expect(one[0].low < one[0].high, "ten intervals of random values vary")
        // One interval: every resample is that interval, so the interval is a point.
        let single = HistogramStatistics.bootstrap(intervals: [intervals[0]], percentiles: [50], resamples: 100)
        #expect(single[0].low == single[0].high && single[0].low == intervals[0].valueAtPercentile(50))
        #expect(HistogramStatistics.bootstrap(intervals: [], percentiles: [50]).first?.low == 0)
    }

    @Test func verdictsFollowTheRule() {
        var s = CompareSettings()
        s.resamples = 200
        let base = Self.run(center: 1000, spread: 300, seed: 1)
        func verdict(_ current: [LatencyHistogram], _ settings: CompareSettings = s) -> CompareVerdict {
            MetricComparison.make(metric: "round_trip", baseline: base, current: current, settings: settings).verdict
        }
        #expect(verdict(Self.run(center: 1000, spread: 300, seed: 2)) == .noChange)
        #expect(verdict(Self.run(center: 3000, spread: 300, seed: 3)) == .slower)
        #expect(verdict(Self.run(center: 500, spread: 150, seed: 4)) == .faster)
        #expect(verdict(Self.run(center: 1000, spread: 300, seed: 5, tail: (0.03, 20_000))) == .spreadChanged)
        #expect(verdict(Self.run(intervals: 2, center: 3000, spread: 300, seed: 6)) == .tooFewSamples)
        // Within a wide tolerance a real shift is not called a change.
        var wide = s
        wide.tolerance = 3
        #expect(verdict(Self.run(center: 3000, spread: 300, seed: 3), wide) == .noChange)
    }

    static func report(gateTripped: Bool) -> CompareReport {
        var s = CompareSettings()
        s.resamples = 100
        let m = MetricComparison.make(metric: "round_trip", baseline: run(center: 1000, spread: 300, seed: 1),
                                      current: run(center: 3000, spread: 300, seed: 2), settings: s)
        return CompareReport(baseline: "a <&> \"b\"", current: "c", tolerancePercent: 10, resamples: 100, seed: 1, metrics: [m],
                             notes: ["x"], figures: [CompareFigure("messages sent/s", 100, 99)], verdict: m.verdict,
                             failOn: [.slower], gateTripped: gateTripped)
    }

    @Test func everyFormatParsesBack() throws {
        let r = Self.report(gateTripped: true)
        let decoded = try JSONDecoder().decode(CompareReport.self, from: Data(r.rendered(.json).utf8))
        #expect(decoded == r)
        let junit = r.rendered(.junit)
        #if canImport(FoundationXML)
        let doc = try XMLDocument(xmlString: junit)
        #expect(try doc.nodes(forXPath: "//testcase").count == 1)
        #expect(try doc.nodes(forXPath: "//testcase/failure").count == 1)
        #else
        #expect(junit.hasPrefix("<?xml") && junit.contains("<failure") && !junit.contains("<&>"))
        #endif
        let md = r.rendered(.markdown)
        #expect(md.contains("| `round_trip` | p50 |") && md.contains("slower"))
        let table = r.rendered(.table)
        #expect(table.contains("round_trip: SLOWER (gated)") && table.contains("verdict: slower (gate FAILED)"))
    }

    @Test func badFlagsAreRefusedNamingTheFlag() {
        let cases: [(String, String?, String, String?, Int, String)] = [
            ("html", nil, "10%", nil, 1000, "--format"), ("json", "worse", "10%", nil, 1000, "--fail-on"),
            ("json", "no-change", "10%", nil, 1000, "--fail-on"), ("json", nil, "-5%", nil, 1000, "--tolerance"),
            ("json", nil, "abc", nil, 1000, "--tolerance"), ("json", nil, "5%", ",", 1000, "--metrics"),
            ("json", nil, "5%", nil, 5, "--resamples"),
        ]
        for (format, failOn, tolerance, metrics, resamples, flag) in cases {
            do {
                _ = try CompareCommandLine.options(format: format, failOn: failOn, tolerance: tolerance, metrics: metrics, resamples: resamples)
                Issue.record("\(flag) case accepted")
            } catch {
                #expect(error.description.contains(flag), "\(error)")
            }
        }
        let o = try? CompareCommandLine.options(format: "junit", failOn: "slower,spread-changed", tolerance: "5%", metrics: "round_trip", resamples: 1000)
        #expect(o?.settings.tolerance == 0.05 && o?.failOn == [.slower, .spreadChanged] && o?.settings.gated == ["round_trip"])
    }
}
