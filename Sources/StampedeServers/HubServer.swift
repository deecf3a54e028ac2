import CStampedeLinux
import StampedeLoop
import StampedeSession
import StampedeWire
#if canImport(Glibc)
import Glibc
#endif

/// The reference ASP.NET Core SignalR hub server (the protocol facts it follows: docs/protocols.md)
/// on Stampede's own event loop, so hub workloads have a real, reproducible target.
///
/// Endpoints, for `path` = `/hub`:
/// - `POST /hub/negotiate[?negotiateVersion=N][&useStatefulReconnect=true]`: negotiate v0/v1;
///   a negotiated id that no transport claims within `disconnectTimeout` is disposed.
/// - `GET /hub?id=…` with `Upgrade: websocket`: WebSockets (JSON in Text frames, MessagePack in
///   Binary; both opcodes accepted). Without `id`: skipNegotiation, a new connection.
/// - `GET /hub?id=…` with `Accept: text/event-stream`: Server-Sent Events (JSON only).
/// - `GET /hub?id=…` otherwise: long polling; `DELETE /hub?id=…` ends it.
/// - `POST /hub?id=…`: one or more framed messages from SSE and long-polling clients.
///
/// The hub: `SendMessage(user, message)` → `ReceiveMessage(user, message)` to everyone;
/// `Echo(message)` → the message; `JoinGroup`/`LeaveGroup(group)`; `SendToGroup(group, user,
/// message)`; `Counter(count, delayMs)` streams 0…count-1; `AskClient(question)` returns the
/// caller's answer to `GetClientResult(question)`; `Upload(stream)` returns the item count.
/// Method names are case-insensitive. Arguments are relayed as received where the encodings
/// match, and each broadcast is encoded once per wire format and copied to every receiver.
///
/// Stateful reconnect: `useStatefulReconnect=true` is echoed (when allowed), a version-2
/// handshake then numbers messages, acks what it receives and keeps what it sent until acked;
/// a WebSocket that drops is awaited for `disconnectTimeout` on the same id, and on its return
/// both sides send Sequence and the unacked messages are replayed.
///
/// Faults (`apply(_:)`): drop every connection (Close with allowReconnect, or RST), answer
/// requests that would start a connection with 503 for a while, or hang the loop.
///
/// Everything runs on the loop thread; `statisticsSnapshot()`, and `shutdown()` and `apply(_:)`
/// (through `loop.execute`) are the ways in from other threads. Hostile input ends only the connection
/// it arrived on, and is counted.
public final class HubServer: EventLoopHandler, FaultTarget, @unchecked Sendable {
    public struct Configuration: Sendable {
        /// A Ping goes to a WebSocket/SSE connection that had nothing sent to it for this long (s).
        public var keepAliveInterval: Double = 15
        /// A WebSocket/SSE connection that sent nothing for this long is closed (s).
        public var clientTimeout: Double = 30
        public var handshakeTimeout: Double = 15
        /// Unclaimed negotiated ids, long-polling connections without a poll, and stateful
        /// WebSocket connections waiting to be resumed are disposed after this long (s).
        public var disconnectTimeout: Double = 15
        /// A long poll with nothing to deliver is answered 200 empty after this long (s).
        public var pollTimeoutSeconds: Double = 15
        /// Largest hub message accepted (the handshake included); bigger closes the connection.
        public var maximumReceiveMessageSize = 32 * 1024
        /// Honour `useStatefulReconnect=true` in negotiate.
        public var allowStatefulReconnect = true
        /// Unacked bytes a stateful connection keeps for replay; beyond it the connection is closed.
        public var statefulReconnectBufferSize = 4 << 20
        /// Output limit and timeouts of every socket (see `ServerLimits`); `maxOutputBytes` also
        /// bounds a long-polling connection's messages waiting for a poll.
        public var limits = ServerLimits()
        public init() {}
    }

    /// Invocations received, by hub method.
    public struct MethodCounts: Sendable, Equatable {
        public var sendMessage = 0
        public var echo = 0
        public var joinGroup = 0
        public var leaveGroup = 0
        public var sendToGroup = 0
        public var counter = 0
        public var askClient = 0
        public var upload = 0
        public var unknown = 0
        public var total: Int { sendMessage + echo + joinGroup + leaveGroup + sendToGroup + counter + askClient + upload + unknown }
    }

    public struct Statistics: Sendable, Equatable {
        /// TCP connections accepted, and HTTP requests parsed on them.
        public var accepted = 0
        public var httpRequests = 0
        /// Requests answered with a 4xx/5xx status.
        public var httpErrors = 0
        public var negotiates = 0
        public var negotiatesV0 = 0
        public var negotiatesV1 = 0
        public var statefulReconnectNegotiated = 0
        /// Negotiated ids no transport claimed in time.
        public var unclaimedDisposed = 0
        /// WebSocket connections opened without negotiate.
        public var skippedNegotiation = 0
        /// Connections by transport (when the transport claimed them) and by hub protocol
        /// (successful handshakes).
        public var connectionsWebSockets = 0
        public var connectionsServerSentEvents = 0
        public var connectionsLongPolling = 0
        public var handshakes = 0
        public var handshakesJSON = 0
        public var handshakesMessagePack = 0
        public var handshakeErrors = 0
        public var handshakeTimeouts = 0
        /// Connections currently between transport start and end.
        public var open = 0
        /// Hub messages received after handshakes.
        public var messagesReceived = 0
        public var invocations = MethodCounts()
        /// ReceiveMessage copies queued (SendMessage and SendToGroup fan-out).
        public var messagesBroadcast = 0
        public var completionsSent = 0
        public var streamItemsSent = 0
        public var streamsCanceled = 0
        /// Client results answered (Completion from the client), and those with an error.
        public var clientResults = 0
        public var clientResultErrors = 0
        public var uploadItemsReceived = 0
        public var uploadsCompleted = 0
        public var pingsSent = 0
        public var clientTimeouts = 0
        public var pollTimeouts = 0
        /// Long-polling connections dropped for not polling.
        public var pollAbandoned = 0
        /// Malformed hub messages, handshakes, frames and requests that ended a connection.
        public var protocolErrors = 0
        public var closeMessagesSent = 0
        /// Connections ended, for any reason.
        public var closes = 0
        /// Connections the limits closed: slow consumers (a socket's output or a long-polling
        /// queue over the limit), header and idle timeouts.
        public var limits = LimitStatistics()
        /// Stateful reconnect: WebSocket connections resumed on the same id, and messages replayed.
        public var reconnectsResumed = 0
        public var messagesReplayed = 0
        public var acksSent = 0
        /// Faults applied (`apply(_:)`), hub connections a drop fault ended, and requests a
        /// reject fault answered with 503.
        public var faultsApplied = 0
        public var connectionsDropped = 0
        public var requestsRejected = 0
    }

    public let loop: EventLoop
    public let path: String
    public let configuration: Configuration
    /// The limits in force: the configured ones, with room for a full poll answer or replay.
    public let limits: ServerLimits
    public private(set) var port: UInt16 = 0
    public internal(set) var statistics = Statistics()

    let pathBytes: [UInt8]
    var sockets: [HubSocket?] = []
    var connections: [HubConnection?] = []
    var connectionGenerations: [UInt32] = []
    var freeConnections: [Int] = []
    var byToken: [HubTokenKey: HubConnection] = [:]
    /// Handshaken connections: everyone a SendMessage reaches.
    var members: [HubConnection] = []
    var groups: [HubGroup?] = []
    var freeGroups: [Int] = []
    var groupsByHash: [UInt64: Int] = [:]
    var streams: [HubOutStream] = []
    var freeStreams: [Int] = []
    var random = FastRandom.fromSystem()
    /// Where single messages are built.
    let out = HubScratch(64 * 1024)
    /// Decoded strings: ids, names, transcoded arguments.
    let text = HubScratch(8 * 1024)
    /// Decoded invocation ids.
    let idScratch = HubScratch(512)
    let broadcast = HubBroadcast()
    var isShutDown = false
    var faults = FaultState()

    let keepAliveNs: UInt64
    let clientTimeoutNs: UInt64
    let handshakeTimeoutNs: UInt64
    let disconnectTimeoutNs: UInt64
    let pollTimeoutNs: UInt64
    let maxMessage: Int

    /// Creates the server and starts listening on `address` (port 0 picks a free port).
    public init(loop: EventLoop, address: SocketAddress, path: String = "/hub",
                configuration: Configuration = Configuration()) throws(LoopError) {
        self.loop = loop
        self.path = path
        self.configuration = configuration
        pathBytes = Array(path.utf8)
        func ns(_ s: Double) -> UInt64 { nanoseconds(max(0.001, s)) }
        keepAliveNs = ns(configuration.keepAliveInterval)
        clientTimeoutNs = ns(configuration.clientTimeout)
        handshakeTimeoutNs = ns(configuration.handshakeTimeout)
        disconnectTimeoutNs = ns(configuration.disconnectTimeout)
        pollTimeoutNs = ns(configuration.pollTimeoutSeconds)
        maxMessage = max(256, configuration.maximumReceiveMessageSize)
        // The largest single write: a poll answer with a full queue, or a stateful replay (each
        // holds one message past its limit).
        let largest = max(configuration.limits.maxOutputBytes, configuration.statefulReconnectBufferSize) + maxMessage + 64 * 1024
        limits = configuration.limits.effective(forLargestWrite: largest, highWaterMark: 0)
        limits.install(on: loop)
        loop.handler = self
        switch loop.listen(on: address) {
        case .success(let (_, p)): port = p
        case .failure(let e): throw e
        }
    }

    /// Reads the statistics from another thread (via the loop).
    public func statisticsSnapshot() -> Statistics {
        loop.submitAndWait { [self] _ in statistics }
    }

    /// Sends Close with allowReconnect:true to every hub connection and closes them all; later
    /// negotiates and transport requests get 503. Call on the loop thread (`loop.execute`).
    public func shutdown() {
        isShutDown = true
        closeEveryone()
    }

    /// Acts out `fault` (see `TargetFault`). Call on the loop thread: `loop.execute { _ in server.apply(f) }`.
    ///
    /// Drops forget every connection, as a restarted server would: a clean drop sends open
    /// connections Close with allowReconnect:true, then a WebSocket close frame, the end of the
    /// SSE stream, or the answer to the open poll (a poll-less long-polling client finds the
    /// Close on its next poll); a reset drop sends RST on every socket and says nothing. Reject
    /// answers 503 to negotiates, WebSocket upgrades and requests for ids that have no
    /// transport yet; requests of established SSE and long-polling connections go on. A stall
    /// blocks the loop thread, starting after this iteration's output is written.
    public func apply(_ fault: TargetFault) {
        statistics.faultsApplied += 1
        switch fault {
        case .drop(let reset):
            for case let c? in connections where !c.disposed && c.phase != .ended { statistics.connectionsDropped += 1 }
            if reset { resetEveryone() } else { closeEveryone() }
        case .reject(let seconds):
            faults.startRejecting(seconds: seconds)
        case .stall(let seconds):
            FaultState.stall(loop, seconds: seconds)
        }
    }

    /// The statistics and the fault state as one JSON line. Call on the loop thread.
    public func statusJSON() -> String {
        "{\"server\":\"hub\",\"path\":\"\(path)\",\"port\":\(port),\"rejectingSeconds\":\(faults.rejectingSecondsLeft() ?? 0),"
            + statisticsJSONMembers(statistics) + "}"
    }

    /// Close with allowReconnect to open connections, then every transport and idle socket closed.
    func closeEveryone() {
        for c in connections {
            guard let c, !c.disposed else { continue }
            if c.phase == .open {
                endConnection(c, close: HubCloseInfo(error: nil, allowReconnect: true))
            } else {
                endConnection(c, close: nil)
            }
        }
        for s in sockets {
            guard let s, s.mode == .http else { continue }
            loop.closeAfterFlush(s.id)
            forget(s)
        }
    }

    /// RST on every socket, and every connection forgotten without a word.
    func resetEveryone() {
        for s in sockets {
            guard let s else { continue }
            loop.close(s.id, reset: true)
            forget(s)
        }
        for c in connections {
            guard let c, !c.disposed else { continue }
            c.socket = nil
            c.pollSocket = nil
            dispose(c)
        }
    }

    // MARK: EventLoopHandler

    public func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) {
        let i = Int(id.index)
        if i >= sockets.count { sockets.append(contentsOf: repeatElement(nil, count: i + 1 - sockets.count + 64)) }
        sockets[i] = HubSocket(id: id)
        statistics.accepted += 1
        limits.awaitRequest(id, loop)
    }

    public func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {}

    public func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        guard let s = socket(id) else { return buffer.count }
        switch s.mode {
        case .http: return receivedHTTP(s, buffer)
        case .webSocket: return receivedWebSocket(s, buffer, from: 0)
        case .serverSentEvents, .closed: return buffer.count
        case .poll:
            // A client does not send while its poll is open; keep a little (pipelining), no more.
            if buffer.count > 64 * 1024 {
                statistics.protocolErrors += 1
                dropSocket(s)
                return buffer.count
            }
            return 0
        }
    }

    public func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {
        statistics.limits.count(reason)
        guard let s = socket(id) else { return }
        let c = s.connection
        let mode = s.mode
        forget(s)
        guard let c, !c.disposed else { return }
        switch mode {
        case .webSocket, .serverSentEvents:
            if c.socket == id { c.socket = nil }
            // A slow consumer is not kept for a stateful resume: it would only fall behind again.
            if reason == .slowConsumer { endConnection(c, close: nil) } else { transportLost(c) }
        case .poll:
            if c.pollSocket == id {
                c.pollSocket = nil
                c.pollDeadline = .max
                c.disposeAt = EventLoop.now() + disconnectTimeoutNs
                scheduleNext(c)
            }
        case .http, .closed:
            break
        }
    }

    public func writable(_ id: ConnectionID, loop: EventLoop) {}

    public func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {
        let (index, generation) = (token.index, token.epoch)
        switch token.kind(as: HubTimer.self) {
        case .connection:
            guard index < connections.count, let c = connections[index], c.generation == generation, !c.disposed else { return }
            if deadline >= c.nextWake { c.nextWake = .max }
            evaluate(c, now: EventLoop.now())
            if !c.disposed { scheduleNext(c) }
        case .stream:
            streamTick(index, generation: generation, deadline: deadline)
        case nil:
            break
        }
    }

    // MARK: Sockets

    func socket(_ id: ConnectionID) -> HubSocket? {
        let i = Int(id.index)
        guard i < sockets.count, let s = sockets[i], s.id == id else { return nil }
        return s
    }

    /// Stops tracking a socket (the loop closed it, or we asked it to).
    func forget(_ s: HubSocket) {
        let i = Int(s.id.index)
        if i < sockets.count, sockets[i] === s { sockets[i] = nil }
        s.mode = .closed
        s.connection = nil
        s.target = nil
    }

    /// Closes a socket now, whatever it was doing.
    func dropSocket(_ s: HubSocket) {
        let c = s.connection
        let mode = s.mode
        loop.close(s.id)
        forget(s)
        if let c, !c.disposed {
            if mode == .poll, c.pollSocket == s.id {
                c.pollSocket = nil
                c.pollDeadline = .max
                c.disposeAt = EventLoop.now() + disconnectTimeoutNs
                scheduleNext(c)
            } else if c.socket == s.id {
                c.socket = nil
                transportLost(c)
            }
        }
    }

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
        var pathEnd = t.upperBound
        for i in t where buf[i] == 0x3F || buf[i] == 0x23 { pathEnd = i; break }
        let pathBytes = UnsafeRawBufferPointer(rebasing: buf[t.lowerBound..<pathEnd])
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
                guard let conn = head.value(forHeader: "Connection", in: buf), HTTPFieldValue.containsToken("upgrade", in: buf, conn),
                      let version = head.value(forHeader: "Sec-WebSocket-Version", in: buf),
                      HTTPFieldValue.equalsIgnoringCase("13", in: buf, version),
                      let key = head.value(forHeader: "Sec-WebSocket-Key", in: buf), !key.isEmpty, key.count <= 64 else {
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

    // MARK: Transports

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

    func startServerSentEvents(_ s: HubSocket, _ target: HubConnection?) {
        guard let c = target, !c.disposed, c.phase != .ended else {
            respond(s, status: 404, reason: "Not Found", text: "No Connection with that ID")
            return
        }
        if let t = c.transport {
            if t == .serverSentEvents {
                respond(s, status: 409, reason: "Conflict", text: "Connection ID is already in use.")
            } else {
                respond(s, status: 400, reason: "Bad Request", text: "Cannot change transports mid-connection")
            }
            return
        }
        let chunked = !s.http10
        loop.write(s.id, reserving: 256) { p in
            let room = UnsafeMutableRawBufferPointer(start: p, count: 256)
            guard let n = HTTPResponseWriter.writeHead(into: room, status: 200, reason: "OK", contentType: "text/event-stream",
                                                       body: chunked ? .chunked : .untilClose,
                                                       extraHeaderLines: UnsafeRawBufferPointer(start: Self.sseHeaders.utf8Start, count: Self.sseHeaders.utf8CodeUnitCount))
            else { return 0 }
            let pre = SSEWriter.streamPreamble
            let body = UnsafeRawBufferPointer(start: pre.utf8Start, count: pre.utf8CodeUnitCount)
            if chunked {
                return n + (HTTPResponseWriter.writeChunk(body, into: UnsafeMutableRawBufferPointer(rebasing: room[n...])) ?? 0)
            }
            (p + n).copyMemory(from: body.baseAddress!, byteCount: body.count)
            return n + body.count
        }
        s.mode = .serverSentEvents
        limits.noDeadline(s.id, loop)
        s.connection = c
        c.socket = s.id
        c.sseChunked = chunked
        c.transport = .serverSentEvents
        statistics.connectionsServerSentEvents += 1
        claim(c)
    }

    static let sseHeaders: StaticString = "Cache-Control: no-cache\r\n"

    func poll(_ s: HubSocket, _ target: HubConnection?) {
        guard let c = target, !c.disposed else {
            respond(s, status: 404, reason: "Not Found", text: "No Connection with that ID")
            return
        }
        let now = EventLoop.now()
        guard let t = c.transport else {
            // The first GET starts the connection and returns at once.
            c.transport = .longPolling
            statistics.connectionsLongPolling += 1
            respond(s, status: 200, reason: "OK", text: nil)
            claim(c)
            c.disposeAt = now + disconnectTimeoutNs
            scheduleNext(c)
            return
        }
        guard t == .longPolling else {
            respond(s, status: 400, reason: "Bad Request", text: "Cannot change transports mid-connection")
            return
        }
        if let old = c.pollSocket, old != s.id { completePoll(c, old, status: 204) }
        if c.phase == .ended {
            if let q = c.lpQueue, !q.isEmpty {
                respondPoll(s, c, status: 200)
            } else {
                respond(s, status: 204, reason: "No Content", text: nil)
                dispose(c)
            }
            return
        }
        if let q = c.lpQueue, !q.isEmpty {
            respondPoll(s, c, status: 200)
            c.disposeAt = now + disconnectTimeoutNs
            scheduleNext(c)
            return
        }
        s.mode = .poll
        limits.noDeadline(s.id, loop)
        s.connection = c
        c.pollSocket = s.id
        c.pollDeadline = now + pollTimeoutNs
        c.disposeAt = .max
        scheduleNext(c)
    }

    /// Answers the open poll `socket` of `c` (200 with the queued messages, or 204).
    func completePoll(_ c: HubConnection, _ socketID: ConnectionID, status: Int) {
        c.pollSocket = nil
        c.pollDeadline = .max
        c.disposeAt = EventLoop.now() + disconnectTimeoutNs
        guard let s = socket(socketID) else { return }
        if status == 204 {
            respond(s, status: 204, reason: "No Content", text: nil)
        } else {
            respondPoll(s, c, status: 200)
        }
        if !c.disposed { scheduleNext(c) }
    }

    func respondPoll(_ s: HubSocket, _ c: HubConnection, status: Int) {
        let q = c.lpQueue
        let body = q.map { UnsafeRawBufferPointer($0.readable) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
        respond(s, status: status, reason: "OK",
                contentType: c.proto == .messagePack ? "application/octet-stream" : "text/plain; charset=utf-8", body: body)
        q?.clear()
        q?.shrinkIfIdle()
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
    /// (the server closes TCP first, §7.1.1) and end the hub connection. Only an abrupt loss (`closed`) leaves a stateful connection
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

/// One TCP connection: HTTP requests, then possibly a WebSocket, an SSE stream or an open poll.
final class HubSocket {
    enum Mode { case http, webSocket, serverSentEvents, poll, closed }
    enum Route {
        case none
        case reject(Int, StaticString, String)
        /// Refused by a reject fault: 503 with Retry-After, then close.
        case unavailable(retryAfter: Int)
        case negotiate
        case webSocket
        case webSocketWithoutNegotiate
        case serverSentEvents
        case poll
        case send
        case delete
    }

    let id: ConnectionID
    var mode: Mode = .http
    var parser = HTTPRequestParser()
    var receiver: WebSocketReceiver? = nil
    var closeHandshake = WebSocketCloseHandshake(role: .server)
    /// The hub connection this socket carries (WebSocket, SSE) or polls for.
    var connection: HubConnection? = nil
    // The request being received.
    var route: Route = .none
    var target: HubConnection? = nil
    var closeAfterResponse = false
    var http10 = false
    var webSocketKey = ""
    var negotiateVersion = 0
    var wantsStatefulReconnect = false

    init(id: ConnectionID) { self.id = id }
}
