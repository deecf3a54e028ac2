import Foundation
import StampedeMetrics
import StampedeReport
import StampedeScenario

/// Exit statuses of a run (`RunOutcome.exitCode`); `stampede`'s `ExitStatus` lists them with the
/// command line's own (bad input).
public enum RunExitStatus {
    public static let passed: Int32 = 0
    /// The run failed (nothing connected, results not written).
    public static let runFailed: Int32 = 1
    /// A threshold failed (k6's convention), at the end or live (`abort_on_fail`).
    public static let thresholdFailed: Int32 = 99
    /// The scenario has thresholds but the generator was saturated (summary.json
    /// `generator.saturated`): its latency figures are partly the generator's own, so the run is
    /// reported neither as passing nor as failing. Takes precedence over 99.
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
        case .latency(let key):
            guard let metric = LatencyMetric.allCases.first(where: { $0.key == key }) else { return nil }
            let h = m.histograms[metric.rawValue]
            if statistic == .count { return Double(h.totalCount) }
            guard h.totalCount > 0 else { return nil }
            switch statistic {
            case .percentile(let p): return Double(h.valueAtPercentile(p))
            case .max: return Double(h.maxRecorded)
            case .min: return Double(h.min)
            case .mean: return h.mean
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
            return Counter.allCases.first { $0.key == key }.map { Double(m[$0]) }
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

/// The thresholds as the run goes: the window each windowed entry is filling, what every
/// condition has seen so far, and whether one has stopped the run.
struct ThresholdBook {
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
    var entries: [EntryState] = []
    /// "threshold round_trip p(99) < 50ms failed (…)" once an `abort_on_fail` entry failed.
    var abortReason: String?

    init(_ specs: [ThresholdSpec]) {
        entries = specs.map { EntryState(conditions: Array(repeating: ConditionState(), count: $0.conditions.count)) }
    }

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
            let name = t.label.map { "\(t.metric)@\($0)" } ?? t.metric
            let stat = conditionStatistic(t.condition)
            var line = "    \(t.passed ? "✓" : "✗") \(name) \(stat) \(t.observedText)"
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
            out.append(line)
        }
        if s.generator.saturated {
            out.append("    not judged: the generator was saturated, so its latency figures are partly its own (exit 98)")
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
