/// How far a worker's monotonic clock is from the coordinator's, from NTP-style exchanges
/// (RFC 5905 §8, with the worker's receive and send stamps one and the same): the coordinator
/// sends at `t1`, the worker reads its clock `t2`, the coordinator receives at `t4`. If the
/// two legs took equally long, offset = t2 − (t1 + t4) / 2; the error is at most half the round
/// trip, so the exchange with the shortest round trip is the one believed.
public struct ClockOffsetEstimator: Sendable {
    public private(set) var best: (offsetNs: Int64, roundTripNs: UInt64)? = nil
    public private(set) var exchanges = 0
    public init() {}

    /// One exchange; one whose stamps are out of order (a clock that went back) is ignored.
    public mutating func add(coordinatorSendNs t1: UInt64, workerNs t2: UInt64, coordinatorReceiveNs t4: UInt64) {
        guard t4 >= t1 else { return }
        exchanges += 1
        let rtt = t4 - t1
        // (t1 + t4) / 2 without overflow; the difference as a signed number.
        let mid = t1 + rtt / 2
        let offset = t2 >= mid ? Int64(clamping: t2 - mid) : -Int64(clamping: mid - t2)
        if best == nil || rtt < best!.roundTripNs { best = (offset, rtt) }
    }

    /// Worker clock − coordinator clock, nanoseconds (0 before any exchange).
    public var offsetNs: Int64 { best?.offsetNs ?? 0 }
    /// The offset is right to within this (half the best round trip).
    public var uncertaintyNs: UInt64 { (best?.roundTripNs ?? 0) / 2 }

    /// A coordinator instant in the worker's clock.
    public func workerInstant(_ coordinatorNs: UInt64) -> UInt64 {
        let o = offsetNs
        return o >= 0 ? coordinatorNs &+ UInt64(o) : coordinatorNs &- UInt64(-o)
    }
}
