import CStampedeLinux
import StampedeLoop
import StampedeWire
#if canImport(Glibc)
import Glibc
#endif

/// A failure the reference servers can be told to act out, so a run can watch how clients
/// recover from a server that goes away, turns new clients away, or hangs.
public enum TargetFault: Sendable, Equatable {
    /// Every connection is dropped at once: abruptly (RST) when `reset`, else a clean close (WebSocket close 1012 "service restart" for chat; for the hub a SignalR Close message with allowReconnect true, then the transport closes — for WebSockets a close frame, for SSE/long polling end the stream/poll).
    case drop(reset: Bool)
    /// New connections are refused for `seconds`: answer the HTTP upgrade / negotiate / any request with `503 Service Unavailable` (with `Retry-After`) and close; existing connections go on.
    case reject(seconds: Double)
    /// The server stops reading and writing for `seconds` (like a GC pause or a hung process) and then carries on where it was.
    case stall(seconds: Double)
    /// Every relayed message (chat broadcast, REST response) waits `microseconds` before it goes out, a fixed
    /// added service time that makes a known latency regression; 0 turns it off. Microseconds, so a
    /// regression of a tenth of a sub-millisecond round trip can be made.
    case delay(microseconds: Int)

    /// Longest delay accepted (µs, 10 s); longer ones are cut to this.
    public static let maxDelayMicroseconds = 10_000_000

    /// Longest reject or stall accepted; longer ones are cut to this.
    public static let maxSeconds: Double = 3600

    /// A name for logs and replies: "drop", "reject" or "stall".
    public var name: String {
        switch self {
        case .drop: "drop"
        case .reject: "reject"
        case .stall: "stall"
        case .delay: "delay"
        }
    }
}

/// A reference server a `TargetAdmin` can drive: it runs on `loop`, and `apply` and
/// `statusJSON` are called on that loop's thread.
public protocol FaultTarget: AnyObject, Sendable {
    /// The loop the server's connections live on.
    var loop: EventLoop { get }
    /// Acts out `fault`. Call on the loop thread.
    func apply(_ fault: TargetFault)
    /// The server's statistics as a one-line JSON object. Call on the loop thread.
    func statusJSON() -> String
    /// Whether `apply(.delay(…))` has an effect (the chat and REST servers'; not yet the hub's).
    var supportsDelay: Bool { get }
    /// Acts out `fault` and calls `done` once it is acted out (on the loop thread; later when
    /// other processes act it out, as with `ServerGroup`). Call on the loop thread.
    func apply(_ fault: TargetFault, then done: @escaping @Sendable () -> Void)
    /// Calls `reply` with the statistics as JSON (on the loop thread; later when other
    /// processes are asked, as with `ServerGroup`). Call on the loop thread.
    func status(_ reply: @escaping @Sendable (String) -> Void)
}

extension FaultTarget {
    public var supportsDelay: Bool { false }
    public func apply(_ fault: TargetFault, then done: @escaping @Sendable () -> Void) {
        apply(fault)
        done()
    }
    public func status(_ reply: @escaping @Sendable (String) -> Void) { reply(statusJSON()) }
}

/// What both servers keep to act out faults.
struct FaultState {
    /// Monotonic ns until which new connections get 503 (0: not rejecting).
    var rejectingUntil: UInt64 = 0

    /// Seconds clamped to 0…`TargetFault.maxSeconds` (NaN counts as 0), in ns.
    static func nanoseconds(_ seconds: Double) -> UInt64 {
        guard seconds > 0 else { return 0 }
        return StampedeLoop.nanoseconds(min(seconds, TargetFault.maxSeconds))
    }

    mutating func startRejecting(seconds: Double) {
        rejectingUntil = EventLoop.now() + Self.nanoseconds(seconds)
    }

    /// Whole seconds left of the reject window, rounded up (for Retry-After); nil when not rejecting.
    func rejectingSecondsLeft(now: UInt64 = EventLoop.now()) -> Int? {
        guard now < rejectingUntil else { return nil }
        return Int((rejectingUntil - now + 999_999_999) / 1_000_000_000)
    }

    /// Blocks `loop`'s thread for `seconds`, starting once the current iteration has flushed
    /// what it wrote: queued as a task, so replies written now (the admin's "ok") still go out.
    /// A blocked loop neither accepts, reads, writes nor fires timers, as a hung process would.
    static func stall(_ loop: EventLoop, seconds: Double) {
        let ns = nanoseconds(seconds)
        guard ns > 0 else { return }
        loop.execute { _ in
            let deadline = EventLoop.now() + ns
            while true {
                let now = EventLoop.now()
                guard now < deadline else { return }
                // usleep takes at most a second's worth reliably. Its result does not matter: a
                // signal that cuts it short (EINTR) only brings the deadline check round sooner.
                _ = usleep(useconds_t(min((deadline - now) / 1000, 500_000)))
            }
        }
    }

    /// Writes a 503 with Retry-After that closes the connection, for a request refused by a reject fault.
    static func writeUnavailable(_ loop: EventLoop, _ id: ConnectionID, retryAfter seconds: Int) {
        let body: StaticString = "Service Unavailable: the server is refusing new connections for now.\n"
        loop.write(id, reserving: 512) { p in
            let out = UnsafeMutableRawBufferPointer(start: p, count: 512)
            // "Retry-After: <seconds>\r\n", built in place so a refusal storm does not allocate.
            return withUnsafeTemporaryAllocation(byteCount: 40, alignment: 1) { line -> Int in
                var w = HTTPByteWriter(line)
                w.append("Retry-After: ")
                w.appendDecimal(max(1, seconds))
                w.append("\r\n")
                guard let lineLength = w.result,
                      let n = HTTPResponseWriter.writeHead(into: out, status: 503, reason: "Service Unavailable",
                                                           contentType: "text/plain; charset=utf-8",
                                                           body: .length(body.utf8CodeUnitCount), connectionClose: true,
                                                           extraHeaderLines: UnsafeRawBufferPointer(rebasing: line[0..<lineLength])),
                      n + body.utf8CodeUnitCount <= out.count else { return 0 }
                (p + n).copyMemory(from: body.utf8Start, byteCount: body.utf8CodeUnitCount)
                return n + body.utf8CodeUnitCount
            }
        }
        loop.closeAfterFlush(id)
    }
}

/// Renders a statistics value (a struct of Ints and nested structs) as JSON object members,
/// by reflection: the admin endpoint is not a hot path, and new counters show up by themselves.
func statisticsJSONMembers(_ value: Any) -> String {
    Mirror(reflecting: value).children.compactMap { child -> String? in
        guard let label = child.label else { return nil }
        switch child.value {
        case let n as Int: return "\"\(label)\":\(n)"
        case let b as Bool: return "\"\(label)\":\(b)"
        case let d as Double: return "\"\(label)\":\(d.isFinite ? "\(d)" : "null")"
        case let flat as FlatStatistics: return statisticsJSONMembers(flat)
        default: return "\"\(label)\":{\(statisticsJSONMembers(child.value))}"
        }
    }.joined(separator: ",")
}

extension TargetFault {
    /// Longest text `delayMicroseconds` reads: enough for any valid delay, short enough that
    /// no input makes the parse slow.
    static let maxDelayTextLength = 24

    /// Microseconds from a flag like `100us`, `2ms`, `1.5ms`, `0.5s` or `2` (a bare number is ms,
    /// as it always was): whole microseconds from 0 to `maxDelayMicroseconds`, else nil (a sign,
    /// an exponent, NaN, a fraction of a microsecond or anything else).
    public static func delayMicroseconds(_ text: String) -> Int? {
        guard text.utf8.count <= maxDelayTextLength else { return nil }
        var number = Array(text.utf8)
        var unit = DelayUnit.milliseconds
        for u in DelayUnit.allCases where text.hasSuffix(u.suffix) {
            number.removeLast(u.suffix.utf8.count)
            unit = u
            break
        }
        // Exact decimal arithmetic, not Double: 0.123ms must be 123 µs, and in binary floating
        // point 0.123 * 1000 is not. Every step stays at most `maxDelayMicroseconds` times a
        // million, so nothing overflows.
        let dot = number.firstIndex(of: UInt8(ascii: "."))
        let whole = number[..<(dot ?? number.endIndex)]
        let fraction = dot.map { number[($0 + 1)...] } ?? []
        func digits(_ s: ArraySlice<UInt8>) -> Bool { s.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } }
        guard !whole.isEmpty, digits(whole), dot == nil || (!fraction.isEmpty && digits(fraction)) else { return nil }
        var us = 0
        for d in whole {
            us = us * 10 + Int(d - UInt8(ascii: "0"))
            guard us <= maxDelayMicroseconds else { return nil }
        }
        us *= unit.microseconds
        var place = unit.microseconds
        for d in fraction {
            let digit = Int(d - UInt8(ascii: "0"))
            place /= 10
            // A nonzero digit past the microseconds is a fraction of a µs.
            guard place > 0 || digit == 0 else { return nil }
            us += digit * place
        }
        return us <= maxDelayMicroseconds ? us : nil
    }

    /// The units `delayMicroseconds` takes, "us" and "ms" before "s", which ends both.
    private enum DelayUnit: CaseIterable {
        case microseconds, milliseconds, seconds

        var suffix: String {
            switch self {
            case .microseconds: "us"
            case .milliseconds: "ms"
            case .seconds: "s"
            }
        }

        var microseconds: Int {
            switch self {
            case .microseconds: 1
            case .milliseconds: 1000
            case .seconds: 1_000_000
            }
        }
    }
}
