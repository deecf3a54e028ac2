import StampedeLoop
import StampedeScenario

/// The open model's arrival rate over the message phase: `message.rate` at the start, then each of
/// `message.stages` linear from the previous rate to its own, then the last rate held.
///
/// The schedule needs the inverse of the cumulative count M(t) = ∫₀ᵗ rate(s) ds: the aggregate
/// stream's message j is intended at the first instant M reaches j (wrk2's even spacing,
/// generalised), so pacing stays exact across stage boundaries however the rate changes. M is
/// piecewise quadratic, so each segment inverts in closed form; a segment at rate 0 holds no
/// messages and is skipped. Pure: the engine reads the intended rate of an interval from the same
/// type the workloads schedule with.
public struct RateProfile: Sendable, Equatable {
    /// One linear piece: from `startSeconds` for `durationSeconds` (infinite for the hold after
    /// the last stage), the rate going from `startRate` to `endRate`.
    struct Segment: Sendable, Equatable {
        var startSeconds: Double
        var startNs: UInt64
        var durationSeconds: Double
        var startRate: Double
        var endRate: Double
        /// M at the segment's start, and the messages within it (infinite for a held positive rate).
        var messagesBefore: Double
        var messages: Double

        /// Messages in the first `tau` seconds of the segment.
        func messages(within tau: Double) -> Double {
            guard durationSeconds.isFinite else { return startRate * tau }
            let slope = (endRate - startRate) / durationSeconds
            return startRate * tau + slope * tau * tau / 2
        }

        /// Seconds into the segment at which it has held `m` messages (0 ≤ m < `messages`).
        func seconds(toReach m: Double) -> Double {
            guard m > 0 else { return 0 }
            guard durationSeconds.isFinite, endRate != startRate else { return m / startRate }
            let slope = (endRate - startRate) / durationSeconds
            // The root of slope/2·τ² + r₀τ − m = 0 written without cancellation; the discriminant is
            // at least endRate² ≥ 0 for any m within the segment.
            let root = (max(0, startRate * startRate + 2 * slope * m)).squareRoot()
            return min(2 * m / (startRate + root), durationSeconds)
        }
    }

    let segments: [Segment]
    /// The constant rate when there are no stages (today's schedule), else nil.
    public let constantRate: Double?

    /// The profile starting at `startRate` and following `stages`.
    public init(startRate: Double, stages: [RateStage] = []) {
        constantRate = stages.isEmpty ? startRate : nil
        var segments: [Segment] = []
        var seconds = 0.0, before = 0.0, rate = startRate
        for stage in stages {
            let s = Segment(startSeconds: seconds, startNs: nanoseconds(seconds), durationSeconds: stage.durationSeconds,
                            startRate: rate, endRate: stage.ratePerSecond, messagesBefore: before,
                            messages: (rate + stage.ratePerSecond) / 2 * stage.durationSeconds)
            segments.append(s)
            seconds += stage.durationSeconds; before += s.messages; rate = stage.ratePerSecond
        }
        segments.append(Segment(startSeconds: seconds, startNs: nanoseconds(seconds), durationSeconds: .infinity, startRate: rate,
                                endRate: rate, messagesBefore: before, messages: rate > 0 ? .infinity : 0))
        self.segments = segments
    }

    private init(segments: [Segment]) {
        self.segments = segments
        constantRate = nil
    }

    /// The same profile up to `t` seconds into the phase, then `rate` held from there (a capacity
    /// search on held connections changes the rate between steps this way). M(t) is unchanged up
    /// to `t`, so every message intended before it keeps its time, and the numbering of the
    /// aggregate stream goes on without a gap or a repeat.
    public func changing(to rate: Double, atSeconds t: Double) -> RateProfile {
        let at = max(0, t)
        var kept: [Segment] = []
        for s in segments where s.startSeconds < at {
            var cut = s
            if !s.durationSeconds.isFinite || s.startSeconds + s.durationSeconds > at {
                let tau = at - s.startSeconds
                cut.endRate = self.rate(atSeconds: at)
                cut.messages = s.messages(within: tau)
                cut.durationSeconds = tau
            }
            kept.append(cut)
        }
        let before = kept.last.map { $0.messagesBefore + $0.messages } ?? 0
        kept.append(Segment(startSeconds: at, startNs: nanoseconds(at), durationSeconds: .infinity, startRate: rate, endRate: rate,
                            messagesBefore: before, messages: rate > 0 ? .infinity : 0))
        return RateProfile(segments: kept)
    }

    /// The profile of a scenario's `message` section.
    public init(_ message: MessageSpec) { self.init(startRate: message.ratePerSecond, stages: message.stages) }

    /// Whether the rate is ever above 0 (else nothing is ever sent).
    public var sendsAnything: Bool { segments.contains { $0.messages > 0 } }

    /// The intended rate (messages per second) `t` seconds into the phase.
    public func rate(atSeconds t: Double) -> Double {
        let s = segment(atSeconds: t)
        guard s.durationSeconds.isFinite else { return s.startRate }
        let tau = min(max(0, t - s.startSeconds), s.durationSeconds)
        return s.startRate + (s.endRate - s.startRate) * tau / s.durationSeconds
    }

    /// M(t): messages intended in the first `t` seconds of the phase (0 for t ≤ 0).
    public func messages(throughSeconds t: Double) -> Double {
        guard t > 0 else { return 0 }
        let s = segment(atSeconds: t)
        return s.messagesBefore + s.messages(within: min(t - s.startSeconds, s.durationSeconds))
    }

    /// Messages intended from `a` to `b` seconds into the phase.
    public func messages(fromSeconds a: Double, toSeconds b: Double) -> Double {
        messages(throughSeconds: b) - messages(throughSeconds: a)
    }

    /// M⁻¹(j): nanoseconds into the phase at which the aggregate stream's message `j` (counted
    /// from 0) is intended; nil when the rate never gets there (it ends at 0 first).
    @inline(__always)
    public func offsetNs(ofMessage j: Double) -> UInt64? {
        // Few segments (one per stage, plus the hold): a scan costs less than a search would.
        for (i, s) in segments.enumerated() where j < s.messagesBefore + s.messages {
            guard j >= s.messagesBefore else { continue }  // rounding left j just below a boundary
            let tauNs = nanoseconds(s.seconds(toReach: j - s.messagesBefore))
            // Clamped to the segment, so times never go backwards across a boundary.
            let endNs = i + 1 < segments.count ? segments[i + 1].startNs : UInt64.max
            return min(s.startNs &+ tauNs, max(s.startNs, endNs &- 1))
        }
        return nil
    }

    /// The segment holding instant `t` (the first one for t ≤ 0).
    private func segment(atSeconds t: Double) -> Segment {
        for s in segments.dropLast() where t < s.startSeconds + s.durationSeconds { return s }
        return segments[segments.count - 1]
    }
}
