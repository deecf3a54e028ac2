import StampedeLoop
import StampedeScenario

/// When a loop's clients connect and send, shared by every workload.
///
/// Ramp-up: client g connects at `start + g / connectRate`. Open model (wrk2's schedule): the
/// total stream is evenly spaced at the rate, so client g's k-th message is intended at
/// `first(g) + k × interval`, with `first(g) = start + slot(g)/N × interval`, and latency counts
/// from that intended time. `slot` is a pseudo-random permutation of the clients drawn from the
/// seed: with `first(g)` growing with g, the senders of second t would be the clients that
/// connected t-th, and a server that broadcasts in connection order would show its
/// position-in-broadcast cost as a latency trend over the run. Closed model: the next message
/// goes a think time after the reply.
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
    /// Keys the open model's permutation of send slots (the scenario's seed).
    public let seed: UInt64

    public init(totalClients: Int, connectRate: Double, loadModel: LoadModel, totalRate: Double, thinkTimeNs: UInt64, seed: UInt64 = 0) {
        self.totalClients = totalClients; self.connectRate = connectRate; self.loadModel = loadModel
        self.totalRate = totalRate; self.thinkTimeNs = thinkTimeNs; self.seed = seed
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

    /// Client `g`'s first send: in its slot of the evenly spaced stream (open) or at random
    /// within a think time (closed), so clients do not all send at the same instant.
    public func firstSend(start: UInt64, globalIndex g: Int, random: inout FastRandom) -> UInt64 {
        switch loadModel {
        case .open: start + UInt64(Double(intervalNs) * Double(Self.slot(of: g, among: totalClients, seed: seed)) / Double(totalClients))
        case .closed: start + random.next() % max(thinkTimeNs, 10_000_000)
        }
    }

    /// Client `g`'s place in the open model's stream: a permutation of `0..<n` keyed by `seed`
    /// (every slot used once, the same for every loop and every run with that seed). A 4-round
    /// Feistel network over the smallest even power of two ≥ n, walked until it lands below n.
    public static func slot(of g: Int, among n: Int, seed: UInt64) -> Int {
        guard n > 1, g >= 0, g < n else { return max(0, min(g, n - 1)) }
        var halfBits = 1
        while 1 << (2 * halfBits) < n { halfBits += 1 }
        let mask = UInt64(1) << halfBits - 1
        var x = UInt64(g)
        repeat {
            var left = x >> halfBits, right = x & mask
            for round in 0..<4 as Range<UInt64> {
                let f = mix((right ^ seed) &+ round &* 0x9E37_79B9_7F4A_7C15) & mask
                (left, right) = (right, left ^ f)
            }
            x = left << halfBits | right
        } while x >= UInt64(n)  // cycle walking: at most 4n values, so this ends after a few rounds
        return Int(x)
    }

    /// SplitMix64's finaliser.
    @inline(__always) static func mix(_ v: UInt64) -> UInt64 {
        var z = v &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
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

/// A local monotonic instant in the run's clock, given this process's clock − the run's
/// (`offsetNs`, non-zero only for a worker on another host than its coordinator). Message stamps
/// are written and read in the run's clock, so a message sent on one host and received on
/// another is timed right; scheduling stays in the local clock.
@inline(__always) public func runClock(_ localNs: UInt64, offsetNs: Int64) -> UInt64 {
    offsetNs >= 0 ? localNs &- UInt64(offsetNs) : localNs &+ UInt64(-offsetNs)
}
