import Foundation
import StampedeMetrics
import StampedeReport
import StampedeScenario

// The scenario's thresholds as the run goes (the judging itself is `ThresholdEvaluator`, in
// Thresholds.swift). At every interval boundary (RunEngine+Intervals.swift) the merged interval
// goes into the window each windowed entry is filling, and `abort_on_fail` entries are judged
// once their delay has passed; the run loops stop when one failed. At the end every entry is
// judged over the run's totals, the numbers summary.json shows.
extension RunEngine {
    /// Called at every interval boundary, after `merged` (the interval `fromNs`…`toNs`) went into the totals.
    func thresholdBoundary(_ merged: MetricsShard, fromNs: UInt64, toNs: UInt64, final: Bool) {
        guard !scenario.thresholds.isEmpty else { return }
        var window: (start: Double, end: Double)?
        if messageStartNs > 0 {
            let start = fromNs >= messageStartNs ? seconds(fromNs - messageStartNs) : -seconds(messageStartNs - fromNs)
            window = (start, toNs >= messageStartNs ? seconds(toNs - messageStartNs) : 0)
        }
        thresholdBook.add(interval: merged, messageSeconds: window, runSeconds: final ? -1 : seconds(toNs &- runStartNs), totals: totals)
        lastThresholdMessageSeconds = window?.end ?? 0
    }

    /// Every condition judged at the end of the run; nil when the scenario has no thresholds.
    func thresholdResults(storms: [RunSummary.Storm]) -> [RunSummary.Threshold]? {
        thresholdBook.finish(totals: totals, storms: storms, messageSeconds: lastThresholdMessageSeconds)
    }
}

extension RunEngine {
    /// The run's exit status: a failed run (1) and an interrupted one (130) first; then, when the
    /// scenario has thresholds, a threshold failed (99: beyond what a saturated generator could
    /// add), then one unjudged (98: the generator's delay could have decided it), else 0. The
    /// verdicts are `GeneratorDelay`'s.
    static func exitCode(failed: Bool, interrupted: Bool, thresholds: [RunSummary.Threshold]?) -> Int32 {
        if failed { return RunExitStatus.runFailed }
        if interrupted { return RunExitStatus.interrupted }
        guard let thresholds, !thresholds.isEmpty else { return RunExitStatus.passed }
        if thresholds.contains(where: { $0.verdict == .fail }) { return RunExitStatus.thresholdFailed }
        if thresholds.contains(where: { $0.verdict == .unjudged }) { return RunExitStatus.saturated }
        return RunExitStatus.passed
    }
}
