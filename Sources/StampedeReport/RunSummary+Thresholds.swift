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
        /// Windowed entries: how many windows were evaluated, and the first failing one
        /// (seconds into the message phase); null otherwise.
        public var windowsEvaluated: Int?
        public var failingWindow: Window?
        /// This condition failed live and stopped the run (`abort_on_fail`).
        public var abortedRun: Bool

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
        }

        public init(metric: String, label: String?, condition: String, observed: Double?, unit: String, limit: Double, observedText: String,
                    passed: Bool, windowsEvaluated: Int? = nil, failingWindow: Window? = nil, abortedRun: Bool = false) {
            self.metric = metric; self.label = label; self.condition = condition; self.observed = observed; self.unit = unit; self.limit = limit
            self.observedText = observedText; self.passed = passed; self.windowsEvaluated = windowsEvaluated
            self.failingWindow = failingWindow; self.abortedRun = abortedRun
        }

        // Written by hand so that nil optionals become `null` (see RunSummary.encode).
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(metric, forKey: .metric); try c.encode(label, forKey: .label)
            try c.encodeIfPresent(population, forKey: .population); try c.encode(condition, forKey: .condition)
            try c.encode(observed, forKey: .observed); try c.encode(unit, forKey: .unit); try c.encode(limit, forKey: .limit); try c.encode(observedText, forKey: .observedText)
            try c.encode(passed, forKey: .passed); try c.encode(windowsEvaluated, forKey: .windowsEvaluated)
            try c.encode(failingWindow, forKey: .failingWindow); try c.encode(abortedRun, forKey: .abortedRun)
        }
    }
}
