import StampedeLoop
import StampedeScenario

/// When a loop's clients connect and send, shared by every workload.
///
/// Ramp-up: client g connects at `start + g / connectRate`. Open model (wrk2's schedule): the
/// total stream is evenly spaced at the rate, so client g's k-th message is intended at
/// `first(g) + k × interval`, with `first(g) = start + slot(g)/N × interval`, and latency counts
/// from that intended time. That is, message `j = slot(g) + k·N` of the aggregate stream is
/// intended at `j / rate`; with `message.stages` the rate changes over the phase and message j is
/// intended where the cumulative count reaches j (`RateProfile`), so the same per-client chains
/// follow the profile exactly. `slot` is a pseudo-random permutation of the clients drawn from the
/// seed: with `first(g)` growing with g, the senders of second t would be the clients that
/// connected t-th, and a server that broadcasts in connection order would show its
/// position-in-broadcast cost as a latency trend over the run. Closed model: the next message
/// goes a think time after the reply.
public struct LoadSchedule: Sendable {
    public let totalClients: Int
    public let connectRate: Double
    public let loadModel: LoadModel
    /// Open model: messages per second over all clients (with stages, where the first starts).
    public let totalRate: Double
    /// Open model: the rate over the phase (`message.stages`; constant at `totalRate` without).
    public private(set) var profile: RateProfile
    public let thinkTimeNs: UInt64
    /// Open model at a constant rate: time between one client's messages (0 with stages).
    public private(set) var intervalNs: UInt64 = 0
    /// Start of the message phase: the profile's time 0.
    public private(set) var startNs: UInt64 = 0
    /// End of the message phase: nothing is scheduled at or after it.
    public private(set) var endNs: UInt64 = 0
    /// Keys the open model's permutation of send slots (the scenario's seed).
    public let seed: UInt64

    public init(totalClients: Int, connectRate: Double, loadModel: LoadModel, totalRate: Double, stages: [RateStage] = [],
                thinkTimeNs: UInt64, seed: UInt64 = 0) {
        self.totalClients = totalClients; self.connectRate = connectRate; self.loadModel = loadModel
        self.totalRate = totalRate; self.thinkTimeNs = thinkTimeNs; self.seed = seed
        profile = RateProfile(startRate: totalRate, stages: stages)
    }

    /// When client `g` connects.
    public func connectTime(start: UInt64, globalIndex g: Int) -> UInt64 {
        start + nanoseconds(Double(g) / connectRate)
    }

    /// Starts the message phase at `startNs`; false when nothing is to be sent (open model whose
    /// rate stays 0).
    public mutating func beginMessages(startNs: UInt64, endNs: UInt64) -> Bool {
        self.startNs = startNs
        self.endNs = endNs
        if loadModel == .open {
            guard profile.sendsAnything else { return false }
            if let rate = profile.constantRate { intervalNs = nanoseconds(Double(totalClients) / rate) }
        }
        return true
    }

    /// Open model: from `atNs` on (not before now, so no message already due changes its time),
    /// `ratePerSecond` across all clients. The send chains must be re-armed after it: a pending
    /// timer was set from the old rate.
    public mutating func changeRate(to ratePerSecond: Double, atNs: UInt64) {
        guard loadModel == .open, startNs > 0 else { return }
        profile = profile.changing(to: max(0, ratePerSecond), atSeconds: Double(atNs &- min(atNs, startNs)) / 1e9)
        intervalNs = 0
    }

    /// Open model: whether the phase has a send chain for each client (a rate above 0 somewhere).
    public var paces: Bool { loadModel == .open && endNs > 0 && profile.sendsAnything }

    /// Client `g`'s place in the open model's stream (`slot(of:among:seed:)`), for `intended(slot:sequence:)`.
    public func sendSlot(globalIndex g: Int) -> UInt32 { UInt32(Self.slot(of: g, among: totalClients, seed: seed)) }

    /// Client `g`'s first send: in its slot of the stream (open) or at random within a think time
    /// (closed), so clients do not all send at the same instant.
    public func firstSend(globalIndex g: Int, random: inout FastRandom) -> UInt64 {
        switch loadModel {
        case .open: intended(slot: sendSlot(globalIndex: g), sequence: 0)
        case .closed: startNs + random.next() % max(thinkTimeNs, 10_000_000)
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

    /// Open model: the intended send time of message `sequence` of the client in `slot`: message
    /// `slot + sequence·N` of the aggregate stream; `UInt64.max` when the rate never gets there.
    @inline(__always)
    public func intended(slot: UInt32, sequence: UInt32) -> UInt64 {
        if intervalNs > 0 {
            // A constant rate: evenly spaced, in integer nanoseconds from the client's first send.
            return startNs + UInt64(Double(intervalNs) * Double(slot) / Double(totalClients)) + UInt64(sequence) * intervalNs
        }
        let j = Double(slot) + Double(sequence) * Double(totalClients)
        guard let offset = profile.offsetNs(ofMessage: j), offset < UInt64.max - startNs else { return UInt64.max }
        return startNs + offset
    }

    /// Open model: how many of the client in `slot`'s messages are due by `now` (none until its
    /// first send has passed), where a client that rejoins the schedule picks it up.
    public func sequencesDue(slot: UInt32, now: UInt64) -> UInt32 {
        let first = intended(slot: slot, sequence: 0)
        guard now > first else { return 0 }
        if intervalNs > 0 { return UInt32(clamping: (now - first) / intervalNs + 1) }
        // The count from the profile, then corrected against the exact intended times (rounding
        // can put the estimate one off either way).
        let m = profile.messages(throughSeconds: Double(now - startNs) / 1e9)
        var due = UInt32(clamping: Int(max(0, ((m - Double(slot)) / Double(totalClients)).rounded(.down)) + 1))
        for _ in 0..<4 where due > 1 && intended(slot: slot, sequence: due - 1) > now { due -= 1 }
        for _ in 0..<4 where intended(slot: slot, sequence: due) <= now { due += 1 }
        return due
    }

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
