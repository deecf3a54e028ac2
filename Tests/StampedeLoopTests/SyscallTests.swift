import Testing
import Foundation
import CStampedeLinux
@testable import StampedeLoop
#if canImport(Glibc)
import Glibc
#endif

/// Stands for a system call that a signal interrupts `interruptions` times before it returns `result`.
final class InterruptedCall {
    let interruptions: Int
    let result: Int
    private(set) var calls = 0
    init(interruptions: Int, result: Int) { self.interruptions = interruptions; self.result = result }
    func callAsFunction() -> Int {
        calls += 1
        if calls <= interruptions { errno = EINTR; return -1 }
        return result
    }
}

@Suite struct SyscallHelperTests {
    @Test func syscallRetriesEINTRAndMapsEAGAINToWouldBlock() {
        let call = InterruptedCall(interruptions: 2, result: 7)
        let retried = syscall { call() }
        #expect(retried == .done(7))
        #expect(call.calls == 3)
        for e in [EAGAIN, EWOULDBLOCK, EINPROGRESS] {
            let r = syscall { errno = e; return -1 }
            #expect(r == .wouldBlock, "errno \(e)")
        }
        let failed = syscall { errno = EBADF; return -1 }
        #expect(failed == .failed(EBADF))
    }

    @Test func syscallStatusRetriesEINTRAndReturnsTheErrno() {
        let call = InterruptedCall(interruptions: 1, result: 0)
        let ok = syscallStatus { Int32(call()) }
        #expect(ok == 0)
        #expect(call.calls == 2)
        // EAGAIN is an errno like any other for a call that has no "try later".
        let again = syscallStatus { errno = EAGAIN; return -1 }
        #expect(again == EAGAIN)
        let bad = syscallStatus { cs_epoll_ctl(-1, EPOLL_CTL_ADD, -1, EPOLLIN.rawValue, 0) }
        #expect(bad == EBADF)
    }

    /// The loop's eventfd and timerfd reads rely on this: an empty counter reads as EAGAIN.
    @Test func emptyEventfdReadsAsWouldBlock() throws {
        let fd = cs_eventfd_create()
        try #require(fd >= 0)
        defer { Glibc.close(fd) }
        var count: UInt64 = 0
        let empty = withUnsafeMutableBytes(of: &count) { p in syscall { Glibc.read(fd, p.baseAddress, 8) } }
        #expect(empty == .wouldBlock)
        var one: UInt64 = 1
        let wrote = withUnsafeBytes(of: &one) { p in syscall { Glibc.write(fd, p.baseAddress, 8) } }
        #expect(wrote == .done(8))
        let read = withUnsafeMutableBytes(of: &count) { p in syscall { Glibc.read(fd, p.baseAddress, 8) } }
        #expect(read == .done(8))
        #expect(count == 1)
    }
}

/// epoll refusing a connection's registration closes it with `.error(errno)` instead of leaving
/// it unwatched. The refusal (EPERM) is provoked by putting /dev/null, which epoll cannot watch,
/// in place of the connection's socket with dup2 (a send to it would fail with ENOTSOCK instead), on the loop thread: the fd number stays valid and owned
/// by the loop, so nothing else in the process can be closed by mistake.
@Suite struct RegistrationFailureTests {
    /// Replaces `id`'s socket with /dev/null; runs on the loop thread.
    static func breakSocket(_ id: ConnectionID, on loop: EventLoop) {
        let fd = loop.slots[Int(id.index)].fd
        let null = Glibc.open("/dev/null", O_RDWR | O_CLOEXEC)
        precondition(null >= 0)
        precondition(dup2(null, fd) == fd)
        Glibc.close(null)
    }

    static func closedWithError(_ id: ConnectionID, _ h: RecordingHandler) -> Int32? {
        for case .closed(let c, .error(let e)) in h.events where c == id { return e }
        return nil
    }

    /// `id` was closed, once, with `.error(EPERM)` (epoll_ctl(2): the fd does not support epoll).
    static func expectClosedByEpoll(_ id: ConnectionID, on t: TestLoop, sourceLocation: SourceLocation = #_sourceLocation) throws {
        t.handler.wait("closed with the errno", sourceLocation: sourceLocation) { closedWithError(id, $0) != nil }
        let e = try #require(closedWithError(id, t.handler), sourceLocation: sourceLocation)
        #expect(e == EPERM, "errno \(e): \(errnoDescription(e))", sourceLocation: sourceLocation)
        #expect(!t.sync { $0.isAlive(id) }, sourceLocation: sourceLocation)
        #expect(t.handler.events.filter { if case .closed(id, _) = $0 { true } else { false } }.count == 1, sourceLocation: sourceLocation)
    }

    @Test func pausingAConnectionEpollRefusesClosesItWithTheErrno() throws {
        let server = try TestLoop(name: "server")
        let client = try TestLoop(name: "client")
        defer { client.shutdown(); server.shutdown() }
        let pair = try ConnectedPair(server: server, client: client)
        let id = pair.clientID

        client.sync { loop in
            Self.breakSocket(id, on: loop)
            loop.pauseReading(id, true)  // EPOLL_CTL_DEL fails
            // Not closed inside the call (it may run within a handler's write)...
            precondition(loop.isAlive(id))
        }
        // ... but by the end of that iteration, with a reason.
        try Self.expectClosedByEpoll(id, on: client)
        #expect(client.sync { $0.liveSlots } == 0)
        // The peer sees the connection go.
        server.handler.wait("peer closed") { h in h.events.contains { if case .closed(pair.serverID, _) = $0 { true } else { false } } }
    }

    @Test func throttlingAConnectionEpollRefusesClosesItWithTheErrno() throws {
        var configuration = EventLoop.Configuration()
        configuration.highWaterMark = 1024
        configuration.lowWaterMark = 256
        let server = try TestLoop(configuration: configuration, name: "server")
        let client = try TestLoop(name: "client")
        defer { client.shutdown(); server.shutdown() }
        server.sync { $0.limits = ConnectionLimits(maxQueuedBytes: 1 << 20, sendTimeoutNs: 60_000_000_000, sweepIntervalNs: 1_000_000_000) }
        let pair = try ConnectedPair(server: server, client: client)
        let id = pair.serverID

        server.sync { loop in
            Self.breakSocket(id, on: loop)
            // Past the high-water mark: the loop stops reading it (EPOLL_CTL_MOD, which fails).
            [UInt8](repeating: 7, count: 4096).withUnsafeBytes { loop.write(id, $0) }
            precondition(loop.isAlive(id))
        }
        try Self.expectClosedByEpoll(id, on: server)
        #expect(server.sync { $0.queuedBytes } == 0)
        // The listener is unaffected.
        #expect(server.sync { $0.isAlive(pair.listener) })
    }
}
