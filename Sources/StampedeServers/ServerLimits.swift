import CStampedeLinux
import StampedeLoop

/// What every reference server does so that no client, however abusive, makes it buffer
/// without bound, starve the loop, or hold a connection it does not use. One place for the
/// chat server, the hub (every transport) and the REST target.
///
/// - **Output:** the loop stops reading a connection whose answers are backed up (over its
///   256 KiB high-water mark) until they drain, and closes it as a slow consumer (a TCP close,
///   counted in `slowConsumersDropped`) when a write would take its queue past `maxOutputBytes`,
///   or when the peer accepts none of its waiting output for `sendTimeout` (see
///   `ConnectionLimits`). The hub's long-polling queue, which waits for a poll rather than for
///   the socket, has the same limit.
/// - **Header-read timeout:** a request (or upgrade) head that has started must be complete
///   within `headerTimeout`, else the connection is closed (`headerTimeouts`): slowloris.
/// - **Idle timeout:** a connection waiting for a request (just accepted, or between keep-alive
///   requests) that sends nothing for `idleTimeout` is closed (`idleTimeouts`). Upgraded
///   WebSockets, SSE streams and open polls have the hub's own keep-alive and timeouts instead.
///
/// **Memory bound.** Queued output is at most `maxOutputBytes` per connection, exactly (the
/// loop's `queuedBytes` accounting; the REST target raises it to fit its largest answer, see
/// `effective(forLargestWrite:)`). Input per connection is bounded by the parsers: 16 KiB of
/// HTTP head, and a WebSocket message of at most 1 MiB kept twice (the frame waiting in the
/// loop and the reassembled message). Growth of a buffer by doubling can leave up to twice
/// its contents allocated, so the whole process stays under
/// fixed + connections × (2 × `maxOutputBytes` + 2 MiB),
/// i.e. about 10 MiB per connection with the defaults (fixed: code, tables, ~30 MiB).
public struct ServerLimits: Sendable, Equatable {
    /// Raises this process's soft open-files limit to its hard limit (a server holds one
    /// descriptor per connection); returns the limit now in force (-1: unknown).
    @discardableResult
    public static func raiseOpenFilesLimit() -> Int { cs_raise_open_files_limit() }

    /// Most output queued for one connection before it is dropped as a slow consumer.
    public static let defaultMaxOutputBytes = 4 << 20
    /// A connection that accepts none of its waiting output for this long is dropped (s). nginx
    /// uses 60 s; ten is plenty on loopback.
    public static let defaultSendTimeout = 10.0
    /// A started request head must be complete within this long (s).
    public static let defaultHeaderTimeout = 10.0
    /// A connection with no request under way is closed after this long without one (s).
    public static let defaultIdleTimeout = 60.0
    /// Longest timeout accepted (s).
    public static let maxTimeout = 3600.0

    public var maxOutputBytes: Int
    public var sendTimeout: Double
    public var headerTimeout: Double
    public var idleTimeout: Double

    public init(maxOutputBytes: Int = ServerLimits.defaultMaxOutputBytes, sendTimeout: Double = ServerLimits.defaultSendTimeout,
                headerTimeout: Double = ServerLimits.defaultHeaderTimeout, idleTimeout: Double = ServerLimits.defaultIdleTimeout) {
        self.maxOutputBytes = maxOutputBytes
        self.sendTimeout = sendTimeout
        self.headerTimeout = headerTimeout
        self.idleTimeout = idleTimeout
    }

    /// Deadline tags on the loop: which timeout a `.timedOut(tag:)` close was.
    static let idleTag: UInt8 = 1
    static let headerTag: UInt8 = 2

    static func ns(_ seconds: Double) -> UInt64 {
        UInt64(min(max(0.001, seconds.isNaN ? 0 : seconds), maxTimeout) * 1e9)
    }

    var idleNs: UInt64 { Self.ns(idleTimeout) }
    var headerNs: UInt64 { Self.ns(headerTimeout) }

    /// These limits with the output limit raised, if needed, so that one write of `largest`
    /// bytes on a connection just under the high-water mark still fits: a server that stops
    /// answering while backed up never queues more than that.
    func effective(forLargestWrite largest: Int, highWaterMark: Int) -> ServerLimits {
        var l = self
        l.maxOutputBytes = max(maxOutputBytes, highWaterMark + largest)
        return l
    }

    /// Puts the limits on the server's loop. Call on the loop thread (or before it starts).
    func install(on loop: EventLoop) {
        let sweep = min(Self.ns(sendTimeout), headerNs, idleNs) / 4
        loop.limits = ConnectionLimits(maxQueuedBytes: max(64 * 1024, maxOutputBytes), sendTimeoutNs: Self.ns(sendTimeout),
                                       sweepIntervalNs: min(sweep, 250_000_000))
    }

    /// `id` waits for a request (accepted, or its last answer is written): the idle timeout runs.
    @inline(__always)
    func awaitRequest(_ id: ConnectionID, _ loop: EventLoop) {
        loop.setDeadline(id, at: loop.wakeTime &+ idleNs, tag: Self.idleTag)
    }

    /// Bytes of a request arrived but its head is not complete: the header timeout runs from
    /// the first of them (later bytes do not extend it).
    @inline(__always)
    func requestStarted(_ id: ConnectionID, _ loop: EventLoop) {
        if loop.deadlineTag(id) != Self.headerTag { loop.setDeadline(id, at: loop.wakeTime &+ headerNs, tag: Self.headerTag) }
    }

    /// The connection has moved on (upgraded, streaming, polling, closing): no timeout here.
    @inline(__always)
    func noDeadline(_ id: ConnectionID, _ loop: EventLoop) {
        loop.setDeadline(id, at: .max, tag: 0)
    }
}

/// What the limits closed, in every server's statistics (flat in the admin's `/status` JSON).
public struct LimitStatistics: Sendable, Equatable, FlatStatistics {
    /// Connections closed for passing the output limit or the send timeout, and for each of
    /// the head and idle timeouts.
    public var slowConsumersDropped = 0
    public var headerTimeouts = 0
    public var idleTimeouts = 0
    /// Connections `accept` left waiting for want of descriptors (EMFILE, ENFILE) or kernel
    /// memory, by cause: each paused the listener for a moment instead of spinning on it.
    public var acceptRefusals = AcceptRefusalCounts()

    public init() {}

    /// Counts a close the loop made because of the limits. Returns whether it was one.
    @discardableResult
    mutating func count(_ reason: CloseReason) -> Bool {
        switch reason {
        case .slowConsumer: slowConsumersDropped += 1
        case .timedOut(let tag) where tag == ServerLimits.headerTag: headerTimeouts += 1
        case .timedOut(let tag) where tag == ServerLimits.idleTag: idleTimeouts += 1
        default: return false
        }
        return true
    }
}

/// A statistics group whose members are rendered at the level of the struct holding it.
protocol FlatStatistics {}
