import Testing
import Foundation
import Synchronization
import CStampedeLinux
@testable import StampedeLoop
#if canImport(Glibc)
import Glibc
#endif

@Suite struct EventLoopTests {
    @Test func listenerAndConnectorExchangeBytes() throws {
        let server = try TestLoop({ h in
            // Echo every input back with a prefix.
            h.onReceived = { id, bytes, loop in (Array("echo:".utf8) + bytes).withUnsafeBytes { loop.write(id, $0) } }
        }, name: "server")
        let client = try TestLoop(name: "client")
        defer { client.shutdown(); server.shutdown() }
        let pair = try ConnectedPair(server: server, client: client)

        client.write(pair.clientID, Array("hello".utf8))
        server.handler.wait("server input") { $0.receivedCount(on: pair.serverID) == 5 }
        client.handler.wait("echo") { $0.receivedCount(on: pair.clientID) == 10 }
        #expect(server.handler.received(on: pair.serverID) == Array("hello".utf8))
        #expect(client.handler.received(on: pair.clientID) == Array("echo:hello".utf8))

        // Server-initiated bytes reach the client too, after the echo.
        server.write(pair.serverID, Array(" and more".utf8))
        client.handler.wait("server push") { $0.receivedCount(on: pair.clientID) == 19 }
        #expect(client.handler.received(on: pair.clientID) == Array("echo:hello and more".utf8))

        #expect(client.sync { $0.isAlive(pair.clientID) })
        #expect(server.sync { $0.isAlive(pair.serverID) && $0.isAlive(pair.listener) })
        #expect(server.sync { $0.liveSlots } == 2)
        #expect(client.sync { $0.liveSlots } == 1)
        // Nobody closed anything.
        #expect(!client.handler.events.contains { if case .closed = $0 { true } else { false } })
        #expect(!server.handler.events.contains { if case .closed = $0 { true } else { false } })
    }

    @Test func listenerAndConnectorOnTheSameLoop() throws {
        let t = try TestLoop()
        defer { t.shutdown() }
        let (listener, port) = try t.listen()
        let c = try t.sync { $0.connect(to: .ipv4(0x7F00_0001, port: port), timeoutNs: 10_000_000_000) }.get()
        var s: ConnectionID? = nil
        t.handler.wait("connect and accept") { h in
            guard h.events.contains(.connected(c, error: 0)) else { return false }
            for case .accepted(let id, let l) in h.events where l == listener { s = id; return true }
            return false
        }
        let sid = try #require(s)
        t.write(c, [1, 2, 3])
        t.write(sid, [4, 5])
        t.handler.wait("both directions") { $0.receivedCount(on: sid) == 3 && $0.receivedCount(on: c) == 2 }
        #expect(t.handler.received(on: sid) == [1, 2, 3])
        #expect(t.handler.received(on: c) == [4, 5])
    }

    @Test func connectToAClosedPortReportsECONNREFUSED() throws {
        let t = try TestLoop()
        defer { t.shutdown() }
        // Bound but never listening: the kernel answers RST, and no one can take the port meanwhile.
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let port = refusing.port
        let result = t.sync { $0.connect(to: .ipv4(0x7F00_0001, port: port), timeoutNs: 10_000_000_000) }
        switch result {
        case .failure(let e):
            // An immediate refusal is allowed by the API as well.
            #expect(e.errno == ECONNREFUSED)
        case .success(let id):
            t.handler.wait("connect completion") { h in h.events.contains { if case .connected(id, _) = $0 { true } else { false } } }
            #expect(t.handler.events == [.connected(id, error: ECONNREFUSED)])
            #expect(!t.sync { $0.isAlive(id) })
            #expect(t.sync { $0.liveSlots } == 0)
        }
    }

    @Test func executeAndSubmitAndWaitRunOnTheLoopThread() throws {
        let t = try TestLoop(name: "exec-loop")
        defer { t.shutdown() }
        let testThread = pthread_self()
        let loopThread = t.sync { _ in pthread_self() }
        #expect(pthread_equal(loopThread, testThread) == 0)

        // Tasks from several threads all run, one at a time, on the loop thread; each thread's in order.
        final class Box: @unchecked Sendable { var seen: [Int: [Int]] = [:]; var count = 0; var offThread = 0 }
        let box = Box()
        let threads = 4, perThread = 200
        let group = DispatchGroup()
        for thread in 0..<threads {
            group.enter()
            Thread.detachNewThread {
                for i in 0..<perThread {
                    t.loop.execute { _ in
                        if pthread_equal(pthread_self(), loopThread) == 0 { box.offThread += 1 }
                        box.seen[thread, default: []].append(i)
                        box.count += 1
                    }
                }
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + waitLimit) == .success)
        // Everything queued before this task has run once it returns (tasks are FIFO).
        let (count, offThread, seen) = t.sync { _ in (box.count, box.offThread, box.seen) }
        #expect(count == threads * perThread)
        #expect(offThread == 0)
        for thread in 0..<threads { #expect(seen[thread] == Array(0..<perThread)) }
    }

    @Test func submitAndWaitReturnsTheValueAndCanTouchLoopState() throws {
        let t = try TestLoop()
        defer { t.shutdown() }
        #expect(t.sync { _ in 41 + 1 } == 42)
        #expect(t.sync { $0.scheduledTimers } == 0)
        #expect(t.sync { $0.slotCapacity } == 0)
        let optional: Int? = t.sync { _ in nil }
        #expect(optional == nil)
    }

    /// A loop configured for each way of waiting for timers.
    static func configuration(_ wait: EventLoop.TimerWait) -> EventLoop.Configuration {
        var c = EventLoop.Configuration()
        c.timerWait = wait
        return c
    }

    @Test(arguments: [EventLoop.TimerWait.automatic, .timerfd])
    func timersFireInDeadlineOrderAndFIFOForTies(_ wait: EventLoop.TimerWait) throws {
        let t = try TestLoop(configuration: Self.configuration(wait))
        defer { t.shutdown() }
        let now = EventLoop.now()
        let ms: UInt64 = 1_000_000
        // (deadline offset in ms, token), pushed out of order; 5, 6 and 7 share a deadline.
        let plan: [(UInt64, UInt64)] = [(30, 3), (10, 1), (50, 5), (20, 2), (50, 6), (0, 0), (40, 4), (50, 7)]
        t.sync { loop in for (offset, token) in plan { loop.schedule(at: now + offset * ms, token: TimerToken(testNumber: token)) } }
        t.handler.wait("8 timers") { $0.events.count == plan.count }
        let fired = t.handler.events.compactMap { e -> (UInt64, UInt64, UInt64)? in
            if case .timer(let token, let deadline, let at) = e { (token, deadline, at) } else { nil }
        }
        #expect(fired.map(\.0) == [0, 1, 2, 3, 4, 5, 6, 7])
        for (token, deadline, firedAt) in fired {
            #expect(deadline == now + plan.first { $0.1 == token }!.0 * ms)
            #expect(firedAt >= deadline, "a timer never fires early")
        }
        #expect(t.sync { $0.scheduledTimers } == 0)
    }

    @Test(arguments: [EventLoop.TimerWait.automatic, .timerfd])
    func pastDeadlinesFireAndTimersScheduledFromCallbacksWork(_ wait: EventLoop.TimerWait) throws {
        let t = try TestLoop(configuration: Self.configuration(wait))
        defer { t.shutdown() }
        // Deadline 0 (long past), then one earlier than an armed later one.
        t.sync { loop in
            loop.schedule(at: EventLoop.now() + 200_000_000, token: TimerToken(testNumber: 3))
            loop.schedule(at: 0, token: TimerToken(testNumber: 1))
            loop.schedule(at: EventLoop.now() + 1_000_000, token: TimerToken(testNumber: 2))
        }
        t.handler.wait("3 timers") { $0.events.count == 3 }
        #expect(t.handler.events.compactMap { if case .timer(let token, _, _) = $0 { token } else { nil } } == [1, 2, 3] as [UInt64])
    }

    /// Where the kernel has epoll_pwait2 (this machine's 6.18 does; a container's seccomp filter
    /// may refuse it), the automatic mode must use it, or every timer pays the timerfd's two
    /// extra system calls without anyone noticing.
    @Test func theAutomaticTimerWaitUsesEpollPwait2WhereTheKernelHasIt() throws {
        let epfd = epoll_create1(Int32(EPOLL_CLOEXEC))
        defer { close(epfd) }
        let events = UnsafeMutableRawPointer.allocate(byteCount: cs_epoll_event_size(), alignment: 16)
        defer { events.deallocate() }
        let kernelHasIt = cs_epoll_wait_ns(epfd, events, 1, 0) >= 0
        #expect(try EventLoop().waitsWithTimeout == kernelHasIt)
        #expect(try !EventLoop(configuration: Self.configuration(.timerfd)).waitsWithTimeout)
    }

    @Test func staleApplicationTokensAreDeliveredUnfiltered() throws {
        let t = try TestLoop()
        defer { t.shutdown() }
        let (listener, port) = try t.listen()
        let c = try t.sync { $0.connect(to: .ipv4(0x7F00_0001, port: port), timeoutNs: 10_000_000_000) }.get()
        // Close the connection, then schedule timers naming it: the loop must still deliver them.
        t.sync { loop in
            loop.close(c)
            loop.close(listener)
            loop.schedule(at: 0, token: TimerToken(testNumber: c.packed))
            loop.schedule(at: 0, token: TimerToken(testNumber: listener.packed))
        }
        func timerTokens() -> [UInt64] { t.handler.events.compactMap { if case .timer(let token, _, _) = $0 { token } else { nil } } }
        t.handler.wait("stale timers") { _ in timerTokens().count == 2 }
        #expect(timerTokens() == [c.packed, listener.packed])
        #expect(!t.sync { $0.isAlive(c) })
    }

    @Test func peerCloseGivesEndOfFile() throws {
        let pair = try ConnectedPair(server: TestLoop(name: "server"), client: TestLoop(name: "client"))
        defer { pair.shutdown() }
        pair.server.write(pair.serverID, Array("last words".utf8))
        pair.client.handler.wait("data") { $0.receivedCount(on: pair.clientID) == 10 }
        pair.server.sync { $0.close(pair.serverID) }
        pair.client.handler.wait("end of file") { $0.events.contains(.closed(pair.clientID, .endOfFile)) }
        #expect(!pair.client.sync { $0.isAlive(pair.clientID) })
        #expect(!pair.server.sync { $0.isAlive(pair.serverID) })
        // `close` itself reports nothing on the closing side.
        #expect(!pair.server.handler.events.contains { if case .closed = $0 { true } else { false } })
        #expect(pair.client.handler.received(on: pair.clientID) == Array("last words".utf8))
    }

    @Test func closeAfterFlushDeliversQueuedBytesThenEndOfFile() throws {
        let pair = try ConnectedPair(server: TestLoop(name: "server"), client: TestLoop(name: "client"))
        defer { pair.shutdown() }
        let data = pattern(3 << 20, seed: 9)
        pair.server.sync { loop in
            data.withUnsafeBytes { loop.write(pair.serverID, $0) }
            loop.closeAfterFlush(pair.serverID)
        }
        pair.client.handler.wait("end of file") { $0.events.contains(.closed(pair.clientID, .endOfFile)) }
        #expect(pair.client.handler.received(on: pair.clientID) == data)
    }

    @Test func shutdownWriteAfterFlushHalfClosesButKeepsReading() throws {
        let pair = try ConnectedPair(server: TestLoop(name: "server"), client: TestLoop(name: "client"))
        defer { pair.shutdown() }
        pair.server.sync { loop in
            Array("bye".utf8).withUnsafeBytes { loop.write(pair.serverID, $0) }
            loop.shutdownWriteAfterFlush(pair.serverID)
        }
        pair.client.handler.wait("end of file") { $0.events.contains(.closed(pair.clientID, .endOfFile)) }
        #expect(pair.client.handler.received(on: pair.clientID) == Array("bye".utf8))
        // The server still reads: its peer's close now arrives as end of file.
        pair.server.handler.wait("server sees close") { $0.events.contains(.closed(pair.serverID, .endOfFile)) }
    }

    @Test func resetGivesResetOrEndOfFileOnThePeer() throws {
        let pair = try ConnectedPair(server: TestLoop(name: "server"), client: TestLoop(name: "client"))
        defer { pair.shutdown() }
        pair.client.sync { $0.close(pair.clientID, reset: true) }
        var reason: CloseReason? = nil
        pair.server.handler.wait("peer closed") { h in
            for case .closed(pair.serverID, let r) in h.events { reason = r; return true }
            return false
        }
        #expect(reason == .reset || reason == .endOfFile)
        #expect(!pair.client.handler.events.contains { if case .closed = $0 { true } else { false } })
    }

    @Test func writeLargerThanTheSocketBufferArrivesCompleteAndInOrder() throws {
        let pair = try ConnectedPair(server: TestLoop(name: "server"), client: TestLoop(name: "client"))
        defer { pair.shutdown() }
        let data = pattern(8 << 20, seed: 42)
        let backedUp = pair.client.sync { loop in
            data.withUnsafeBytes { loop.write(pair.clientID, $0) }
            return loop.isBackedUp(pair.clientID)
        }
        #expect(backedUp)
        pair.server.handler.wait("8 MiB") { $0.receivedCount(on: pair.serverID) >= data.count }
        #expect(pair.server.handler.receivedCount(on: pair.serverID) == data.count)
        #expect(pair.server.handler.received(on: pair.serverID) == data)
        pair.client.handler.wait("writable") { $0.events.contains(.writable(pair.clientID)) }
        #expect(pair.client.sync { $0.queuedBytes(pair.clientID) } == 0)
        #expect(pair.client.sync { $0.queuedBytes } == 0)
    }

    @Test func backpressureSetsIsBackedUpAndCallsWritableOnceDrained() throws {
        var configuration = EventLoop.Configuration()
        configuration.highWaterMark = 64 * 1024
        configuration.lowWaterMark = 16 * 1024
        let server = try TestLoop(name: "server")
        let client = try TestLoop(configuration: configuration, name: "client")
        let pair = try ConnectedPair(server: server, client: client)
        defer { pair.shutdown() }

        // Below the high-water mark nothing is backed up.
        let small = client.sync { loop in
            [UInt8](repeating: 1, count: 1024).withUnsafeBytes { loop.write(pair.clientID, $0) }
            return loop.isBackedUp(pair.clientID)
        }
        #expect(!small)
        server.handler.wait("small write") { $0.receivedCount(on: pair.serverID) == 1024 }

        // Stall the server's loop so it cannot read, then queue far more than the kernel buffers hold.
        let gate = DispatchSemaphore(value: 0)
        let stalled = DispatchSemaphore(value: 0)
        server.loop.execute { _ in stalled.signal(); _ = gate.wait(timeout: .now() + waitLimit) }
        #expect(stalled.wait(timeout: .now() + waitLimit) == .success)
        defer { gate.signal() }

        let data = pattern(16 << 20, seed: 7)
        let (backedUpAtWrite, queuedAtWrite) = client.sync { loop in
            data.withUnsafeBytes { loop.write(pair.clientID, $0) }
            return (loop.isBackedUp(pair.clientID), loop.queuedBytes(pair.clientID))
        }
        #expect(backedUpAtWrite)
        #expect(queuedAtWrite == data.count)
        // After the loop's flush attempt the peer is still not reading, so most of it stays queued.
        let (backedUpLater, queuedLater) = client.sync { loop in (loop.isBackedUp(pair.clientID), loop.queuedBytes(pair.clientID)) }
        #expect(backedUpLater)
        #expect(queuedLater > 0 && queuedLater < data.count + 1)
        #expect(!client.handler.events.contains(.writable(pair.clientID)))

        gate.signal()
        server.handler.wait("all bytes") { $0.receivedCount(on: pair.serverID) >= 1024 + data.count }
        client.handler.wait("writable") { $0.events.contains(.writable(pair.clientID)) }
        #expect(client.handler.events.filter { $0 == .writable(pair.clientID) }.count == 1)
        #expect(!client.sync { $0.isBackedUp(pair.clientID) })
        #expect(client.sync { $0.queuedBytes(pair.clientID) } == 0)
        #expect(Array(server.handler.received(on: pair.serverID).dropFirst(1024)) == data)
    }

    @Test func writableCallbackMayWriteMore() throws {
        // A sender that keeps the queue topped up from `writable`, as a workload does.
        var configuration = EventLoop.Configuration()
        configuration.highWaterMark = 32 * 1024
        final class Counter: @unchecked Sendable { var rounds = 0 }
        let counter = Counter()
        let chunk = pattern(100 * 1024, seed: 11)
        let client = try TestLoop({ h in
            h.onWritable = { id, loop in
                counter.rounds += 1
                if counter.rounds < 5 { chunk.withUnsafeBytes { loop.write(id, $0) } }
            }
        }, configuration: configuration, name: "client")
        let pair = try ConnectedPair(server: TestLoop(name: "server"), client: client)
        defer { pair.shutdown() }
        client.write(pair.clientID, chunk)
        pair.server.handler.wait("5 chunks") { $0.receivedCount(on: pair.serverID) >= 5 * chunk.count }
        client.handler.wait("5 writable") { $0.events.filter { $0 == .writable(pair.clientID) }.count == 5 }
        #expect(pair.server.handler.received(on: pair.serverID) == Array([[UInt8]](repeating: chunk, count: 5).joined()))
    }

    @Test func reusedSlotGetsANewGenerationAndTheOldIDIsDead() throws {
        let t = try TestLoop()
        defer { t.shutdown() }
        let (_, port) = try t.listen()
        let address = SocketAddress.ipv4(0x7F00_0001, port: port)
        let ids = t.sync { loop -> (ConnectionID, ConnectionID, Bool, Bool)? in
            guard case .success(let a) = loop.connect(to: address, timeoutNs: 1_000_000) else { return nil }
            loop.close(a)
            guard case .success(let b) = loop.connect(to: address, timeoutNs: 10_000_000_000) else { return nil }
            return (a, b, loop.isAlive(a), loop.isAlive(b))
        }
        let (first, second, oldAlive, newAlive) = try #require(ids)
        #expect(second.index == first.index)
        #expect(second.generation == first.generation &+ 1)
        #expect(second != first)
        #expect(!oldAlive && newAlive)
        // Operations on the old ID are ignored.
        t.sync { loop in
            [1, 2, 3].withUnsafeBytes { loop.write(first, $0) }
            loop.close(first)
        }
        #expect(t.sync { $0.queuedBytes(first) == 0 && !$0.isBackedUp(first) && $0.isAlive(second) })
        // A timer scheduled after the old connection's 1 ms connect timeout fires after it was handled:
        // the stale timeout must not report anything for either ID.
        t.sync { $0.schedule(at: EventLoop.now() + 20_000_000, token: TimerToken(testNumber: 99)) }
        t.handler.wait("marker timer") { $0.events.contains { if case .timer(99, _, _) = $0 { true } else { false } } }
        t.handler.wait("second connect") { $0.events.contains(.connected(second, error: 0)) }
        #expect(!t.handler.events.contains { if case .connected(let id, _) = $0 { id == first } else { false } })
        #expect(t.handler.events.filter { if case .connected = $0 { true } else { false } } == [.connected(second, error: 0)])
    }

    @Test func connectionIDPacksIndexAndGeneration() {
        let id = ConnectionID(index: 0xDEAD_BEEF, generation: 0x1234_5678)
        #expect(id.packed == 0x1234_5678_DEAD_BEEF)
        #expect(ConnectionID(packed: id.packed) == id)
        #expect(id.description == "#3735928559.305419896")
    }

    @Test func receivedReturningFewerBytesKeepsTheRestForTheNextInput() throws {
        // The server uses whole 4-byte records only; the client sends 3 bytes at a time.
        let server = try TestLoop({ h in
            h.recordOffers = true
            h.consume = { _, buffer, _ in buffer.count - buffer.count % 4 }
        }, name: "server")
        let pair = try ConnectedPair(server: server, client: TestLoop(name: "client"))
        defer { pair.shutdown() }
        let stream = (0..<60).map { UInt8($0) }
        var expectedOffers: [[UInt8]] = []
        var used = 0
        for k in 0..<20 {
            let chunk = Array(stream[(3 * k)..<(3 * k + 3)])
            pair.client.write(pair.clientID, chunk)
            // Wait for this chunk's callback before sending the next, so each read holds one chunk.
            pair.server.handler.wait("offer \(k)") { $0.offered(on: pair.serverID).count == k + 1 }
            let offer = Array(stream[used..<(3 * k + 3)])
            expectedOffers.append(offer)
            used += offer.count - offer.count % 4
        }
        #expect(pair.server.handler.offered(on: pair.serverID) == expectedOffers)
        #expect(pair.server.handler.received(on: pair.serverID) == stream)
        // Offers were 3, 6, 5, 4, 3, …: the kept remainder always comes first.
        #expect(expectedOffers.prefix(4).map(\.count) == [3, 6, 5, 4])
    }

    @Test func receivedReturningZeroAccumulatesAllInput() throws {
        // Consume nothing until 10 bytes are there, then everything.
        let server = try TestLoop({ h in
            h.recordOffers = true
            h.consume = { _, buffer, _ in buffer.count >= 10 ? buffer.count : 0 }
        }, name: "server")
        let pair = try ConnectedPair(server: server, client: TestLoop(name: "client"))
        defer { pair.shutdown() }
        for k in 0..<4 {
            pair.client.write(pair.clientID, [UInt8](repeating: UInt8(k), count: 3))
            pair.server.handler.wait("offer \(k)") { $0.offered(on: pair.serverID).count == k + 1 }
        }
        let offers = pair.server.handler.offered(on: pair.serverID)
        #expect(offers.map(\.count) == [3, 6, 9, 12])
        #expect(offers[3] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3])
        #expect(pair.server.handler.received(on: pair.serverID) == offers[3])
        // Then the pending buffer is empty again and the next input is offered on its own.
        pair.client.write(pair.clientID, Array(0..<10))
        pair.server.handler.wait("offer 5") { $0.offered(on: pair.serverID).count == 5 }
        #expect(pair.server.handler.offered(on: pair.serverID).last == Array(0..<10))
    }

    @Test func handlerMayRewriteTheOfferedBufferInPlace() throws {
        // As the WebSocket receiver unmasks in place: modified kept bytes are offered again as modified.
        let server = try TestLoop({ h in
            h.recordOffers = true
            h.consume = { _, buffer, _ in
                for i in buffer.indices where buffer[i] == 0x61 { buffer[i] = 0x41 }   // a -> A
                return buffer.count >= 4 ? buffer.count : 0
            }
        }, name: "server")
        let pair = try ConnectedPair(server: server, client: TestLoop(name: "client"))
        defer { pair.shutdown() }
        pair.client.write(pair.clientID, Array("ab".utf8))
        pair.server.handler.wait("first") { $0.offered(on: pair.serverID).count == 1 }
        pair.client.write(pair.clientID, Array("ca".utf8))
        pair.server.handler.wait("second") { $0.offered(on: pair.serverID).count == 2 }
        #expect(pair.server.handler.received(on: pair.serverID) == Array("AbcA".utf8))
    }

    @Test func handlerMayCloseInsideReceivedAndStillReadTheKeptInput() throws {
        // Input kept from earlier reads (over 16 KiB, so releasing the slot would free a shrunk
        // buffer) stays readable after `close` inside the callback, and the loop carries on.
        let data = pattern(48 * 1024, seed: 21)
        final class Check: @unchecked Sendable { var intactAfterClose: Bool? }
        let check = Check()
        let server = try TestLoop({ h in
            h.recordOffers = true
            h.consume = { id, buffer, loop in
                guard buffer.count >= 40 * 1024 else { return 0 }
                loop.close(id)
                check.intactAfterClose = Array(UnsafeRawBufferPointer(buffer)) == Array(data.prefix(buffer.count))
                return buffer.count
            }
        }, name: "server")
        let pair = try ConnectedPair(server: server, client: TestLoop(name: "client"))
        defer { pair.shutdown() }
        for k in 0..<3 {
            pair.client.write(pair.clientID, Array(data[(k * 16 * 1024)..<((k + 1) * 16 * 1024)]))
            pair.server.handler.wait("chunk \(k)") { ($0.offered(on: pair.serverID).last?.count ?? 0) >= (k + 1) * 16 * 1024 }
        }
        #expect(pair.server.handler.offered(on: pair.serverID).count >= 2, "the last offer came from kept input")
        #expect(check.intactAfterClose == true)
        pair.client.handler.wait("client sees the close") { h in
            h.events.contains { if case .closed(pair.clientID, _) = $0 { true } else { false } }
        }
        // The loop still works: a new connection exchanges bytes.
        let again = try ConnectedPair(server: pair.server, client: pair.client)
        pair.client.write(again.clientID, [1, 2, 3])
        pair.server.handler.wait("new connection input") { $0.offered(on: again.serverID).count == 1 }
        #expect(pair.server.handler.offered(on: again.serverID) == [[1, 2, 3]])
    }

    @Test func stopAndJoinCloseEverythingAndReturn() throws {
        let t = try TestLoop()
        let (_, port) = try t.listen()
        _ = try t.sync { $0.connect(to: .ipv4(0x7F00_0001, port: port), timeoutNs: 10_000_000_000) }.get()
        t.shutdown()
        #expect(t.loop.liveSlots == 0)
        t.shutdown()  // idempotent for the test helper
    }
}

@Suite struct SmallLoopPieceTests {
    @Test func parsesIPv4Literals() {
        #expect(parseIPv4("127.0.0.1") == 0x7F00_0001)
        #expect(parseIPv4("0.0.0.0") == 0)
        #expect(parseIPv4("255.255.255.255") == 0xFFFF_FFFF)
        for bad in ["256.0.0.1", "1.2.3", "1.2.3.4.5", "1..2.3", "a.b.c.d", "", "1.2.3.-4", "0001.2.3.4", " 1.2.3.4"] {
            #expect(parseIPv4(bad) == nil, "\(bad)")
        }
    }

    /// The one rule for IPv4 literals (the scenario loader's copy must agree): plain decimal
    /// parts, no leading zeros, because "012" is 10 to inet_aton (octal) and 12 to most readers.
    @Test func ipv4LiteralsWithLeadingZerosAreRefused() {
        #expect(parseIPv4("127.0.0.1") == 0x7F00_0001)
        #expect(parseIPv4("10.0.0.0") == 0x0A00_0000)
        #expect(parseIPv4("012") == nil)
        #expect(parseIPv4("1.2.3") == nil)
        #expect(parseIPv4("256.0.0.1") == nil)
        for bad in ["012.0.0.1", "127.0.0.01", "127.00.0.1", "127.0.0.1 ", "+1.2.3.4", "127.1", "１.2.3.4", "1.2.3.4."] {
            #expect(parseIPv4(bad) == nil, "\(bad)")
        }
        #expect(SocketAddress(host: "127.0.0.012", port: 80) == nil)
    }

    @Test func socketAddressFromHost() {
        #expect(SocketAddress(host: "localhost", port: 80) == .ipv4(0x7F00_0001, port: 80))
        #expect(SocketAddress(host: "::1", port: 1) == .ipv6Loopback(port: 1))
        #expect(SocketAddress(host: "[::1]", port: 1) == .ipv6Loopback(port: 1))
        #expect(SocketAddress(host: "10.1.2.3", port: 65535)?.description == "10.1.2.3:65535")
        #expect(SocketAddress(host: "10.1.2.3", port: 65536) == nil)
        #expect(SocketAddress(host: "example.com", port: 80) == nil)
        #expect(SocketAddress.ipv6Loopback(port: 9).description == "[::1]:9")
    }

    @Test func syscallMapsEAGAINAndErrors() {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        var byte: UInt8 = 0
        #expect(syscall { read(fds[0], &byte, 1) } == .wouldBlock)
        var one: UInt8 = 7
        #expect(syscall { write(fds[1], &one, 1) } == .done(1))
        #expect(syscall { read(fds[0], &byte, 1) } == .done(1))
        #expect(byte == 7)
        #expect(syscall { read(-1, &byte, 1) } == .failed(EBADF))
        #expect(errnoDescription(EBADF).isEmpty == false)
    }

    @Test func fastRandomIsReproducibleBySeed() {
        var a = FastRandom(seed: 5), b = FastRandom(seed: 5), c = FastRandom(seed: 6)
        let xs = (0..<100).map { _ in a.next() }
        #expect(xs == (0..<100).map { _ in b.next() })
        #expect(xs != (0..<100).map { _ in c.next() })
        #expect(Set(xs).count == 100)
        for _ in 0..<10_000 {
            let u = a.unit()
            #expect(u >= 0 && u < 1)
        }
    }

    @Test func uuidsAreVersion4LowercaseHex() {
        var r = FastRandom(seed: 1)
        var seen = Set<String>()
        for _ in 0..<1000 {
            let s = r.uuidString()
            let chars = Array(s)
            #expect(chars.count == 36)
            for (i, ch) in chars.enumerated() {
                if [8, 13, 18, 23].contains(i) { #expect(ch == "-") } else { #expect(ch.isHexDigit && !ch.isUppercase, "\(s)") }
            }
            #expect(chars[14] == "4")
            #expect("89ab".contains(chars[19]))
            #expect(UUID(uuidString: s) != nil)
            seen.insert(s)
        }
        #expect(seen.count == 1000)
    }

    @Test func resultBoxHandsAValueAcrossThreads() {
        let box = ResultBox<[Int]>()
        Thread.detachNewThread { box.put([1, 2, 3]) }
        #expect(box.take() == [1, 2, 3])
        #expect(box.take() == [1, 2, 3], "the value stays")
        let optional = ResultBox<Int?>()
        optional.put(nil)
        #expect(optional.take() == nil)
    }
}
