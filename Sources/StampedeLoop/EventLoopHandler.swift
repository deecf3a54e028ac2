/// Identifies a connection slot. The generation changes every time a slot is reused, so an
/// event or timer meant for a closed connection is recognised and dropped.
public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
    public let index: UInt32
    public let generation: UInt32
    @inlinable public init(index: UInt32, generation: UInt32) { self.index = index; self.generation = generation }
    @inlinable public init(packed: UInt64) { index = UInt32(truncatingIfNeeded: packed); generation = UInt32(truncatingIfNeeded: packed >> 32) }
    @inlinable public var packed: UInt64 { UInt64(generation) << 32 | UInt64(index) }
    public var description: String { "#\(index).\(generation)" }
}

/// Why the loop closed a connection on its own.
public enum CloseReason: Sendable, Equatable {
    /// The peer closed its side (read returned 0).
    case endOfFile
    /// ECONNRESET / EPIPE.
    case reset
    /// Any other socket error, or epoll refusing to register or update the connection: its errno.
    case error(Int32)
    /// Its output passed `ConnectionLimits.maxQueuedBytes`, or the peer accepted none of it for
    /// `ConnectionLimits.sendTimeoutNs` (see `EventLoop.limits`).
    case slowConsumer
    /// The deadline set with `setDeadline(_:at:tag:)` passed; `tag` is the one given there.
    case timedOut(tag: UInt8)
}

/// What the loop tells the code that owns its connections (a workload or a server).
/// Every callback runs on the loop's thread.
public protocol EventLoopHandler: AnyObject {
    /// A non-blocking connect finished: `error` is 0 on success, else an errno (ETIMEDOUT after the connect timeout).
    func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop)
    /// A listener accepted `id`.
    func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop)
    /// Input arrived. Return how many bytes at the start of `buffer` were used; the rest is kept and
    /// offered again, in front of the next input. `buffer` may be modified in place (unmasking).
    func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int
    /// The loop closed the connection because of the peer or an error (not after `close(_:)`).
    func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop)
    /// The write queue fell below the low-water mark after having passed the high-water mark.
    func writable(_ id: ConnectionID, loop: EventLoop)
    /// A timer scheduled with `schedule(at:token:)` is due.
    func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop)
}
