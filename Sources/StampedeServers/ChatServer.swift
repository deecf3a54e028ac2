import CStampedeLinux
import StampedeLoop
import StampedeSession
import StampedeWire
#if canImport(Glibc)
import Glibc
#endif

/// The reference chat server (a Vapor chat server's behaviour) on Stampede's own event loop: a WebSocket
/// endpoint at `/chat` that broadcasts every valid client message, with the server's `date` and
/// `id` added, to every connected client (the sender included). Invalid JSON is dropped and counted.
///
/// Faults (`apply(_:)`, on the loop thread) make it drop everyone, refuse new clients for a
/// while, or hang, so runs can measure how clients recover.
public final class ChatServer: EventLoopHandler, FaultTarget, SharedBroadcasts, @unchecked Sendable {
    public struct Statistics: Sendable, Equatable {
        public var accepted = 0
        public var upgraded = 0
        public var rejectedUpgrades = 0
        public var messagesReceived = 0
        public var invalidMessages = 0
        public var framesBroadcast = 0
        public var protocolErrors = 0
        public var open = 0
        /// Faults applied (`apply(_:)`), connections a drop fault ended, and upgrades a reject
        /// fault answered with 503.
        public var faultsApplied = 0
        public var connectionsDropped = 0
        public var requestsRejected = 0
        /// Connections the limits closed: slow consumers, header and idle timeouts.
        public var limits = LimitStatistics()
        /// `--max-rate`: broadcasts queued behind the rate limit right now, and client messages
        /// dropped because that queue was full (`DelayLine.maxQueued`).
        public var relaysQueued = 0
        public var relaysRefused = 0
        /// `stampede serve --processes`: broadcasts other server processes made and this one
        /// sent to its clients (their frames are counted in `framesBroadcast` too).
        public var remoteBroadcasts = 0
        /// `--max-connections`: upgrades answered 503 because the limit was reached.
        public var connectionsRefused = 0
        /// `--connection-cost`: microseconds the loop spun for its open connections.
        public var connectionCostSpunMicroseconds = 0
    }

    enum State { case upgrading, open, closing }
    struct Peer {
        let id: ConnectionID
        var state: State = .upgrading
        /// Frames, pings and the close handshake once upgraded.
        var session = WebSocketServerSession(maxMessageBytes: ChatServer.maxMessageBytes)
        /// Position in `openPeers`, for O(1) removal.
        var openIndex = -1
        /// When `closing` after a drop: the time to give up waiting for the client's close.
        var closeDeadline: UInt64 = .max
    }

    public let loop: EventLoop
    public let path: String
    /// Output limit and timeouts (see `ServerLimits`).
    public let limits: ServerLimits
    public private(set) var port: UInt16 = 0
    public private(set) var statistics = Statistics()
    var peers: [Peer?] = []
    var openPeers: [ConnectionID] = []
    var random = FastRandom.fromSystem()
    var broadcast = ByteBuffer()
    var dateCache = DateCache()
    var faults = FaultState()
    /// Connections sent a close frame by a drop, waiting for the client's close (bounded by a timer).
    var closingAfterDrop: [ConnectionID] = []
    /// Broadcasts held back by a `delay` fault.
    var delayLine = DelayLine()
    /// `--max-connections`: the limit on open connections (shared by a `--processes` group), or nil.
    /// Set before the loop starts.
    public var connectionQuota: ConnectionQuota?
    /// `--connection-cost`: CPU spent per open connection.
    var connectionCost = ConnectionCost()
    /// `stampede serve --processes`: called with every broadcast frame as it goes out to this
    /// process's clients, for the other processes to send to theirs (see `ServerProcessLink`).
    /// Set before the loop starts; called on the loop thread.
    public var remoteBroadcast: ((UnsafeRawBufferPointer) -> Void)?

    /// Largest client message accepted; bigger fails the connection (1009).
    static let maxMessageBytes = 1 << 20
    /// How long a client gets to answer a drop's close frame before its connection is closed anyway.
    static let dropCloseGraceNs: UInt64 = 2_000_000_000
    /// The server's one timer: the end of a drop's grace period.
    static let dropGraceTimer = TimerToken(kind: 1)
    /// Releases broadcasts held back by a `delay` fault.
    static let delayTimer = TimerToken(kind: 2)
    /// Ticks of `--connection-cost`.
    static let connectionCostTimer = TimerToken(kind: 3)
    /// Close code and reason of a clean drop: 1012 "service restart" (registered in the close code registry of RFC 6455 §11.7).
    static let serviceRestartCode: UInt16 = 1012
    static let serviceRestartReason: StaticString = "service restart"

    /// Creates the server and starts listening on `address` (port 0 picks a free port). Call
    /// before the loop starts (or on its thread).
    /// With `tls`, every connection speaks TLS first (wss://).
    public init(loop: EventLoop, address: SocketAddress, path: String = "/chat", limits: ServerLimits = ServerLimits(),
                tls: TLSContext? = nil) throws(LoopError) {
        self.loop = loop
        self.path = path
        // A broadcast frame carries one client message of at most 1 MiB.
        self.limits = limits.effective(forLargestWrite: Self.maxMessageBytes + 64 * 1024, highWaterMark: 0)
        self.limits.install(on: loop)
        loop.handler = self
        switch loop.listen(on: address, tls: tls) {
        case .success(let (_, p)): port = p
        case .failure(let e): throw e
        }
    }

    /// Reads the statistics from another thread (via the loop).
    public func statisticsSnapshot() -> Statistics {
        loop.submitAndWait { [self] _ in statisticsNow() }
    }

    /// `statistics` with what the loop counts itself (it does the accepting). On the loop thread.
    func statisticsNow() -> Statistics {
        var s = statistics
        s.limits.acceptRefusals = loop.acceptRefusals
        s.connectionCostSpunMicroseconds = connectionCost.spunMicroseconds
        return s
    }

    // MARK: EventLoopHandler

    public func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) {
        let i = Int(id.index)
        if i >= peers.count { peers.append(contentsOf: repeatElement(nil, count: i + 1 - peers.count + 64)) }
        peers[i] = Peer(id: id)
        statistics.accepted += 1
        limits.awaitRequest(id, loop)
    }

    public func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {}

    public func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        let i = Int(id.index)
        guard i < peers.count, var peer = peers[i] else { return buffer.count }
        var offset = 0
        if peer.state == .upgrading {
            // A fresh parser per read: the head stays in the buffer until it is complete, and
            // a parser kept per connection would cost every idle peer its size.
            var parser = HTTPRequestParser(maxHeadBytes: WebSocketHandshake.maxHeadBytes)
            let request = UnsafeRawBufferPointer(buffer)
            let (event, consumed) = parser.next(request)
            guard case .head(let head) = event else {
                if event == .needMore {
                    limits.requestStarted(id, loop)
                    return 0
                }
                reject(id, status: 400, reason: "Bad Request")
                return buffer.count
            }
            if let retryAfter = faults.rejectingSecondsLeft() {
                statistics.requestsRejected += 1
                peers[i] = nil
                FaultState.writeUnavailable(loop, id, retryAfter: retryAfter)
                return buffer.count
            }
            guard UnsafeRawBufferPointer(rebasing: request[head.path(in: request)]).elementsEqual(path.utf8) else {
                reject(id, status: 404, reason: "Not Found")
                return buffer.count
            }
            switch WebSocketHandshake.validateRequest(head, in: request) {
            case .failure(let problem):
                reject(id, status: problem.status, reason: problem.reason)
                return buffer.count
            case .success(let key):
                if let connectionQuota, !connectionQuota.acquire() {
                    statistics.connectionsRefused += 1
                    peers[i] = nil
                    ConnectionQuota.refuse(loop, id)
                    return buffer.count
                }
                let keyText = String(decoding: UnsafeRawBufferPointer(rebasing: request[key]), as: UTF8.self)
                WebSocketHandshake.switchingProtocols(key: keyText).withUnsafeBytes { loop.write(id, $0) }
                limits.noDeadline(id, loop)
                peer.state = .open
                peer.openIndex = openPeers.count
                openPeers.append(id)
                statistics.upgraded += 1
                statistics.open += 1
                offset = consumed
            }
        }
        peers[i] = peer
        // Broken framing while a drop waits for the answer is not counted: the client was already let go.
        let countsFailures = peer.state != .closing
        while offset < buffer.count {
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[offset...])
            let (action, consumed) = peers[i]!.session.next(rest, now: loop.wakeTime)
            switch action {
            case .needMore:
                return offset + consumed
            case .message(let opcode, let range):
                if opcode == .text { relay(UnsafeRawBufferPointer(rebasing: rest[range]), from: id) }
            case .assembledMessage(let opcode):
                if opcode == .text {
                    let assembled = peers[i]!.session.assembled
                    assembled.withUnsafeBytes { relay($0, from: id) }
                }
            case .sendPong(let range):
                sendFrame(id, .pong, UnsafeRawBufferPointer(rebasing: rest[range]))
            case .pong, .none:
                break
            case .closeTransport(_, let end):
                // The client's close, its answer to a drop's close frame, or broken framing.
                if case .failed = end, countsFailures { statistics.protocolErrors += 1 }
                carryOut(id, action)
                return buffer.count
            case .closing, .ended:
                carryOut(id, action)  // not answers to input; carried out all the same
                return buffer.count
            }
            offset += consumed
            guard peers[i] != nil else { return buffer.count }
        }
        return offset
    }

    public func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {
        statistics.limits.count(reason)
        leave(id)
    }

    public func writable(_ id: ConnectionID, loop: EventLoop) {}
    public func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {
        if token == Self.connectionCostTimer {
            connectionCost.tick(loop, token: token, open: openPeers.count)
            return
        }
        if token == Self.delayTimer {
            for action in delayLine.release(loop, token: Self.delayTimer) { action() }
            return
        }
        guard token == Self.dropGraceTimer else { return }
        // Clients that did not answer the drop's close frame in time are closed anyway. A later
        // drop's connections, still in their grace period, stay for their own timer.
        let now = EventLoop.now()
        var kept: [ConnectionID] = []
        for id in closingAfterDrop {
            let i = Int(id.index)
            guard loop.isAlive(id), i < peers.count, let peer = peers[i], peer.state == .closing else { continue }
            if peer.closeDeadline <= now {
                carryOut(id, peers[i]!.session.abort())
            } else {
                kept.append(id)
            }
        }
        closingAfterDrop = kept
    }

    // MARK: Faults

    /// Acts out `fault` (see `TargetFault`). Call on the loop thread: `loop.execute { _ in server.apply(f) }`.
    ///
    /// A clean drop sends every open client a close frame with 1012 "service restart", stops
    /// relaying to it, and closes once the client answers (or after two seconds); connections
    /// still upgrading are closed. A reset drop sends RST on every connection. A stall blocks
    /// the loop thread, starting after this iteration's output is written.
    public func apply(_ fault: TargetFault) {
        statistics.faultsApplied += 1
        switch fault {
        case .drop(let reset):
            drop(reset: reset)
        case .reject(let seconds):
            faults.startRejecting(seconds: seconds)
        case .stall(let seconds):
            FaultState.stall(loop, seconds: seconds)
        case .delay(let microseconds):
            delayLine.set(microseconds: microseconds)
        }
    }

    public var supportsDelay: Bool { true }

    /// The statistics and the fault state as one JSON line. Call on the loop thread.
    public func statusJSON() -> String {
        "{\"server\":\"chat\",\"maxConnections\":\(connectionQuota?.limit ?? 0),\"connectionCostUs\":\(connectionCost.microseconds),\"delayMs\":\(delayLine.delayNs / 1_000_000),\"delayUs\":\(delayLine.delayNs / 1_000),\"maxRateSpacingNs\":\(delayLine.spacingNs),\"path\":\"\(path)\",\"port\":\(port),\"rejectingSeconds\":\(faults.rejectingSecondsLeft() ?? 0),"
            + statisticsJSONMembers(statisticsNow()) + "}"
    }

    func drop(reset: Bool) {
        let deadline = EventLoop.now() + Self.dropCloseGraceNs
        var awaitingClose = false
        for index in peers.indices {
            guard let peer = peers[index] else { continue }
            // Closing ones from an earlier drop are already gone as far as clients are concerned.
            guard peer.state != .closing || reset else { continue }
            let id = peer.id
            leave(id)
            guard loop.isAlive(id) else { continue }
            if peer.state != .closing { statistics.connectionsDropped += 1 }
            if reset || peer.state == .upgrading {
                loop.close(id, reset: reset)
                continue
            }
            var closing = peer
            // No session deadline: one timer bounds the whole drop's wait (`dropGraceTimer`).
            carryOut(id, closing.session.close(code: Self.serviceRestartCode, reason: Self.serviceRestartReason, now: EventLoop.now()))
            closing.state = .closing
            closing.openIndex = -1
            closing.closeDeadline = deadline
            peers[index] = closing
            closingAfterDrop.append(id)
            awaitingClose = true
        }
        if reset { closingAfterDrop.removeAll() }
        if awaitingClose { loop.schedule(at: deadline, token: Self.dropGraceTimer) }
    }

    // MARK: Chat

    func reject(_ id: ConnectionID, status: Int, reason: StaticString) {
        statistics.rejectedUpgrades += 1
        WebSocketHandshake.errorResponse(status: status, reason: reason).withUnsafeBytes { loop.write(id, $0) }
        peers[Int(id.index)] = nil
        loop.closeAfterFlush(id)
    }

    func leave(_ id: ConnectionID) {
        let i = Int(id.index)
        guard i < peers.count, let peer = peers[i] else { return }
        if peer.openIndex >= 0 {
            let last = openPeers.removeLast()
            if peer.openIndex < openPeers.count {
                openPeers[peer.openIndex] = last
                peers[Int(last.index)]?.openIndex = peer.openIndex
            }
            statistics.open -= 1
            connectionQuota?.release()
        }
        peers[i] = nil
    }

    /// Carries out a WebSocket session action that ends or half-closes the connection: its Close
    /// frame, then TCP. The server closes first once the handshake is over (RFC 6455 §7.1.1);
    /// while its own Close is unanswered it stops writing and keeps reading, bounded by the
    /// drop's grace timer.
    func carryOut(_ id: ConnectionID, _ action: WebSocketServerSession.Action) {
        switch action {
        case .closing(let send, _):
            send.withUnsafeBytes { sendFrame(id, .close, $0) }
            loop.shutdownWriteAfterFlush(id)
        case .closeTransport(let send, _):
            if let send { send.withUnsafeBytes { sendFrame(id, .close, $0) } }
            leave(id)
            loop.closeAfterFlush(id)
        case .ended(_, let closeTransport):
            leave(id)
            if closeTransport { loop.close(id) }
        case .needMore, .message, .assembledMessage, .sendPong, .pong, .none:
            break
        }
    }

    func sendFrame(_ id: ConnectionID, _ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer) {
        let h = WebSocketFrameCodec.headerLength(payloadLength: payload.count, masked: false)
        loop.write(id, reserving: h + payload.count) { out in
            let n = WebSocketFrameCodec.writeHeader(into: out, fin: true, opcode: opcode, payloadLength: payload.count, maskKey: nil)
            if let b = payload.baseAddress { (out + n).copyMemory(from: b, byteCount: payload.count) }
            return n + payload.count
        }
    }

    /// `serve --echo`: each message goes back to its sender only (an echo server with the chat
    /// server's framing), so a rate search (`--max-rate`) can run at any client count: a
    /// broadcast to 20,000 clients at 20,000 messages a second would be 400 million frames.
    public var echoesToSender = false

    /// Builds the broadcast frame once and queues it on every open connection (`echoesToSender`:
    /// on the sender's only).
    func relay(_ json: UnsafeRawBufferPointer, from sender: ConnectionID) {
        statistics.messagesReceived += 1
        guard let fields = ChatServerParser.parse(json) else {
            statistics.invalidMessages += 1
            return
        }
        broadcast.clear()
        let bodyLength = 9 + DateCache.length + 8 + 36 + 13 + fields.message.count + 10 + fields.user.count + 12 + fields.userID.count + 2
        let header = WebSocketFrameCodec.headerLength(payloadLength: bodyLength, masked: false)
        let out = broadcast.reserve(header + bodyLength)
        var p = WebSocketFrameCodec.writeHeader(into: out, fin: true, opcode: .text, payloadLength: bodyLength, maskKey: nil)
        let bodyStart = p
        func put(_ s: StaticString) { (out + p).copyMemory(from: s.utf8Start, byteCount: s.utf8CodeUnitCount); p += s.utf8CodeUnitCount }
        func put(_ r: Range<Int>) { if let b = json.baseAddress { (out + p).copyMemory(from: b + r.lowerBound, byteCount: r.count) }; p += r.count }
        put(#"{"date":""#)
        p += dateCache.write(into: out + p)
        put(#"","id":""#)
        p += random.writeUUID(into: out + p)
        put(#"","message":""#)
        put(fields.message)
        put(#"","user":""#)
        put(fields.user)
        put(#"","userID":""#)
        put(fields.userID)
        put(#""}"#)
        precondition(p - bodyStart == bodyLength, "broadcast length mismatch")
        broadcast.commit(p)
        let frame = UnsafeRawBufferPointer(broadcast.readable)
        DelayLine.spin(delayLine.spinNs)
        let admission = delayLine.isActive ? delayLine.admit(now: EventLoop.now()) : .now
        switch admission {
        case .now:
            if echoesToSender {
                loop.write(sender, frame)
                statistics.framesBroadcast += 1
                break
            }
            for peer in openPeers { loop.write(peer, frame) }
            statistics.framesBroadcast += openPeers.count
            remoteBroadcast?(frame)
        case .refused:
            statistics.relaysRefused += 1
        case .at(let deadline):
            // Held back: copied out (the shared buffer is reused), sent to whoever is open then.
            let held = [UInt8](frame)
            delayLine.submit(loop, at: deadline, token: Self.delayTimer) { [self] in
                if echoesToSender {
                    // The sender may have gone while its message waited.
                    guard let peer = peers[Int(sender.index)], peer.id == sender, peer.state == .open else { return }
                    held.withUnsafeBytes { loop.write(sender, $0) }
                    statistics.framesBroadcast += 1
                    return
                }
                held.withUnsafeBytes { frame in
                    for peer in openPeers { loop.write(peer, frame) }
                    remoteBroadcast?(frame)
                }
                statistics.framesBroadcast += openPeers.count
            }
        }
        statistics.relaysQueued = delayLine.queued
    }

    /// Sends broadcast frames another server process made (`LinkRecord` broadcast records, in
    /// order) to every open client here. Their delay and rate limit were acted out where they
    /// were made. Call on the loop thread.
    public func deliverRemote(records: [UInt8]) {
        records.withUnsafeBytes { all in
            _ = LinkRecord.parse(all) { kind, frame in
                guard kind == .broadcast else { return }
                for peer in openPeers { loop.write(peer, frame) }
                statistics.framesBroadcast += openPeers.count
                statistics.remoteBroadcasts += 1
            }
        }
    }

    /// `--max-rate`: relays at most `perSecond` client messages per second (0: no limit); the
    /// rest wait their turn in order, so latency grows without bound past that rate. Call on the loop thread.
    public func setMaxRate(_ perSecond: Double) {
        delayLine.set(maxRate: perSecond)
    }

    /// `--connection-cost`: spends `microseconds` of CPU per open connection per second on the
    /// loop thread (see `ConnectionCost`). Call once, on the loop thread or before it starts.
    public func setConnectionCost(microseconds: Double) {
        connectionCost.microseconds = microseconds.isFinite ? min(max(0, microseconds), ConnectionCost.maxMicroseconds) : 0
        connectionCost.start(loop, token: Self.connectionCostTimer)
    }
}

/// ISO 8601 UTC time with microseconds, "2026-11-21T23:59:01.123456Z": always 27 bytes, so the
/// broadcast's length is known before it is built. The date part is formatted once per second.
struct DateCache {
    static let length = 27
    var second: Int = -1
    var prefix: [UInt8] = []

    mutating func write(into out: UnsafeMutableRawPointer) -> Int {
        let ns = cs_realtime_ns()
        let sec = Int(ns / 1_000_000_000)
        if sec != second {
            second = sec
            var t = time_t(sec)
            var parts = tm()
            gmtime_r(&t, &parts)
            func pad(_ v: Int32, _ width: Int) -> String {
                let s = String(v)
                return String(repeating: "0", count: max(0, width - s.count)) + s
            }
            let text = "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
                + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))."
            prefix = Array(text.utf8)
        }
        prefix.withUnsafeBytes { out.copyMemory(from: $0.baseAddress!, byteCount: 20) }
        var micros = Int((ns % 1_000_000_000) / 1000)
        for i in stride(from: 25, through: 20, by: -1) {
            out.storeBytes(of: UInt8(48 + micros % 10), toByteOffset: i, as: UInt8.self)
            micros /= 10
        }
        out.storeBytes(of: UInt8(ascii: "Z"), toByteOffset: 26, as: UInt8.self)
        return Self.length
    }
}
