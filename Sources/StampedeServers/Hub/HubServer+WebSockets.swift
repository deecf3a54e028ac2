import StampedeLoop
import StampedeSession
import StampedeWire

extension HubServer {
    func startWebSocket(_ s: HubSocket, _ target: HubConnection?) {
        guard let c = target, !c.disposed, c.phase != .ended else {
            respond(s, status: 404, reason: "Not Found", text: "No Connection with that ID")
            return
        }
        var resuming = false
        if let t = c.transport {
            guard t == .webSockets else {
                respond(s, status: 400, reason: "Bad Request", text: "Cannot change transports mid-connection")
                return
            }
            guard c.stateful != nil, c.phase == .open else {
                respond(s, status: 409, reason: "Conflict", text: "Connection ID is already in use.")
                return
            }
            // Stateful reconnect: the client may be back before we noticed its old socket die;
            // like ASP.NET, the new WebSocket replaces the old one.
            if let old = c.socket, let oldSocket = socket(old) {
                loop.close(old)
                forget(oldSocket)
            }
            c.socket = nil
            resuming = true
        }
        if !resuming && refusedForQuota(s, c, take: true) { return }
        WebSocketHandshake.switchingProtocols(key: s.webSocketKey).withUnsafeBytes { loop.write(s.id, $0) }
        s.mode = .webSocket
        limits.noDeadline(s.id, loop)
        s.webSocket = WebSocketServerSession(maxMessageBytes: max(1 << 20, maxMessage * 4))
        s.connection = c
        c.socket = s.id
        if resuming {
            resumeStateful(c)
        } else {
            c.transport = .webSockets
            statistics.connectionsWebSockets += 1
            claim(c)
        }
    }

    // MARK: WebSocket frames

    /// Carries out the WebSocket session's actions for what the client sent: messages go to the
    /// hub connection, pings are answered, and a Close or broken framing ends the socket.
    func receivedWebSocket(_ s: HubSocket, _ buffer: UnsafeMutableRawBufferPointer, from start: Int) -> Int {
        var offset = start
        while offset < buffer.count && s.mode == .webSocket {
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[offset...])
            let (action, consumed) = s.webSocket!.next(rest, now: loop.wakeTime)
            switch action {
            case .needMore:
                return offset + consumed
            case .message(_, let r):
                if let c = s.connection, !c.disposed { feed(c, UnsafeRawBufferPointer(rebasing: rest[r])) }
            case .assembledMessage:
                let assembled = s.webSocket!.assembled
                if let c = s.connection, !c.disposed { assembled.withUnsafeBytes { feed(c, $0) } }
            case .sendPong(let r):
                writeFrame(s.id, .pong, UnsafeRawBufferPointer(rebasing: rest[r]))
            case .pong, .none, .closing, .ended:
                break  // the last two never answer input
            case .closeTransport(let send, let end):
                if case .failed = end { statistics.protocolErrors += 1 }
                if let send { send.withUnsafeBytes { writeFrame(s.id, .close, $0) } }
                closeWebSocketSocket(s)
                return buffer.count
            }
            offset += consumed
        }
        return s.mode == .webSocket ? offset : buffer.count
    }

    /// Our own Close (1000) on a WebSocket whose hub connection ends. The socket is forgotten
    /// with the connection, so the caller closes TCP once it is written rather than after the
    /// client's answer (the server closes first either way, RFC 6455 §7.1.1).
    func sendWebSocketClose(_ s: HubSocket) {
        guard case .closeTransport(let send?, _) = s.webSocket?.close(code: 1000, now: loop.wakeTime, waitForAnswer: false) else { return }
        send.withUnsafeBytes { writeFrame(s.id, .close, $0) }
    }

    /// The client closed the WebSocket (or broke its framing) and the session answered: close the
    /// socket after the reply (the server closes TCP first, RFC 6455 §7.1.1) and end the hub
    /// connection. Only an abrupt loss (`closed`) leaves a stateful connection waiting to be resumed.
    func closeWebSocketSocket(_ s: HubSocket) {
        let c = s.connection
        loop.closeAfterFlush(s.id)
        forget(s)
        if let c, !c.disposed, c.socket == s.id {
            c.socket = nil
            endConnection(c, close: nil)
        }
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
