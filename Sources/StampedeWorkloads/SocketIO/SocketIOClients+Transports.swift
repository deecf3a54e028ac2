// What the event loop reports on a client's connections: the GETs' and POSTs' responses
// (HTTPClientExchange), the WebSocket (WebSocketClientSession), connections closing. Engine.IO
// packets found in them go to the client's session (`+Protocol`).

import StampedeLoop
import StampedeMetrics
import StampedeSession
import StampedeWire

extension SocketIOClients {
    // MARK: EventLoopHandler

    public func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {
        guard let (k, role) = owner(id) else { return }
        if error != 0 {
            _ = clients[k].connections.release(role)
            connectFailed(k, role, error)
            return
        }
        switch role {
        case .poll:
            if clients[k].session.open == nil {
                metrics.recordConnected(id, loop: loop, startNs: clients[k].phaseStartNs, nowNs: EventLoop.now())
            } else {
                metrics.recordTLSHandshake(id, loop: loop)
            }
            clients[k].connections.pollState = .idle
            startPoll(k)
        case .post:
            metrics.recordTLSHandshake(id, loop: loop)
            clients[k].connections.postState = .idle
            flushPosts(k)
        case .ws:
            if plan.transportPlan == .websocketOnly {
                metrics.recordConnected(id, loop: loop, startNs: clients[k].phaseStartNs, nowNs: EventLoop.now())
            } else {
                metrics.recordTLSHandshake(id, loop: loop)
            }
            // The client's own timers bound the upgrade (the handshake timeout) and the close.
            var webSocket = WebSocketClientSession(configuration: .init(
                host: plan.host, port: plan.port, path: plan.target(.websocket, sid: clients[k].session.open?.sid),
                headerLines: plan.extraHeaderLines, upgradeTimeoutNs: .max / 4, closeTimeoutNs: .max / 4,
                maxMessageBytes: plan.maxMessageBytes))
            if case .ended = webSocket.connected(now: EventLoop.now(), random: &random) {
                if isProbe(k) { upgradeFailed(k) } else { fail(k, .upgradeInvalid) }
                return
            }
            webSocket.upgradeRequest.withUnsafeBytes { loop.write(id, $0) }
            clients[k].connections.webSocket = webSocket
            clients[k].connections.wsState = .upgrading
        }
    }

    public func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) { loop.close(id) }

    public func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        guard let (k, role) = owner(id) else { return buffer.count }
        metrics.count(.bytesReceived, UInt64(buffer.count))
        clients[k].session.dataReceived(now: EventLoop.now())
        switch role {
        case .poll, .post: return receivedHTTP(k, role, UnsafeRawBufferPointer(buffer))
        case .ws: return receivedWebSocket(k, buffer)
        }
    }

    /// A GET's or a POST's response bytes.
    func receivedHTTP(_ k: Int, _ role: SocketIOConnections.Role, _ bytes: UnsafeRawBufferPointer) -> Int {
        guard let http = clients[k].connections.http else { return bytes.count }
        var offset = 0
        let epoch = clients[k].epoch
        while true {
            let (action, consumed) = role == .poll ? http.pollExchange.next(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
                                                   : http.postExchange.next(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            offset += consumed
            switch action {
            case .needMore: return offset
            case .ended(let end):
                fail(k, end == .responseTooLarge ? .messageTooBig : .protocolError)
                return bytes.count
            case .head(let head):
                guard head.status == 200 else {
                    metrics.upgradeStatuses[head.status, default: 0] += 1
                    fail(k, .httpStatus)
                    return bytes.count
                }
            case .body, .event, .heldEvent:
                break
            case .complete(let reusable):
                if role == .poll {
                    clients[k].connections.pollState = .idle
                    // A copy (no bytes copied): reading the packets touches `clients`.
                    let body = http.pollExchange.collectedBody
                    body.withUnsafeBytes { readPayload(k, $0) }
                    guard clients[k].epoch == epoch else { return bytes.count }
                    if !reusable { close(k, .poll) }
                    pollStep(k, clients[k].session.pollCompleted())
                } else {
                    clients[k].connections.postState = .idle
                    if !reusable { close(k, .post) }
                    pollStep(k, clients[k].session.postCompleted())
                }
                guard clients[k].epoch == epoch, clients[k].connections.id(role) != nil else { return bytes.count }
            }
        }
    }

    /// What follows a GET or a POST: the next ones, or the upgrade.
    func pollStep(_ k: Int, _ step: SocketIOPollStep) {
        switch step {
        case .carryOn:
            startPoll(k)
            flushPosts(k)
        case .upgradeNow: finishUpgrade(k)
        case .stop: break
        }
    }

    /// The records of a polling payload, each to the session (binary ones decoded first).
    func readPayload(_ k: Int, _ body: UnsafeRawBufferPointer) {
        let epoch = clients[k].epoch
        var records = EngineIOPollingPayload(body)
        while let record = records.next() {
            switch record {
            case .text(_, let data):
                // The type digit is the byte before the data.
                guard data.lowerBound >= 1 else { fail(k, .protocolError); return }
                receivePacket(k, UnsafeRawBufferPointer(rebasing: body[(data.lowerBound - 1)..<data.upperBound]), binary: false, on: .polling)
            case .binary(let base64):
                guard let n = Base64.decode(UnsafeRawBufferPointer(rebasing: body[base64]), into: decodeScratch) else {
                    fail(k, .protocolError)
                    return
                }
                receivePacket(k, UnsafeRawBufferPointer(rebasing: decodeScratch[0..<n]), binary: true, on: .polling)
            case .invalid:
                fail(k, .protocolError)
                return
            }
            guard clients[k].epoch == epoch else { return }
        }
    }

    func receivedWebSocket(_ k: Int, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
        var offset = 0
        let epoch = clients[k].epoch
        while true {
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[offset...])
            let (action, consumed) = clients[k].connections.webSocket.next(rest, now: EventLoop.now())
            switch action {
            case .needMore, .none, .sendUpgradeRequest:
                return offset + consumed
            case .opened:
                offset += consumed
                webSocketOpened(k)
            case .message(let opcode, let range):
                offset += consumed
                receivePacket(k, UnsafeRawBufferPointer(rebasing: rest[range]), binary: opcode == .binary, on: .websocket)
            case .assembledMessage(let opcode):
                offset += consumed
                let assembled = clients[k].connections.webSocket.assembled
                assembled.withUnsafeBytes { receivePacket(k, $0, binary: opcode == .binary, on: .websocket) }
            case .sendPong(let range):
                loop.writeMaskedFrame(clients[k].connections.ws, opcode: .pong, payload: UnsafeRawBufferPointer(rebasing: rest[range]),
                                      key: UInt32(truncatingIfNeeded: random.next()))
                offset += consumed
            case .pong:
                offset += consumed
            case .closing(let send, _, _):
                loop.writeMaskedClose(clients[k].connections.ws, send, key: UInt32(truncatingIfNeeded: random.next()))
                if let peer = clients[k].connections.webSocket.peerClose { metrics.countClose(code: peer.code, reason: peer.reason) }
                let outcome = clients[k].connections.webSocket.closeHandshake.outcome
                if let id = clients[k].connections.release(.ws) { loop.closeAfterFlush(id) }
                webSocketGone(k, failure: { if case .failed(let f) = outcome { return ErrorClass(f) } else { return nil } }())
                return buffer.count
            case .ended(let end, _):
                switch end {
                case .upgradeRejected(let status):
                    metrics.upgradeStatuses[status, default: 0] += 1
                    if isProbe(k) { upgradeFailed(k) } else { fail(k, .upgradeRejected) }
                default:
                    if isProbe(k) { upgradeFailed(k) } else { fail(k, .upgradeInvalid) }
                }
                return buffer.count
            }
            guard clients[k].epoch == epoch, clients[k].connections.wsState != .none else { return buffer.count }
        }
    }

    /// The WebSocket closed (a close handshake, or TCP gone): the upgrade failed if it was the
    /// probe; otherwise the client lost its transport.
    func webSocketGone(_ k: Int, failure: ErrorClass?) {
        _ = clients[k].connections.release(.ws)
        if isProbe(k) && clients[k].session.upgrade == .probing {
            upgradeFailed(k)
        } else if clients[k].phase == .closing {
            closeAllConnections(k)
            setPhase(k, .ended)
        } else if let failure {
            fail(k, failure)
        } else {
            drop(k)
        }
    }

    public func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {
        guard let (k, role) = owner(id) else { return }
        _ = clients[k].connections.release(role)
        switch role {
        case .ws:
            if clients[k].phase != .closing && !(isProbe(k) && clients[k].session.upgrade == .probing) {
                metrics.error(reason == .endOfFile ? .unexpectedEOF : .connectionReset)
            }
            webSocketGone(k, failure: nil)
        case .poll, .post:
            if clients[k].phase == .closing { closeAllConnections(k); setPhase(k, .ended); return }
            // A keep-alive connection the server closed between requests is opened again on
            // demand; one closed with a request outstanding lost the transport.
            let exchange = role == .poll ? clients[k].connections.http?.pollExchange : clients[k].connections.http?.postExchange
            guard exchange?.isInProgress ?? false else { return }
            metrics.error(reason == .endOfFile ? .unexpectedEOF : .connectionReset)
            drop(k)
        }
    }

    public func writable(_ id: ConnectionID, loop: EventLoop) {
        guard let (k, _) = owner(id), phase == .messages, plan.load.loadModel == .open else { return }
        sendDue(k)
    }
}
