import StampedeLoop
import StampedeScenario

/// When a loop's clients connect and send, shared by every workload.
///
/// Ramp-up: client g connects at `start + g / connectRate`. Open model (wrk2's schedule): the
/// total stream is evenly spaced at the rate, so client g's k-th message is intended at
/// `first(g) + k × interval`, with `first(g) = start + g/N × interval`, and latency counts from
/// that intended time. Closed model: the next message goes a think time after the reply.
public struct LoadSchedule: Sendable {
    public let totalClients: Int
    public let connectRate: Double
    public let loadModel: LoadModel
    /// Open model: messages per second over all clients.
    public let totalRate: Double
    public let thinkTimeNs: UInt64
    /// Open model: time between one client's messages.
    public private(set) var intervalNs: UInt64 = 0
    /// End of the message phase: nothing is scheduled at or after it.
    public private(set) var endNs: UInt64 = 0

    public init(totalClients: Int, connectRate: Double, loadModel: LoadModel, totalRate: Double, thinkTimeNs: UInt64) {
        self.totalClients = totalClients; self.connectRate = connectRate; self.loadModel = loadModel
        self.totalRate = totalRate; self.thinkTimeNs = thinkTimeNs
    }

    /// When client `g` connects.
    public func connectTime(start: UInt64, globalIndex g: Int) -> UInt64 {
        start + nanoseconds(Double(g) / connectRate)
    }

    /// Starts the message phase; false when nothing is to be sent (open model at rate 0).
    public mutating func beginMessages(endNs: UInt64) -> Bool {
        self.endNs = endNs
        if loadModel == .open {
            guard totalRate > 0 else { return false }
            intervalNs = nanoseconds(Double(totalClients) / totalRate)
        }
        return true
    }

    /// Client `g`'s first send: spread evenly (open) or at random within a think time (closed),
    /// so clients do not all send at the same instant.
    public func firstSend(start: UInt64, globalIndex g: Int, random: inout FastRandom) -> UInt64 {
        switch loadModel {
        case .open: start + UInt64(Double(intervalNs) * Double(g) / Double(totalClients))
        case .closed: start + random.next() % max(thinkTimeNs, 10_000_000)
        }
    }

    /// Open model: the intended send time of message `sequence` of a client whose first send is `first`.
    @inline(__always)
    public func intended(first: UInt64, sequence: UInt32) -> UInt64 { first + UInt64(sequence) * intervalNs }

    /// Whether something due at `t` still belongs to the message phase.
    @inline(__always)
    public func isInPhase(_ t: UInt64) -> Bool { t < endNs }

    /// Closed model: when to send after a reply at `now`, or nil past the phase.
    @inline(__always)
    public func nextAfterReply(now: UInt64) -> UInt64? {
        let next = now + thinkTimeNs
        return next < endNs ? next : nil
    }
}
