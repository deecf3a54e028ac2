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
        WebSocketHandshake.switchingProtocols(key: s.webSocketKey).withUnsafeBytes { loop.write(s.id, $0) }
        s.mode = .webSocket
        limits.noDeadline(s.id, loop)
        s.receiver = WebSocketReceiver(role: .server, maxMessageBytes: max(1 << 20, maxMessage * 4))
        s.closeHandshake = WebSocketCloseHandshake(role: .server)
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

    func receivedWebSocket(_ s: HubSocket, _ buffer: UnsafeMutableRawBufferPointer, from start: Int) -> Int {
        var offset = start
        while offset < buffer.count && s.mode == .webSocket {
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[offset...])
            let (event, consumed) = s.receiver!.next(rest)
            switch event {
            case .needMore:
                return offset
            case .fragment, .pong:
                break
            case .message(_, let r):
                if let c = s.connection, !c.disposed { feed(c, UnsafeRawBufferPointer(rebasing: rest[r])) }
            case .assembledMessage:
                let assembled = s.receiver!.assembled
                if let c = s.connection, !c.disposed { assembled.withUnsafeBytes { feed(c, $0) } }
            case .ping(let r):
                writeFrame(s.id, .pong, UnsafeRawBufferPointer(rebasing: rest[r]))
            case .close(let code, _):
                writeCloseFrame(s.id, s.closeHandshake.received(code: code))
                closeWebSocketSocket(s, graceful: true)
                return buffer.count
            case .fail(let failure):
                statistics.protocolErrors += 1
                writeCloseFrame(s.id, s.closeHandshake.failed(failure))
                closeWebSocketSocket(s, graceful: true)
                return buffer.count
            }
            offset += consumed
        }
        return s.mode == .webSocket ? offset : buffer.count
    }

    /// Writes the Close frame a close-handshake step calls for, if any: the echo of the
    /// client's code, the failure's code, or our own (RFC 6455 §5.5.1, never a second one).
    func writeCloseFrame(_ id: ConnectionID, _ step: WebSocketCloseHandshake.Step) {
        if let payload = step.send { payload.withUnsafeBytes { writeFrame(id, .close, $0) } }
    }

    /// The peer closed the WebSocket (or broke its framing): close the socket after the reply
    /// (the server closes TCP first, RFC 6455 §7.1.1) and end the hub connection. Only an abrupt loss (`closed`) leaves a stateful connection
    /// waiting to be resumed.
    func closeWebSocketSocket(_ s: HubSocket, graceful: Bool) {
        let c = s.connection
        loop.closeAfterFlush(s.id)
        forget(s)
        if let c, !c.disposed, c.socket == s.id {
            c.socket = nil
            if graceful { endConnection(c, close: nil) } else { transportLost(c) }
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
