import CStampedeLinux
import StampedeLoop
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The records `stampede serve --processes N` (the supervisor, `ServerGroup`) and each of its
/// server processes (`ServerProcessLink`) exchange over one Unix-domain stream socket per process:
/// a 4-byte big-endian length (of kind and payload), a kind byte, the payload.
///
/// A chat broadcast one process made goes to the supervisor, which passes it on to every other
/// process, so every client of every process gets it exactly once; faults and status requests go
/// the other way, each answered in order (the socket keeps order, so answers need no ids).
public enum LinkRecord {
    public enum Kind: UInt8, Sendable {
        /// Process → supervisor, first: the process's index in decimal; it listens now.
        case hello = 0x48
        /// Either way: a complete WebSocket frame to send to every open chat client.
        case broadcast = 0x42
        /// Supervisor → process: a fault to act out (`TargetFault.linkText`); answered by `applied`.
        case fault = 0x46
        case applied = 0x41
        /// Supervisor → process: asks for the statistics; answered by `statusReply` (JSON).
        case status = 0x53
        case statusReply = 0x54
    }

    /// Bytes in front of every payload.
    public static let headerLength = 5
    /// Largest payload accepted: a broadcast frame carries one client message of at most
    /// `ChatServer.maxMessageBytes` plus the server's fields. Longer means a broken stream.
    public static let maxPayload = ChatServer.maxMessageBytes + 64 * 1024

    /// Appends one record to `out`.
    public static func append(_ kind: Kind, _ payload: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        let n = UInt32(payload.count + 1)
        out.append(contentsOf: [UInt8(n >> 24), UInt8((n >> 16) & 255), UInt8((n >> 8) & 255), UInt8(n & 255), kind.rawValue])
        out.append(contentsOf: payload)
    }

    /// Queues one record on `id`.
    public static func write(_ loop: EventLoop, _ id: ConnectionID, _ kind: Kind, _ payload: UnsafeRawBufferPointer) {
        loop.write(id, reserving: headerLength + payload.count) { p in
            let n = UInt32(payload.count + 1)
            p.storeBytes(of: n.bigEndian, as: UInt32.self)
            p.storeBytes(of: kind.rawValue, toByteOffset: 4, as: UInt8.self)
            if let b = payload.baseAddress { (p + headerLength).copyMemory(from: b, byteCount: payload.count) }
            return headerLength + payload.count
        }
    }

    /// Calls `each` with every complete record at the start of `buffer` (kind nil: a kind this
    /// side does not know). Returns the bytes used, or nil when the stream is broken (a length
    /// of 0 or past `maxPayload`).
    public static func parse(_ buffer: UnsafeRawBufferPointer, _ each: (Kind?, UnsafeRawBufferPointer) -> Void) -> Int? {
        var offset = 0
        while buffer.count - offset >= headerLength {
            let b = buffer.baseAddress! + offset
            let n = Int(UInt32(b.load(as: UInt8.self)) << 24 | UInt32(b.load(fromByteOffset: 1, as: UInt8.self)) << 16
                        | UInt32(b.load(fromByteOffset: 2, as: UInt8.self)) << 8 | UInt32(b.load(fromByteOffset: 3, as: UInt8.self)))
            guard n >= 1, n - 1 <= maxPayload else { return nil }
            guard buffer.count - offset >= 4 + n else { break }
            each(Kind(rawValue: b.load(fromByteOffset: 4, as: UInt8.self)), UnsafeRawBufferPointer(start: b + headerLength, count: n - 1))
            offset += 4 + n
        }
        return offset
    }
}

extension TargetFault {
    /// The fault as a `LinkRecord.Kind.fault` payload: "drop reset", "reject 2.5", "delay 300" (µs) ….
    public var linkText: String {
        switch self {
        case .drop(let reset): "drop \(reset ? "reset" : "close")"
        case .reject(let s): "reject \(s)"
        case .stall(let s): "stall \(s)"
        case .delay(let us): "delay \(us)"
        }
    }

    /// Reads `linkText` back; nil for anything else.
    public init?(linkText: String) {
        let parts = linkText.split(separator: " ")
        guard parts.count == 2 else { return nil }
        switch parts[0] {
        case "drop" where parts[1] == "reset" || parts[1] == "close": self = .drop(reset: parts[1] == "reset")
        case "reject": guard let s = Double(parts[1]), s.isFinite, s >= 0 else { return nil }; self = .reject(seconds: s)
        case "stall": guard let s = Double(parts[1]), s.isFinite, s >= 0 else { return nil }; self = .stall(seconds: s)
        case "delay": guard let us = Int(parts[1]), us >= 0 else { return nil }; self = .delay(microseconds: us)
        default: return nil
        }
    }
}

/// A server whose broadcasts reach the clients of every server process of `stampede serve
/// --processes`: it hands each broadcast it makes to `remoteBroadcast` (an opaque record), and
/// sends records other processes made to its own clients in `deliverRemote(records:)`.
public protocol SharedBroadcasts: AnyObject, Sendable {
    var loop: EventLoop { get }
    /// Set before the loop starts; called on the loop thread with each broadcast's record.
    var remoteBroadcast: ((UnsafeRawBufferPointer) -> Void)? { get set }
    /// Sends other processes' broadcasts (`LinkRecord` broadcast records, in order) to this
    /// process's clients. Call on the loop thread.
    func deliverRemote(records: [UInt8])
}

/// A server process's end of the link to its `stampede serve --processes` supervisor, on its own
/// loop and thread (so faults and status requests are taken even while the server's loop is
/// stalled, as `TargetAdmin` is): acts out the faults the supervisor sends on `target`, answers
/// its status requests, and, for the chat server, carries broadcasts both ways.
public final class ServerProcessLink: EventLoopHandler, @unchecked Sendable {
    public let loop: EventLoop
    let target: any FaultTarget
    let shared: (any SharedBroadcasts)?
    var id: ConnectionID
    /// Broadcast records made by the chat loop, waiting for this loop to write them.
    let outbox = Mutex<[UInt8]>([])
    let lostFlag = Atomic<Bool>(false)

    /// Whether the supervisor went away (the link closed or broke): the process should end.
    public var isLost: Bool { lostFlag.load(ordering: .relaxed) }

    /// Connects to the supervisor's socket at `path`, says hello as process `index`, and starts
    /// the link's loop. With `sharing` (the chat server or the hub), its broadcasts are shared
    /// with the other processes.
    public init(path: String, index: Int, target: any FaultTarget, sharing: (any SharedBroadcasts)?) throws(LoopError) {
        self.target = target
        self.shared = sharing
        let fd = path.withCString { cs_unix_stream($0, 0) }
        guard fd >= 0 else { throw LoopError(operation: "connect to \(path)", errno: cs_errno()) }
        // The hello goes out now, blocking: a loop only writes once it wakes up.
        var hello: [UInt8] = []
        Array(String(index).utf8).withUnsafeBytes { LinkRecord.append(.hello, $0, to: &hello) }
        guard hello.withUnsafeBytes({ cs_send_nosignal(fd, $0.baseAddress, $0.count) }) == hello.count else {
            let e = cs_errno()
            Glibc.close(fd)
            throw LoopError(operation: "send to \(path)", errno: e)
        }
        let loop: EventLoop
        do { loop = try EventLoop(index: 0) } catch { Glibc.close(fd); throw error }
        self.loop = loop
        switch loop.adopt(fd: fd, exemptFromLimits: true) {
        case .success(let id): self.id = id
        case .failure(let e): Glibc.close(fd); throw e
        }
        loop.handler = self
        if let shared {
            // Called on the server's loop: batched, one wake-up of this loop per burst of broadcasts.
            shared.remoteBroadcast = { [self] frame in
                let wasEmpty = outbox.withLock { out in
                    let empty = out.isEmpty
                    LinkRecord.append(.broadcast, frame, to: &out)
                    return empty
                }
                if wasEmpty { self.loop.execute { [self] loop in flushOutbox(loop) } }
            }
        }
        loop.start(name: "stampede-link")
    }

    func flushOutbox(_ loop: EventLoop) {
        let records = outbox.withLock { out -> [UInt8] in
            let taken = out
            out.removeAll(keepingCapacity: true)
            return taken
        }
        records.withUnsafeBytes { loop.write(id, $0) }
    }

    /// Makes the kernel end this process (SIGTERM) when the thread that started it ends, so a
    /// server process never outlives its supervisor, even one killed with SIGKILL. Call from
    /// the process's main thread, at start.
    public static func endWithParent() {
        _ = cs_die_with_parent(SIGTERM)
    }

    /// Stops the link's loop and waits for its thread.
    public func stop() {
        loop.stop()
        loop.join()
    }

    // MARK: EventLoopHandler

    public func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        var frames: [UInt8] = []
        let used = LinkRecord.parse(UnsafeRawBufferPointer(buffer)) { kind, payload in
            switch kind {
            case .broadcast?:
                LinkRecord.append(.broadcast, payload, to: &frames)
            case .fault?:
                guard let fault = TargetFault(linkText: String(decoding: payload, as: UTF8.self)) else { return }
                let target = self.target
                target.loop.execute { [self] _ in
                    target.apply(fault)
                    self.loop.execute { loop in LinkRecord.write(loop, id, .applied, UnsafeRawBufferPointer(start: nil, count: 0)) }
                }
            case .status?:
                let target = self.target
                target.loop.execute { [self] _ in
                    let json = Array(target.statusJSON().utf8)
                    self.loop.execute { loop in json.withUnsafeBytes { LinkRecord.write(loop, id, .statusReply, $0) } }
                }
            default:
                break
            }
        }
        if !frames.isEmpty, let shared {
            // One task per read, not per frame: the server's loop sends them to its clients in order.
            let batch = frames
            shared.loop.execute { _ in shared.deliverRemote(records: batch) }
        }
        guard let used else {
            lostFlag.store(true, ordering: .relaxed)
            loop.close(id)
            return buffer.count
        }
        return used
    }

    public func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {
        lostFlag.store(true, ordering: .relaxed)
    }

    public func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) {}
    public func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {}
    public func writable(_ id: ConnectionID, loop: EventLoop) {}
    public func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {}
}
