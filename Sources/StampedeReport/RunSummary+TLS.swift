extension RunSummary {
    /// What the clients' TLS handshakes did.
    public struct TLS: Codable, Sendable, Equatable {
        /// Handshakes completed (also `counters.tls_handshakes`), and those that resumed a session.
        public var handshakes: UInt64
        public var resumed: UInt64
        /// Failed handshakes by OpenSSL's reason (their classes are in `errors`: tls_*).
        public var failureReasons: [String: UInt64]
        enum CodingKeys: String, CodingKey {
            case handshakes, resumed
            case failureReasons = "failure_reasons"
        }
        public init(handshakes: UInt64, resumed: UInt64, failureReasons: [String: UInt64]) {
            self.handshakes = handshakes; self.resumed = resumed; self.failureReasons = failureReasons
        }
    }
}
