import StampedeReport

/// What a saturated generator can and cannot do to a verdict (the rule capacity steps use too).
///
/// Every latency is measured from the intended send time, so the generator's own delay only ever
/// adds to it, by at most its worst timer lag to a send and as much to the read of the reply.
/// A latency ceiling that holds despite the delay holds; one missed by more than twice the lag is
/// the server's miss. Only what the delay could have decided is left unjudged.
public enum GeneratorDelay {
    /// Intervals in a row (one a second) whose timers ran late, or whose client loops were at
    /// full CPU, before the generator counts as saturated: one late tick (a scheduler
    /// hiccup, a neighbour's burst) adds its lag to a few samples, not to the figures.
    public static let sustainedIntervals = 2
    /// Timers later than this mean the generator, not the server, is adding latency.
    public static let lateTimerNs: UInt64 = 10_000_000
    /// Client loops busier than this share of their cores mean the generator is the limit.
    public static let busyLoopCPUShare = 0.95

    /// Whether `t` failed by more than the generator could add: a latency ceiling (`<`, `<=`)
    /// whose observed value, less twice `lagMicros`, is still over the limit.
    public static func failsBeyondLag(_ t: RunSummary.Threshold, lagMicros: Double) -> Bool {
        guard !t.passed, t.unit == "us", let observed = t.observed, isCeiling(t.condition) else { return false }
        return observed - 2 * lagMicros > t.limit
    }

    /// The gate's verdict on `t`. Unsaturated, the condition decides. Saturated, a condition
    /// that held passes unless the delay could have made it hold (a latency floor, `>`), one
    /// that failed beyond the lag fails, and every other is unjudged.
    public static func verdict(_ t: RunSummary.Threshold, lagMicros: Double, saturated: Bool) -> RunSummary.Threshold.Verdict {
        guard saturated else { return t.passed ? .pass : .fail }
        if t.passed { return t.unit == "us" && !isCeiling(t.condition) ? .unjudged : .pass }
        return failsBeyondLag(t, lagMicros: lagMicros) ? .fail : .unjudged
    }

    /// `thresholds` with their verdicts and the generator's lag beside each.
    public static func judge(_ thresholds: [RunSummary.Threshold]?, lagMicros: UInt64, saturated: Bool) -> [RunSummary.Threshold]? {
        thresholds?.map { t in
            var t = t
            t.verdict = verdict(t, lagMicros: Double(lagMicros), saturated: saturated)
            t.generatorLagMicros = lagMicros
            return t
        }
    }

    /// Whether the condition ("p(99) < 50ms") is an upper limit: `<` or `<=`.
    static func isCeiling(_ condition: String) -> Bool {
        guard let op = condition.firstIndex(where: { "<>=!".contains($0) }) else { return false }
        return condition[op] == "<"
    }
}

/// Whether the generator was saturated, judged on sustained lateness and CPU, not on one spike
/// (see `GeneratorDelay.sustainedIntervals`). Fed one interval at a time during the message
/// phase and the drain.
public struct SaturationWatch: Sendable, Equatable {
    var lateStreak = 0
    var busyStreak = 0
    /// Timers ran late for `sustainedIntervals` intervals in a row at least once.
    public private(set) var sustainedLateness = false
    /// The client loops were at full CPU for `sustainedIntervals` intervals in a row at least once.
    public private(set) var sustainedBusyLoops = false

    public init() {}

    public var saturated: Bool { sustainedLateness || sustainedBusyLoops }

    /// One interval: its worst timer lag, and its client loops' CPU (percent of one core, summed
    /// over `loops` loops).
    public mutating func add(timerLagNs: UInt64, clientLoopCPUPercent: Double, loops: Int) {
        lateStreak = timerLagNs > GeneratorDelay.lateTimerNs ? lateStreak + 1 : 0
        let busy = loops > 0 && clientLoopCPUPercent >= GeneratorDelay.busyLoopCPUShare * 100 * Double(loops)
        busyStreak = busy ? busyStreak + 1 : 0
        if lateStreak >= GeneratorDelay.sustainedIntervals { sustainedLateness = true }
        if busyStreak >= GeneratorDelay.sustainedIntervals { sustainedBusyLoops = true }
    }
}
