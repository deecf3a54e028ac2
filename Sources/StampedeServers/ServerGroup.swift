import CStampedeLinux
import Foundation
import StampedeLoop
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The supervisor's side of `stampede serve --processes N`: one link (a Unix-domain stream
/// socket, `LinkRecord`s) to each server process, on its own loop.
///
/// - A chat broadcast one process made is passed on to every other process (never back to its
///   maker, which already sent it to its own clients), so every client of every process gets
///   every broadcast exactly once.
/// - As a `FaultTarget` (for `TargetAdmin`), a fault goes to every process and counts as applied
///   once all of them said so; the status is every process's statistics summed, with each
///   process's own under `perProcess`.
public final class ServerGroup: EventLoopHandler, FaultTarget, @unchecked Sendable {
    public let loop: EventLoop
    /// Server processes in the group.
    public let count: Int
    public let supportsDelay: Bool
    let listenFD: Int32
    /// Each process's link, by its index.
    var links: [ConnectionID] = []
    var indexByLink: [ConnectionID: Int] = [:]
    /// Per process, the answers it still owes, oldest first (the link keeps order).
    var owed: [[Owed]] = []
    enum Owed { case applied(Gather<Void>), status(Gather<String>) }
    let lost = Atomic<Int>(-1)

    /// The index of a process whose link closed or broke (it died, or cannot be reached), or nil.
    public var lostProcess: Int? { let i = lost.load(ordering: .relaxed); return i >= 0 ? i : nil }

    /// Listens on `socketPath` (in a folder only this user can enter) for `count` processes.
    public init(socketPath: String, count: Int, supportsDelay: Bool) throws(LoopError) {
        self.count = count
        self.supportsDelay = supportsDelay
        let fd = socketPath.withCString { cs_unix_stream($0, Int32(max(16, count))) }
        guard fd >= 0 else { throw LoopError(operation: "listen on \(socketPath)", errno: cs_errno()) }
        listenFD = fd
        do { loop = try EventLoop(index: 0) } catch { Glibc.close(fd); throw error }
        loop.handler = self
    }

    deinit { Glibc.close(listenFD) }

    /// Waits until every process has connected and said hello (each does once it listens),
    /// then starts the loop. Gives up after `timeoutSeconds`, or as soon as `stillFine` returns
    /// a problem (a process ended early): returns why, or nil when all are there.
    public func awaitProcesses(timeoutSeconds: Double, stillFine: () -> String?) -> String? {
        var byIndex = [Int32?](repeating: nil, count: count)
        var joined = 0
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while joined < count {
            if let problem = stillFine() { return problem }
            guard Date() < deadline else { return "only \(joined) of \(count) server processes started within \(Int(timeoutSeconds)) s" }
            var p = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            let fd = accept(listenFD, nil, nil)
            guard fd >= 0 else {
                // Out of descriptors (EMFILE, ENFILE) the connection stays waiting and poll says
                // so at once: rest instead of spinning until the deadline.
                if cs_errno() != EINTR { Thread.sleep(forTimeInterval: 0.1) }
                continue
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            // The hello follows the connect at once; a peer that sends none is not ours.
            var tv = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            // Exactly the hello's bytes: what follows it (broadcasts of clients that came early)
            // stays in the socket for the loop.
            var head = [UInt8](repeating: 0, count: LinkRecord.headerLength)
            var index = -1
            if recv(fd, &head, head.count, Int32(MSG_WAITALL)) == head.count, head[4] == LinkRecord.Kind.hello.rawValue {
                let n = Int(head[0]) << 24 | Int(head[1]) << 16 | Int(head[2]) << 8 | Int(head[3])
                if (2...16).contains(n) {
                    var payload = [UInt8](repeating: 0, count: n - 1)
                    if recv(fd, &payload, payload.count, Int32(MSG_WAITALL)) == payload.count {
                        index = Int(String(decoding: payload, as: UTF8.self)) ?? -1
                    }
                }
            }
            guard (0..<count).contains(index), byIndex[index] == nil else { Glibc.close(fd); continue }
            byIndex[index] = fd
            joined += 1
        }
        for (i, fd) in byIndex.enumerated() {
            guard let fd else { continue }
            switch loop.adopt(fd: fd, exemptFromLimits: true) {
            case .success(let id):
                links.append(id)
                indexByLink[id] = i
            case .failure(let e):
                return "cannot serve the link to server process \(i): \(e)"
            }
        }
        owed = Array(repeating: [], count: count)
        loop.start(name: "stampede-group")
        return nil
    }

    /// Stops the loop and waits for its thread.
    public func stop() {
        loop.stop()
        loop.join()
    }

    // MARK: FaultTarget

    public func apply(_ fault: TargetFault) { apply(fault) {} }

    public func apply(_ fault: TargetFault, then done: @escaping @Sendable () -> Void) {
        let gather = Gather<Void>(count: links.count) { _ in done() }
        let text = Array(fault.linkText.utf8)
        for (i, id) in links.enumerated() {
            owed[i].append(.applied(gather))
            text.withUnsafeBytes { LinkRecord.write(loop, id, .fault, $0) }
        }
    }

    public func statusJSON() -> String { #"{"processes":\#(count)}"# }

    public func status(_ reply: @escaping @Sendable (String) -> Void) {
        let count = self.count
        let gather = Gather<String>(count: links.count) { parts in reply(Self.merged(parts, processes: count)) }
        for (i, id) in links.enumerated() {
            owed[i].append(.status(gather))
            LinkRecord.write(loop, id, .status, UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }

    /// Members that are settings rather than counts: the largest is shown, not the sum.
    static let settings: Set<String> = ["connectionCostUs", "delayMs", "delayUs", "maxConnections", "maxRateSpacingNs", "port", "rejectingSeconds"]

    /// The processes' status objects as one: counts summed, settings and text from the first
    /// (the largest setting), each process's own object under `perProcess`.
    static func merged(_ parts: [String], processes: Int) -> String {
        let objects = parts.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
        var total: [String: Any] = [:]
        for o in objects { total = merge(total, o) }
        total["processes"] = processes
        total["perProcess"] = objects
        guard let data = try? JSONSerialization.data(withJSONObject: total, options: [.sortedKeys, .withoutEscapingSlashes]) else { return #"{"processes":\#(processes)}"# }
        return String(decoding: data, as: UTF8.self)
    }

    static func merge(_ a: [String: Any], _ b: [String: Any]) -> [String: Any] {
        var out = a
        for (key, value) in b {
            guard let old = out[key] else { out[key] = value; continue }
            if let x = old as? [String: Any], let y = value as? [String: Any] {
                out[key] = merge(x, y)
            } else if let x = old as? NSNumber, let y = value as? NSNumber, String(cString: x.objCType) != "c" {
                if settings.contains(key) {
                    out[key] = x.doubleValue >= y.doubleValue ? x : y
                } else if Double(x.int64Value) == x.doubleValue && Double(y.int64Value) == y.doubleValue {
                    out[key] = x.int64Value &+ y.int64Value
                } else {
                    out[key] = x.doubleValue + y.doubleValue
                }
            }
        }
        return out
    }

    // MARK: EventLoopHandler

    public func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        guard let i = indexByLink[id] else { return buffer.count }
        let used = LinkRecord.parse(UnsafeRawBufferPointer(buffer)) { kind, payload in
            switch kind {
            case .broadcast?:
                for (j, other) in links.enumerated() where j != i { LinkRecord.write(loop, other, .broadcast, payload) }
            case .applied?:
                guard case .applied(let g)? = owed[i].first else { return }
                owed[i].removeFirst()
                g.add(i, ())
            case .statusReply?:
                guard case .status(let g)? = owed[i].first else { return }
                owed[i].removeFirst()
                g.add(i, String(decoding: payload, as: UTF8.self))
            default:
                break
            }
        }
        guard let used else {
            lost.store(i, ordering: .relaxed)
            loop.close(id)
            return buffer.count
        }
        return used
    }

    public func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {
        if let i = indexByLink[id] { lost.store(i, ordering: .relaxed) }
    }

    public func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) {}
    public func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {}
    public func writable(_ id: ConnectionID, loop: EventLoop) {}
    public func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {}
}

/// Collects one answer per process (on the group's loop) and hands them over, in process
/// order, once the last one is in.
final class Gather<T>: @unchecked Sendable {
    var answers: [T?]
    var missing: Int
    let done: ([T]) -> Void

    init(count: Int, done: @escaping ([T]) -> Void) {
        answers = Array(repeating: nil, count: count)
        missing = count
        self.done = done
        if count == 0 { done([]) }
    }

    func add(_ i: Int, _ answer: T) {
        guard answers[i] == nil else { return }
        answers[i] = answer
        missing -= 1
        if missing == 0 { done(answers.compactMap { $0 }) }
    }
}
