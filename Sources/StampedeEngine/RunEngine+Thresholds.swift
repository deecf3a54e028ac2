import Foundation
import StampedeMetrics
import StampedeReport
import StampedeScenario

// The scenario's thresholds as the run goes. At every interval boundary (RunEngine+Intervals.swift)
// the merged interval goes into the window each windowed entry is filling; a window is judged
// when the next one begins (or the run ends). `abort_on_fail` entries are judged there too, once
// their delay has passed: over the totals so far, or as each window closes. At the end every
// other entry is judged over the run's totals, the numbers summary.json shows.
extension RunEngine {
    /// Called at every interval boundary, after `merged` (the interval `fromNs`…`toNs`) went into the totals.
    func thresholdBoundary(_ merged: MetricsShard, fromNs: UInt64, toNs: UInt64, final: Bool) {
        let specs = scenario.thresholds
        guard !specs.isEmpty else { return }
        if messageStartNs > 0 {
            // An interval belongs to the window its midpoint falls in (intervals are ~1 s, windows ≥ 1 s).
            let middle = fromNs / 2 + toNs / 2
            let offset = middle >= messageStartNs ? seconds(middle - messageStartNs) : -1
            for (i, spec) in specs.enumerated() where spec.isWindowed {
                let after = spec.afterSeconds ?? 0
                guard offset >= after else { continue }
                let index = spec.windowSeconds.map { Int(min((offset - after) / $0, 1e9)) } ?? 0
                if let current = thresholdBook.entries[i].windowIndex, current != index { closeWindow(i, nowNs: toNs) }
                thresholdBook.entries[i].windowIndex = index
                thresholdBook.entries[i].window.add(merged)
            }
        }
        if final {
            for i in specs.indices where thresholdBook.entries[i].windowIndex != nil { closeWindow(i, nowNs: toNs) }
        }
        guard thresholdBook.abortReason == nil, !final else { return }
        let runSeconds = seconds(toNs &- runStartNs)
        for (i, spec) in specs.enumerated() where spec.abortOnFail && !spec.isWindowed && runSeconds >= spec.delaySeconds {
            guard let kind = spec.kind, !kind.isEndOfRunOnly else { continue }
            for (j, condition) in spec.conditions.enumerated() {
                guard let value = ThresholdMeasure.observe(kind, condition.statistic, in: totals, storms: nil),
                      !condition.comparison.holds(value, condition.limit) else { continue }
                abortRun(entry: i, condition: j, observed: value, window: nil)
                return
            }
        }
    }

    /// Judges the window entry `i` has been filling, then starts it afresh.
    private func closeWindow(_ i: Int, nowNs: UInt64) {
        let spec = scenario.thresholds[i]
        guard let index = thresholdBook.entries[i].windowIndex, let kind = spec.kind else { return }
        let start = (spec.afterSeconds ?? 0) + Double(index) * (spec.windowSeconds ?? 0)
        let end = spec.windowSeconds.map { start + $0 } ?? max(start, seconds(nowNs &- messageStartNs))
        let window = thresholdBook.entries[i].window
        let mayAbort = spec.abortOnFail && seconds(nowNs &- runStartNs) >= spec.delaySeconds
        for (j, condition) in spec.conditions.enumerated() {
            guard let value = ThresholdMeasure.observe(kind, condition.statistic, in: window, storms: nil) else { continue }
            thresholdBook.entries[i].conditions[j].windowsEvaluated += 1
            if condition.comparison.holds(value, condition.limit) {
                let worst = thresholdBook.entries[i].conditions[j].worst
                if worst.map({ ThresholdBook.worse(value, than: $0, condition.comparison) }) ?? true {
                    thresholdBook.entries[i].conditions[j].worst = value
                }
            } else if thresholdBook.entries[i].conditions[j].firstFailure == nil {
                thresholdBook.entries[i].conditions[j].firstFailure = (start, end, value)
                if mayAbort && thresholdBook.abortReason == nil {
                    abortRun(entry: i, condition: j, observed: value, window: (start, end))
                }
            }
        }
        thresholdBook.entries[i].window.reset()
        thresholdBook.entries[i].windowIndex = nil
    }

    private func abortRun(entry i: Int, condition j: Int, observed: Double, window: (Double, Double)?) {
        let spec = scenario.thresholds[i]
        let condition = spec.conditions[j]
        thresholdBook.entries[i].conditions[j].abortedRun = true
        let unit = spec.kind.map { ThresholdMeasure.unit($0, condition.statistic) } ?? "count"
        var reason = "threshold \(spec.key) \(condition.text) failed (\(ThresholdMeasure.text(observed, unit: unit))"
        if let (start, end) = window {
            reason += " in the window \(ThresholdMeasure.trimmed(start))s–\(ThresholdMeasure.trimmed(end))s"
        }
        thresholdBook.abortReason = reason + ")"
    }

    /// Every condition judged at the end of the run; nil when the scenario has no thresholds.
    func thresholdResults(storms: [RunSummary.Storm]) -> [RunSummary.Threshold]? {
        guard !scenario.thresholds.isEmpty else { return nil }
        var results: [RunSummary.Threshold] = []
        for (i, spec) in scenario.thresholds.enumerated() {
            guard let kind = spec.kind else { continue }
            for (j, condition) in spec.conditions.enumerated() {
                let unit = ThresholdMeasure.unit(kind, condition.statistic)
                let state = thresholdBook.entries[i].conditions[j]
                let observed: Double?
                let passed: Bool
                var result = RunSummary.Threshold(
                    metric: spec.metric, label: spec.label, condition: condition.text, observed: nil, unit: unit,
                    limit: condition.limit, observedText: "", passed: false, abortedRun: state.abortedRun)
                if spec.isWindowed {
                    observed = state.firstFailure?.observed ?? state.worst
                    // No window with anything to judge is not a pass.
                    passed = state.firstFailure == nil && state.windowsEvaluated > 0
                    result.windowsEvaluated = state.windowsEvaluated
                    result.failingWindow = state.firstFailure.map { .init(startSeconds: rounded($0.start), endSeconds: rounded($0.end)) }
                } else {
                    observed = ThresholdMeasure.observe(kind, condition.statistic, in: totals, storms: storms)
                    passed = !state.abortedRun && (observed.map { condition.comparison.holds($0, condition.limit) } ?? false)
                }
                result.observedText = ThresholdMeasure.text(observed, unit: unit)
                // JSON has no infinity: a storm never recovered from is null, "never".
                result.observed = observed.flatMap { $0.isFinite ? rounded($0) : nil }
                result.passed = passed
                results.append(result)
            }
        }
        return results
    }

    private func rounded(_ v: Double) -> Double { (v * 1000).rounded() / 1000 }
}

extension RunEngine {
    /// The run's exit status: a failed run (1) and an interrupted one (130) first; then, when the
    /// scenario has thresholds, saturation (98: neither pass nor fail is reported) before a failed
    /// threshold (99).
    static func exitCode(failed: Bool, interrupted: Bool, thresholds: [RunSummary.Threshold]?, saturated: Bool) -> Int32 {
        if failed { return RunExitStatus.runFailed }
        if interrupted { return RunExitStatus.interrupted }
        guard let thresholds, !thresholds.isEmpty else { return RunExitStatus.passed }
        if saturated { return RunExitStatus.saturated }
        return thresholds.allSatisfy(\.passed) ? RunExitStatus.passed : RunExitStatus.thresholdFailed
    }
}
