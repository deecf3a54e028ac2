import Foundation

extension RunSummary {
    /// One worker process of a run spread over several (`stampede run --processes N`,
    /// `--workers …`): who it was, its shard, its clock, and whether it was lost.
    public struct Worker: Codable, Sendable, Equatable {
        /// Shard index: the worker ran the global clients `g` with `g % workers == index`.
        public var index: Int
        public var host: String
        public var pid: Int
        public var clients: Int
        public var loops: Int
        /// Worker clock − coordinator clock, microseconds, as the coordinator measured it (NTP-style
        /// exchanges), and the most the measurement can be off (half the best round trip).
        /// `same_clock`: the worker runs on the coordinator's kernel (same boot id), so the clocks
        /// are one and the run used 0 (the measurement then shows only the method's error).
        public var clockOffsetMicros: Double
        public var clockUncertaintyMicros: Double
        public var sameClock: Bool
        /// Set when the worker died or stopped answering during the run.
        public var lost: Lost?

        public struct Lost: Codable, Sendable, Equatable {
            /// Seconds into the run when the coordinator noticed.
            public var atSeconds: Double
            public var reason: String
            /// The end of the last interval the worker reported (seconds into the run; nil: none).
            public var lastIntervalSeconds: Double?
            /// Its connections open at that interval, and the messages it had sent that were not
            /// yet delivered, failed or lost: counted lost (`lost_by_reason.worker_lost`).
            public var openAtLastInterval: Int
            public var messagesLost: UInt64
            enum CodingKeys: String, CodingKey {
                case atSeconds = "at_s", reason
                case lastIntervalSeconds = "last_interval_s"
                case openAtLastInterval = "open_at_last_interval"
                case messagesLost = "messages_lost"
            }
            public init(atSeconds: Double, reason: String, lastIntervalSeconds: Double?, openAtLastInterval: Int, messagesLost: UInt64) {
                self.atSeconds = atSeconds; self.reason = reason; self.lastIntervalSeconds = lastIntervalSeconds
                self.openAtLastInterval = openAtLastInterval; self.messagesLost = messagesLost
            }
            public func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(atSeconds, forKey: .atSeconds); try c.encode(reason, forKey: .reason)
                try c.encode(lastIntervalSeconds, forKey: .lastIntervalSeconds)
                try c.encode(openAtLastInterval, forKey: .openAtLastInterval); try c.encode(messagesLost, forKey: .messagesLost)
            }
        }

        enum CodingKeys: String, CodingKey {
            case index, host, pid, clients, loops
            case clockOffsetMicros = "clock_offset_us"
            case clockUncertaintyMicros = "clock_uncertainty_us"
            case sameClock = "same_clock"
            case lost
        }

        public init(index: Int, host: String, pid: Int, clients: Int, loops: Int, clockOffsetMicros: Double,
                    clockUncertaintyMicros: Double, sameClock: Bool, lost: Lost? = nil) {
            self.index = index; self.host = host; self.pid = pid; self.clients = clients; self.loops = loops
            self.clockOffsetMicros = clockOffsetMicros; self.clockUncertaintyMicros = clockUncertaintyMicros
            self.sameClock = sameClock; self.lost = lost
        }

        // By hand so that a nil `lost` is written as null.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(index, forKey: .index); try c.encode(host, forKey: .host); try c.encode(pid, forKey: .pid)
            try c.encode(clients, forKey: .clients); try c.encode(loops, forKey: .loops)
            try c.encode(clockOffsetMicros, forKey: .clockOffsetMicros); try c.encode(clockUncertaintyMicros, forKey: .clockUncertaintyMicros)
            try c.encode(sameClock, forKey: .sameClock); try c.encode(lost, forKey: .lost)
        }
    }
}
