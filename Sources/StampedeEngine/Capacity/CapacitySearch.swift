/// The search `stampede capacity` runs over steady steps, after Envoy Nighthawk's adaptive load
/// controller: grow the load from `from` by `growth` (×1.5) until a step fails (or `to` passes),
/// then halve the bracket between the highest passing and the lowest failing load until it is
/// within `precision`, then run the answer once more to confirm it.
///
/// Pure: it proposes the next load and is told how that step went, so it is tested without any
/// server or clock. A step the generator could not drive (`invalid`) is run again (a shared
/// machine's hiccup passes); invalid again, its load is the generator's ceiling: nothing at or
/// above it says anything about the server, so the search goes on below it. If the server holds
/// everything up to the ceiling, the verdict is the generator's limit, not the server's.
/// A `borderline` step (its intervals neither clearly meet nor clearly miss an SLO) is run once
/// more, as stage `retry`, and that run's outcome counts for the stage it repeats.
public struct CapacitySearch: Sendable {
    /// `retry`: the same load again after a borderline step (its judge decides by the point estimate).
    public enum Stage: String, Sendable { case exponential, binary, confirm, retry }
    /// `borderline`: the SLO's bootstrap bounds straddle its limit (`StepJudge`); the step is run again.
    public enum Outcome: String, Sendable { case pass, fail, invalid, borderline }
    public enum Verdict: String, Sendable {
        case found, generatorLimited = "generator_limited", aboveRange = "above_range", belowRange = "below_range"
        /// Written as `unstable`: the confirmations failed again and again, the server passing and
        /// failing by turns at the same loads (`unstableRange`). The Swift name predates the
        /// JSON one and stays until CapacityRunner's exit-code switch is renamed with it.
        case unstable
    }

    public let from: Double
    public let to: Double
    /// The bracket is narrow enough when (lowest fail − highest pass) ≤ precision × highest pass.
    public let precision: Double
    /// The exponential stage's factor from one step to the next (1.5: finer than doubling, so the
    /// first failure lands nearer the limit and the binary stage has less to halve).
    public let growth: Double
    /// Confirmations that may fail (each lowers the answer) before the search gives up.
    public let maxConfirmFailures: Int
    /// Passing runs the answer needs in the confirmation stage (a noisy server needs several).
    public let confirmations: Int
    private var confirmPasses = 0
    /// Whole numbers only (a client count).
    public let integral: Bool
    /// Times an invalid step is run again before the generator is taken to be the limit.
    public let maxInvalidRetries: Int
    private var invalidRetries = 0
    /// The stage a `retry` step repeats (its outcome counts for that stage).
    private var retried = Stage.exponential

    /// Every step so far, in order.
    public private(set) var steps: [(load: Double, stage: Stage, outcome: Outcome)] = []
    public private(set) var verdict: Verdict?
    private var stage = Stage.exponential
    private var confirmFailures = 0
    /// The load the next step runs (nil once there is a verdict).
    public private(set) var next: (load: Double, stage: Stage)?

    public init(from: Double, to: Double, precision: Double, integral: Bool, confirmations: Int = 1, maxConfirmFailures: Int = 2,
                maxInvalidRetries: Int = 1, growth: Double = 1.5) {
        self.from = from; self.to = max(from, to); self.precision = precision; self.integral = integral
        self.growth = growth > 1 ? growth : 1.5
        self.confirmations = max(1, confirmations)
        self.maxConfirmFailures = maxConfirmFailures; self.maxInvalidRetries = maxInvalidRetries
        next = (from, .exponential)
    }

    /// The lowest load that failed (nil: none yet).
    public var lowestFail: Double? { steps.filter { $0.outcome == .fail }.map(\.load).min() }
    /// The lowest load the generator could not drive, invalid on every try (nil: none).
    public private(set) var generatorLimit: Double?
    /// The top of the bracket: the lowest failure or the generator's ceiling, whichever is lower.
    var top: Double? {
        switch (lowestFail, generatorLimit) {
        case let (f?, g?): min(f, g)
        case let (f, g): f ?? g
        }
    }
    /// The highest load that passed below the bracket's top (nil: none).
    public var highestPass: Double? {
        let ceiling = top ?? .infinity
        return steps.filter { $0.outcome == .pass && $0.load < ceiling }.map(\.load).max()
    }

    /// The load to cool down at after a failed (or invalid) step: the highest that passed so far,
    /// where a recovered server must pass again, or `from` before anything passed. Probing there
    /// rather than at `from` checks that the server is back to where the search left it.
    public var coolDownLoad: Double { highestPass ?? from }

    /// Where the server passed and failed by turns: from the lowest load that failed to the highest
    /// one that passed at or above it (one load when only the same load flipped). Nil unless the
    /// verdict is `unstable` .
    public var unstableRange: ClosedRange<Double>? {
        guard verdict == .unstable, let fail = lowestFail else { return nil }
        let passedAbove = steps.filter { $0.outcome == .pass && $0.load >= fail }.map(\.load).max()
        return fail...(passedAbove ?? fail)
    }

    /// Records how the step at `next` went and works out the one after it (or the verdict).
    public mutating func record(_ outcome: Outcome) {
        guard let current = next else { return }
        if outcome == .borderline, current.stage != .retry {
            steps.append((current.load, current.stage, outcome))
            retried = current.stage
            next = (current.load, .retry)
            return
        }
        // A retry judged borderline again was not shown to hold: a fail (its judge normally
        // decides a retry by the point estimate, so this is the fallback).
        let outcome: Outcome = outcome == .borderline ? .fail : outcome
        steps.append((current.load, current.stage, outcome))
        let countsFor = current.stage == .retry ? retried : current.stage
        if outcome == .invalid {
            invalidRetries += 1
            if invalidRetries <= maxInvalidRetries { return }  // `next` stays: the same load again
            invalidRetries = 0
            generatorLimit = min(generatorLimit ?? .infinity, current.load)
            if highestPass == nil { return finish(.generatorLimited) }
            stage = .binary
            return proposeWithinBracket()
        }
        invalidRetries = 0
        switch countsFor {
        case .exponential:
            if outcome == .pass {
                if current.load >= to { return finish(.aboveRange) }
                var grown = rounded(min(to, current.load * growth))
                if grown <= current.load { grown = min(to, current.load + 1) }  // 1 client × 1.5 rounds back to 1
                next = (grown, .exponential)
                return
            }
            if highestPass == nil { return finish(.belowRange) }
            stage = .binary
            proposeWithinBracket()
        case .binary, .retry:
            proposeWithinBracket()
        case .confirm:
            if outcome == .pass {
                confirmPasses += 1
                if confirmPasses >= confirmations { return finish(.found) }
                next = (current.load, .confirm)  // the answer once more
                return
            }
            confirmPasses = 0
            confirmFailures += 1
            if confirmFailures > maxConfirmFailures { return finish(.unstable) }
            if highestPass == nil { return finish(.belowRange) }
            proposeWithinBracket()
        }
    }

    /// Halves the bracket, or confirms its lower end once it is narrow enough (or, when the
    /// bracket's top is the generator's ceiling and no failure lies below it, ends there).
    private mutating func proposeWithinBracket() {
        guard let lo = highestPass, let hi = top else { return finish(.belowRange) }
        let mid = rounded((lo + hi) / 2)
        if hi - lo <= precision * lo || mid <= lo || mid >= hi {
            let serverFailedBelowCeiling = lowestFail.map { $0 <= (generatorLimit ?? .infinity) } ?? false
            if serverFailedBelowCeiling { next = (lo, .confirm) } else { finish(.generatorLimited) }
        } else {
            next = (mid, .binary)
        }
    }

    private mutating func finish(_ v: Verdict) {
        verdict = v
        next = nil
    }

    private func rounded(_ load: Double) -> Double {
        integral ? load.rounded(.down) : (load * 1000).rounded() / 1000
    }

    /// The answer: the confirmed highest passing load ("found"), `to` ("above_range"), else nil.
    public var maxSustainable: Double? {
        switch verdict {
        case .found: highestPass
        case .aboveRange: steps.last?.load
        default: nil
        }
    }
}
