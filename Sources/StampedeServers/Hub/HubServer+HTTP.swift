import StampedeLoop
import StampedeWire

extension HubServer {
    // MARK: HTTP

    func receivedHTTP(_ s: HubSocket, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
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
                respond(s, status: 400, reason: "Bad Request", text: "Malformed HTTP request")
                return buffer.count
            }
        }
        switch s.mode {
        case .webSocket: return receivedWebSocket(s, buffer, from: offset)
        case .poll: return offset
        default: return buffer.count
        }
    }

    func requestHead(_ s: HubSocket, _ head: HTTPRequestHead, _ buf: UnsafeRawBufferPointer) {
        statistics.httpRequests += 1
        s.closeAfterResponse = head.connectionClose
        s.http10 = head.versionMinor == 0
        s.route = .none
        s.target = nil
        if head.expectsContinue && !s.http10 {
            let c: StaticString = "HTTP/1.1 100 Continue\r\n\r\n"
            loop.write(s.id, UnsafeRawBufferPointer(start: c.utf8Start, count: c.utf8CodeUnitCount))
        }
        let t = head.target
        let pathBytes = UnsafeRawBufferPointer(rebasing: buf[head.path(in: buf)])
        // Paths match ignoring ASCII case, as ASP.NET's routing does.
        let isHub = HubBytes.equalsIgnoringCase(pathBytes, self.pathBytes)
        let isNegotiate = !isHub && pathBytes.count == self.pathBytes.count + 10
            && HubBytes.equalsIgnoringCase(UnsafeRawBufferPointer(rebasing: pathBytes[0..<self.pathBytes.count]), self.pathBytes)
            && HubBytes.equalsIgnoringCase(UnsafeRawBufferPointer(rebasing: pathBytes[self.pathBytes.count...]), "/negotiate")
        if faults.rejectingUntil != 0, let retryAfter = faults.rejectingSecondsLeft(), startsAConnection(head, buf, isHub: isHub) {
            statistics.requestsRejected += 1
            s.route = .unavailable(retryAfter: retryAfter)
            return
        }
        guard isHub || isNegotiate else {
            s.route = .reject(404, "Not Found", "Not Found")
            return
        }
        if isShutDown {
            s.route = .reject(503, "Service Unavailable", "The server is shutting down.")
            return
        }
        if isNegotiate {
            guard head.method == .post else {
                s.route = .reject(405, "Method Not Allowed", "Negotiate requires POST.")
                return
            }
            if let required = requiredToken, !RestServer.hasBearer(required, head, buf) {
                statistics.negotiatesUnauthorized += 1
                s.route = .reject(401, "Unauthorized", "Unauthorized")
                return
            }
            s.negotiateVersion = 0
            if let v = HTTPQuery.value(of: "negotiateVersion", inTarget: t, of: buf) {
                let raw = UnsafeRawBufferPointer(rebasing: buf[v])
                guard let n = Self.decimal(raw) else {
                    let shown = String(decoding: raw.prefix(64), as: UTF8.self)
                    s.route = .reject(400, "Bad Request", "The client requested an invalid protocol version '\(shown)'")
                    return
                }
                s.negotiateVersion = min(n, 1)
            }
            s.wantsStatefulReconnect = false
            if let v = HTTPQuery.value(of: "useStatefulReconnect", inTarget: t, of: buf) {
                s.wantsStatefulReconnect = HubBytes.equalsIgnoringCase(UnsafeRawBufferPointer(rebasing: buf[v]), "true")
            }
            s.route = .negotiate
            return
        }
        let idRange = HTTPQuery.value(of: "id", inTarget: t, of: buf)
        if let idRange { s.target = lookup(UnsafeRawBufferPointer(rebasing: buf[idRange])) }
        switch head.method {
        case .get?:
            if let up = head.value(forHeader: "Upgrade", in: buf), HTTPFieldValue.containsToken("websocket", in: buf, up) {
                // Every problem is a 400 here (the route was chosen on Upgrade alone); the key is
                // kept on the socket, so its length is bounded.
                guard case .success(let key) = WebSocketHandshake.validateRequest(head, in: buf), key.count <= 64 else {
                    s.route = .reject(400, "Bad Request", "Invalid WebSocket upgrade request.")
                    return
                }
                s.webSocketKey = String(decoding: UnsafeRawBufferPointer(rebasing: buf[key]), as: UTF8.self)
                s.route = idRange == nil ? .webSocketWithoutNegotiate : .webSocket
                return
            }
            guard idRange != nil else {
                s.route = .reject(400, "Bad Request", "Connection ID required")
                return
            }
            if let accept = head.value(forHeader: "Accept", in: buf), HTTPFieldValue.containsToken("text/event-stream", in: buf, accept) {
                s.route = .serverSentEvents
            } else {
                s.route = .poll
            }
        case .post?:
            // Decided now, as ASP.NET does: the body may end the connection before the request ends.
            if idRange == nil {
                s.route = .reject(400, "Bad Request", "Connection ID required")
            } else if let c = s.target {
                s.route = c.transport == .webSockets
                    ? .reject(405, "Method Not Allowed", "POST requests are not allowed for WebSocket connections.") : .send
            } else {
                s.route = .reject(404, "Not Found", "No Connection with that ID")
            }
        case .delete?:
            s.route = idRange == nil ? .reject(400, "Bad Request", "Connection ID required") : .delete
        default:
            s.route = .reject(405, "Method Not Allowed", "Method Not Allowed")
        }
    }

    /// While a reject fault lasts: whether this request is one a new client would make (negotiate,
    /// a WebSocket upgrade, a request for an id no transport has claimed, anything off the hub
    /// path) rather than the next poll or send of an established connection.
    func startsAConnection(_ head: HTTPRequestHead, _ buf: UnsafeRawBufferPointer, isHub: Bool) -> Bool {
        guard isHub, head.value(forHeader: "Upgrade", in: buf) == nil,
              let id = HTTPQuery.value(of: "id", inTarget: head.target, of: buf),
              let c = lookup(UnsafeRawBufferPointer(rebasing: buf[id])) else { return true }
        return c.transport == nil || c.phase == .ended
    }

    /// A non-negative decimal without sign or junk, capped to keep it in range.
    static func decimal(_ raw: UnsafeRawBufferPointer) -> Int? {
        guard !raw.isEmpty, raw.count <= 9 else { return nil }
        var n = 0
        for b in raw {
            guard b >= 0x30 && b <= 0x39 else { return nil }
            n = n * 10 + Int(b - 0x30)
        }
        return n
    }

    func lookup(_ raw: UnsafeRawBufferPointer) -> HubConnection? {
        var decoded: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &decoded) { buf -> HubConnection? in
            guard raw.count <= buf.count * 3,
                  let n = HTTPPercentEncoding.decode(raw, into: buf, plusIsSpace: true),
                  let key = HubTokenKey(UnsafeRawBufferPointer(rebasing: buf[0..<n])),
                  let c = byToken[key], !c.disposed else { return nil }
            return c
        }
    }

    func requestBody(_ s: HubSocket, _ bytes: UnsafeRawBufferPointer) {
        guard case .send = s.route, let c = s.target, !c.disposed, c.transport != .webSockets else { return }
        if c.transport == nil {
            // Sent before the transport started: keep it (bounded) until the transport claims the connection.
            let early = c.earlyInput ?? ByteBuffer()
            c.earlyInput = early
            if early.count + bytes.count > maxMessage * 4 {
                statistics.protocolErrors += 1
                endConnection(c, close: nil)
                return
            }
            early.append(bytes)
            return
        }
        feed(c, bytes)
    }

    func requestEnd(_ s: HubSocket) {
        let route = s.route
        s.route = .none
        let target = s.target
        s.target = nil
        switch route {
        case .none:
            respond(s, status: 400, reason: "Bad Request", text: "Bad Request")
        case .reject(let status, let reason, let text):
            respond(s, status: status, reason: reason, text: text)
        case .unavailable(let retryAfter):
            statistics.httpErrors += 1
            FaultState.writeUnavailable(loop, s.id, retryAfter: retryAfter)
            forget(s)
        case .negotiate:
            negotiate(s)
        case .webSocketWithoutNegotiate:
            statistics.skippedNegotiation += 1
            let c = newConnection(negotiateVersion: 0, statefulReconnect: false)
            startWebSocket(s, c)
        case .webSocket:
            startWebSocket(s, target)
        case .serverSentEvents:
            startServerSentEvents(s, target)
        case .poll:
            poll(s, target)
        case .send:
            respond(s, status: 200, reason: "OK", text: nil)
        case .delete:
            guard let c = target, !c.disposed else {
                respond(s, status: 404, reason: "Not Found", text: "No Connection with that ID")
                return
            }
            guard c.transport == .longPolling || c.transport == nil else {
                respond(s, status: 400, reason: "Bad Request", text: "Cannot terminate this connection using the DELETE endpoint.")
                return
            }
            respond(s, status: 202, reason: "Accepted", text: nil)
            if let p = c.pollSocket { completePoll(c, p, status: 204) }
            endConnection(c, close: nil)
            if !c.disposed { dispose(c) }
        }
    }

    /// Writes a complete response with a Content-Length body; closes after it when the request
    /// asked to (or `close`).
    func respond(_ s: HubSocket, status: Int, reason: StaticString, contentType: StaticString? = "text/plain; charset=utf-8",
                 body: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0), extraHeaders: StaticString? = nil) {
        if status >= 400 { statistics.httpErrors += 1 }
        let close = s.closeAfterResponse || s.http10
        let room = 256 + (extraHeaders?.utf8CodeUnitCount ?? 0) + body.count
        loop.write(s.id, reserving: room) { p in
            let extra = extraHeaders.map { UnsafeRawBufferPointer(start: $0.utf8Start, count: $0.utf8CodeUnitCount) }
            guard let n = HTTPResponseWriter.writeHead(into: UnsafeMutableRawBufferPointer(start: p, count: room), status: status, reason: reason,
                                                       contentType: body.isEmpty ? nil : contentType,
                                                       body: status == 204 ? .none : .length(body.count), connectionClose: close,
                                                       extraHeaderLines: extra) else { return 0 }
            if let b = body.baseAddress, !body.isEmpty { (p + n).copyMemory(from: b, byteCount: body.count) }
            return n + body.count
        }
        if close {
            loop.closeAfterFlush(s.id)
            forget(s)
        } else {
            s.mode = .http
            s.connection = nil
            limits.awaitRequest(s.id, loop)
        }
    }

    func respond(_ s: HubSocket, status: Int, reason: StaticString, text: String?) {
        if var text {
            text.withUTF8 { respond(s, status: status, reason: reason, body: UnsafeRawBufferPointer($0)) }
        } else {
            respond(s, status: status, reason: reason, body: UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }

    // MARK: Negotiate

    func negotiate(_ s: HubSocket) {
        // Past --max-connections a negotiate is refused too: its WebSocket would be.
        if refusedForQuota(s, nil, take: false) { return }
        let version = s.negotiateVersion
        let stateful = s.wantsStatefulReconnect && configuration.allowStatefulReconnect
        let c = newConnection(negotiateVersion: version, statefulReconnect: stateful)
        statistics.negotiates += 1
        if version == 0 { statistics.negotiatesV0 += 1 } else { statistics.negotiatesV1 += 1 }
        if stateful { statistics.statefulReconnectNegotiated += 1 }
        var json = "{\"connectionId\":\"" + String(decoding: c.connectionId, as: UTF8.self) + "\""
        if version >= 1 { json += ",\"connectionToken\":\"" + String(decoding: c.tokenBytes, as: UTF8.self) + "\"" }
        json += ",\"negotiateVersion\":\(version)"
        if stateful { json += ",\"useStatefulReconnect\":true" }
        json += ",\"availableTransports\":[{\"transport\":\"WebSockets\",\"transferFormats\":[\"Text\",\"Binary\"]},"
            + "{\"transport\":\"ServerSentEvents\",\"transferFormats\":[\"Text\"]},"
            + "{\"transport\":\"LongPolling\",\"transferFormats\":[\"Text\",\"Binary\"]}]}"
        json.withUTF8 { respond(s, status: 200, reason: "OK", contentType: "application/json", body: UnsafeRawBufferPointer($0),
                                extraHeaders: "Cache-Control: no-cache\r\n") }
    }
}
