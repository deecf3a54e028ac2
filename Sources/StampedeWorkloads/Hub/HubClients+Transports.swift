// The transports under the hub protocol, as the event loop reports them: the side connection's
// HTTP responses (negotiate, POSTs, DELETE), the WebSocket, the SSE stream and long polling
// (§2). A bare §N is a section of docs/protocols.md.

import StampedeLoop
import StampedeMetrics
import StampedeSession
import StampedeWire

extension HubClients {
    // MARK: EventLoopHandler

    public func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {
        guard let (k, role) = owner(id) else { return }
        if error != 0 {
            fail(k, ErrorClass.connectFailure(error))
            return
        }
        switch role {
        case .side:
            metrics.recordTLSHandshake(id, loop: loop)
            clients[k].connections.sideState = .idle
            if clients[k].phase == .negotiating { sendNegotiate(k) } else { flushPosts(k) }
        case .main:
            mainConnected(k)
        }
    }

    public func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) { loop.close(id) }

    public func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        guard let (k, role) = owner(id) else { return buffer.count }
        metrics.count(.bytesReceived, UInt64(buffer.count))
        let bytes = UnsafeRawBufferPointer(buffer)
        switch role {
        case .side: return receivedSide(k, bytes)
        case .main:
            if clients[k].endpoint.transport == .webSockets { return receivedWebSocket(k, id, buffer) }
            return receivedHTTPMain(k, bytes)
        }
    }

    func receivedSide(_ k: Int, _ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        let epoch = clients[k].epoch
        let side = clients[k].connections.side
        // Keep asking until the exchange needs more: a response that ends exactly at the end of
        // the input is complete only when asked again with nothing left.
        while true {
            let (action, consumed) = clients[k].connections.sideExchange.next(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            offset += consumed
            switch action {
            case .needMore: return offset
            case .ended:
                fail(k, .protocolError)
                return bytes.count
            case .head, .body, .event, .heldEvent:
                break  // the status and negotiate's body are kept by the exchange
            case .complete:
                let status = clients[k].connections.sideExchange.status
                let state = clients[k].connections.sideState
                clients[k].connections.sideState = .idle
                switch state {
                case .negotiate:
                    guard status == 200 else { httpFailure(k, status); return bytes.count }
                    negotiated(k, clients[k].connections.sideExchange.collectedBody)
                case .post:
                    // 200 ok; 404 gone; anything else fails the connection (§2).
                    guard status == 200 else { httpFailure(k, status); return bytes.count }
                    flushPosts(k)
                case .delete:
                    // 202: the server ends the open poll too; nothing more to wait for.
                    closeMain(k)
                    closeSide(k)
                    setPhase(k, .ended)
                    return bytes.count
                default:
                    break
                }
                // A redirect may have replaced the side connection: these bytes belong to the old one.
                guard clients[k].epoch == epoch, clients[k].connections.side == side else { return bytes.count }
            }
        }
    }

    func httpFailure(_ k: Int, _ status: Int) {
        metrics.upgradeStatuses[status, default: 0] += 1
        fail(k, .httpStatus)
    }

    /// Our close handshake (1000): the Close frame now; the answer is read until the hub's
    /// close timeout.
    func closeWebSocket(_ k: Int) {
        guard case .closing(let send, _, _) = clients[k].connections.webSocket.close(code: 1000, now: EventLoop.now()) else { return }
        writeClose(k, send)
    }

    func receivedWebSocket(_ k: Int, _ id: ConnectionID, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
        var offset = 0
        let epoch = clients[k].epoch
        while true {  // every answer but `.needMore` and the endings consumes bytes
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[offset...])
            let (action, consumed) = clients[k].connections.webSocket.next(rest, now: EventLoop.now())
            switch action {
            case .needMore, .none, .sendUpgradeRequest:
                return offset + consumed
            case .opened:
                clients[k].connections.mainState = .wsOpen
                offset += consumed
                if sessions[k].isResuming { resumed(k) } else { transportOpened(k) }
            case .message(_, let range):
                // JSON may arrive in Binary frames too (aiosignalr does): accept either opcode.
                receiveHub(k, UnsafeRawBufferPointer(rebasing: rest[range]))
                offset += consumed
            case .assembledMessage:
                let assembled = clients[k].connections.webSocket.assembled
                assembled.withUnsafeBytes { receiveHub(k, $0) }
                offset += consumed
            case .sendPong(let range):
                // RFC 6455 §5.5.2: answer with a pong carrying the same payload.
                loop.writeMaskedFrame(id, opcode: .pong, payload: UnsafeRawBufferPointer(rebasing: rest[range]),
                                      key: UInt32(truncatingIfNeeded: random.next()))
                offset += consumed
            case .pong:
                offset += consumed
            case .closing(let send, _, _):
                // The server's Close (answered, or the answer to ours), or a failure (§7.1.7: our
                // Close carries its code). Then TCP goes once the answer is written: the client
                // may close rather than wait for the server's FIN (RFC 6455 §7.1.1), and this one
                // moves on at once, to reconnect or to end.
                writeClose(k, send)
                closeMainAfterFlush(k)
                let outcome = clients[k].connections.webSocket.closeHandshake.outcome
                // Every Close the server started, clean or not, with its reason (`close_codes`).
                if let peer = clients[k].connections.webSocket.peerClose { metrics.countClose(code: peer.code, reason: peer.reason) }
                if case .failed(let f) = outcome {
                    fail(k, ErrorClass(f))
                    return buffer.count
                }
                if clients[k].phase == .closing { closeSide(k); setPhase(k, .ended); return buffer.count }
                if case .error = outcome { metrics.error(.closedWithError) }
                drop(k, reason: nil)
                return buffer.count
            case .ended(let end, _):
                switch end {
                case .upgradeRejected(let status): httpFailure(k, status)
                case .upgradeInvalid: fail(k, .upgradeInvalid)
                default: fail(k, .protocolError)  // the session ends on input only in the upgrade
                }
                return buffer.count
            }
            guard clients[k].epoch == epoch else { return buffer.count }
        }
    }

    func receivedHTTPMain(_ k: Int, _ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        let epoch = clients[k].epoch
        while true {  // as in receivedSide: a response may be complete only when asked again
            let slice = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let (action, consumed) = clients[k].connections.mainExchange.next(slice)
            switch action {
            case .needMore: return offset + consumed
            case .ended:
                fail(k, .protocolError)
                return bytes.count
            case .head(let head):
                offset += consumed
                guard head.status == 200 || (head.status == 204 && clients[k].endpoint.transport == .longPolling) else {
                    httpFailure(k, head.status)
                    return bytes.count
                }
                if head.status == 204 {
                    // Long polling: the server ended the connection (§2), or confirmed our DELETE.
                    if clients[k].phase == .closing { closeMain(k); closeSide(k); setPhase(k, .ended) } else { drop(k, reason: nil) }
                    return bytes.count
                }
                if clients[k].connections.mainState == .sseHead {
                    clients[k].connections.mainState = .sseStream
                    openSideForPosts(k)
                    transportOpened(k)
                }
            case .body(let r):
                offset += consumed
                if clients[k].connections.mainState == .pollWaiting {
                    // A poll body holds complete framed messages; pieces go straight to the hub parser.
                    receiveHub(k, UnsafeRawBufferPointer(rebasing: slice[r]))
                }
            case .event(let data):
                // One SSE event may hold several hub messages (§2).
                offset += consumed
                receiveHub(k, UnsafeRawBufferPointer(rebasing: slice[data]))
            case .heldEvent:
                offset += consumed
                let exchange = clients[k].connections.mainExchange  // a copy (no bytes copied): receiving touches `clients`
                exchange.withHeldEvent { receiveHub(k, $0) }
            case .complete:
                offset += consumed
                if clients[k].endpoint.transport == .longPolling { pollEnded(k) }
            }
            guard clients[k].epoch == epoch else { return bytes.count }
        }
    }

    func pollEnded(_ k: Int) {
        if clients[k].connections.mainState == .pollFirst {
            // The first poll returns at once and starts the hub; the handshake goes by POST.
            openSideForPosts(k)
            transportOpened(k)
        }
        guard isAlive(k), clients[k].phase != .closing else { return }
        clients[k].connections.mainState = .pollWaiting
        if clients[k].connections.pollRequest == nil { clients[k].connections.pollRequest = makeRequest(k, method: .get, target: transportTarget(k)) }
        _ = clients[k].connections.mainExchange.start(method: .get, body: .pieces, now: EventLoop.now())
        send(clients[k].connections.pollRequest!, on: clients[k].connections.main)
    }

    func openSideForPosts(_ k: Int) {
        if clients[k].connections.sideState == .none { openSide(k) }
    }

    public func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {
        guard let (k, role) = owner(id) else { return }
        switch role {
        case .main:
            mainLost(k, reason)
        case .side:
            clients[k].connections.sideState = .none
            // A keep-alive connection the server closed between requests is reopened on demand.
            if clients[k].phase == .negotiating { fail(k, .unexpectedEOF) }
        }
    }

    /// The main connection is gone without a close handshake: resume it (stateful reconnect) or
    /// drop the client (and let the reconnect policy decide).
    func mainLost(_ k: Int, _ reason: CloseReason) {
        clients[k].connections.mainState = .none
        if clients[k].phase == .closing { closeSide(k); setPhase(k, .ended); return }
        metrics.error(reason == .endOfFile ? .unexpectedEOF : .connectionReset)
        // A hub message cut off by the end of the connection (a truncated VarInt or record) is
        // malformed too; its bytes go with the connection, before a resume opens the next one.
        if clients[k].connections.dropPartialInbound() { metrics.error(.protocolError) }
        if clients[k].phase == .connected && sessions[k].canResume {
            noteDropped(k)
            resume(k)
            return
        }
        drop(k, reason: nil)
    }

    /// Fault injection: abruptly resets the main connection of `fraction` of the connected
    /// clients, as a network blip would.
    public func dropConnections(fraction: Double) {
        storm(index: -1, atNs: EventLoop.now(), fraction: fraction, mode: .reset, stallNs: 0)
    }

    public func writable(_ id: ConnectionID, loop: EventLoop) {
        guard let (k, role) = owner(id), role == .main, phase == .messages, plan.load.loadModel == .open else { return }
        sendDue(k)
    }
}
