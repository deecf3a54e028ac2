import Foundation
import StampedeScenario
import StampedeWorkloads
import Testing

struct ReconnectPolicyTests {
    @Test func signalRDefaultWaitsZeroTwoTenThirtyThenGivesUp() {
        let p = ReconnectPolicy(.signalRDefault)
        #expect((0..<5).map { p.nextDelay(previousAttempts: $0) } == [0, 2, 10, 30, nil])
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
}
