extension RunSummary {
    /// One condition of the scenario's `thresholds:` block, as the run met it (summary.json
    /// `thresholds`, one entry per condition, in the scenario's order).
    public struct Threshold: Codable, Sendable, Equatable {
        /// The metric as the scenario names it ("round_trip", "errors.tls_verify_failed" …).
        public var metric: String
        /// The part after `@` in the scenario's key, or null.
        public var label: String?
        /// The population of `metric{population:NAME}`: judged on that population alone. Absent
        /// (not null) for a threshold on the whole run, so files without populations keep their shape.
        public var population: String? = nil
        /// As written: "p(99) < 50ms".
        public var condition: String
        /// The measured value in `unit` ("us" for latencies and storm recovery, "ratio" for
        /// rates, "count" for counts); null when there was nothing to measure (no samples).
        public var observed: Double?
        public var unit: String
        /// The condition's limit, in `unit` (50ms is 50000).
        public var limit: Double
        /// `observed` for people: "63.2ms", "0.12%", "3", "no samples".
        public var observedText: String
        public var passed: Bool
        /// What the gate makes of it, given the generator's own delay: `passed` decides unless the
        /// generator was saturated, and then a condition that held despite the delay passes, one
        /// that missed by more than the delay can explain fails, and the rest are unjudged.
        public var verdict: Verdict
        /// The generator's worst timer lag over the judged part of the run, µs: how much of the
        /// measured latency may be its own (null where unknown, as in files written before it).
        public var generatorLagMicros: UInt64? = nil
        /// Windowed entries: how many windows were evaluated, and the first failing one
        /// (seconds into the message phase); null otherwise.
        public var windowsEvaluated: Int?
        public var failingWindow: Window?
        /// This condition failed live and stopped the run (`abort_on_fail`).
        public var abortedRun: Bool

        /// A threshold's standing in the gate (summary.json `verdict`).
        public enum Verdict: String, Codable, Sendable {
            case pass, fail
            /// The generator was saturated and its delay could have decided it: exit 98.
            case unjudged
        }

        /// The scenario's key: "round_trip", "round_trip@steady", "round_trip{population:publishers}".
        public var key: String { metric + (population.map { "{population:\($0)}" } ?? "") + (label.map { "@" + $0 } ?? "") }

        public struct Window: Codable, Sendable, Equatable {
            public var startSeconds: Double
            public var endSeconds: Double
            enum CodingKeys: String, CodingKey {
                case startSeconds = "start_s"
                case endSeconds = "end_s"
            }
            public init(startSeconds: Double, endSeconds: Double) { self.startSeconds = startSeconds; self.endSeconds = endSeconds }
        }

        enum CodingKeys: String, CodingKey {
            case metric, label, population, condition, observed, unit, limit, passed
            case observedText = "observed_text"
            case windowsEvaluated = "windows_evaluated"
            case failingWindow = "failing_window"
            case abortedRun = "aborted_run"
            case verdict
            case generatorLagMicros = "generator_lag_us"
        }

        public init(metric: String, label: String?, condition: String, observed: Double?, unit: String, limit: Double, observedText: String,
                    passed: Bool, windowsEvaluated: Int? = nil, failingWindow: Window? = nil, abortedRun: Bool = false) {
            self.metric = metric; self.label = label; self.condition = condition; self.observed = observed; self.unit = unit; self.limit = limit
            self.observedText = observedText; self.passed = passed; self.windowsEvaluated = windowsEvaluated
            self.failingWindow = failingWindow; self.abortedRun = abortedRun
            verdict = passed ? .pass : .fail
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            metric = try c.decode(String.self, forKey: .metric); label = try c.decodeIfPresent(String.self, forKey: .label)
            population = try c.decodeIfPresent(String.self, forKey: .population); condition = try c.decode(String.self, forKey: .condition)
            observed = try c.decodeIfPresent(Double.self, forKey: .observed); unit = try c.decode(String.self, forKey: .unit)
            limit = try c.decode(Double.self, forKey: .limit); observedText = try c.decode(String.self, forKey: .observedText)
            passed = try c.decode(Bool.self, forKey: .passed)
            windowsEvaluated = try c.decodeIfPresent(Int.self, forKey: .windowsEvaluated)
            failingWindow = try c.decodeIfPresent(Window.self, forKey: .failingWindow)
            abortedRun = try c.decode(Bool.self, forKey: .abortedRun)
            // Files written before verdicts existed: the condition alone decided.
            verdict = try c.decodeIfPresent(Verdict.self, forKey: .verdict) ?? (passed ? .pass : .fail)
            generatorLagMicros = try c.decodeIfPresent(UInt64.self, forKey: .generatorLagMicros)
        }

        // Written by hand so that nil optionals become `null` (see RunSummary.encode).
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(metric, forKey: .metric); try c.encode(label, forKey: .label)
            try c.encodeIfPresent(population, forKey: .population); try c.encode(condition, forKey: .condition)
            try c.encode(observed, forKey: .observed); try c.encode(unit, forKey: .unit); try c.encode(limit, forKey: .limit); try c.encode(observedText, forKey: .observedText)
            try c.encode(passed, forKey: .passed); try c.encode(windowsEvaluated, forKey: .windowsEvaluated)
            try c.encode(failingWindow, forKey: .failingWindow); try c.encode(abortedRun, forKey: .abortedRun)
            try c.encode(verdict, forKey: .verdict); try c.encode(generatorLagMicros, forKey: .generatorLagMicros)
        }
    }
}
