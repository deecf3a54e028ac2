import StampedeLoop
import StampedeSession
import StampedeWire

extension SocketIOServer {
    // MARK: Sessions

    /// A new Engine.IO session with a fresh sid (20 URL-safe characters, as engine.io's).
    func newClient(_ transport: SocketIOServerSession.Transport) -> SocketIOClient {
        var sid = randomID()
        while bySid[sid] != nil { sid = randomID() }
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
        } else {
            slot = clients.count
            clients.append(nil)
            generations.append(0)
        }
        generations[slot] &+= 1
        let c = SocketIOClient(slot: slot, generation: generations[slot],
                               session: SocketIOServerSession(sid: sid, transport: transport, configuration: sessionConfiguration, now: EventLoop.now()))
        clients[slot] = c
        bySid[sid] = c
        statistics.open += 1
        return c
    }

    static let idAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    func randomID() -> [UInt8] {
        var id = [UInt8](repeating: 0, count: 20)
        var bits = random.next()
        for i in 0..<20 {
            if i == 10 { bits = random.next() }
            id[i] = Self.idAlphabet[Int(bits & 63)]
            bits >>= 6
        }
        return id
    }

    /// Arms the session's timer when its deadline moved earlier than the one armed (a later one
    /// is armed when the earlier fires; the session ignores deadlines it no longer waits for).
    func schedule(_ c: SocketIOClient) {
        let d = c.session.deadline
        guard !c.ended, d != .max, d != c.armed else { return }
        c.armed = d
        loop.schedule(at: d, token: TimerToken(kind: Self.sessionTimer, slot: UInt32(c.slot), epoch: c.generation))
    }

    /// Carries out what the session asked for (`buffer`: what its ranges index), then delivers
    /// what it queued and re-arms its timer.
    func handle(_ c: SocketIOClient, _ action: SocketIOServerSession.Action,
                _ buffer: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) {
        guard !c.ended else { return }
        switch action {
        case .none:
            break
        case .connectRequested(let namespace, let auth):
            connect(c, namespace: namespace, auth: auth, buffer)
        case .disconnected(let namespace):
            statistics.namespaceDisconnects += 1
            rooms.leaveAll(c, namespace: namespace.map { Array(buffer[$0]) } ?? [UInt8(ascii: "/")])
        case .packet(let packet):
            received(c, packet, buffer, attachments: [])
        case .binaryPacket(let packet):
            let head = c.session.binaryPacket
            let attachments = c.session.attachments
            head.withUnsafeBytes { received(c, packet, $0, attachments: attachments) }
        case .ignored:
            statistics.packetsIgnored += 1
        case .sendProbeAnswer:
            if let ws = c.webSocket {
                let probe: StaticString = "3probe"
                writeFrame(ws, .text, UnsafeRawBufferPointer(start: probe.utf8Start, count: probe.utf8CodeUnitCount))
            }
        case .upgraded:
            statistics.upgrades += 1
        case .upgradeFailed:
            statistics.upgradesFailed += 1
            if let ws = c.webSocket, let s = socket(ws) {
                c.webSocket = nil
                loop.close(ws)
                forget(s)
            }
        case .ended(let end):
            endClient(c, end)
            return
        }
        flush(c)
    }

    /// Delivers what the session queued: onto its WebSocket, or as the answer to its held poll.
    func flush(_ c: SocketIOClient) {
        if c.session.webSocketOutputDue, let ws = c.webSocket {
            c.session.drainWebSocket { binary, bytes in writeFrame(ws, binary ? .binary : .text, bytes) }
        }
        if c.session.pollAnswerDue, let p = c.pollSocket {
            c.pollSocket = nil
            if let s = socket(p) {
                c.session.takePollPayload { respond(s, status: 200, reason: "OK", contentType: Self.textType, body: $0) }
            }
        }
        schedule(c)
    }

    /// The session is over: what it queued goes out where a transport is still there (the close
    /// packet of a server close), then the transports close and the session is forgotten.
    func endClient(_ c: SocketIOClient, _ end: SocketIOServerSession.End) {
        switch end {
        case .clientClosed: statistics.clientCloses += 1
        case .pingTimeout: statistics.pingTimeouts += 1
        case .transportClosed: statistics.transportCloses += 1
        case .protocolError: statistics.protocolErrors += 1
        case .payloadTooLarge: statistics.payloadsTooLarge += 1
        case .outputOverflow: statistics.limits.slowConsumersDropped += 1
        case .closedByServer: statistics.serverCloses += 1
        }
        if let ws = c.webSocket, let s = socket(ws) {
            c.session.drainWebSocket { binary, bytes in writeFrame(ws, binary ? .binary : .text, bytes) }
            if case .closeTransport(let send?, _) = s.webSocket?.close(code: 1000, now: loop.wakeTime, waitForAnswer: false) {
                send.withUnsafeBytes { writeFrame(ws, .close, $0) }
            }
            loop.closeAfterFlush(ws)
            forget(s)
        }
        if let p = c.pollSocket, let s = socket(p) {
            c.session.takePollPayload { respond(s, status: 200, reason: "OK", contentType: Self.textType, body: $0) }
        }
        c.pollSocket = nil
        c.webSocket = nil
        dispose(c)
    }

    /// Forgets a session: its sid, its rooms, its slot.
    func dispose(_ c: SocketIOClient) {
        guard !c.ended else { return }
        c.ended = true
        rooms.leaveAll(c)
        bySid[c.session.sid] = nil
        if c.slot < clients.count, clients[c.slot] === c {
            clients[c.slot] = nil
            freeSlots.append(c.slot)
        }
        statistics.open -= 1
        statistics.closes += 1
        if c.holdsSlot {
            c.holdsSlot = false
            connectionQuota?.release()
        }
    }

    // MARK: WebSocket frames

    /// Carries out the WebSocket session's actions for what the client sent: messages go to the
    /// Engine.IO session, pings are answered, and a Close or broken framing ends the socket.
    func receivedWebSocket(_ s: SocketIOSocket, _ buffer: UnsafeMutableRawBufferPointer, from start: Int) -> Int {
        var offset = start
        while offset < buffer.count && s.mode == .webSocket {
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[offset...])
            guard let (action, consumed) = s.webSocket?.next(rest, now: loop.wakeTime) else { return buffer.count }
            switch action {
            case .needMore:
                return offset + consumed
            case .message(let opcode, let r):
                message(s, UnsafeRawBufferPointer(rebasing: rest[r]), binary: opcode == .binary)
            case .assembledMessage(let opcode):
                if let assembled = s.webSocket?.assembled {
                    assembled.withUnsafeBytes { message(s, $0, binary: opcode == .binary) }
                }
            case .sendPong(let r):
                writeFrame(s.id, .pong, UnsafeRawBufferPointer(rebasing: rest[r]))
            case .pong, .none, .closing, .ended:
                break  // the last two never answer input
            case .closeTransport(let send, let end):
                if case .failed = end { statistics.protocolErrors += 1 }
                if let send { send.withUnsafeBytes { writeFrame(s.id, .close, $0) } }
                loop.closeAfterFlush(s.id)
                lost(s)
                return buffer.count
            }
            offset += consumed
        }
        return s.mode == .webSocket ? offset : buffer.count
    }

    func message(_ s: SocketIOSocket, _ bytes: UnsafeRawBufferPointer, binary: Bool) {
        guard let c = s.client, !c.ended, c.webSocket == s.id else { return }
        handle(c, c.session.webSocketMessage(bytes, binary: binary, now: EventLoop.now()), bytes)
    }

    func writeFrame(_ id: ConnectionID, _ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer) {
        let h = WebSocketFrameCodec.headerLength(payloadLength: payload.count, masked: false)
        loop.write(id, reserving: h + payload.count) { out in
            let n = WebSocketFrameCodec.writeHeader(into: out, fin: true, opcode: opcode, payloadLength: payload.count, maskKey: nil)
            if let b = payload.baseAddress { (out + n).copyMemory(from: b, byteCount: payload.count) }
            return n + payload.count
        }
    }
}
