import CStampedeLinux
import StampedeLoop
import StampedeMetrics
import StampedeSession
import StampedeWire

/// How one simulated WebSocket connection ended. Every connection ends in exactly one of these.
public enum WebSocketEnd: Sendable, Equatable {
    /// Close handshake completed with 1000/1001 (or no code), or our own close went unanswered.
    case closedCleanly(code: UInt16?)
    /// The server closed with 1012 (service restart): its choice, not an error.
    case closedByServer(code: UInt16)
    /// The peer closed with another code.
    case closedWithError(code: UInt16?)
    /// Never opened: connect or upgrade failed.
    case connectFailed(ErrorClass)
    /// Opened, then failed (protocol error, reset, EOF without close, timeout).
    case failed(ErrorClass)
}

/// What a workload does with its WebSocket clients. Called on the loop thread.
public protocol WebSocketApplication: AnyObject {
    func webSocketOpened(client: Int)
    /// A complete message (text already UTF-8 checked). `payload` is valid only during the call.
    func webSocketReceived(client: Int, opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer)
    func webSocketEnded(client: Int, end: WebSocketEnd)
    /// The client's write queue drained after backpressure.
    func webSocketWritable(client: Int)
    /// A pong arrived (answering our ping).
    func webSocketPong(client: Int, payload: UnsafeRawBufferPointer)
    /// A timer the application scheduled with `WebSocketClients.schedule(at:token:)` is due.
    func applicationTimer(_ token: TimerToken, deadline: UInt64)
}

/// Where clients connect and how.
public struct WebSocketEndpoint: Sendable {
    public var address: SocketAddress
    /// Host as written in the URL, for the Host header.
    public var host: String
    public var path: String
    public var subprotocol: String?
    public var headers: [(String, String)]
    public var connectTimeoutNs: UInt64
    /// Time allowed for the 101 answer once the upgrade request is sent.
    public var upgradeTimeoutNs: UInt64
    /// Time allowed for the peer to finish a close handshake and drop TCP.
    public var closeTimeoutNs: UInt64
    public var maxMessageBytes: Int
    /// Host-order IPv4 source addresses to spread connections over; empty = kernel's choice.
    public var sourceAddresses: [SocketAddress]
    /// Every address of the target (client `i` connects to `addresses[i % count]`); empty means `address` alone.
    public var addresses: [SocketAddress] = []
    /// `wss://`: the run's TLS client context (nil: plain TCP).
    public var tls: ClientTLS? = nil

    public init(address: SocketAddress, host: String, path: String, subprotocol: String? = nil, headers: [(String, String)] = [],
                connectTimeoutNs: UInt64 = 10_000_000_000, upgradeTimeoutNs: UInt64 = 10_000_000_000,
                closeTimeoutNs: UInt64 = 2_000_000_000, maxMessageBytes: Int = 1 << 20, sourceAddresses: [SocketAddress] = []) {
        self.address = address; self.host = host; self.path = path; self.subprotocol = subprotocol; self.headers = headers
        self.connectTimeoutNs = connectTimeoutNs; self.upgradeTimeoutNs = upgradeTimeoutNs; self.closeTimeoutNs = closeTimeoutNs
        self.maxMessageBytes = maxMessageBytes; self.sourceAddresses = sourceAddresses
    }
}

/// The runtime of the WebSocket client for many simulated clients on one event loop: it keeps
/// the client table, connects, and carries out what each connection's `WebSocketClientSession`
/// (StampedeSession: upgrade, frames, pings, the close handshake, every way a connection ends)
/// asks for on the loop, counting every outcome in its metrics shard and calling the
/// application's callbacks.
public final class WebSocketClients: EventLoopHandler, @unchecked Sendable {
    public enum State: UInt8, Sendable { case idle, connecting, upgrading, open, closing, ended }

    struct Client {
        var connection = ConnectionID(index: .max, generation: 0)
        /// Bumped on every connection attempt so stale timers are ignored.
        var epoch: UInt32 = 0
        /// The current connection's protocol state (a placeholder until the first connect: see
        /// `started`). Not optional: reading a field of an optional session copied the whole
        /// session, arrays and all, on every message.
        var session: WebSocketClientSession
        /// Whether `connect` ever ran for this client.
        var started = false
        var connectStartNs: UInt64 = 0
        /// Counted in `inFlightConnects` (TCP connect issued, not open or ended yet).
        var inFlight = false
        /// Counted in `openCount`.
        var opened = false
        /// The upgrade completed (with `connectsWhenReady`, the application's steps may still run).
        var upgraded = false
        /// When anything last arrived (dead-server detection).
        var lastReceivedNs: UInt64 = 0
    }

    public let loop: EventLoop
    public let endpoint: WebSocketEndpoint
    /// What every connection's session asks for (the endpoint's, path aside).
    let configuration: WebSocketClientSession.Configuration
    public unowned(unsafe) var application: WebSocketApplication!
    /// This loop's measurements (shared with the application).
    public var metrics = MetricsShard()
    public var random: FastRandom
    var clients: [Client] = []
    /// Client index by connection slot index.
    var clientBySlot: [Int32] = []
    public private(set) var openCount = 0
    public private(set) var inFlightConnects = 0
    /// Whether a client counts as connected only once the application calls `ready` (a declared
    /// flow's connect steps run after the upgrade); until then it stays a connect in flight, and
    /// a connection that ends before it counts as a failed connect.
    public var connectsWhenReady = false

    /// This runtime's own timers (`TimerToken.Layer.connection`); the application's pass through.
    enum TimerKind: UInt8 { case upgradeTimeout, closeTimeout }

    public init(loop: EventLoop, endpoint: WebSocketEndpoint, clientCount: Int, random: FastRandom) {
        self.loop = loop
        self.endpoint = endpoint
        self.random = random
        configuration = WebSocketClientSession.Configuration(
            host: endpoint.host, port: Int(endpoint.address.port), path: endpoint.path, subprotocol: endpoint.subprotocol,
            headers: endpoint.headers, upgradeTimeoutNs: endpoint.upgradeTimeoutNs, closeTimeoutNs: endpoint.closeTimeoutNs,
            maxMessageBytes: endpoint.maxMessageBytes)
        clients = Array(repeating: Client(session: WebSocketClientSession(configuration: configuration)), count: clientCount)
        loop.handler = self
    }

    public func state(of client: Int) -> State {
        guard clients[client].started else { return .idle }
        return switch clients[client].session.state {
        case .connecting: .connecting
        case .upgrading: .upgrading
        case .open: .open
        case .closing: .closing
        case .ended: .ended
        }
    }

    public func lastReceivedNs(of client: Int) -> UInt64 { clients[client].lastReceivedNs }
    public var clientCount: Int { clients.count }

    // MARK: Commands from the application

    /// Opens client `client`'s connection (TCP connect, then the upgrade), optionally to another path.
    public func connect(_ client: Int, path: String? = nil) {
        guard state(of: client) == .idle || state(of: client) == .ended else { return }
        clients[client].epoch &+= 1
        clients[client].session = WebSocketClientSession(configuration: configuration, path: path)
        clients[client].started = true
        metrics.count(.connectAttempts)
        let source = endpoint.sourceAddresses.isEmpty ? nil : endpoint.sourceAddresses[client % endpoint.sourceAddresses.count]
        clients[client].connectStartNs = EventLoop.now()
        let target = endpoint.addresses.isEmpty ? endpoint.address : endpoint.addresses[client % endpoint.addresses.count]
        switch loop.connectClient(to: target, from: source, timeoutNs: endpoint.connectTimeoutNs, tls: endpoint.tls, client: client, random: &random) {
        case .failure(let error):
            carryOut(client, clients[client].session.connectFailed(errno: error.errno))
        case .success(let id):
            clients[client].connection = id
            clients[client].inFlight = true
            inFlightConnects += 1
            bind(id, to: client)
        }
    }

    /// Sends one frame, masked with a fresh key; `fill` writes exactly `length` payload bytes.
    @inline(__always)
    public func send(_ client: Int, opcode: WebSocketOpcode, length: Int, fin: Bool = true, fill: (UnsafeMutableRawPointer) -> Void) {
        guard clients[client].started, clients[client].session.state == .open else { return }
        let queued = loop.writeMaskedFrame(clients[client].connection, opcode: opcode, fin: fin, length: length,
                                           key: UInt32(truncatingIfNeeded: random.next()), fill: fill)
        metrics.count(.bytesSent, UInt64(queued))
    }

    public func send(_ client: Int, opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer, fin: Bool = true) {
        send(client, opcode: opcode, length: payload.count, fin: fin) { out in
            if let base = payload.baseAddress { out.copyMemory(from: base, byteCount: payload.count) }
        }
    }

    /// True while the client's socket is over its write high-water mark (defer sends).
    public func isBackedUp(_ client: Int) -> Bool { loop.isBackedUp(clients[client].connection) }

    /// Starts the close handshake, or abandons a connection that is not open yet: that attempt
    /// counts as `interrupted`, since nothing timed out or failed; the run stopped waiting.
    public func close(_ client: Int, code: UInt16 = 1000) {
        guard clients[client].started else { return }
        carryOut(client, clients[client].session.close(code: code, now: EventLoop.now()))
    }

    /// Drops the TCP connection without a close handshake (`reset`: RST instead of FIN), counted
    /// as `reason` (a client-side reset, or the dead-server timeout that made the client give up).
    public func abort(_ client: Int, reset: Bool, reason: ErrorClass = .connectionReset) {
        guard clients[client].started, case .ended = clients[client].session.abort() else { return }
        loop.close(clients[client].connection, reset: reset)
        end(client, .failed(reason))
    }

    /// A stalled client: stops (or resumes) reading its socket while the connection stays up.
    /// On resuming, the silence of the stall does not count against dead-server detection.
    public func pauseReading(_ client: Int, _ paused: Bool) {
        guard state(of: client) == .open || state(of: client) == .closing else { return }
        loop.pauseReading(clients[client].connection, paused)
        if !paused { clients[client].lastReceivedNs = EventLoop.now() }
    }

    /// Whether the client's current connection is stalled by `pauseReading`.
    public func isReadingPaused(_ client: Int) -> Bool {
        state(of: client) == .open && loop.isReadingPaused(clients[client].connection)
    }

    /// Schedules one of the application's timers (`layer` `.application`).
    public func schedule(at deadline: UInt64, token: TimerToken) {
        precondition(token.layer == .application, "the application's timers are of the application layer")
        loop.schedule(at: deadline, token: token)
    }

    // MARK: Carrying out the session's actions

    func bind(_ id: ConnectionID, to client: Int) {
        let i = Int(id.index)
        if i >= clientBySlot.count { clientBySlot.append(contentsOf: repeatElement(-1, count: i + 1 - clientBySlot.count + 64)) }
        clientBySlot[i] = Int32(client)
    }

    /// The client whose current, live connection is `id`.
    @inline(__always)
    func client(for id: ConnectionID) -> Int? {
        let i = Int(id.index)
        guard i < clientBySlot.count else { return nil }
        let c = Int(clientBySlot[i])
        guard c >= 0, clients[c].connection == id, clients[c].started, clients[c].session.state != .ended else { return nil }
        return c
    }

    func scheduleInternal(_ kind: TimerKind, client: Int, at deadline: UInt64) {
        loop.schedule(at: deadline, token: TimerToken(layer: .connection, kind, slot: client, epoch: clients[client].epoch))
    }

    /// Carries out a command's or a timer's action (input actions are carried out in `received`).
    func carryOut(_ client: Int, _ action: WebSocketClientSession.Action) {
        switch action {
        case .closing(let send, let shutdownWrite, let deadline):
            // A close-handshake step: its Close frame, then what it says about TCP, under the
            // close timeout (the wait is ours to bound, §7.1.1).
            let id = clients[client].connection
            let queued = loop.writeMaskedClose(id, send, key: UInt32(truncatingIfNeeded: random.next()))
            metrics.count(.bytesSent, UInt64(queued))
            if shutdownWrite { loop.shutdownWriteAfterFlush(id) }
            if let deadline { scheduleInternal(.closeTimeout, client: client, at: deadline) }
        case .ended(let how, let closeTransport):
            if case .upgradeRejected(let status) = how { metrics.upgradeStatuses[status, default: 0] += 1 }
            if closeTransport { loop.close(clients[client].connection) }
            end(client, WebSocketEnd(how))
        case .sendUpgradeRequest(let deadline):
            let id = clients[client].connection
            let count = clients[client].session.upgradeRequest.withUnsafeBytes { request in
                loop.write(id, request)
                return request.count
            }
            metrics.count(.bytesSent, UInt64(count))
            scheduleInternal(.upgradeTimeout, client: client, at: deadline)
        case .needMore, .none, .opened, .message, .assembledMessage, .sendPong, .pong:
            break
        }
    }

    /// The connection is open: counted (unless the application's steps come first), and the application told.
    func opened(_ c: Int) {
        metrics.record(.upgrade, nanoseconds: EventLoop.now() - clients[c].session.upgradeStartedNs)
        clients[c].upgraded = true
        if !connectsWhenReady { countConnected(c) }
        application.webSocketOpened(client: c)
    }

    /// With `connectsWhenReady`: the application's connect steps are done, so the client is connected.
    public func ready(_ c: Int) {
        guard connectsWhenReady, clients[c].upgraded, !clients[c].opened, clients[c].session.state == .open else { return }
        countConnected(c)
    }

    /// Whether the client is connected and ready for messages.
    public func isReady(_ c: Int) -> Bool { clients[c].opened && clients[c].session.state == .open }

    private func countConnected(_ c: Int) {
        metrics.count(.connected)
        clients[c].inFlight = false
        inFlightConnects -= 1
        clients[c].opened = true
        openCount += 1
    }

    func end(_ client: Int, _ outcome: WebSocketEnd) {
        if clients[client].inFlight {
            clients[client].inFlight = false
            inFlightConnects -= 1
            // Upgraded, but its connect steps never finished: a connect that failed.
            if clients[client].upgraded { metrics.count(.connectFailed) }
        }
        clients[client].upgraded = false
        if clients[client].opened {
            clients[client].opened = false
            openCount -= 1
            metrics.count(.disconnected)
        }
        // Every Close the server started, clean or not, with its reason (`close_codes`).
        if let peer = clients[client].session.peerClose { metrics.countClose(code: peer.code, reason: peer.reason) }
        switch outcome {
        case .connectFailed(let e):
            metrics.count(.connectFailed)
            metrics.error(e)
        case .failed(let e):
            metrics.error(e)
        case .closedWithError:
            metrics.error(.closedWithError)
        case .closedCleanly, .closedByServer:
            break
        }
        application.webSocketEnded(client: client, end: outcome)
    }

    // MARK: EventLoopHandler

    public func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {
        guard let c = client(for: id), clients[c].session.state == .connecting else { return }
        if error != 0 {
            carryOut(c, clients[c].session.connectFailed(errno: error))
            return
        }
        let now = EventLoop.now()
        metrics.recordConnected(id, loop: loop, startNs: clients[c].connectStartNs, nowNs: now)
        carryOut(c, clients[c].session.connected(now: now, random: &random))
    }

    public func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) {
        loop.close(id)  // clients never listen
    }

    public func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        guard let c = client(for: id) else { return buffer.count }
        metrics.count(.bytesReceived, UInt64(buffer.count))
        let now = EventLoop.now()
        clients[c].lastReceivedNs = now
        var offset = 0
        // Every action but `.needMore` consumes input or ends the connection; the bound is a backstop.
        for _ in 0...buffer.count {
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[offset...])
            let (action, consumed) = clients[c].session.next(rest, now: now)
            switch action {
            case .needMore:
                return offset + consumed
            case .opened:
                opened(c)
            case .message(let opcode, let range):
                application.webSocketReceived(client: c, opcode: opcode, payload: UnsafeRawBufferPointer(rebasing: rest[range]))
            case .assembledMessage(let opcode):
                // A copy of the array (no bytes copied), so the callback may act on this client.
                let assembled = clients[c].session.assembled
                assembled.withUnsafeBytes { application.webSocketReceived(client: c, opcode: opcode, payload: $0) }
            case .sendPong(let range):
                // §5.5.2: answer with a pong carrying the same payload.
                send(c, opcode: .pong, payload: UnsafeRawBufferPointer(rebasing: rest[range]))
            case .pong(let range):
                application.webSocketPong(client: c, payload: UnsafeRawBufferPointer(rebasing: rest[range]))
            case .closing, .ended, .sendUpgradeRequest, .none:
                carryOut(c, action)
            }
            offset += consumed
            guard self.client(for: id) != nil else { return buffer.count }
        }
        return buffer.count
    }

    public func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {
        guard let c = client(for: id) else { return }
        let how: WebSocketTransportEnd = switch reason {
        case .endOfFile: .endOfFile
        case .reset: .reset
        case .error, .slowConsumer, .timedOut: .error
        }
        carryOut(c, clients[c].session.transportClosed(how))
    }

    public func writable(_ id: ConnectionID, loop: EventLoop) {
        guard let c = client(for: id) else { return }
        application.webSocketWritable(client: c)
    }

    public func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {
        guard token.layer == .connection else {
            application.applicationTimer(token, deadline: deadline)
            return
        }
        let c = token.index
        guard c < clients.count, clients[c].epoch == token.epoch, token.kind(as: TimerKind.self) != nil,
              clients[c].started else { return }
        // The session knows which deadline it waits for (upgrade or close) and ignores others.
        carryOut(c, clients[c].session.timerFired(deadline: deadline))
    }
}

extension WebSocketEnd {
    /// How a session's end counts for the chat client (the classes it has always reported).
    init(_ end: WebSocketClientSession.End) {
        switch end {
        case .connectFailed(let errno): self = .connectFailed(ErrorClass.connectFailure(errno))
        case .upgradeRejected: self = .connectFailed(.upgradeRejected)
        case .upgradeInvalid: self = .connectFailed(.upgradeInvalid)
        case .upgradeTimeout: self = .connectFailed(.upgradeTimeout)
        // The server closing before it answered the upgrade counts as a broken answer.
        case .lostBeforeOpen(let how): self = .connectFailed(how == .endOfFile ? .upgradeInvalid : .connectionReset)
        case .interrupted: self = .connectFailed(.interrupted)
        case .closedCleanly(let code): self = .closedCleanly(code: code)
        case .closedByServer(let code): self = .closedByServer(code: code)
        case .closedWithError(let code): self = .closedWithError(code: code)
        case .failed(let failure): self = .failed(ErrorClass(failure))
        case .lost(.endOfFile): self = .failed(.unexpectedEOF)
        case .lost(.reset): self = .failed(.connectionReset)
        case .lost(.error): self = .failed(.ioError)
        // `abort` counts its own reason.
        case .aborted: self = .failed(.connectionReset)
        }
    }
}

extension ErrorClass {
    /// How a failed WebSocket connection counts (the close code is `WebSocketFailure.closeCode`).
    init(_ failure: WebSocketFailure) {
        switch failure {
        case .protocolError: self = .protocolError
        case .invalidUTF8: self = .invalidUTF8
        case .messageTooBig: self = .messageTooBig
        }
    }
}
