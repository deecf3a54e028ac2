extension RunSummary {
    /// What the ETag-polling clients saw.
    public struct Rest: Codable, Sendable, Equatable {
        /// Polls sent (also `messages.sent`).
        public var requests: UInt64
        /// Answers by HTTP status code (as a string, e.g. "304").
        public var byStatus: [String: UInt64]
        /// 304 answers ÷ (2xx + 304 answers); nil when there were none.
        public var notModifiedRatio: Double?
        /// New representations (a `changed` processor took them).
        public var changed: UInt64
        /// Answers no processor handled.
        public var unprocessed: UInt64
        /// Clients that stopped polling (an auth failure, or every resource stopped).
        public var clientsStopped: UInt64
        public var redirectsFollowed: UInt64
        /// Answers carrying `X-RateLimit-Remaining`, the lowest value seen (nil: none), answers
        /// carrying `Retry-After`, and its longest value in seconds.
        public var rateLimitHeadersSeen: UInt64
        public var rateLimitRemainingMin: UInt64?
        public var retryAfterSeen: UInt64
        public var retryAfterMaxSeconds: UInt64?
        /// Answers per second over the message phase.
        public var responsesPerSecond: Double
        /// Client-loop CPU µs per answer; nil when there were none.
        public var cpuMicrosPerResponse: Double?
        enum CodingKeys: String, CodingKey {
            case requests
            case byStatus = "by_status"
            case notModifiedRatio = "not_modified_ratio"
            case changed, unprocessed
            case clientsStopped = "clients_stopped"
            case redirectsFollowed = "redirects_followed"
            case rateLimitHeadersSeen = "rate_limit_headers_seen"
            case rateLimitRemainingMin = "rate_limit_remaining_min"
            case retryAfterSeen = "retry_after_seen"
            case retryAfterMaxSeconds = "retry_after_max_s"
            case responsesPerSecond = "responses_per_s"
            case cpuMicrosPerResponse = "cpu_us_per_response"
        }
        public init(requests: UInt64, byStatus: [String: UInt64], notModifiedRatio: Double?, changed: UInt64, unprocessed: UInt64,
                    clientsStopped: UInt64, redirectsFollowed: UInt64, rateLimitHeadersSeen: UInt64, rateLimitRemainingMin: UInt64?,
                    retryAfterSeen: UInt64, retryAfterMaxSeconds: UInt64?, responsesPerSecond: Double, cpuMicrosPerResponse: Double?) {
            self.requests = requests; self.byStatus = byStatus; self.notModifiedRatio = notModifiedRatio; self.changed = changed
            self.unprocessed = unprocessed; self.clientsStopped = clientsStopped; self.redirectsFollowed = redirectsFollowed
            self.rateLimitHeadersSeen = rateLimitHeadersSeen; self.rateLimitRemainingMin = rateLimitRemainingMin
            self.retryAfterSeen = retryAfterSeen; self.retryAfterMaxSeconds = retryAfterMaxSeconds
            self.responsesPerSecond = responsesPerSecond; self.cpuMicrosPerResponse = cpuMicrosPerResponse
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(requests, forKey: .requests); try c.encode(byStatus, forKey: .byStatus)
            try c.encode(notModifiedRatio, forKey: .notModifiedRatio); try c.encode(changed, forKey: .changed)
            try c.encode(unprocessed, forKey: .unprocessed); try c.encode(clientsStopped, forKey: .clientsStopped)
            try c.encode(redirectsFollowed, forKey: .redirectsFollowed); try c.encode(rateLimitHeadersSeen, forKey: .rateLimitHeadersSeen)
            try c.encode(rateLimitRemainingMin, forKey: .rateLimitRemainingMin); try c.encode(retryAfterSeen, forKey: .retryAfterSeen)
            try c.encode(retryAfterMaxSeconds, forKey: .retryAfterMaxSeconds); try c.encode(responsesPerSecond, forKey: .responsesPerSecond)
            try c.encode(cpuMicrosPerResponse, forKey: .cpuMicrosPerResponse)
        }
    }
}
