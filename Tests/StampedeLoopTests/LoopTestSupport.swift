import Testing
import Foundation
import Synchronization
import CStampedeLinux
@testable import StampedeLoop
#if canImport(Glibc)
import Glibc
#endif

/// Upper bound for any wait on the loops; only reached when something is broken.
let waitLimit: TimeInterval = 30

let loopback = SocketAddress.ipv4(0x7F00_0001, port: 0)

/// Everything a loop told its handler, in order.
enum LoopEvent: Equatable, Sendable {
    case connected(ConnectionID, error: Int32)
    case accepted(ConnectionID, listener: ConnectionID)
    case closed(ConnectionID, CloseReason)
    case writable(ConnectionID)
    case timer(token: UInt64, deadline: UInt64, firedAt: UInt64)
}

/// A handler that records events and input for the test thread and lets a test plug in
/// behaviour. Callbacks run on the loop thread; the state is read from the test thread under a lock.
final class RecordingHandler: EventLoopHandler, @unchecked Sendable {
    private let condition = NSCondition()
    private var log: [LoopEvent] = []
    private var input: [ConnectionID: [UInt8]] = [:]
    private var offers: [ConnectionID: [[UInt8]]] = [:]
    private(set) var loopThread: pthread_t?

    /// How many of the offered bytes `received` says it used (default: all). Runs on the loop thread.
    var consume: @Sendable (_ id: ConnectionID, _ buffer: UnsafeMutableRawBufferPointer, _ loop: EventLoop) -> Int = { _, b, _ in b.count }
    /// Extra work after a callback was recorded (on the loop thread).
    var onReceived: (@Sendable (ConnectionID, [UInt8], EventLoop) -> Void)?
    var onWritable: (@Sendable (ConnectionID, EventLoop) -> Void)?
    /// Keep every offered buffer (for tests of partial consumption); off for bulk transfers.
    var recordOffers = false

    private func record(_ e: LoopEvent) {
        condition.lock()
        log.append(e)
        condition.broadcast()
        condition.unlock()
    }

    func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {
        noteThread()
        record(.connected(id, error: error))
    }
    func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) {
        noteThread()
        record(.accepted(id, listener: listener))
    }
    func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        noteThread()
        let offered = recordOffers ? Array(UnsafeRawBufferPointer(buffer)) : []
        let used = consume(id, buffer, loop)
        precondition(used >= 0 && used <= buffer.count)
        let bytes = Array(UnsafeRawBufferPointer(rebasing: buffer[0..<used]))
        condition.lock()
        input[id, default: []] += bytes
        if recordOffers { offers[id, default: []].append(offered) }
        condition.broadcast()
        condition.unlock()
        onReceived?(id, bytes, loop)
        return used
    }
    func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {
        noteThread()
        record(.closed(id, reason))
    }
    func writable(_ id: ConnectionID, loop: EventLoop) {
        noteThread()
        record(.writable(id))
        onWritable?(id, loop)
    }
    func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {
        noteThread()
        record(.timer(token: token.testNumber, deadline: deadline, firedAt: EventLoop.now()))
    }

    private func noteThread() {
        condition.lock()
        let me = pthread_self()
        if let t = loopThread { precondition(pthread_equal(t, me) != 0, "callbacks must all run on the one loop thread") } else { loopThread = me }
        condition.unlock()
    }

    var events: [LoopEvent] { condition.lock(); defer { condition.unlock() }; return log }
    func received(on id: ConnectionID) -> [UInt8] { condition.lock(); defer { condition.unlock() }; return input[id] ?? [] }
    func receivedCount(on id: ConnectionID) -> Int { condition.lock(); defer { condition.unlock() }; return input[id]?.count ?? 0 }
    func offered(on id: ConnectionID) -> [[UInt8]] { condition.lock(); defer { condition.unlock() }; return offers[id] ?? [] }

    /// Waits until `predicate` holds (checked after every callback); false if it did not within `waitLimit`.
    @discardableResult
    func wait(_ what: String, sourceLocation: SourceLocation = #_sourceLocation, until predicate: (RecordingHandler) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(waitLimit)
        condition.lock()
        defer { condition.unlock() }
        while true {
            condition.unlock()
            let done = predicate(self)
            condition.lock()
            if done { return true }
            if !condition.wait(until: min(deadline, Date().addingTimeInterval(0.05))) && Date() >= deadline {
                Issue.record("timed out waiting for \(what); events: \(log)", sourceLocation: sourceLocation)
                return false
            }
        }
    }
}

/// A running loop with its handler; stopped and joined by `shutdown()`.
final class TestLoop: @unchecked Sendable {
    let loop: EventLoop
    let handler: RecordingHandler
    private var stopped = false

    init(_ configure: (RecordingHandler) -> Void = { _ in }, configuration: EventLoop.Configuration = .init(), name: String = "test-loop") throws {
        handler = RecordingHandler()
        configure(handler)
        loop = try EventLoop(configuration: configuration)
        loop.handler = handler
        loop.start(name: name)
    }

    func shutdown() {
        guard !stopped else { return }
        stopped = true
        loop.stop()
        loop.join()
    }

    deinit { shutdown() }

    func sync<T: Sendable>(_ body: @escaping @Sendable (EventLoop) -> T) -> T { loop.submitAndWait(body) }

    func listen() throws -> (ConnectionID, UInt16) {
        try sync { $0.listen(on: loopback) }.get()
    }

    func write(_ id: ConnectionID, _ bytes: [UInt8]) {
        sync { loop in bytes.withUnsafeBytes { loop.write(id, $0) } }
    }
}

/// Two loops, a listener on one and an established connection between them.
struct ConnectedPair {
    let server: TestLoop
    let client: TestLoop
    let listener: ConnectionID
    let clientID: ConnectionID
    let serverID: ConnectionID

    init(server: TestLoop, client: TestLoop) throws {
        self.server = server
        self.client = client
        let (listener, port) = try server.listen()
        self.listener = listener
        let clientID = try client.sync { $0.connect(to: .ipv4(0x7F00_0001, port: port), timeoutNs: 10_000_000_000) }.get()
        self.clientID = clientID
        client.handler.wait("connect") { $0.events.contains(.connected(clientID, error: 0)) }
        var accepted: ConnectionID? = nil
        server.handler.wait("accept") { h in
            for case .accepted(let id, let l) in h.events where l == listener { accepted = id; return true }
            return false
        }
        serverID = try #require(accepted)
    }

    func shutdown() { client.shutdown(); server.shutdown() }
}

/// Reproducible bytes: position-dependent so loss, duplication or reordering shows.
func pattern(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
    var rng = FastRandom(seed: seed)
    var out = [UInt8](repeating: 0, count: count)
    out.withUnsafeMutableBytes { b in
        var i = 0
        while i + 8 <= count { b.storeBytes(of: rng.next(), toByteOffset: i, as: UInt64.self); i += 8 }
        while i < count { b[i] = UInt8(truncatingIfNeeded: rng.next()); i += 1 }
    }
    return out
}

extension TimerToken {
    /// A test's timer carrying the number `n` (its slot and epoch), read back by `testNumber`.
    init(testNumber n: UInt64) { self.init(kind: 0, slot: UInt32(truncatingIfNeeded: n), epoch: UInt32(truncatingIfNeeded: n >> 32)) }
    var testNumber: UInt64 { UInt64(epoch) << 32 | UInt64(slot) }
}

/// A loopback port that refuses every connection for as long as this value lives: a socket
/// bound to it (without SO_REUSEADDR) that never listens. Closing a listener instead frees the
/// port, and on a busy machine another test's listener, or a connect's own ephemeral source
/// port (a TCP self-connect), may take it before the connect under test arrives. No other
/// socket can bind the port while this one holds it, and connect never picks it as a source.
final class RefusingPort: Sendable {
    let fd: Int32
    let port: UInt16

    init() throws {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &len) }
        }
        guard bound == 0, named == 0 else {
            let e = errno
            close(s)
            throw POSIXError(.init(rawValue: e) ?? .EIO)
        }
        fd = s
        port = UInt16(bigEndian: addr.sin_port)
    }

    deinit { close(fd) }
}
