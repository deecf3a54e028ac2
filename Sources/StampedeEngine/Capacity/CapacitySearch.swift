/// The search `stampede capacity` runs over steady steps, after Envoy Nighthawk's adaptive load
/// controller: double the load from `from` until a step fails (or `to` passes), then halve the
/// bracket between the highest passing and the lowest failing load until it is within
/// `precision`, then run the answer once more to confirm it.
///
/// Pure: it proposes the next load and is told how that step went, so it is tested without any
/// server or clock. A step the generator could not drive (`invalid`) is run again (a shared
/// machine's hiccup passes); invalid again, its load is the generator's ceiling: nothing at or
/// above it says anything about the server, so the search goes on below it. If the server holds
/// everything up to the ceiling, the verdict is the generator's limit, not the server's.
public struct CapacitySearch: Sendable {
    public enum Stage: String, Sendable { case exponential, binary, confirm }
    public enum Outcome: String, Sendable { case pass, fail, invalid }
    public enum Verdict: String, Sendable {
        case found, generatorLimited = "generator_limited", aboveRange = "above_range", belowRange = "below_range", unconfirmed
    }

    public let from: Double
    public let to: Double
    /// The bracket is narrow enough when (lowest fail − highest pass) ≤ precision × highest pass.
    public let precision: Double
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

    /// Every step so far, in order.
    public private(set) var steps: [(load: Double, stage: Stage, outcome: Outcome)] = []
    public private(set) var verdict: Verdict?
    private var stage = Stage.exponential
    private var confirmFailures = 0
    /// The load the next step runs (nil once there is a verdict).
    public private(set) var next: (load: Double, stage: Stage)?

    public init(from: Double, to: Double, precision: Double, integral: Bool, confirmations: Int = 1, maxConfirmFailures: Int = 2,
                maxInvalidRetries: Int = 1) {
        self.from = from; self.to = max(from, to); self.precision = precision; self.integral = integral
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

    /// Records how the step at `next` went and works out the one after it (or the verdict).
    public mutating func record(_ outcome: Outcome) {
        guard let current = next else { return }
        steps.append((current.load, current.stage, outcome))
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
        switch current.stage {
        case .exponential:
            if outcome == .pass {
                if current.load >= to { return finish(.aboveRange) }
                next = (rounded(min(to, current.load * 2)), .exponential)
                return
            }
            if highestPass == nil { return finish(.belowRange) }
            stage = .binary
            proposeWithinBracket()
        case .binary:
            proposeWithinBracket()
        case .confirm:
            if outcome == .pass {
                confirmPasses += 1
                if confirmPasses >= confirmations { return finish(.found) }
                return  // `next` stays: the answer once more
            }
            confirmPasses = 0
            confirmFailures += 1
            if confirmFailures > maxConfirmFailures { return finish(.unconfirmed) }
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
