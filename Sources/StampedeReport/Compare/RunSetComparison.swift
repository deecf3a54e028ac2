import Foundation

/// How runs are set against each other when a side has several (docs/compare.md).
public enum RunSetMode: String, Codable, Sendable {
    /// Several runs of each build, best interleaved (`stampede interleave`): a Mann–Whitney U
    /// test and a hierarchical bootstrap over the runs.
    case runs
    /// Interleaved pairs (`--paired`): the i-th baseline and current runs were made one after
    /// the other (`stampede interleave`), so what the machine did to both cancels in their ratio;
    /// a paired t interval over the pairs' ratios.
    case pairs
    /// One current run against the last runs of the main branch: outside the history's
    /// prediction interval.
    case history
}

/// One percentile over runs: each run's value, the change of the median run and its interval.
public struct RunSetPercentile: Codable, Sendable, Equatable {
    public var name: String
    /// Each run's whole-run value (µs), in the order the runs were given.
    public var baselineRuns: [UInt64]
    public var currentRuns: [UInt64]
    /// The median run (µs); in history mode the baseline's is the history's geometric mean.
    public var baselineMedian: Double
    public var currentMedian: Double
    /// The change of the median run in % of the baseline's.
    public var changePct: Double
    /// The 95 % interval of that change (%): the hierarchical bootstrap's in runs mode; for
    /// pairs the paired t interval of the pairs' ratios (and `changePct` their geometric
    /// mean); in history mode the history's prediction interval, as changes from its center.
    public var lowPct: Double
    public var highPct: Double
    /// Mann–Whitney U two-sided p-value (runs mode); nil for pairs and in history mode.
    public var pValue: Double?

    enum CodingKeys: String, CodingKey {
        case name
        case baselineRuns = "baseline_runs"
        case currentRuns = "current_runs"
        case baselineMedian = "baseline_median"
        case currentMedian = "current_median"
        case changePct = "change_pct"
        case lowPct = "low_pct"
        case highPct = "high_pct"
        case pValue = "p_value"
    }
}

/// A latency metric over runs, with its verdict.
public struct RunSetMetric: Codable, Sendable, Equatable {
    public var metric: String
    public var gated: Bool
    public var verdict: CompareVerdict
    public var reason: String
    /// p50, p90, p99 (the percentiles a run estimates well enough to compare across runs).
    public var percentiles: [RunSetPercentile]

    public func percentile(_ name: String) -> RunSetPercentile? { percentiles.first { $0.name == name } }
}

/// The verdict rule over runs (docs/compare.md, "Several runs per side" and "History").
public struct RunSetRule: Sendable {
    /// Smallest change of the median run's p50 called a change.
    public var tolerance: Double
    /// Significance level of the Mann–Whitney test (runs mode).
    public var alpha = 0.05
    /// Fewest history runs for a prediction interval.
    public static let minimumHistory = 3

    public init(tolerance: Double) { self.tolerance = tolerance }

    /// Runs mode. Slower when the p50 of the median run moved up beyond the tolerance and
    /// the move is significant: the bootstrap interval lies above 0 and, when each side has
    /// at least 4 runs (below that the test cannot reach 5 %), the Mann–Whitney p-value is at
    /// most `alpha`. Faster the same way down. Spread changed when p50 did not change but p99
    /// did, significantly and by more than four tolerances.
    public func verdict(runs p50: RunSetPercentile, p99: RunSetPercentile?, baselineCount: Int, currentCount: Int) -> (CompareVerdict, String) {
        let testable = p50.pValue != nil && baselineCount >= 4 && currentCount >= 4
        func significant(_ p: RunSetPercentile, up: Bool) -> Bool {
            let beyond = up ? p.lowPct > 0 : p.highPct < 0
            return beyond && (!testable || (p.pValue ?? 1) <= alpha)
        }
        let tol = tolerance * 100
        let text = describe(p50, testable: testable)
        if significant(p50, up: true), p50.changePct > tol { return (.slower, "\(text): significant and beyond the \(Self.pct(tol)) tolerance") }
        if significant(p50, up: false), p50.changePct < -tol { return (.faster, "\(text): significant and beyond the \(Self.pct(tol)) tolerance") }
        if let p99, abs(p50.changePct) <= tol, significant(p99, up: p99.changePct > 0), abs(p99.changePct) > 4 * tol {
            return (.spreadChanged, "p99 \(Self.signed(p99.changePct)) while p50 moved \(Self.signed(p50.changePct))")
        }
        let why = abs(p50.changePct) <= tol ? "within the \(Self.pct(tol)) tolerance" : "not significant (~)"
        return (.noChange, "\(text): \(why)")
    }

    /// History mode. Slower when the current run's p50 lies above the history's 95 %
    /// prediction interval and above its center by more than the tolerance; faster the same
    /// way down; spread changed when p50 stayed inside while p99 left its interval by more
    /// than four tolerances.
    public func verdict(history p50: RunSetPercentile, p99: RunSetPercentile?) -> (CompareVerdict, String) {
        let tol = tolerance * 100
        let text = "p50 \(Self.signed(p50.changePct)) against the history's [\(Self.signed(p50.lowPct)), \(Self.signed(p50.highPct))]"
        if p50.changePct > p50.highPct, p50.changePct > tol { return (.slower, "\(text): above it, and beyond the \(Self.pct(tol)) tolerance") }
        if p50.changePct < p50.lowPct, p50.changePct < -tol { return (.faster, "\(text): below it, and beyond the \(Self.pct(tol)) tolerance") }
        if let p99, p50.changePct <= p50.highPct, p50.changePct >= p50.lowPct,
           p99.changePct > p99.highPct || p99.changePct < p99.lowPct, abs(p99.changePct) > 4 * tol {
            return (.spreadChanged, "p99 \(Self.signed(p99.changePct)) outside the history's [\(Self.signed(p99.lowPct)), \(Self.signed(p99.highPct))] while p50 stayed inside")
        }
        return (.noChange, "\(text): " + (abs(p50.changePct) <= tol ? "within the \(Self.pct(tol)) tolerance" : "inside the history's spread (~)"))
    }

    func describe(_ p: RunSetPercentile, testable: Bool) -> String {
        "p50 \(Self.signed(p.changePct)) [\(Self.signed(p.lowPct)), \(Self.signed(p.highPct))]"
            + (p.pValue == nil ? " (paired t interval)" : testable ? String(format: ", Mann–Whitney p %.3f", p.pValue ?? 1)
                : " (fewer than 4 runs a side: bootstrap only)")
    }

    static func signed(_ x: Double) -> String { String(format: "%+.1f %%", x) }
    static func pct(_ x: Double) -> String { String(format: "%g %%", x) }
}
