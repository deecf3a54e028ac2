extension RunSummary {
    /// What a WebSocket flow's rules saw: its named counters, connect-step failures and frames
    /// no rule recognised. Named latencies are in `latency_us` beside the built-in ones.
    public struct Flow: Codable, Sendable, Equatable {
        /// Each counter the scenario names ("flow.ack.matched"), zeros included; also in `counters`.
        public var counters: [String: UInt64]
        /// Connect-step failures by step ("expect_timeout: connect step 2 ($.op = auth_ok)").
        public var stepErrors: [String: UInt64]
        /// Up to three frames no rule recognised, cut at 200 bytes (binary ones as hex).
        public var unrecognisedSamples: [String]
        enum CodingKeys: String, CodingKey {
            case counters
            case stepErrors = "step_errors"
            case unrecognisedSamples = "unrecognised_samples"
        }
        public init(counters: [String: UInt64], stepErrors: [String: UInt64], unrecognisedSamples: [String]) {
            self.counters = counters; self.stepErrors = stepErrors; self.unrecognisedSamples = unrecognisedSamples
        }
    }
}
