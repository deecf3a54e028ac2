import Foundation

/// One of the two builds an interleaved comparison runs.
public enum InterleaveSide: String, Sendable, Codable, CaseIterable {
    case baseline
    case current
}

/// Which side of a pair runs first.
public enum InterleaveOrder: String, Sendable, Codable {
    case baselineFirst = "baseline-first"
    case currentFirst = "current-first"

    /// The two sides in the order they run.
    public var sides: [InterleaveSide] {
        switch self {
        case .baselineFirst: [.baseline, .current]
        case .currentFirst: [.current, .baseline]
        }
    }
}

/// One run of an interleaved set: which pair (from 1), which side, and where it goes.
public struct InterleaveStep: Sendable, Equatable {
    public var pair: Int
    public var side: InterleaveSide
    public var order: InterleaveOrder
}

/// The order of an interleaved set's runs and its folder layout, pure so it can be checked
/// without running anything.
///
/// Pairs alternate which side runs first (AB, BA, AB, …): slow drift of the machine (thermal,
/// caches, other tenants) then falls on both sides alike instead of always favouring one.
public struct InterleavePlan: Sendable, Equatable {
    /// The most pairs one command makes.
    public static let pairLimit = 100

    /// Number of pairs (each one baseline run and one current run).
    public var pairs: Int
    /// DIR: holds `baseline/`, `current/`, the server logs and `runs.json`.
    public var root: URL

    public init(pairs: Int, root: URL) {
        self.pairs = pairs
        self.root = root
    }

    /// Pair `pair` (from 1) runs the baseline first when odd, the current build first when even.
    public static func order(ofPair pair: Int) -> InterleaveOrder {
        pair % 2 == 1 ? .baselineFirst : .currentFirst
    }

    /// Every run, in the order they happen.
    public var steps: [InterleaveStep] {
        guard pairs > 0 else { return [] }
        return (1...pairs).flatMap { pair in
            let order = Self.order(ofPair: pair)
            return order.sides.map { InterleaveStep(pair: pair, side: $0, order: order) }
        }
    }

    /// `DIR/baseline` or `DIR/current`: the results root handed to that side's `stampede run`s.
    public func resultsFolder(_ side: InterleaveSide) -> URL {
        root.appendingPathComponent(side.rawValue, isDirectory: true)
    }

    /// `DIR/<side>-server-<pair>.log`: what the side's server command printed for that pair.
    public func serverLog(_ side: InterleaveSide, pair: Int) -> URL {
        root.appendingPathComponent("\(side.rawValue)-server-\(pair).log")
    }

    /// `DIR/<side>-run-<pair>.log`: what that run printed (its messages, then its summary).
    public func runLog(_ side: InterleaveSide, pair: Int) -> URL {
        root.appendingPathComponent("\(side.rawValue)-run-\(pair).log")
    }

    /// `DIR/runs.json`.
    public var runsFile: URL { root.appendingPathComponent("runs.json") }
}
