import Foundation

/// `runs.json` of an interleaved set, rewritten after every run so a partial set is usable.
public struct InterleaveRecord: Sendable, Codable, Equatable {
    public static let schemaName = "stampede.interleave/1"

    /// One run: its results folder (relative to the folder holding runs.json when inside it),
    /// `stampede run`'s exit code (0, or 98/99 for threshold outcomes) and the target it loaded.
    public struct Run: Sendable, Codable, Equatable {
        public var folder: String
        public var exit: Int32
        public var target: String
    }

    /// One pair; a side is absent until it has run.
    public struct Pair: Sendable, Codable, Equatable {
        public var pair: Int
        public var order: InterleaveOrder
        public var baseline: Run?
        public var current: Run?

        subscript(side: InterleaveSide) -> Run? {
            get { side == .baseline ? baseline : current }
            set { if side == .baseline { baseline = newValue } else { current = newValue } }
        }
    }

    public var schema = InterleaveRecord.schemaName
    public var scenario: String
    public var pairs: [Pair] = []
    /// True when the set stopped before every run was made (interrupted, or a run failed).
    public var partial = false

    public init(scenario: String) { self.scenario = scenario }

    /// Records `run` as `step`'s.
    mutating func record(_ run: Run, for step: InterleaveStep) {
        if let i = pairs.firstIndex(where: { $0.pair == step.pair }) {
            pairs[i][step.side] = run
        } else {
            var p = Pair(pair: step.pair, order: step.order)
            p[step.side] = run
            pairs.append(p)
        }
    }

    /// Writes the record atomically (a reader never sees half a file).
    func write(to url: URL) throws {
        let encoder = JSONEncoder()
        // Sorted keys: the same record always reads the same (the encoder's own order varies).
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try (encoder.encode(self) + Data("\n".utf8)).write(to: url, options: .atomic)
    }
}
