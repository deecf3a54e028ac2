import StampedeLoop

/// The queue in front of a server's work (a broadcast, a reply): the `delay` fault's fixed
/// service time, and `--max-rate`'s capacity limit. Work that may not run now waits here,
/// released by a loop timer, never by sleeping on the loop. Entries leave in the order they came,
/// so per-connection order is kept.
///
/// With a rate of N per second, work is spaced at least 1/N s apart (a token bucket of one
/// token): below N the queue stays short and latency grows only as arrivals bunch up; past N the
/// queue grows without bound and so does every client's latency, which is how a saturated server
/// looks to its clients (a known capacity for `stampede capacity` to find).
struct DelayLine {
    /// The added service time, ns (0: off).
    private(set) var delayNs: UInt64 = 0
    /// The least spacing between two releases, ns (0: no rate limit).
    private(set) var spacingNs: UInt64 = 0
    /// The earliest time the rate limit lets the next piece of work run.
    private var nextFree: UInt64 = 0
    private var due: [UInt64] = []
    private var actions: [() -> Void] = []
    private var head = 0
    /// Work turned away because the queue was full (`maxQueued`).
    private(set) var refused = 0

    /// Most pieces of work waiting at once; beyond it work is refused (and counted), so a
    /// server pushed far past its rate runs out of neither memory nor time.
    static let maxQueued = 1_000_000

    /// Delays up to this long are spent working (`spin`) instead of waiting on a timer: a
    /// timer's wake-up alone costs tens of µs on a small machine (a 20 µs delay on a timer
    /// added 50 µs to a 200 µs round trip), which would make a small, known regression
    /// impossible; busy work is also what a slower build of a server costs.
    static let spinLimitNs: UInt64 = 200_000

    /// The delay to spend working before each piece of work (0: none, or it waits on a timer).
    var spinNs: UInt64 { delayNs <= Self.spinLimitNs ? delayNs : 0 }

    /// The delay to wait on a timer (0: none, or it is spent working).
    var timedDelayNs: UInt64 { delayNs > Self.spinLimitNs ? delayNs : 0 }

    /// Whether work must go through `admit`: a timed delay or a rate is set, or earlier work still waits.
    var isActive: Bool { timedDelayNs > 0 || spacingNs > 0 || head < actions.count }

    /// Keeps the calling thread busy for `ns` (the loop does nothing else meanwhile, as with
    /// slower code), reading the monotonic clock.
    static func spin(_ ns: UInt64) {
        guard ns > 0 else { return }
        let end = EventLoop.now() &+ ns
        while EventLoop.now() < end {}
    }

    /// Pieces of work waiting.
    var queued: Int { actions.count - head }

    /// Sets the delay in microseconds, clamped to 0…`TargetFault.maxDelayMicroseconds`.
    mutating func set(microseconds: Int) {
        delayNs = UInt64(max(0, min(microseconds, TargetFault.maxDelayMicroseconds))) * 1_000
    }

    /// Sets the most releases per second (0: no limit), at most one per nanosecond.
    mutating func set(maxRate: Double) {
        spacingNs = maxRate > 0 && maxRate.isFinite ? UInt64(max(1, min(1e9 / maxRate, 1e12))) : 0
    }

    /// What to do with a new piece of work arriving at `now`.
    enum Admission: Equatable {
        /// Run it at once.
        case now
        /// Queue it until this time (`submit`).
        case at(UInt64)
        /// The queue is full: drop it (counted in `refused`).
        case refused
    }

    /// Decides when work arriving at `now` may run, reserving its slot under the rate limit.
    mutating func admit(now: UInt64) -> Admission {
        var when = now &+ timedDelayNs
        if spacingNs > 0 {
            when = max(when, nextFree)
            if queued >= Self.maxQueued { refused += 1; return .refused }
            nextFree = when &+ spacingNs
        }
        return when <= now && head == actions.count ? .now : .at(max(when, due.last ?? 0))
    }

    /// Queues `action` to run at `deadline` (from `admit`) on `loop`, under the timer `token`.
    /// Only the oldest waiting piece has a timer (deadlines never go down): `release` sets the next.
    mutating func submit(_ loop: EventLoop, at deadline: UInt64, token: TimerToken, _ action: @escaping () -> Void) {
        if queued == 0 { loop.schedule(at: deadline, token: token) }
        due.append(deadline)
        actions.append(action)
    }

    /// Queues `action` for `delayNs` from now (or later, under the rate limit); runs nothing itself.
    mutating func submit(_ loop: EventLoop, token: TimerToken, _ action: @escaping () -> Void) {
        let now = EventLoop.now()
        switch admit(now: now) {
        case .refused: return
        case .now: submit(loop, at: now, token: token, action)
        case .at(let deadline): submit(loop, at: deadline, token: token, action)
        }
    }

    /// At the timer `token`: takes the work due by `now`, oldest first, for the caller to run
    /// (outside the mutation), and sets the timer for the oldest piece still waiting.
    mutating func release(_ loop: EventLoop, token: TimerToken, now: UInt64 = EventLoop.now()) -> [() -> Void] {
        let out = takeDue(now: now)
        if head < actions.count { loop.schedule(at: due[head], token: token) }
        return out
    }

    /// Takes the actions due by `now`, oldest first.
    mutating func takeDue(now: UInt64) -> [() -> Void] {
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
