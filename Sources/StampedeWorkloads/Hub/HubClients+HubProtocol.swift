// The hub protocol of each client, carried out with its HubProtocolSession: the handshake,
// keep-alive and the server timeout, stateful reconnect's resume and replay, and the received
// hub bytes turned into messages (§3, §5, §6). A bare §N is a section of docs/protocols.md.

import StampedeLoop
import StampedeMetrics
import StampedeSession
import StampedeWire

extension HubClients {
    /// A new hub protocol session for client `k` (a start, or a transport opened).
    func makeSession(_ k: Int) -> HubProtocolSession<Codec> {
        HubProtocolSession(.init(maxMessageLength: plan.maxMessageBytes,
                                 keepAliveIntervalNs: nanoseconds(plan.spec.keepAliveSeconds),
                                 serverTimeoutNs: nanoseconds(plan.spec.serverTimeoutSeconds),
                                 keepAlive: clients[k].endpoint.transport != .longPolling,
                                 maxReplayBytes: Self.maxReplayBytes))
    }

    /// Unacknowledged bytes a stateful client keeps for a resume. The official clients stop
    /// sending at 100,000; a load generator keeps sending, and past this cap the connection can
    /// no longer resume (a drop then reconnects by the policy).
    static var maxReplayBytes: Int { 8 << 20 }

    var sendsText: Bool { plan.spec.protocolKind == .json }

    /// The transport is up: send the handshake (§3) over it (WebSockets) or by POST (SSE, long polling).
    func transportOpened(_ k: Int) {
        metrics.record(.upgrade, nanoseconds: EventLoop.now() - clients[k].phaseStartNs)
        setPhase(k, .handshaking)
        clients[k].phaseStartNs = EventLoop.now()
        let stateful = plan.spec.statefulReconnect && clients[k].endpoint.statefulReconnect && clients[k].endpoint.transport == .webSockets
        sessions[k] = makeSession(k)
        if let n = sessions[k].handshakeRequest(statefulReconnect: stateful, now: EventLoop.now(), into: scratch) {
            // The handshake is JSON text whatever the hub protocol (§3).
            sendTransportBytes(k, UnsafeRawBufferPointer(rebasing: scratch[0..<n]), text: true)
        }
    }

    /// Stateful reconnect after an abrupt drop: the same URL and id again, no negotiate and no
    /// handshake (§6). On success the client never left Connected.
    func resume(_ k: Int) {
        sessions[k].beginResume()
        metrics.count(.reconnectAttempts)
        stormAttempt(k)
        openMain(k)
    }

    /// The socket is back: tell the server where our numbering resumes, then replay what it has
    /// not acknowledged (it skips what it already processed).
    func resumed(_ k: Int) {
        metrics.count(.reconnected)
        stormRecovered(k)
        if let n = sessions[k].resumed(now: EventLoop.now(), into: scratch) {
            sendTransportBytes(k, UnsafeRawBufferPointer(rebasing: scratch[0..<n]), text: sendsText)
        }
        let session = sessions[k]  // a copy (no bytes copied): sending touches `clients`
        session.forEachReplayMessage { sendTransportBytes(k, $0, text: sendsText) }
    }

    /// Sends framed hub bytes over the client's transport.
    func sendTransportBytes(_ k: Int, _ bytes: UnsafeRawBufferPointer, text: Bool) {
        metrics.count(.bytesSent, UInt64(bytes.count))
        switch clients[k].endpoint.transport {
        case .webSockets:
            guard clients[k].connections.mainState == .wsOpen else { return }
            loop.writeMaskedFrame(clients[k].connections.main, opcode: text ? .text : .binary, payload: bytes, key: UInt32(truncatingIfNeeded: random.next()))
        case .serverSentEvents, .longPolling:
            clients[k].connections.postQueue.append(contentsOf: bytes)
            flushPosts(k)
        }
    }

    /// Writes one hub message of types 1–5 with `write` into the scratch buffer and sends it
    /// through the session (stateful reconnect numbers it and keeps it until acknowledged;
    /// while the socket is being reopened it waits there).
    @inline(__always)
    func sendHub(_ k: Int, _ write: (UnsafeMutableRawBufferPointer) -> Int?) {
        // Written before the session is borrowed: the arguments' writer reads the client table.
        guard let n = write(scratch) else { return }
        let bytes = UnsafeRawBufferPointer(rebasing: scratch[0..<n])
        guard case .write = sessions[k].send(bytes, now: EventLoop.now()) else { return }
        sendTransportBytes(k, bytes, text: sendsText)
    }

    /// The Close message (§4), not numbered: a client leaving or closing.
    func sendCloseMessage(_ k: Int) {
        guard let n = sessions[k].close(now: EventLoop.now(), into: scratch) else { return }
        sendTransportBytes(k, UnsafeRawBufferPointer(rebasing: scratch[0..<n]), text: sendsText)
    }

    /// Once a second: ping clients that sent nothing for a keep-alive interval, fail those that
    /// heard nothing for the server timeout (§5), and acknowledge what arrived, coalesced to
    /// about once a second (§6). Long polling has none of it.
    func keepAliveSweep(now: UInt64) {
        for k in clients.indices where clients[k].phase == .connected || clients[k].phase == .joining {
            // Long polling has no keep-alive; a stalled client is frozen and judges nothing.
            guard clients[k].endpoint.transport != .longPolling, !loop.isReadingPaused(clients[k].connections.main) else { continue }
            let step = sessions[k].keepAliveCheck(now: now, into: scratch)
            if step.serverTimedOut {
                fail(k, .serverTimeout)
                continue
            }
            if let ping = step.ping { sendTransportBytes(k, UnsafeRawBufferPointer(rebasing: scratch[ping]), text: sendsText) }
            if let ack = step.ack { sendTransportBytes(k, UnsafeRawBufferPointer(rebasing: scratch[ack]), text: sendsText) }
        }
    }

    // MARK: Receiving hub messages

    /// Parses every complete hub message in `bytes` (prefixed by any earlier partial one).
    func receiveHub(_ k: Int, _ bytes: UnsafeRawBufferPointer) {
        sessions[k].dataReceived(now: EventLoop.now())
        if clients[k].connections.inbound.isEmpty {
            let used = parseHub(k, bytes)
            if used < bytes.count, isAlive(k) { clients[k].connections.inbound.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[used...])) }
        } else {
            clients[k].connections.inbound.append(contentsOf: bytes)
            var pending = clients[k].connections.inbound
            clients[k].connections.inbound = []
            let used = pending.withUnsafeBytes { parseHub(k, $0) }
            // All parsed: the storage goes, so an idle client holds no inbound bytes.
            if isAlive(k) && used < pending.count {
                pending.removeFirst(used)
                clients[k].connections.inbound = pending
            }
        }
    }

    func isAlive(_ k: Int) -> Bool { clients[k].phase != .ended && clients[k].phase != .waitingToReconnect && clients[k].phase != .idle }

    /// Runs the session over `buffer`; returns the bytes used (it stops at a partial message).
    func parseHub(_ k: Int, _ buffer: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        // Every answer but `.needMore` and `.ended` consumes at least one byte.
        while true {
            let rest = UnsafeRawBufferPointer(rebasing: buffer[offset...])
            let (action, consumed) = sessions[k].next(rest)
            switch action {
            case .needMore:
                return offset
            case .handshakeCompleted:
                offset += consumed
                handshakeCompleted(k)
                guard isAlive(k) else { return buffer.count }
            case .skipped:
                offset += consumed
            case .message(let message):
                handle(k, message, rest)
                offset += consumed
                guard isAlive(k) else { return buffer.count }
            case .ended(let end):
                sessionEnded(k, end, rest)
                return buffer.count
            }
        }
    }

    /// The session ended on what the server sent: count it as the class it is and end the client.
    func sessionEnded(_ k: Int, _ end: HubSessionEnd, _ buffer: UnsafeRawBufferPointer) {
        switch end {
        case .handshakeRejected(let errorRange):
            noteHubError(buffer, errorRange, context: "handshake")
            fail(k, .handshakeFailed)
        case .handshakeInvalid:
            fail(k, .handshakeFailed)
        case .protocolError, .sequenceAhead:
            fail(k, .protocolError)
        case .closedByServer(let errorRange, let allowReconnect):
            // §6: a Close with allowReconnect may reconnect; without it the close is final.
            if let errorRange {
                metrics.error(.closedWithError)
                noteHubError(buffer, errorRange, context: "close")
            }
            if allowReconnect { drop(k, reason: nil) } else { self.end(k, failed: errorRange != nil ? .closedWithError : nil, reconnect: false) }
        case .serverTimeout:
            fail(k, .serverTimeout)
        }
    }

    func handshakeCompleted(_ k: Int) {
        metrics.record(.handshake, nanoseconds: EventLoop.now() - clients[k].phaseStartNs)
        if let join = plan.spec.join {
            setPhase(k, .joining)
            joinMethod.withUnsafeBytes { methodName in
                sendHub(k) { out in
                    Codec.writeInvocation(into: out, invocationId: "join", target: .utf8(methodName), streamIds: Self.noStreams) { w in
                        writeArguments(&w, join.arguments, k: k, sequence: 0, stamp: UnsafeRawBufferPointer(start: nil, count: 0), cache: false)
                    }
                }
            }
        } else {
            connected(k)
        }
    }
}
