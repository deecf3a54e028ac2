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
        // Each merged interval, by the second it starts in, with every metric's histogram.
        var seconds: [Int: MetricsShard] = [:]
        var ends: [Int: Double] = [:]
        for m in LatencyMetric.allCases {
            guard let log = merged.logs[m.key] else { continue }
            for interval in log.intervals {
                totals.histograms[m.rawValue].add(interval.histogram)
                let second = Int(interval.startSeconds.rounded(.down))
                seconds[second, default: MetricsShard()].histograms[m.rawValue].add(interval.histogram)
                ends[second] = max(ends[second] ?? 0, interval.startSeconds + interval.lengthSeconds)
            }
        }
        // The scenario's named latencies (keys no built-in metric has) and counters, by key.
        for (key, log) in merged.logs where LatencyMetric(key: key) == nil {
            let i = totals.named.addLatency(key)
            for interval in log.intervals {
                totals.named.histograms[i].add(interval.histogram)
                let second = Int(interval.startSeconds.rounded(.down))
                let j = seconds[second, default: MetricsShard()].named.addLatency(key)
                seconds[second]!.named.histograms[j].add(interval.histogram)
                ends[second] = max(ends[second] ?? 0, interval.startSeconds + interval.lengthSeconds)
            }
        }
        for (key, n) in s.flow?.counters ?? [:] { totals.named.counters[totals.named.addCounter(key)] = n }
        var evaluator = ThresholdEvaluator(specs)
        let messageStart = s.phasesSeconds.rampUp
        var lastMessageSeconds = 0.0
        for (second, shard) in seconds.sorted(by: { $0.key < $1.key }) {
            let start = Double(second), end = ends[second] ?? start + 1
            let window: (start: Double, end: Double)? = start >= messageStart ? (start - messageStart, end - messageStart) : nil
            // runSeconds -1: a merge stops nothing, so no `abort_on_fail` delay applies.
            evaluator.add(interval: shard, messageSeconds: window, runSeconds: -1, totals: totals)
            if let window { lastMessageSeconds = window.end }
        }
        return GeneratorDelay.judge(evaluator.finish(totals: totals, storms: s.storms, messageSeconds: lastMessageSeconds),
                                    lagMicros: s.generator.maxTimerLagMicros, saturated: s.generator.saturated)
    }
}
