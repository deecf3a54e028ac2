import Foundation
import StampedeMetrics
import StampedeReport
import StampedeScenario

/// A scenario's thresholds judged on a merge of results folders (`stampede merge --scenario`),
/// as the engine judges them on one run: totals from the merged counters, errors and histograms;
/// windows from the merged per-second latency intervals. A merged folder has no per-interval
/// counters, so a windowed threshold on a count or rate sees no window (and fails as unjudged).
public enum MergedThresholds {
    /// The judged thresholds, or nil when `specs` is empty.
    public static func judge(_ specs: [ThresholdSpec], _ merged: ResultsMerge.Merged) -> [RunSummary.Threshold]? {
        guard !specs.isEmpty else { return nil }
        let s = merged.summary
        var totals = MetricsShard()
        for c in Counter.allCases { totals.counters[c.rawValue] = s.counters[c.key] ?? 0 }
        for e in ErrorClass.allCases { totals.errors[e.rawValue] = s.errors[e.key] ?? 0 }
        // Each merged interval, by the second it starts in, with every metric's histogram: the
        // metrics' merged logs are walked side by side, one second at a time, so what is in
        // memory is one second's intervals whatever the length of the runs. (`combine` has read
        // every log through already; one that fails now ends where it fails.)
        let keys = merged.logs.keys.sorted { (LatencyMetric(key: $0)?.rawValue ?? Int.max, $0) < (LatencyMetric(key: $1)?.rawValue ?? Int.max, $1) }
        let walks = keys.map { merged.logs[$0]!.intervals() }
        var heads = walks.map { try? $0.next() }
        for key in keys where LatencyMetric(key: key) == nil { _ = totals.named.addLatency(key) }
        var evaluator = ThresholdEvaluator(specs)
        let messageStart = s.phasesSeconds.rampUp
        var lastMessageSeconds = 0.0
        while let second = heads.compactMap({ $0.map { Int($0.startSeconds.rounded(.down)) } }).min() {
            var shard = MetricsShard()
            var end = 0.0
            for (k, key) in keys.enumerated() {
                while let interval = heads[k], Int(interval.startSeconds.rounded(.down)) == second {
                    if let m = LatencyMetric(key: key) {
                        totals.histograms[m.rawValue].add(interval.histogram)
                        shard.histograms[m.rawValue].add(interval.histogram)
                    } else {
                        totals.named.histograms[totals.named.addLatency(key)].add(interval.histogram)
                        shard.named.histograms[shard.named.addLatency(key)].add(interval.histogram)
                    }
                    end = max(end, interval.startSeconds + interval.lengthSeconds)
                    heads[k] = try? walks[k].next()
                }
            }
            let start = Double(second)
            let window: (start: Double, end: Double)? = start >= messageStart ? (start - messageStart, end - messageStart) : nil
            // runSeconds -1: a merge stops nothing, so no `abort_on_fail` applies (the totals
            // passed are those so far, as in a run).
            evaluator.add(interval: shard, messageSeconds: window, runSeconds: -1, totals: totals)
            if let window { lastMessageSeconds = window.end }
        }
        for (key, n) in s.flow?.counters ?? [:] { totals.named.counters[totals.named.addCounter(key)] = n }
        return GeneratorDelay.judge(evaluator.finish(totals: totals, storms: s.storms, messageSeconds: lastMessageSeconds),
                                    lagMicros: s.generator.maxTimerLagMicros, saturated: s.generator.saturated)
    }
}
