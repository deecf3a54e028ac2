import StampedeLoop
import Foundation
import StampedeScenario

/// When a dropped client tries again (docs/protocols.md §6): a pure function of the attempt
/// count, so every simulated client follows its own copy and tests need no clock.
public struct ReconnectPolicy: Sendable, Equatable {
    public let spec: ReconnectSpec

    public init(_ spec: ReconnectSpec) { self.spec = spec }

    /// SignalR's `withAutomaticReconnect()` default.
    public static let signalRDefaultDelays: [Double] = [0, 2, 10, 30]

    /// Seconds to wait before reconnect attempt `previousAttempts + 1`, or nil to give up.
    /// `unitRandom` (uniform in [0, 1)) drives the jitter, so tests can pin it.
    public func nextDelay(previousAttempts: Int, unitRandom: Double = Double.random(in: 0..<1)) -> Double? {
        let delays: [Double]
        switch spec {
        case .none: return nil
        case .signalRDefault: delays = Self.signalRDefaultDelays
        case .socketIODefault:
            // socket.io-client's Backoff: 1 s × 2^n, moved by up to ±50 % (randomizationFactor 0.5), then capped at 5 s.
            let base = min(1 * pow(2, Double(min(previousAttempts, 62))), 1e9)
            let deviation = base * 0.5 * unitRandom
            return min(unitRandom < 0.5 ? base - deviation : base + deviation, 5)
        case .delays(let d): delays = d
        case .exponential(let initial, let maxDelay, let attempts, let jitter):
            guard previousAttempts < attempts else { return nil }
            let delay = min(maxDelay, initial * pow(2, Double(min(previousAttempts, 62))))
            switch jitter {
            case .none: return delay
            case .full: return delay * unitRandom
            case .equal: return delay / 2 + delay / 2 * unitRandom
            }
        }
        return previousAttempts < delays.count ? delays[previousAttempts] : nil
    }
}

/// One client's reconnect schedule in absolute time: its attempts since it was last connected,
/// and when the next one is due. The clock is an argument, so tests drive a client through a
/// run of failures with made-up times; the workloads pass the loop's monotonic clock.
public struct ReconnectTimeline: Sendable, Equatable {
    /// Attempts scheduled since the client was last connected.
    public private(set) var attempts = 0
    public init() {}

    /// The connection, or the last attempt, failed at `nowNs`: the time of the next attempt, or
    /// nil when the policy gives up. Delays count from each failure, as in the SignalR clients.
    public mutating func failed(atNs nowNs: UInt64, policy: ReconnectPolicy, unitRandom: Double) -> UInt64? {
        guard let delay = policy.nextDelay(previousAttempts: attempts, unitRandom: unitRandom) else { return nil }
        attempts += 1
        return nowNs + nanoseconds(delay)
    }

    /// Connected again: the next loss starts the policy from its first delay.
    public mutating func connected() { attempts = 0 }
}
