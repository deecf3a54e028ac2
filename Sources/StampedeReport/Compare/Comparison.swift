import Foundation
import StampedeMetrics

/// What `stampede compare` says about one latency metric.
public enum CompareVerdict: String, Codable, Sendable, CaseIterable {
    case faster
    case slower
    case noChange = "no change"
    case spreadChanged = "spread changed"
    /// Too few samples or intervals to estimate the noise: no claim either way.
    case tooFewSamples = "too few samples"
}

/// The knobs of the verdict rule (see docs/compare.md).
public struct CompareSettings: Sendable {
    /// A shift smaller than this share of the baseline is never called a change (0.25 = 25 %):
    /// back-to-back runs of one build on a shared 2-core machine drift by up to ~20 % at p50
    /// (Benchmarks/README.md, the gate's error rates).
    public var tolerance: Double = 0.25
    /// Bootstrap resamples per percentile, and their seed (fixed: the same folders give the same answer).
    public var resamples = 1000
    public var seed: UInt64 = 0x5EED
    /// Metrics whose verdict the gate acts on; the others are reported only.
    public var gated: Set<String> = ["round_trip", "fanout"]
    /// Fewer samples or intervals than this in either run: `tooFewSamples`.
    public var minimumSamples: UInt64 = 200
    public var minimumIntervals = 3
    /// At most this many resampling bins per metric and run: a run of more intervals has
    /// consecutive ones added into bins (`IntervalBins`), which the bootstrap draws instead, so
    /// compare's memory and time do not grow with the run's length.
    public var resamplingBins = 512
    public init() {}
}

/// One percentile of one run: its value on the whole run and its bootstrap interval (µs).
public struct PercentileEstimate: Codable, Sendable, Equatable {
    public var value: UInt64
    public var low: UInt64
    public var high: UInt64
}

/// One run's side of a metric.
public struct MetricSide: Codable, Sendable, Equatable {
    public var count: UInt64
    /// Intervals with samples (what the bootstrap resamples).
    public var intervals: Int
    /// "p50", "p90", "p99", "p99.9", "max" → estimate.
    public var percentiles: [String: PercentileEstimate]
    public var meanMicros: Double
}

/// A latency metric in both runs, with its effect sizes and verdict.
public struct MetricComparison: Codable, Sendable, Equatable {
    public var metric: String
    public var gated: Bool
    public var verdict: CompareVerdict
    /// Why, in a few words ("p50 and p90 up 210 % and 180 %, beyond noise and the 10 % tolerance").
    public var reason: String
    public var baseline: MetricSide
    public var current: MetricSide
    /// Change of each percentile in % of the baseline (nil when the baseline is 0).
    public var changePercent: [String: Double?]
    /// Kolmogorov–Smirnov D (0…1) and the Wasserstein distance (ms), on the exact merged histograms.
    public var ksD: Double
    public var wassersteinMs: Double

    enum CodingKeys: String, CodingKey {
        case metric, gated, verdict, reason, baseline, current
        case changePercent = "change_pct"
        case ksD = "ks_d"
        case wassersteinMs = "wasserstein_ms"
    }
}

/// The percentiles compare reports, in order, with their names.
public let comparePercentiles: [(name: String, value: Double)] = [("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9), ("max", 100)]

extension MetricComparison {
    /// Compares one metric given each run's per-interval histograms (µs).
    public static func make(metric: String, baseline: [LatencyHistogram], current: [LatencyHistogram],
                            settings: CompareSettings) -> MetricComparison {
        make(metric: metric, baseline: bins(baseline), current: bins(current), settings: settings)
    }

    /// Compares one metric given each run's intervals as `IntervalBins` read them (µs).
    public static func make(metric: String, baseline: IntervalBins, current: IntervalBins, settings: CompareSettings) -> MetricComparison {
        let base = side(baseline, settings), cur = side(current, settings)
        var change: [String: Double?] = [:]
        for (name, _) in comparePercentiles {
            let b = Double(base.percentiles[name]?.value ?? 0), c = Double(cur.percentiles[name]?.value ?? 0)
            change[name] = b > 0 ? (c - b) / b * 100 : nil
        }
        let (d, w) = HistogramStatistics.walk(HistogramStatistics.points(baseline.total), HistogramStatistics.points(current.total))
        var m = MetricComparison(metric: metric, gated: settings.gated.contains(metric), verdict: .noChange, reason: "",
                                 baseline: base, current: cur, changePercent: change, ksD: d, wassersteinMs: w / 1000)
        (m.verdict, m.reason) = verdict(base, cur, settings)
        return m
    }

    static func merge(_ intervals: [LatencyHistogram]) -> LatencyHistogram {
        var h = makeLatencyHistogram()
        for i in intervals { h.add(i) }
        return h
    }

    /// Histograms in memory, one bin each.
    static func bins(_ intervals: [LatencyHistogram]) -> IntervalBins {
        var bins = IntervalBins(maxBins: intervals.count)
        for h in intervals { bins.add(HistogramLogInterval(startSeconds: 0, lengthSeconds: 0, histogram: h)) }
        return bins
    }

    static func side(_ bins: IntervalBins, _ s: CompareSettings) -> MetricSide {
        let merged = bins.total
        let cis = HistogramStatistics.bootstrap(parts: bins.bins.map(\.histogram), percentiles: comparePercentiles.map(\.value),
                                                resamples: s.resamples, seed: s.seed)
        var p: [String: PercentileEstimate] = [:]
        for (k, (name, value)) in comparePercentiles.enumerated() {
            let v = merged.totalCount == 0 ? 0 : value >= 100 ? merged.maxRecorded : merged.latencyValue(atPercentile: value)
            p[name] = PercentileEstimate(value: v, low: min(cis[k].low, v), high: max(cis[k].high, v))
        }
        return MetricSide(count: merged.totalCount, intervals: bins.intervalsWithSamples,
                          percentiles: p, meanMicros: merged.totalCount == 0 ? 0 : merged.latencyMean)
    }

    /// The rule (docs/compare.md): a location change needs p50 and p90 to both move the same
    /// way, each beyond its noise (the two runs' bootstrap intervals do not overlap) and beyond
    /// the tolerance; a spread change needs p99 to move beyond its noise and by more than three
    /// tolerances while the middle stays put.
    static func verdict(_ b: MetricSide, _ c: MetricSide, _ s: CompareSettings) -> (CompareVerdict, String) {
        guard b.count >= s.minimumSamples, c.count >= s.minimumSamples,
              b.intervals >= s.minimumIntervals, c.intervals >= s.minimumIntervals else {
            return (.tooFewSamples, "needs at least \(s.minimumSamples) samples in \(s.minimumIntervals) intervals in each run to estimate the noise")
        }
        func est(_ side: MetricSide, _ p: String) -> PercentileEstimate { side.percentiles[p] ?? PercentileEstimate(value: 0, low: 0, high: 0) }
        func shift(_ p: String) -> Double {
            let bv = Double(est(b, p).value)
            return bv > 0 ? (Double(est(c, p).value) - bv) / bv : 0
        }
        func above(_ p: String) -> Bool { est(c, p).low > est(b, p).high }
        func below(_ p: String) -> Bool { est(c, p).high < est(b, p).low }
        let tol = s.tolerance
        let pct = { (x: Double) in String(format: "%+.0f %%", x * 100) }
        let tolText = String(format: "%g %%", tol * 100)
        if above("p50"), above("p90"), shift("p50") > tol, shift("p90") > tol {
            return (.slower, "p50 \(pct(shift("p50"))), p90 \(pct(shift("p90"))): beyond the noise and the \(tolText) tolerance")
        }
        if below("p50"), below("p90"), shift("p50") < -tol, shift("p90") < -tol {
            return (.faster, "p50 \(pct(shift("p50"))), p90 \(pct(shift("p90"))): beyond the noise and the \(tolText) tolerance")
        }
        if abs(shift("p50")) <= tol, (above("p99") || below("p99")), abs(shift("p99")) > 4 * tol {
            return (.spreadChanged, "p99 \(pct(shift("p99"))) beyond its noise while p50 moved \(pct(shift("p50")))")
        }
        return (.noChange, "p50 \(pct(shift("p50"))), p90 \(pct(shift("p90"))): within the noise or the \(tolText) tolerance")
    }
}
