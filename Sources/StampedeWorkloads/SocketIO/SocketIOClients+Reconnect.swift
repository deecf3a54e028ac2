// Being connected, ending, reconnecting, storms, churn and closing at the end of the run.

import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeSession
import StampedeWire

extension SocketIOClients {
    // MARK: Connected

    /// The namespace is connected and the connect emits are done.
    func connected(_ k: Int) {
        setPhase(k, .connected)
        let arrival = clients[k].reconnect.connected()
        metrics.count(.connected)
        metrics.count(clients[k].session.messageTransport == .websocket ? .connectedWebSockets : .connectedLongPolling)
        guard arrival != .first else { return }
        if arrival == .joinedAsNewUser || arrival == .rampedUp {
            metrics.count(arrival == .rampedUp ? .rampedUp : .churnJoined)
        } else {
            metrics.count(.reconnected)
            stormRecovered(k)
        }
        guard phase == .messages, plan.spec.emit != nil else { return }
        switch plan.load.loadModel {
        case .open:
            if !clients[k].calls.sendChain { rejoinSchedule(k) }
            sendDue(k)
        case .closed:
            clients[k].calls.sendEpoch &+= 1
            if let next = schedule.nextAfterReply(now: EventLoop.now()) { loop.schedule(at: next, token: sendToken(k)) }
        }
    }

    /// Open model: a client whose send chain had stopped picks the schedule up where it is now.
    func rejoinSchedule(_ k: Int) {
        guard schedule.paces else { return }
        dropDue(k)
        let now = EventLoop.now()
        clients[k].calls.rejoin(atSequence: schedule.sequencesDue(slot: clients[k].calls.sendSlot, now: now))
        let next = schedule.intended(slot: clients[k].calls.sendSlot, sequence: clients[k].calls.nextSequence)
        if schedule.isInPhase(next) {
            loop.schedule(at: next, token: sendToken(k))
            clients[k].calls.sendChain = true
        }
    }

    // MARK: Ending

    /// Counts every emit still awaited as lost for `reason`.
    func loseOutstanding(_ k: Int, _ reason: LossReason) {
        let n = clients[k].pending.dropAll()
        guard n > 0 else { return }
        metrics.lose(reason, UInt64(n))
        totalOutstanding -= UInt64(n)
    }

    /// Fails a client with `error`: counted, connections dropped, reconnect if the policy says so.
    func fail(_ k: Int, _ error: ErrorClass) {
        metrics.error(error)
        end(k, reconnect: true)
    }

    /// The connection ended without an error of ours to count: reconnect if the policy says so.
    func drop(_ k: Int) { end(k, reconnect: true) }

    func end(_ k: Int, reconnect: Bool) {
        guard clients[k].phase != .ended && clients[k].phase != .waitingToReconnect && clients[k].phase != .idle else { return }
        noteDropped(k)
        if Self.isConnecting(clients[k].phase) && !clients[k].reconnect.everConnected { metrics.count(.connectFailed) }
        loseOutstanding(k, phase == .closing ? .interrupted : .connectionClosed)
        clients[k].session.endNow()
        closeAllConnections(k)
        clients[k].epoch &+= 1
        if reconnect && phase != .closing,
           let next = clients[k].reconnect.timeline.failed(atNs: EventLoop.now(), policy: reconnectPolicy, unitRandom: random.unit()) {
            setPhase(k, .waitingToReconnect)
            metrics.count(.reconnectAttempts)
            stormBook.attempt(&clients[k].reconnect.storm, nowNs: EventLoop.now())
            loop.schedule(at: next, token: token(.reconnect, k, epoch: clients[k].epoch))
        } else {
            dropDue(k)
            if phase != .closing { stormBook.gaveUp(&clients[k].reconnect.storm) }
            setPhase(k, .ended)
        }
    }

    func stormRecovered(_ k: Int) { stormBook.recovered(&clients[k].reconnect.storm, nowNs: EventLoop.now()) }

    /// A connected client lost its connection after a server or command event.
    func noteDropped(_ k: Int) {
        guard clients[k].reconnect.everConnected, phase != .closing,
              clients[k].phase == .connected || clients[k].phase == .joining else { return }
        stormBook.dropped(&clients[k].reconnect.storm)
    }

    public func watch(index: Int, atNs: UInt64) { stormBook.watch(index: index, atNs: atNs) }

    /// Storm `index`: `fraction` of the connected clients lose their connection now (a reset, or
    /// a clean leave), or stop reading for `stallNs`.
    public func storm(index: Int, atNs: UInt64, fraction: Double, mode: StormMode, stallNs: UInt64) {
        if index >= 0 { watch(index: index, atNs: atNs) }
        for k in clients.indices where clients[k].phase == .connected {
            guard let id = activeConnection(k), random.unit() < fraction else { continue }
            if index >= 0 { stormBook.hit(&clients[k].reconnect.storm, storm: index) }
            switch mode {
            case .reset:
                loop.close(id, reset: true)
                metrics.error(.connectionReset)
                drop(k)
            case .close:
                leave(k)
                drop(k)
            case .stall:
                guard index >= 0 else { continue }
                loop.pauseReading(id, true)
                loop.schedule(at: atNs + stallNs, token: token(.stallEnd, k, epoch: UInt32(index)))
            }
        }
    }

    /// A client-side leave: DISCONNECT for the namespace and the Engine.IO close, then the
    /// transport goes once they are written (the leaving user does not wait for an answer).
    func leave(_ k: Int) {
        if let n = clients[k].session.writeDisconnect(into: scratch) {
            sendPacket(k, UnsafeRawBufferPointer(rebasing: scratch[0..<n]), binary: false)
        }
        if clients[k].session.messageTransport == .websocket {
            SocketIOClientSession.close.withUnsafeBytes { _ = sendPacket(k, $0, binary: false) }
            if case .closing(let send, _, _) = clients[k].connections.webSocket.close(code: 1000, now: EventLoop.now()) {
                loop.writeMaskedClose(clients[k].connections.ws, send, key: UInt32(truncatingIfNeeded: random.next()))
            }
            if let id = clients[k].connections.release(.ws) { loop.closeAfterFlush(id) }
        } else {
            // The DISCONNECT went into a POST if one could start; the rest is not waited for.
            SocketIOClientSession.close.withUnsafeBytes { _ = sendPacket(k, $0, binary: false) }
            if let id = clients[k].connections.release(.post) { loop.closeAfterFlush(id) }
            close(k, .poll)
        }
    }

    /// A connected client leaves as a user would (DISCONNECT, then its transports), its timers
    /// and send chain ended; it is idle after (churn starts it again, `clients.stages` parks it).
    func leaveCleanly(_ k: Int) {
        leave(k)
        clients[k].session.endNow()
        closeAllConnections(k)
        clients[k].epoch &+= 1
        clients[k].calls.stopChain()
        setPhase(k, .idle)
    }

    /// Churn: up to `count` connected clients with nothing in flight leave and start again at
    /// once as new users. Returns how many left.
    @discardableResult
    public func churn(count: Int) -> Int {
        guard phase == .messages, !clients.isEmpty else { return 0 }
        var left = 0
        var k = Int(random.next() % UInt64(clients.count))
        for _ in clients.indices where left < count {
            k = k + 1 == clients.count ? 0 : k + 1
            guard clients[k].phase == .connected, clients[k].pending.count == 0, let id = activeConnection(k),
                  !loop.isReadingPaused(id) else { continue }
            leaveCleanly(k)
            metrics.count(.churnLeft)
            let generation = clients[k].reconnect.leaveForChurn()
            userNames[k] = Array("\(plan.runTag)-user-\(plan.load.globalIndices[k])-\(generation)".utf8)
            start(k)
            left += 1
        }
        return left
    }

    /// The end of the run: DISCONNECT and close; on WebSocket the close handshake is given a moment.
    func closeGracefully(_ k: Int) {
        if clients[k].session.messageTransport == .websocket && clients[k].connections.wsState == .open {
            if let n = clients[k].session.writeDisconnect(into: scratch) {
                sendPacket(k, UnsafeRawBufferPointer(rebasing: scratch[0..<n]), binary: false)
            }
            if case .closing(let send, _, _) = clients[k].connections.webSocket.close(code: 1000, now: EventLoop.now()) {
                loop.writeMaskedClose(clients[k].connections.ws, send, key: UInt32(truncatingIfNeeded: random.next()))
            }
            loop.shutdownWriteAfterFlush(clients[k].connections.ws)
            clients[k].session.endNow()
            setPhase(k, .closing)
            clients[k].epoch &+= 1
            loop.schedule(at: EventLoop.now() + 2_000_000_000, token: token(.closeTimeout, k, epoch: clients[k].epoch))
            return
        }
        leave(k)
        clients[k].session.endNow()
        closeAllConnections(k)
        setPhase(k, .ended)
    }
}
