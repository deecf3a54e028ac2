import StampedeLoop

/// The `delay` fault's queue: work a server would do now (a broadcast, a reply) waits a fixed
/// service time instead, released by a loop timer, never by sleeping on the loop. Entries leave
/// in the order they came (the delay is the same for all), so per-connection order is kept.
struct DelayLine {
    /// The added service time, ns (0: off, work runs at once).
    private(set) var delayNs: UInt64 = 0
    private var due: [UInt64] = []
    private var actions: [() -> Void] = []
    private var head = 0

    /// Whether work must be queued rather than done now: a delay is set, or earlier work still
    /// waits (turning the delay off must not let new work overtake queued work).
    var isActive: Bool { delayNs > 0 || head < actions.count }

    /// Sets the delay in milliseconds, clamped to 0…`TargetFault.maxDelayMilliseconds`.
    mutating func set(milliseconds: Int) {
        delayNs = UInt64(max(0, min(milliseconds, TargetFault.maxDelayMilliseconds))) * 1_000_000
    }

    /// Queues `action` to run `delayNs` from now on `loop`, under the timer `token`.
    mutating func submit(_ loop: EventLoop, token: TimerToken, _ action: @escaping () -> Void) {
        let deadline = EventLoop.now() &+ delayNs
        due.append(deadline)
        actions.append(action)
        loop.schedule(at: deadline, token: token)
    }

    /// Takes the actions due by `now`, oldest first, for the caller to run (outside the mutation).
    mutating func takeDue(now: UInt64 = EventLoop.now()) -> [() -> Void] {
        var end = head
        while end < actions.count, due[end] <= now { end += 1 }
        let out = Array(actions[head..<end])
        head = end
        if head == actions.count {
            due.removeAll(keepingCapacity: true)
            actions.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024, head * 2 > actions.count {
            due.removeFirst(head)
            actions.removeFirst(head)
            head = 0
        }
        return out
    }
}
