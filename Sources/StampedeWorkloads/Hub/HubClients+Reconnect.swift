// Ending and coming back: failures, drops, the reconnect policy, storms (reset, close, stall),
// churn and the graceful close (§6). A bare §N is a section of docs/protocols.md.

import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeWire

extension HubClients {
    // MARK: Ending

    func loseOutstanding(_ k: Int, _ reason: LossReason) {
        let lost = clients[k].calls.takeOutstanding()
        if lost > 0 {
            metrics.lose(reason, UInt64(lost))
            totalOutstanding -= UInt64(lost)
        }
    }

    /// Fails a client with `error`: counted, connections dropped, reconnect if the policy says so.
    func fail(_ k: Int, _ error: ErrorClass) {
        metrics.error(error)
        end(k, failed: error, reconnect: true)
    }

    /// The connection dropped without a final Close: reconnect if the policy says so.
    func drop(_ k: Int, reason: ErrorClass?) {
        end(k, failed: reason, reconnect: true)
    }

    func end(_ k: Int, failed: ErrorClass?, reconnect: Bool) {
        noteDropped(k)
        if Self.isConnecting(clients[k].phase) && !clients[k].reconnect.everConnected { metrics.count(.connectFailed) }
        loseOutstanding(k, phase == .closing ? .interrupted : .connectionClosed)
        closeMain(k)
        closeSide(k)
        clients[k].epoch &+= 1
        if reconnect && phase != .closing && failed != .handshakeFailed,
           let next = clients[k].reconnect.timeline.failed(atNs: EventLoop.now(), policy: reconnectPolicy, unitRandom: random.unit()) {
            setPhase(k, .waitingToReconnect)
            metrics.count(.reconnectAttempts)
            stormAttempt(k)
            loop.schedule(at: next, token: token(.reconnect, k, epoch: clients[k].epoch))
        } else {
            dropDue(k)  // queued calls that will never get a connection
            if phase != .closing { stormBook.gaveUp(&clients[k].reconnect.storm) }
            setPhase(k, .ended)
        }
    }

    func stormAttempt(_ k: Int) {
        stormBook.attempt(&clients[k].reconnect.storm, nowNs: EventLoop.now())
    }

    func stormRecovered(_ k: Int) {
        stormBook.recovered(&clients[k].reconnect.storm, nowNs: EventLoop.now())
    }

    /// A connected client lost its connection after a server or command event: one of the
    /// clients that event affected (unless a storm already tracks it).
    func noteDropped(_ k: Int) {
        guard clients[k].reconnect.everConnected, phase != .closing,
              clients[k].phase == .connected || clients[k].phase == .joining else { return }
        stormBook.dropped(&clients[k].reconnect.storm)
    }

    /// Event `index` at `atNs`: from now until the next event, clients whose connection drops
    /// (a server fault, a restart by an external command) are counted as affected by it.
    public func watch(index: Int, atNs: UInt64) { stormBook.watch(index: index, atNs: atNs) }

    /// Storm `index`: `fraction` of the connected clients lose their connection now — an abrupt
    /// reset, or a clean client-side close (Close message, then the transport) — and reconnect
    /// by their policy (or resume, with stateful reconnect, after a reset); or, `.stall`, they
    /// stop reading for `stallNs`.
    public func storm(index: Int, atNs: UInt64, fraction: Double, mode: StormMode, stallNs: UInt64) {
        if index >= 0 { watch(index: index, atNs: atNs) }
        for k in clients.indices where clients[k].phase == .connected && clients[k].connections.mainState != .none {
            guard random.unit() < fraction else { continue }
            if index >= 0 {
                stormBook.hit(&clients[k].reconnect.storm, storm: index)
            }
            switch mode {
            case .reset:
                loop.close(clients[k].connections.main, reset: true)
                mainLost(k, .reset)
            case .close:
                leaveWithClose(k)
                drop(k, reason: nil)
            case .stall:
                guard index >= 0 else { continue }
                loop.pauseReading(clients[k].connections.main, true)
                loop.schedule(at: atNs + stallNs, token: token(.stallEnd, k, epoch: UInt32(index)))
            }
        }
    }

    /// A client-side leave: a Close message, then the main transport goes (on WebSockets after a
    /// Close frame, once both are flushed; the leaving user does not wait for the answer). The
    /// caller decides what the client does next.
    func leaveWithClose(_ k: Int) {
        sendCloseMessage(k)
        if clients[k].endpoint.transport == .webSockets {
            if clients[k].connections.mainState == .wsOpen { closeWebSocket(k) }
            closeMainAfterFlush(k)
        } else {
            closeMain(k)
        }
    }

    /// A connected client leaves as a user would (a Close message, then the transport), its
    /// timers and send chain ended; it is idle after (churn starts it again as a new user with
    /// a chain of its own, `clients.stages` parks it).
    func leaveCleanly(_ k: Int) {
        leaveWithClose(k)
        closeSide(k)
        clients[k].epoch &+= 1
        clients[k].calls.stopChain()
        setPhase(k, .idle)
    }

    /// Churn: up to `count` connected clients with nothing in flight leave (a Close message,
    /// then the transport) and start again at once as new users. Returns how many left.
    @discardableResult
    public func churn(count: Int) -> Int {
        guard phase == .messages, !clients.isEmpty else { return 0 }
        var left = 0
        var k = Int(random.next() % UInt64(clients.count))
        for _ in clients.indices where left < count {
            k = k + 1 == clients.count ? 0 : k + 1
            guard clients[k].phase == .connected, clients[k].connections.mainState != .none, clients[k].calls.outstanding == 0, !sessions[k].isResuming,
                  !loop.isReadingPaused(clients[k].connections.main) else { continue }
            leaveCleanly(k)
            metrics.count(.churnLeft)
            let generation = clients[k].reconnect.leaveForChurn()
            userNames[k] = Array("\(plan.runTag)-user-\(plan.load.globalIndices[k])-\(generation)".utf8)
            start(k)
            left += 1
        }
        return left
    }

    /// Close message (best effort), then the transport's own close.
    func closeGracefully(_ k: Int) {
        if clients[k].phase == .connected || clients[k].phase == .joining {
            sendCloseMessage(k)
        }
        switch clients[k].endpoint.transport {
        case .webSockets where clients[k].connections.mainState == .wsOpen:
            // Our Close; keep reading for the answer, bounded by the close timeout below.
            closeWebSocket(k)
            loop.shutdownWriteAfterFlush(clients[k].connections.main)
        case .longPolling where clients[k].connections.sideState == .idle:
            clients[k].connections.sideState = .delete
            _ = clients[k].connections.sideExchange.start(method: .delete, body: .discard, now: EventLoop.now())
            sendRequest(k, on: clients[k].connections.side, method: .delete, target: transportTarget(k))
        default:
            break
        }
        if clients[k].endpoint.transport == .serverSentEvents {
            // SSE stops by dropping the request (§2); the side connection goes once the Close POST is written.
            closeMain(k)
            if let side = clients[k].connections.releaseSide() { loop.closeAfterFlush(side) }
            setPhase(k, .ended)
            return
        }
        setPhase(k, .closing)
        clients[k].epoch &+= 1
        // Give the peer a moment to finish the close, then drop whatever is left.
        loop.schedule(at: EventLoop.now() + 2_000_000_000, token: token(.closeTimeout, k, epoch: clients[k].epoch))
    }
}
