import StampedeMetrics
import StampedeReport
import StampedeScenario

/// One SLO condition of a capacity step judged with stated confidence.
///
/// A latency statistic (a percentile, `max`, `min`) is bootstrapped over the step's intervals:
/// `resamples` times, as many intervals as the window holds are drawn with replacement, their
/// histograms merged (counts, not samples) and the statistic taken (`HistogramStatistics.bootstrap`).
/// The resamples' lower and upper `1 − confidence` tails bound the whole window's figure, each
/// one-sided at `confidence`. The condition passes when the worse bound meets it (the upper one
/// for `<`), fails when even the better one misses it, and is borderline in between. Everything
/// else (a `mean`, error and loss rates, `==`) is decided by the whole window's figure, as is
/// every condition when `byPointEstimate` (the retry of a borderline step).
struct SLOBounds {
    enum Decision: String { case pass, fail, borderline }
    var decision: Decision
    /// The bounds, µs (nil when the condition was not bootstrapped).
    var low: Double?
    var high: Double?
    var confidence: Double
    /// The statistic over each interval alone, µs, in increasing order (empty when not bootstrapped).
    var perInterval: [Double] = []

    /// "90% bounds 41ms … 57ms".
    var boundsText: String {
        guard let low, let high else { return "" }
        return "\(ThresholdMeasure.trimmed(confidence * 100))% bounds \(ThresholdMeasure.text(low, unit: "us")) … \(ThresholdMeasure.text(high, unit: "us"))"
    }

    /// The spread for capacity.json, for the SLO result `r` these bounds belong to.
    func spread(of r: RunSummary.Threshold) -> CapacityResult.Spread? {
        guard let low, let high, let first = perInterval.first, let last = perInterval.last else { return nil }
        let n = perInterval.count
        let median = n % 2 == 1 ? perInterval[n / 2] : (perInterval[n / 2 - 1] + perInterval[n / 2]) / 2
        return CapacityResult.Spread(slo: "\(r.metric) \(r.condition)", intervals: n, min: first, median: ThresholdEvaluator.rounded(median),
                                     max: last, low: low, high: high, confidence: confidence, decision: decision.rawValue)
    }

    /// One entry per SLO result, in the order `ThresholdEvaluator.finish` gives them (each spec's
    /// conditions in turn).
    static func judge(_ results: [RunSummary.Threshold], specs: [ThresholdSpec], window: StepWindow, resamples: Int, seed: UInt64,
                      confidence: Double, byPointEstimate: Bool) -> [SLOBounds] {
        var out: [SLOBounds] = []
        for spec in specs {
            guard let kind = spec.kind else { continue }
            for condition in spec.conditions {
                guard out.count < results.count else { return out }
                let r = results[out.count]
                var b = SLOBounds(decision: r.passed ? .pass : .fail, confidence: confidence)
                if let point = r.observed, !spec.isWindowed, let key = latencyKey(kind), let percentile = percentile(condition.statistic),
                   let ceiling = isCeiling(condition.comparison), let bins = window.latencyIntervals[key] {
                    let parts = bins.bins.map(\.histogram).filter { $0.totalCount > 0 }
                    if !parts.isEmpty {
                        let drawn = HistogramStatistics.bootstrap(parts: parts, percentiles: [percentile], resamples: resamples, seed: seed,
                                                                  level: 2 * confidence - 1)[0]
                        // A resample reports its bucket's top edge; like the point estimate, keep within
                        // what was recorded, and keep the point estimate within its bounds.
                        let recordedMin = Double(parts.map(\.min).min() ?? 0), recordedMax = Double(parts.map(\.max).max() ?? 0)
                        let low = min(max(Double(drawn.low), recordedMin), point), high = max(min(Double(drawn.high), recordedMax), point)
                        b.low = low; b.high = high
                        b.perInterval = parts.map { Double($0.latencyValue(atPercentile: percentile)) }.sorted()
                        if !byPointEstimate {
                            let (worse, better) = ceiling ? (high, low) : (low, high)
                            b.decision = condition.comparison.holds(worse, condition.limit) ? .pass
                                : condition.comparison.holds(better, condition.limit) ? .borderline : .fail
                        }
                    }
                }
                out.append(b)
            }
        }
        return out
    }

    static func latencyKey(_ kind: ThresholdMetricKind) -> String? {
        switch kind {
        case .latency(let key), .named(let key): key
        default: nil
        }
    }

    /// The percentile a statistic is (`max` is the 100th, `min` the 0th); nil for one that is not.
    static func percentile(_ s: ThresholdStatistic) -> Double? {
        switch s {
        case .percentile(let p): p
        case .max: 100
        case .min: 0
        case .mean, .count, .rate: nil
        }
    }

    /// True for an upper limit (`<`, `<=`), false for a lower one; nil for `==` and `!=`.
    static func isCeiling(_ c: ThresholdComparison) -> Bool? {
        switch c {
        case .less, .lessOrEqual: true
        case .greater, .greaterOrEqual: false
        case .equal, .notEqual: nil
        }
    }
}
