import Testing
import Foundation
import Synchronization
@testable import StampedeLoop

/// A handler whose every timer re-schedules itself at its own (past) deadline: a workload
/// catching up on a schedule it can never meet, or polling at an interval of zero.
final class CatchUpHandler: EventLoopHandler, @unchecked Sendable {
    let fired = Atomic<Int>(0)
    func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {}
    func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) {}
    func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int { buffer.count }
    func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {}
    func writable(_ id: ConnectionID, loop: EventLoop) {}
    func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {
        fired.add(1, ordering: .relaxed)
        loop.schedule(at: deadline, token: token)
    }
}

@Suite struct TimerBudgetTests {
    @Test func oneWakeUpFiresOnlyTheTimersThatWereDueOnEntry() throws {
        let loop = try EventLoop()
        let handler = CatchUpHandler()
        loop.handler = handler
        for token in 0..<3 as Range<UInt64> { loop.schedule(at: 0, token: TimerToken(testNumber: token)) }
        loop.fireTimers()
        // Each re-scheduled itself into the past; none fired a second time in the same wake-up.
        #expect(handler.fired.load(ordering: .relaxed) == 3)
        #expect(loop.scheduledTimers == 3)
        loop.fireTimers()
        #expect(handler.fired.load(ordering: .relaxed) == 6)
    }

    @Test func oneWakeUpFiresAtMostTheConfiguredBudget() throws {
        var configuration = EventLoop.Configuration()
        configuration.maxTimersPerWakeup = 2
        let loop = try EventLoop(configuration: configuration)
        let handler = CatchUpHandler()
        loop.handler = handler
        for token in 0..<5 as Range<UInt64> { loop.schedule(at: 0, token: TimerToken(testNumber: token)) }
        loop.fireTimers()
        #expect(handler.fired.load(ordering: .relaxed) == 2)
    }

    @Test func tasksAndStopStillRunWhileTimersCatchUpForever() throws {
        let loop = try EventLoop()
        let handler = CatchUpHandler()
        loop.handler = handler
        loop.start(name: "catch-up-test")
        loop.execute { l in for token in 0..<100 as Range<UInt64> { l.schedule(at: 0, token: TimerToken(testNumber: token)) } }
        // The loop keeps firing past-due timers, yet tasks get their turn between wake-ups.
        let started = Date()
        for _ in 0..<10 { _ = loop.submitAndWait { $0.scheduledTimers } }
        let firedBeforeStop = handler.fired.load(ordering: .relaxed)
        loop.stop()
        loop.join()
        #expect(firedBeforeStop > 100, "the timers kept firing")
        #expect(Date().timeIntervalSince(started) < 5, "tasks and stop were not starved (generous bound)")
    }
}
