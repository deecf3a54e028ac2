import Foundation
import StampedeScenario
import StampedeWorkloads
import Testing

struct ReconnectPolicyTests {
    @Test func signalRDefaultWaitsZeroTwoTenThirtyThenGivesUp() {
        let p = ReconnectPolicy(.signalRDefault)
        #expect((0..<5).map { p.nextDelay(previousAttempts: $0) } == [0, 2, 10, 30, nil])
    }

    @Test func socketIODefaultDoublesFromOneSecondToFiveWithinHalfEitherWayAndNeverGivesUp() {
        let p = ReconnectPolicy(.socketIODefault)
        #expect((0..<5).map { p.nextDelay(previousAttempts: $0, unitRandom: 0.75) } == [1.375, 2.75, 5, 5, 5])
        #expect((0..<5).map { p.nextDelay(previousAttempts: $0, unitRandom: 0) } == [1, 2, 4, 5, 5])
        #expect(p.nextDelay(previousAttempts: 0, unitRandom: 0.4) == 0.8)
        #expect(p.nextDelay(previousAttempts: 10_000, unitRandom: 0.99) == 5)
    }

    @Test func aDelayListStopsAfterItsLastEntry() {
        let p = ReconnectPolicy(.delays([0.5, 1]))
        #expect((0..<3).map { p.nextDelay(previousAttempts: $0) } == [0.5, 1, nil])
        #expect(ReconnectPolicy(.none).nextDelay(previousAttempts: 0) == nil)
    }

    @Test func exponentialDoublesUpToTheCapAndGivesUpAfterItsAttempts() {
        let p = ReconnectPolicy(.exponential(initialSeconds: 1, maxSeconds: 8, attempts: 6, jitter: .none))
        #expect((0..<7).map { p.nextDelay(previousAttempts: $0, unitRandom: 0.5) } == [1, 2, 4, 8, 8, 8, nil])
    }

    @Test(arguments: [0.0, 0.25, 0.999])
    func jitterStaysWithinItsBounds(_ u: Double) throws {
        for attempt in 0..<5 {
            let base = min(16, 2 * pow(2, Double(attempt)))
            let full = try #require(ReconnectPolicy(.exponential(initialSeconds: 2, maxSeconds: 16, attempts: 5, jitter: .full))
                .nextDelay(previousAttempts: attempt, unitRandom: u))
            #expect(full >= 0 && full <= base)
            #expect(abs(full - base * u) < 1e-9)
            let equal = try #require(ReconnectPolicy(.exponential(initialSeconds: 2, maxSeconds: 16, attempts: 5, jitter: .equal))
                .nextDelay(previousAttempts: attempt, unitRandom: u))
            #expect(equal >= base / 2 && equal <= base)
        }
    }

    /// A client whose every attempt fails `failAfter` seconds after it starts, on a made-up
    /// clock: the times (seconds after the drop at t = 0) at which it tries, until it gives up.
    func attemptTimes(_ spec: ReconnectSpec, failAfter: Double = 0.005, unitRandom: Double = 0.5) -> [Double] {
        var timeline = ReconnectTimeline()
        var now: UInt64 = 0
        var times: [Double] = []
        while let next = timeline.failed(atNs: now, policy: ReconnectPolicy(spec), unitRandom: unitRandom), times.count < 50 {
            times.append(Double(next) / 1e9)
            now = next + UInt64(failAfter * 1e9)
        }
        return times
    }

    func expectClose(_ a: [Double], _ b: [Double], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(a.count == b.count && zip(a, b).allSatisfy { abs($0 - $1) < 1e-6 }, "\(a) ≠ \(b)", sourceLocation: sourceLocation)
    }

    @Test func onAnInjectedClockTheDefaultPolicyTriesAtZeroTwoTwelveFortyTwoThenGivesUp() {
        // Each delay counts from the failure of the attempt before (5 ms after it started).
        expectClose(attemptTimes(.signalRDefault), [0, 2.005, 12.01, 42.015])
    }

    @Test func onAnInjectedClockExponentialBackoffDoublesToItsCapAndStopsAtItsAttempts() {
        // Delays 2, 4, 8, 16, 32, 64, 64 s (the SocketRocket app's doubling, capped at 64 s).
        expectClose(attemptTimes(.exponential(initialSeconds: 2, maxSeconds: 64, attempts: 7, jitter: .none), failAfter: 0),
                    [2, 6, 14, 30, 62, 126, 190])
        expectClose(attemptTimes(.delays([0, 2, 4]), failAfter: 1), [0, 3, 8])
        #expect(attemptTimes(.none).isEmpty)
    }

    @Test(arguments: [0.0, 0.5, 0.999])
    func onAnInjectedClockJitteredAttemptsStayWithinTheirWindow(_ u: Double) {
        for (jitter, low) in [(Jitter.full, 0.0), (.equal, 0.5)] {
            let times = attemptTimes(.exponential(initialSeconds: 1, maxSeconds: 8, attempts: 6, jitter: jitter), failAfter: 0, unitRandom: u)
            #expect(times.count == 6, "gives up after its attempts")
            var previous = 0.0
            for (n, t) in times.enumerated() {
                let base = min(8, pow(2, Double(n)))
                #expect(t - previous >= base * low - 1e-9 && t - previous <= base + 1e-9)
                previous = t
            }
        }
    }

    @Test func aReconnectedClientStartsThePolicyAgain() {
        var timeline = ReconnectTimeline()
        let policy = ReconnectPolicy(.signalRDefault)
        _ = timeline.failed(atNs: 0, policy: policy, unitRandom: 0)
        _ = timeline.failed(atNs: 1, policy: policy, unitRandom: 0)
        timeline.connected()
        #expect(timeline.failed(atNs: 5_000_000_000, policy: policy, unitRandom: 0) == 5_000_000_000)
        #expect(timeline.attempts == 1)
    }
}
