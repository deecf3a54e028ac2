import Foundation
import StampedeMetrics
import StampedeReport
import StampedeScenario

/// Exit statuses of a run (`RunOutcome.exitCode`); `stampede`'s `ExitStatus` lists them with the
/// command line's own (bad input).
public enum RunExitStatus {
    public static let passed: Int32 = 0
    /// The run failed, for example because no client could connect (the results folder still
    /// records the connect errors by class).
    public static let runFailed: Int32 = 1
    /// A threshold failed (k6's convention), at the end or live (`abort_on_fail`).
    public static let thresholdFailed: Int32 = 99
    /// The generator was saturated (summary.json `generator.saturated`: timers late or client
    /// loops at full CPU, sustained) and a threshold is unjudged: its delay could have decided
    /// it (`GeneratorDelay`). A threshold failed beyond the delay makes the run 99 instead.
    public static let saturated: Int32 = 98
    /// Ctrl-C or SIGTERM.
    public static let interrupted: Int32 = 130
}

/// What one threshold condition measures in a set of measurements (the run's totals, or one
/// window's merged intervals).
enum ThresholdMeasure {
    /// The observed value (µs for latencies and storm recovery, a fraction for rates, a number
    /// for counts), or nil when there is nothing to measure (no samples, no storms).
    static func observe(_ kind: ThresholdMetricKind, _ statistic: ThresholdStatistic, in m: MetricsShard,
                        storms: [RunSummary.Storm]?) -> Double? {
        func ratio(_ part: UInt64, _ whole: UInt64) -> Double {
            whole > 0 ? Double(part) / Double(whole) : (part > 0 ? .infinity : 0)
        }
        switch kind {
        case .latency(let key), .named(let key):
            // A named latency absent from the shard (nothing recorded it) has no samples.
            let h = m.latencyHistogram(key: key) ?? makeLatencyHistogram()
            if statistic == .count { return Double(h.totalCount) }
            guard h.totalCount > 0 else { return nil }
            switch statistic {
            case .percentile(let p): return Double(h.latencyValue(atPercentile: p))
            case .max: return Double(h.maxRecorded)
            case .min: return Double(h.min)
            case .mean: return h.latencyMean
            case .count, .rate: return nil
            }
        case .errors(let key):
            let n = key.map { k in ErrorClass.allCases.first { $0.key == k }.map { m.errorCount($0) } ?? 0 } ?? m.errors.reduce(0, &+)
            return statistic == .rate ? ratio(n, m[.connectAttempts]) : Double(n)
        case .messages(let which):
            let counter: Counter = which == "lost" ? .messagesLost : which == "failed" ? .messagesFailed : .messagesDelivered
            return statistic == .rate ? ratio(m[counter], m[.messagesSent]) : Double(m[counter])
        case .connectionsFailed:
            return statistic == .rate ? ratio(m[.connectFailed], m[.connectAttempts]) : Double(m[.connectFailed])
        case .stormRecovery(let p):
            guard let storms else { return nil }
            let affected = storms.filter { $0.affected > 0 }
            guard !affected.isEmpty else { return nil }
            // A storm whose clients did not all come back has no such recovery time: infinitely long.
            return affected.map { ($0.recoveryMs[p] ?? nil).map { $0 * 1000 } ?? .infinity }.max()
        case .counter(let key):
            if let c = Counter.allCases.first(where: { $0.key == key }) { return Double(m[c]) }
            return Double(m.named.counter(key) ?? 0)
        }
    }

    static func unit(_ kind: ThresholdMetricKind, _ statistic: ThresholdStatistic) -> String {
        if statistic.isDuration || kind.isEndOfRunOnly { return "us" }
        return statistic == .rate ? "ratio" : "count"
    }

    /// "63.2ms", "0.12%", "3".
    static func text(_ value: Double?, unit: String) -> String {
        guard let value else { return "no samples" }
        guard value.isFinite else { return "never" }
        switch unit {
        case "us":
            if value < 1000 { return "\(trimmed(value))µs" }
            if value < 1_000_000 { return "\(trimmed(value / 1000))ms" }
            return "\(trimmed(value / 1_000_000))s"
        case "ratio": return "\(trimmed(value * 100))%"
        default: return value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(format: "%.3g", value)
        }
    }

    /// Three significant digits, no trailing zeros: 63.2, 50, 0.125.
    static func trimmed(_ v: Double) -> String {
        var s = String(format: v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : v >= 1 ? "%.2f" : "%.3g", v)
        if s.contains("."), !s.contains("e") {
            while s.hasSuffix("0") { s.removeLast() }
            if s.hasSuffix(".") { s.removeLast() }
        }
        return s
    }
}

/// Judges a scenario's thresholds over a run's measurements: fed every interval as the run goes
/// (windows, `abort_on_fail`), then the totals at the end. Independent of the engine, so that
/// anything holding a run's intervals and totals (a merge of results folders) can judge them too.
public struct ThresholdEvaluator {
    struct ConditionState {
        var windowsEvaluated = 0
        /// Windowed: the first failing window (start, end in seconds of the message phase) and its value.
        var firstFailure: (start: Double, end: Double, observed: Double)?
        /// Windowed: the value of the window nearest to failing, when none failed.
        var worst: Double?
        var abortedRun = false
    }
    struct EntryState {
        var windowIndex: Int?
        var window = MetricsShard()
        var conditions: [ConditionState]
    }
    public let specs: [ThresholdSpec]
    var entries: [EntryState] = []
    /// "threshold round_trip p(99) < 50ms failed (63.2ms)" once an `abort_on_fail` entry failed.
    public private(set) var abortReason: String?

    public init(_ specs: [ThresholdSpec]) {
        self.specs = specs
        entries = specs.map { EntryState(conditions: Array(repeating: ConditionState(), count: $0.conditions.count)) }
    }

    /// One interval of measurements.
    /// - Parameters:
    ///   - messageSeconds: the interval's start and end in seconds of the message phase; nil
    ///     before the message phase (ramp-up), whose intervals belong to no window.
    ///   - runSeconds: seconds since the run started, for `delay`.
    ///   - totals: the totals so far, this interval included (for live `abort_on_fail` entries).
    public mutating func add(interval m: MetricsShard, messageSeconds: (start: Double, end: Double)?, runSeconds: Double,
                             totals: MetricsShard) {
        if let (start, end) = messageSeconds {
            // An interval belongs to the window its middle falls in (intervals are ~1 s, windows ≥ 1 s).
            let middle = (start + end) / 2
            for (i, spec) in specs.enumerated() where spec.isWindowed {
                let after = spec.afterSeconds ?? 0
                guard middle >= after else { continue }
                let index = spec.windowSeconds.map { Int(min((middle - after) / $0, 1e9)) } ?? 0
                if let current = entries[i].windowIndex, current != index { closeWindow(i, atSeconds: end, runSeconds: runSeconds) }
                entries[i].windowIndex = index
                entries[i].window.add(m)
            }
        }
        guard abortReason == nil else { return }
        for (i, spec) in specs.enumerated() where spec.abortOnFail && !spec.isWindowed && runSeconds >= spec.delaySeconds {
            guard let kind = spec.kind, !kind.isEndOfRunOnly else { continue }
            for (j, condition) in spec.conditions.enumerated() {
                guard let value = ThresholdMeasure.observe(kind, condition.statistic, in: totals, storms: nil),
                      !condition.comparison.holds(value, condition.limit) else { continue }
                abort(entry: i, condition: j, observed: value, window: nil)
                return
            }
        }
    }

    /// Judges the window entry `i` has been filling, then starts it afresh.
    private mutating func closeWindow(_ i: Int, atSeconds now: Double, runSeconds: Double) {
        let spec = specs[i]
        guard let index = entries[i].windowIndex, let kind = spec.kind else { return }
        let start = (spec.afterSeconds ?? 0) + Double(index) * (spec.windowSeconds ?? 0)
        let end = spec.windowSeconds.map { start + $0 } ?? max(start, now)
        let mayAbort = spec.abortOnFail && runSeconds >= spec.delaySeconds
        for (j, condition) in spec.conditions.enumerated() {
            guard let value = ThresholdMeasure.observe(kind, condition.statistic, in: entries[i].window, storms: nil) else { continue }
            entries[i].conditions[j].windowsEvaluated += 1
            if condition.comparison.holds(value, condition.limit) {
                if entries[i].conditions[j].worst.map({ Self.worse(value, than: $0, condition.comparison) }) ?? true {
                    entries[i].conditions[j].worst = value
                }
            } else if entries[i].conditions[j].firstFailure == nil {
                entries[i].conditions[j].firstFailure = (start, end, value)
                if mayAbort && abortReason == nil { abort(entry: i, condition: j, observed: value, window: (start, end)) }
            }
        }
        entries[i].window.reset()
        entries[i].windowIndex = nil
    }

    private mutating func abort(entry i: Int, condition j: Int, observed: Double, window: (Double, Double)?) {
        let spec = specs[i]
        let condition = spec.conditions[j]
        entries[i].conditions[j].abortedRun = true
        let unit = spec.kind.map { ThresholdMeasure.unit($0, condition.statistic) } ?? "count"
        var reason = "threshold \(spec.key) \(condition.text) failed (\(ThresholdMeasure.text(observed, unit: unit))"
        if let (start, end) = window {
            reason += " in the window \(ThresholdMeasure.trimmed(start))s–\(ThresholdMeasure.trimmed(end))s"
        }
        abortReason = reason + ")"
    }

    /// Closes the windows still open (the last interval ended at `messageSeconds` into the
    /// message phase) and judges every condition: windowed ones by their windows, the others
    /// over the run's totals and storms. Nil when there are no thresholds.
    public mutating func finish(totals: MetricsShard, storms: [RunSummary.Storm], messageSeconds: Double) -> [RunSummary.Threshold]? {
        guard !specs.isEmpty else { return nil }
        // The run is over: a window failing here stops nothing (no run second is past a delay).
        for i in specs.indices where entries[i].windowIndex != nil { closeWindow(i, atSeconds: messageSeconds, runSeconds: -1) }
        var results: [RunSummary.Threshold] = []
        for (i, spec) in specs.enumerated() {
            guard let kind = spec.kind else { continue }
            for (j, condition) in spec.conditions.enumerated() {
                let unit = ThresholdMeasure.unit(kind, condition.statistic)
                let state = entries[i].conditions[j]
                let observed: Double?
                var result = RunSummary.Threshold(
                    metric: spec.metric, label: spec.label, condition: condition.text, observed: nil, unit: unit,
                    limit: condition.limit, observedText: "", passed: false, abortedRun: state.abortedRun)
                result.population = spec.population
                if spec.isWindowed {
                    observed = state.firstFailure?.observed ?? state.worst
                    // No window with anything to judge is not a pass.
                    result.passed = state.firstFailure == nil && state.windowsEvaluated > 0
                    result.windowsEvaluated = state.windowsEvaluated
                    result.failingWindow = state.firstFailure.map { .init(startSeconds: Self.rounded($0.start), endSeconds: Self.rounded($0.end)) }
                } else {
                    observed = ThresholdMeasure.observe(kind, condition.statistic, in: totals, storms: storms)
                    result.passed = !state.abortedRun && (observed.map { condition.comparison.holds($0, condition.limit) } ?? false)
                }
                result.verdict = result.passed ? .pass : .fail  // until the generator's delay is weighed (GeneratorDelay)
                result.observedText = ThresholdMeasure.text(observed, unit: unit)
                // JSON has no infinity: a storm never recovered from is null, "never".
                result.observed = observed.flatMap { $0.isFinite ? Self.rounded($0) : nil }
                results.append(result)
            }
        }
        return results
    }

    /// Three decimals, as JSON figures are written.
    public static func rounded(_ v: Double) -> Double { (v * 1000).rounded() / 1000 }

    /// Closer to failing: higher for < and <=, lower for > and >=.
    static func worse(_ a: Double, than b: Double, _ c: ThresholdComparison) -> Bool {
        switch c {
        case .less, .lessOrEqual: a > b
        case .greater, .greaterOrEqual: a < b
        case .equal, .notEqual: true
        }
    }
}

extension SummaryText {
    /// One line per threshold condition: "✗ round_trip p(99) 63.2ms > 50ms (+26%)".
    static func thresholdLines(_ s: RunSummary) -> [String] {
        guard let thresholds = s.thresholds, !thresholds.isEmpty else { return [] }
        var out = ["  thresholds"]
        for t in thresholds {
            let name = t.key
            let stat = conditionStatistic(t.condition)
            let mark = switch t.verdict { case .pass: "✓"; case .fail: "✗"; case .unjudged: "?" }
            var line = "    \(mark) \(name) \(stat) \(t.observedText)"
            if let observed = t.observed, observed.isFinite {
                let relation = observed < t.limit ? "<" : observed > t.limit ? ">" : "="
                line += " \(relation) \(ThresholdMeasure.text(t.limit, unit: t.unit))"
                if !t.passed, observed != t.limit {
                    if t.limit != 0 {
                        line += String(format: " (%+.0f%%)", (observed - t.limit) / t.limit * 100)
                    } else {
                        line += " (+\(ThresholdMeasure.text(observed - t.limit, unit: t.unit)))"
                    }
                }
            } else {
                line += " (\(t.condition))"
            }
            if let w = t.failingWindow {
                line += " in the window \(ThresholdMeasure.trimmed(w.startSeconds))s–\(ThresholdMeasure.trimmed(w.endSeconds))s"
            } else if let n = t.windowsEvaluated {
                line += " (\(n) window\(n == 1 ? "" : "s"))"
            }
            if t.abortedRun { line += "; stopped the run" }
            if let lag = t.generatorLagMicros { line += "; generator lag \(ThresholdMeasure.text(Double(lag), unit: "us"))" }
            if t.verdict == .unjudged { line += "; unjudged" }
            out.append(line)
        }
        if s.generator.saturated {
            let unjudged = thresholds.filter { $0.verdict == .unjudged }.count
            out.append(unjudged > 0
                ? "    \(unjudged) not judged: the generator was saturated and its delay (up to twice its lag) could have decided \(unjudged == 1 ? "it" : "them") (exit 98 unless one failed)"
                : "    the generator was saturated, but every verdict holds despite its delay (up to twice its lag)")
        }
        return out
    }

    /// "p(99)" of "p(99) < 50ms".
    static func conditionStatistic(_ condition: String) -> String {
        let t = condition.trimmingCharacters(in: .whitespaces)
        guard let op = t.firstIndex(where: { "<>=!".contains($0) }) else { return t }
        return t[..<op].trimmingCharacters(in: .whitespaces)
    }
}
