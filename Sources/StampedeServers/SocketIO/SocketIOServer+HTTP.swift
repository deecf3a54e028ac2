import StampedeLoop
import StampedeSession
import StampedeWire

extension SocketIOServer {
    // MARK: Requests

    func receivedHTTP(_ s: SocketIOSocket, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
        var offset = 0
        while s.mode == .http {
            // Pipelined requests wait while the answers are backed up (see `ServerLimits`).
            if loop.isBackedUp(s.id) { return offset }
            let rest = UnsafeRawBufferPointer(rebasing: buffer[offset...])
            let (event, consumed) = s.parser.next(rest)
            switch event {
            case .needMore:
                if s.parser.isInsideMessage { limits.requestStarted(s.id, loop) } else { limits.awaitRequest(s.id, loop) }
                return offset + consumed
            case .head(let head):
                offset += consumed
                limits.noDeadline(s.id, loop)
                requestHead(s, head, rest)
            case .body(let r):
                requestBody(s, UnsafeRawBufferPointer(rebasing: rest[r]))
                offset += consumed
            case .end:
                offset += consumed
                requestEnd(s)
            case .error:
                statistics.protocolErrors += 1
                s.closeAfterResponse = true
                respond(s, status: 400, reason: "Bad Request", body: Array("Malformed HTTP request".utf8))
                return buffer.count
            }
        }
        switch s.mode {
        case .webSocket: return receivedWebSocket(s, buffer, from: offset)
        case .poll: return offset
        default: return buffer.count
        }
    }

    func requestHead(_ s: SocketIOSocket, _ head: HTTPRequestHead, _ buf: UnsafeRawBufferPointer) {
        statistics.httpRequests += 1
        s.closeAfterResponse = head.connectionClose
        s.http10 = head.versionMinor == 0
        s.route = .none
        s.body.removeAll()
        s.bodyTooLarge = false
        if head.expectsContinue && !s.http10 {
            let c: StaticString = "HTTP/1.1 100 Continue\r\n\r\n"
            loop.write(s.id, UnsafeRawBufferPointer(start: c.utf8Start, count: c.utf8CodeUnitCount))
        }
        var requestPath = UnsafeRawBufferPointer(rebasing: buf[head.path(in: buf)])
        if requestPath.count > 1 && requestPath.last == UInt8(ascii: "/") { requestPath = UnsafeRawBufferPointer(rebasing: requestPath.dropLast()) }
        guard requestPath.elementsEqual(pathBytes) else {
            s.route = .notFound
            return
        }
        let request = EngineIORequest.classify(head, in: buf)
        func client(_ sid: Range<Int>) -> SocketIOClient? {
            guard sid.count <= 64, let c = bySid[Array(buf[sid])], !c.ended else { return nil }
            return c
        }
        switch request {
        case .handshake(let transport):
            if let retryAfter = faults.rejectingSecondsLeft() {
                statistics.requestsRejected += 1
                s.route = .unavailable(retryAfter: retryAfter)
            } else if isShutDown {
                s.route = .shuttingDown
            } else if transport == .webSocket {
                s.route = webSocketKey(s, head, buf) ? .handshakeWebSocket : .refused(.badRequest)
            } else {
                s.route = .handshakePolling
            }
        case .poll(let sid):
            s.route = client(sid).map { .poll($0) } ?? .refused(.unknownSid)
        case .post(let sid):
            s.route = client(sid).map { .post($0) } ?? .refused(.unknownSid)
        case .upgrade(let sid):
            if let retryAfter = faults.rejectingSecondsLeft() {
                statistics.requestsRejected += 1
                s.route = .unavailable(retryAfter: retryAfter)
            } else if let c = client(sid) {
                s.route = webSocketKey(s, head, buf) ? .upgrade(c) : .refused(.badRequest)
            } else {
                s.route = .refused(.unknownSid)
            }
        case .refused(let error):
            s.route = .refused(error)
        }
    }

    /// Validates the WebSocket handshake and keeps its key (bounded) for the 101.
    func webSocketKey(_ s: SocketIOSocket, _ head: HTTPRequestHead, _ buf: UnsafeRawBufferPointer) -> Bool {
        guard case .success(let key) = WebSocketHandshake.validateRequest(head, in: buf), key.count <= 64 else { return false }
        s.webSocketKey = String(decoding: UnsafeRawBufferPointer(rebasing: buf[key]), as: UTF8.self)
        return true
    }

    func requestBody(_ s: SocketIOSocket, _ bytes: UnsafeRawBufferPointer) {
        guard case .post = s.route, !s.bodyTooLarge else { return }
        if s.body.count + bytes.count > sessionConfiguration.maxPayload {
            s.bodyTooLarge = true
            s.body = []
            return
        }
        s.body.append(contentsOf: bytes)
    }

    func requestEnd(_ s: SocketIOSocket) {
        let route = s.route
        s.route = .none
        switch route {
        case .none, .notFound:
            respond(s, status: 404, reason: "Not Found", body: Array("Not Found".utf8))
        case .refused(let error):
            statistics.requestsRefused += 1
            respondError(s, error)
        case .unavailable(let retryAfter):
            statistics.httpErrors += 1
            FaultState.writeUnavailable(loop, s.id, retryAfter: retryAfter)
            forget(s)
        case .shuttingDown:
            respond(s, status: 503, reason: "Service Unavailable", body: Array("The server is shutting down.".utf8))
        case .handshakePolling:
            guard let c = newClientWithinQuota(s, .polling) else { return }
            statistics.handshakesPolling += 1
            c.session.openPacket().withUnsafeBytes { respond(s, status: 200, reason: "OK", contentType: Self.textType, body: $0) }
            schedule(c)
        case .handshakeWebSocket:
            guard let c = newClientWithinQuota(s, .webSocket) else { return }
            statistics.handshakesWebSocket += 1
            startWebSocket(s, c)
            c.session.openPacket().withUnsafeBytes { writeFrame(s.id, .text, $0) }
            schedule(c)
        case .upgrade(let c):
            guard !c.ended, c.session.webSocketAttached() else {
                statistics.requestsRefused += 1
                respondError(s, .badRequest)
                return
            }
            statistics.upgradesStarted += 1
            startWebSocket(s, c)
        case .poll(let c):
            poll(s, c)
        case .post(let c):
            post(s, c)
        }
    }

    /// A new session holding a `--max-connections` slot, or nil when the limit is reached (then
    /// `s` is answered 503 and closed).
    func newClientWithinQuota(_ s: SocketIOSocket, _ transport: SocketIOServerSession.Transport) -> SocketIOClient? {
        guard let q = connectionQuota else { return newClient(transport) }
        guard q.acquire() else {
            statistics.connectionsRefused += 1
            ConnectionQuota.refuse(loop, s.id)
            forget(s)
            return nil
        }
        let c = newClient(transport)
        c.holdsSlot = true
        return c
    }

    func startWebSocket(_ s: SocketIOSocket, _ c: SocketIOClient) {
        WebSocketHandshake.switchingProtocols(key: s.webSocketKey).withUnsafeBytes { loop.write(s.id, $0) }
        s.webSocketKey = ""  // an idle connection keeps nothing it no longer needs
        s.mode = .webSocket
        limits.noDeadline(s.id, loop)
        s.webSocket = WebSocketServerSession(maxMessageBytes: sessionConfiguration.maxPayload)
        s.client = c
        c.webSocket = s.id
    }

    func poll(_ s: SocketIOSocket, _ c: SocketIOClient) {
        statistics.polls += 1
        switch c.session.poll(now: EventLoop.now()) {
        case .answerNow:
            c.session.takePollPayload { respond(s, status: 200, reason: "OK", contentType: Self.textType, body: $0) }
        case .hold:
            s.mode = .poll
            s.client = c
            c.pollSocket = s.id
        case .badRequest:
            statistics.requestsRefused += 1
            respondError(s, .badRequest)
        case .ended(let end):
            respondError(s, .badRequest)
            handle(c, .ended(end))
        }
    }

    func post(_ s: SocketIOSocket, _ c: SocketIOClient) {
        statistics.posts += 1
        guard !s.bodyTooLarge else {
            s.closeAfterResponse = true
            respond(s, status: 413, reason: "Payload Too Large", body: [])
            handle(c, .ended(.payloadTooLarge))
            return
        }
        guard c.session.transport == .polling else {
            statistics.requestsRefused += 1
            respondError(s, .badRequest)
            return
        }
        var body: [UInt8] = []
        swap(&body, &s.body)
        var failed = false
        body.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count && !c.ended {
                let (action, next) = c.session.post(raw, from: offset, now: EventLoop.now())
                if case .ended(.protocolError) = action { failed = true }
                handle(c, action, raw)
                offset = next
            }
        }
        if failed {
            respondError(s, .badRequest)
        } else {
            let ok: StaticString = "ok"
            respond(s, status: 200, reason: "OK", contentType: "text/html", body: UnsafeRawBufferPointer(start: ok.utf8Start, count: ok.utf8CodeUnitCount))
        }
    }

    // MARK: Answers

    static let textType: StaticString = "text/plain; charset=UTF-8"

    func respondError(_ s: SocketIOSocket, _ error: EngineIOError) {
        error.body.withUnsafeBytes { respond(s, status: 400, reason: "Bad Request", contentType: "application/json", body: $0) }
    }

    func respond(_ s: SocketIOSocket, status: Int, reason: StaticString, body: [UInt8]) {
        body.withUnsafeBytes { respond(s, status: status, reason: reason, contentType: "text/plain; charset=utf-8", body: $0) }
    }

    /// Writes a complete response with a Content-Length body; closes after it when the request
    /// asked to. The socket goes back to waiting for a request.
    func respond(_ s: SocketIOSocket, status: Int, reason: StaticString, contentType: StaticString, body: UnsafeRawBufferPointer) {
        if status >= 400 { statistics.httpErrors += 1 }
        let close = s.closeAfterResponse || s.http10
        let room = 256 + body.count
        loop.write(s.id, reserving: room) { p in
            guard let n = HTTPResponseWriter.writeHead(into: UnsafeMutableRawBufferPointer(start: p, count: room), status: status, reason: reason,
                                                       contentType: body.isEmpty ? nil : contentType, body: .length(body.count),
                                                       connectionClose: close, extraHeaderLines: nil) else { return 0 }
            if let b = body.baseAddress, !body.isEmpty { (p + n).copyMemory(from: b, byteCount: body.count) }
            return n + body.count
        }
        if close {
            loop.closeAfterFlush(s.id)
            forget(s)
        } else {
            s.mode = .http
            s.client = nil
            limits.awaitRequest(s.id, loop)
        }
    }
}
