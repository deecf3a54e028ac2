import CStampedeLinux

extension EventLoop {
    // MARK: Timers

    /// Monotonic clock, nanoseconds.
    @inlinable public static func now() -> UInt64 { cs_monotonic_ns() }

    /// Calls `handler.timerFired(_:deadline:loop:)` at or after `deadline` (monotonic ns). Timers
    /// cannot be cancelled: the handler recognises a stale one by its `epoch`. Tokens of the
    /// `.loop` layer are the loop's own.
    public func schedule(at deadline: UInt64, token: TimerToken) {
        precondition(token.layer != .loop, "timer tokens of the loop layer are the event loop's own")
        timers.push(deadline: deadline, token: token)
    }

    public var scheduledTimers: Int { timers.count }

    /// Returns the worst timer lag since the last call, and resets it.
    public func takeMaxTimerLag() -> UInt64 {
        defer { maxTimerLagNs = 0 }
        return maxTimerLagNs
    }

    /// Nanoseconds until the earliest timer (0 when one is due), or -1 without timers: the wait's
    /// timeout when `waitsWithTimeout`.
    func nextTimerTimeoutNs() -> Int64 {
        guard let next = timers.peekDeadline() else { return -1 }
        let now = Self.now()
        return next <= now ? 0 : Int64(min(next - now, UInt64(Int64.max)))
    }

    func armTimer() {
        guard let next = timers.peekDeadline() else { return }
        if next != armedDeadline {
            armedDeadline = next
            // A deadline already past makes timerfd fire at once, which is what we want.
            let fd = timerfd
            let e = syscallStatus { cs_timerfd_arm_absolute(fd, max(next, 1)) }
            // timerfd_settime fails only for a bad fd or a malformed itimerspec (EBADF, EINVAL),
            // never for a deadline (any UInt64 of nanoseconds is a valid one): a bug, not input.
            precondition(e == 0, "timerfd_settime on loop \(index): \(errnoDescription(e)) (errno \(e))")
        }
    }

    /// Fires the timers due now, at most as many as the heap held on entry (and at most
    /// `maxTimersPerWakeup`): a handler that re-schedules into the past (catch-up, an interval of
    /// zero) gets its timer again on the next iteration, after epoll, tasks and the stop flag,
    /// instead of spinning here forever. Timers left due make the next wait return at once (a
    /// zero timeout, or the timerfd re-armed in the past).
    func fireTimers() {
        guard timers.count > 0 else { return }
        let now = Self.now()
        var budget = min(timers.count, configuration.maxTimersPerWakeup)
        while budget > 0, let deadline = timers.peekDeadline(), deadline <= now {
            budget -= 1
            let entry = timers.pop()
            let lag = now - entry.deadline
            if lag > maxTimerLagNs { maxTimerLagNs = lag }
            let token = entry.token
            switch token.layer {
            case .loop:
                switch token.kind(as: LoopTimer.self) {
                case .limitsSweep: sweep()
                case .resumeAccept: resumeAccepting(ConnectionID(index: token.slot, generation: token.epoch))
                case .connectTimeout: connectTimedOut(ConnectionID(index: token.slot, generation: token.epoch))
                case nil: break
                }
            case .connection, .application:
                handler.timerFired(token, deadline: entry.deadline, loop: self)
            }
        }
        if timers.peekDeadline() != armedDeadline { armedDeadline = .max }
    }
}
