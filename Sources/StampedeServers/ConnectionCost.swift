import CStampedeLinux
import StampedeLoop

/// `stampede serve --connection-cost µs`: CPU the server spends per open connection per second,
/// so that latency grows gradually with connections (a knee, not a wall). Every `period` the
/// loop thread busy-spins on the monotonic clock for `open connections × cost × elapsed`,
/// at most one period's worth (beyond that the process is saturated anyway and must still
/// serve its sockets between spins). Per process: each of `--processes` spins for its own.
public struct ConnectionCost: Sendable {
    /// Microseconds of CPU per open connection per second (0: off).
    var microseconds = 0.0
    /// When the last tick started (monotonic ns).
    var lastTick: UInt64 = 0
    /// Microseconds spun so far (a statistic: proves the cost is paid in proportion).
    var spunMicroseconds = 0

    /// Ticks of the spin timer.
    static let periodNs: UInt64 = 10_000_000
    /// Largest `--connection-cost` accepted (µs).
    public static let maxMicroseconds = 10_000.0

    var isActive: Bool { microseconds > 0 }

    /// Starts the ticks on `loop` with `token`. On the loop thread, or before it starts.
    mutating func start(_ loop: EventLoop, token: TimerToken) {
        guard isActive else { return }
        lastTick = EventLoop.now()
        loop.schedule(at: lastTick + Self.periodNs, token: token)
    }

    /// A tick: spins for `open` connections' share of the time since the last one, then
    /// schedules the next.
    mutating func tick(_ loop: EventLoop, token: TimerToken, open: Int) {
        guard isActive else { return }
        let start = EventLoop.now()
        // From tick start to tick start, so the spins add up to the cost per second of wall
        // time; a late tick (a stall) makes up at most ten periods.
        let elapsed = min(start &- lastTick, 10 * Self.periodNs)
        lastTick = start
        // µs per connection per s × elapsed ns / 1e9 → µs of spin; × 1000 → ns (in Double: no overflow).
        let spinNs = UInt64(min(Double(open) * microseconds * Double(elapsed) / 1e6, Double(Self.periodNs)))
        var now = start
        while now &- start < spinNs { now = cs_monotonic_ns() }
        spunMicroseconds += Int((now &- start) / 1000)
        loop.schedule(at: now + Self.periodNs, token: token)
    }
}
