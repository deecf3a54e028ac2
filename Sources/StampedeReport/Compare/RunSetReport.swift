import Foundation
import StampedeMetrics

/// What `stampede compare` says with several runs a side (`--baseline A1 A2 … --current B1 B2 …`)
/// or against a history (`--history DIR CURRENT`), as `--format json` writes it (schema
/// `stampede.compare-runs/1`).
public struct RunSetReport: Codable, Sendable, Equatable {
    public var schema = "stampede.compare-runs/1"
    public var mode: RunSetMode
    public var baseline: [String]
    public var current: [String]
    public var tolerancePercent: Double
    public var alpha: Double
    public var metrics: [RunSetMetric]
    public var notes: [String]
    /// Throughput, errors and accounting: each side's median run.
    public var figures: [CompareFigure]
    public var verdict: CompareVerdict
    public var failOn: [CompareVerdict]
    public var gateTripped: Bool

    enum CodingKeys: String, CodingKey {
        case schema, mode, baseline, current, alpha, metrics, notes, figures, verdict
        case tolerancePercent = "tolerance_pct"
        case failOn = "fail_on"
        case gateTripped = "gate_tripped"
    }

    /// The percentiles compared across runs: a run of a few thousand samples estimates p99.9
    /// and the maximum too poorly for their run-to-run spread to mean anything.
    static let percentiles: [(name: String, value: Double)] = [("p50", 50), ("p90", 90), ("p99", 99)]
    /// Bootstrap replicates kept per run and percentile, for the hierarchical bootstrap.
    static let replicatesPerRun = 200

    /// Reads every folder and compares the sides. Throws `CompareError` naming the folder or file.
    public static func make(mode: RunSetMode, baseline: [URL], current: [URL], settings: CompareSettings,
                            rule: RunSetRule, failOn: [CompareVerdict]) throws -> RunSetReport {
        var notes: [String] = []
        // A run cut short (interrupted, or stopped by a threshold's abort) measured less than
        // its scenario asked for: it would pull its side's median, so it is left out, and said.
        var b = try baseline.map(CompareInput.init), c = try current.map(CompareInput.init)
        if mode == .pairs {
            guard b.count == c.count else {
                throw CompareError("--paired needs as many baseline runs as current runs (pairs made together), got \(b.count) and \(c.count)")
            }
            let kept = zip(b, c).filter { !$0.summary.partial && !$1.summary.partial }
            if kept.count < b.count { notes.append("\(b.count - kept.count) pairs with a partial run left out") }
            (b, c) = (kept.map(\.0), kept.map(\.1))
        } else {
            for run in b + c where run.summary.partial { notes.append("\(run.folder.path): partial run, left out") }
            (b, c) = (b.filter { !$0.summary.partial }, c.filter { !$0.summary.partial })
        }
        for (side, runs) in [(mode == .history ? "history" : "baseline", b), ("current", c)] where runs.isEmpty {
            throw CompareError("the \(side) side has no whole run to compare (every one is partial)")
        }
        var metrics: [RunSetMetric] = []
        let keys = Set(b.flatMap(\.summary.latencyMicros.keys)).union(c.flatMap(\.summary.latencyMicros.keys))
        let ordered = LatencyMetric.allCases.map(\.key).filter(keys.contains) + keys.filter { LatencyMetric(key: $0) == nil }.sorted()
        for key in ordered {
            let inAll = (b + c).allSatisfy { $0.summary.latencyMicros[key] != nil }
            guard inAll else { notes.append("\(key): not in every run"); continue }
            let bs = try b.enumerated().map { try RunSample(input: $1, metric: key, settings: settings, seed: settings.seed &+ UInt64($0)) }
            let cs = try c.enumerated().map { try RunSample(input: $1, metric: key, settings: settings, seed: settings.seed &+ 1000 &+ UInt64($0)) }
            let usable = { (s: [RunSample?]) in s.compactMap { $0 }.filter { $0.count >= settings.minimumSamples } }
            var (ub, uc) = (usable(bs), usable(cs))
            if mode == .pairs {
                // A pair is used only whole.
                let whole = zip(bs, cs).compactMap { x, y in x.flatMap { x in y.map { (x, $0) } } }
                    .filter { $0.0.count >= settings.minimumSamples && $0.1.count >= settings.minimumSamples }
                (ub, uc) = (whole.map(\.0), whole.map(\.1))
            }
            let gated = settings.gated.contains(key)
            let enough = switch mode {
            case .history: ub.count >= RunSetRule.minimumHistory && uc.count == 1
            case .pairs: ub.count >= 2
            case .runs: !ub.isEmpty && !uc.isEmpty
            }
            guard enough else {
                metrics.append(RunSetMetric(metric: key, gated: gated, verdict: .tooFewSamples,
                                            reason: "needs runs of at least \(settings.minimumSamples) samples" + (mode == .history ? " (\(RunSetRule.minimumHistory) in the history)" : "") + " and an interval log",
                                            percentiles: []))
                continue
            }
            if ub.count < bs.count || uc.count < cs.count { notes.append("\(key): \(bs.count + cs.count - ub.count - uc.count) runs left out (no interval log or fewer than \(settings.minimumSamples) samples)") }
            let ps = percentiles.indices.map { k in
                switch mode {
                case .history: historyPercentile(k, ub, uc[0], settings)
                case .pairs: pairsPercentile(k, ub, uc)
                case .runs: runsPercentile(k, ub, uc, settings)
                }
            }
            let p99 = ps.first { $0.name == "p99" }
            let (v, why) = mode == .history ? rule.verdict(history: ps[0], p99: p99)
                : rule.verdict(runs: ps[0], p99: p99, baselineCount: ub.count, currentCount: uc.count)
            metrics.append(RunSetMetric(metric: key, gated: gated, verdict: v, reason: why, percentiles: ps))
        }
        let gatedVerdicts = metrics.filter(\.gated).map(\.verdict)
        let verdict: CompareVerdict = [.slower, .faster, .spreadChanged].first(where: gatedVerdicts.contains)
            ?? (gatedVerdicts.isEmpty || gatedVerdicts.contains(.noChange) ? .noChange : .tooFewSamples)
        return RunSetReport(mode: mode, baseline: b.map(\.folder.path), current: c.map(\.folder.path),
                            tolerancePercent: rule.tolerance * 100, alpha: rule.alpha, metrics: metrics, notes: notes,
                            figures: medianFigures(b.map(\.summary), c.map(\.summary)), verdict: verdict, failOn: failOn,
                            gateTripped: metrics.contains { $0.gated && failOn.contains($0.verdict) })
    }

    static func runsPercentile(_ k: Int, _ b: [RunSample], _ c: [RunSample], _ s: CompareSettings) -> RunSetPercentile {
        let bv = b.map { Double($0.values[k]) }, cv = c.map { Double($0.values[k]) }
        let bm = RunLevelStatistics.median(bv), cm = RunLevelStatistics.median(cv)
        let ci = RunLevelStatistics.hierarchicalChange(baseline: b.map { $0.replicates[k] }, current: c.map { $0.replicates[k] },
                                                       resamples: s.resamples * 2, seed: s.seed)
        return RunSetPercentile(name: percentiles[k].name, baselineRuns: b.map { $0.values[k] }, currentRuns: c.map { $0.values[k] },
                                baselineMedian: bm, currentMedian: cm, changePct: bm > 0 ? (cm / bm - 1) * 100 : 0,
                                lowPct: ci.low * 100, highPct: ci.high * 100, pValue: RunLevelStatistics.mannWhitneyP(bv, cv))
    }

    static func pairsPercentile(_ k: Int, _ b: [RunSample], _ c: [RunSample]) -> RunSetPercentile {
        let bv = b.map { Double($0.values[k]) }, cv = c.map { Double($0.values[k]) }
        let ratio = RunLevelStatistics.pairedChange(baseline: bv, current: cv)
        return RunSetPercentile(name: percentiles[k].name, baselineRuns: b.map { $0.values[k] }, currentRuns: c.map { $0.values[k] },
                                baselineMedian: RunLevelStatistics.median(bv), currentMedian: RunLevelStatistics.median(cv),
                                changePct: ratio.change * 100, lowPct: ratio.low * 100, highPct: ratio.high * 100, pValue: nil)
    }

    static func historyPercentile(_ k: Int, _ history: [RunSample], _ current: RunSample, _ s: CompareSettings) -> RunSetPercentile {
        let hv = history.map { Double($0.values[k]) }, cv = Double(current.values[k])
        let pi = RunLevelStatistics.predictionInterval(hv) ?? (low: 0, center: 0, high: 0)
        let center = pi.center
        let change = { (x: Double) in center > 0 ? (x / center - 1) * 100 : 0 }
        return RunSetPercentile(name: percentiles[k].name, baselineRuns: history.map { $0.values[k] }, currentRuns: [current.values[k]],
                                baselineMedian: center, currentMedian: cv, changePct: change(cv),
                                lowPct: change(pi.low), highPct: change(pi.high), pValue: nil)
    }

    static func medianFigures(_ b: [RunSummary], _ c: [RunSummary]) -> [CompareFigure] {
        let fb = b.map { CompareReport.figures($0, $0) }, fc = c.map { CompareReport.figures($0, $0) }
        guard let names = fb.first?.map(\.name) else { return [] }
        return names.indices.map { i in
            CompareFigure(names[i], RunLevelStatistics.median(fb.map { $0[i].baseline }), RunLevelStatistics.median(fc.map { $0[i].baseline }))
        }
    }
}

/// One run's view of one metric: its whole-run percentiles and their bootstrap replicates.
struct RunSample {
    let count: UInt64
    /// Whole-run p50, p90, p99 (µs), as `RunSetReport.percentiles`.
    let values: [UInt64]
    /// For each percentile, the run's own value then its interval-bootstrap replicates.
    let replicates: [[Double]]

    /// nil when the run has no interval log for the metric.
    init?(input: CompareInput, metric: String, settings: CompareSettings, seed: UInt64) throws {
        guard let bins = try input.intervals(metric, maxBins: settings.resamplingBins) else { return nil }
        let total = bins.total
        count = total.totalCount
        let ps = RunSetReport.percentiles.map(\.value)
        values = ps.map { total.totalCount == 0 ? 0 : total.latencyValue(atPercentile: $0) }
        let drawn = HistogramStatistics.replicates(parts: bins.bins.map(\.histogram), percentiles: ps,
                                                   resamples: RunSetReport.replicatesPerRun, seed: seed)
        replicates = zip(values, drawn).map { [Double($0)] + $1.map(Double.init) }
    }
}
