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
    public var sourceAddresses: [UInt32]

    public init(address: SocketAddress, host: String, path: String, subprotocol: String? = nil, headers: [(String, String)] = [],
                connectTimeoutNs: UInt64 = 10_000_000_000, upgradeTimeoutNs: UInt64 = 10_000_000_000,
                closeTimeoutNs: UInt64 = 2_000_000_000, maxMessageBytes: Int = 1 << 20, sourceAddresses: [UInt32] = []) {
        self.address = address; self.host = host; self.path = path; self.subprotocol = subprotocol; self.headers = headers
        self.connectTimeoutNs = connectTimeoutNs; self.upgradeTimeoutNs = upgradeTimeoutNs; self.closeTimeoutNs = closeTimeoutNs
        self.maxMessageBytes = maxMessageBytes; self.sourceAddresses = sourceAddresses
    }
}

/// The WebSocket client side of RFC 6455 for many simulated clients on one event loop: connect,
/// upgrade, frame, answer pings, close handshakes, failures. Protocol decisions come from
/// `WebSocketReceiver`; this class carries them out on the loop and counts every outcome.
public final class WebSocketClients: EventLoopHandler, @unchecked Sendable {
    public enum State: UInt8, Sendable { case idle, connecting, upgrading, open, closing, ended }

    struct Client {
        var state: State = .idle
        var connection = ConnectionID(index: .max, generation: 0)
        /// Bumped on every connection attempt so stale timers are ignored.
        var epoch: UInt32 = 0
        var key = ""
        var receiver: WebSocketReceiver
        var connectStartNs: UInt64 = 0
        var upgradeStartNs: UInt64 = 0
        /// The close handshake: what to send and how the connection counts (`WebSocketCloseHandshake`).
        var closing = WebSocketCloseHandshake(role: .client)
        /// Request path for this connection when it differs from the endpoint's.
        var path: String? = nil
        /// When anything last arrived (dead-server detection).
        var lastReceivedNs: UInt64 = 0
    }

    public let loop: EventLoop
    public let endpoint: WebSocketEndpoint
    public unowned(unsafe) var application: WebSocketApplication!
    /// This loop's measurements (shared with the application).
    public var metrics = MetricsShard()
    public var random: FastRandom
    var clients: [Client] = []
    /// Client index by connection slot index.
    var clientBySlot: [Int32] = []
    public private(set) var openCount = 0
    public private(set) var inFlightConnects = 0

    /// This runtime's own timers (`TimerToken.Layer.connection`); the application's pass through.
    enum TimerKind: UInt8 { case upgradeTimeout, closeTimeout }

    public init(loop: EventLoop, endpoint: WebSocketEndpoint, clientCount: Int, random: FastRandom) {
        self.loop = loop
        self.endpoint = endpoint
        self.random = random
        clients = Array(repeating: Client(receiver: WebSocketReceiver(role: .client, maxMessageBytes: endpoint.maxMessageBytes)), count: clientCount)
        loop.handler = self
    }

    public func state(of client: Int) -> State { clients[client].state }
    public func lastReceivedNs(of client: Int) -> UInt64 { clients[client].lastReceivedNs }
    public var clientCount: Int { clients.count }

    // MARK: Commands from the application

    /// Opens client `client`'s connection (TCP connect, then the upgrade), optionally to another path.
    public func connect(_ client: Int, path: String? = nil) {
        guard clients[client].state == .idle || clients[client].state == .ended else { return }
        clients[client].path = path
        clients[client].epoch &+= 1
        clients[client].closing = WebSocketCloseHandshake(role: .client)
        clients[client].receiver = WebSocketReceiver(role: .client, maxMessageBytes: endpoint.maxMessageBytes)
        metrics.count(.connectAttempts)
        let source = endpoint.sourceAddresses.isEmpty ? nil : endpoint.sourceAddresses[client % endpoint.sourceAddresses.count]
        clients[client].connectStartNs = EventLoop.now()
        switch loop.connect(to: endpoint.address, from: source, timeoutNs: endpoint.connectTimeoutNs) {
        case .failure(let error):
            end(client, .connectFailed(ErrorClass.connectFailure(error.errno)))
        case .success(let id):
            clients[client].connection = id
            clients[client].state = .connecting
            inFlightConnects += 1
            bind(id, to: client)
        }
    }

    /// Sends one frame, masked with a fresh key; `fill` writes exactly `length` payload bytes.
    @inline(__always)
    public func send(_ client: Int, opcode: WebSocketOpcode, length: Int, fin: Bool = true, fill: (UnsafeMutableRawPointer) -> Void) {
        guard clients[client].state == .open else { return }
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
        switch clients[client].state {
        case .idle, .ended, .closing: return
        case .connecting, .upgrading:
            loop.close(clients[client].connection)
            end(client, .connectFailed(.interrupted))
        case .open:
            carryOut(client, clients[client].closing.sending(code: code))
        }
    }

    /// Drops the TCP connection without a close handshake (`reset`: RST instead of FIN), counted
    /// as `reason` (a client-side reset, or the dead-server timeout that made the client give up).
    public func abort(_ client: Int, reset: Bool, reason: ErrorClass = .connectionReset) {
        guard clients[client].state != .idle && clients[client].state != .ended else { return }
        loop.close(clients[client].connection, reset: reset)
        end(client, .failed(reason))
    }

    /// A stalled client: stops (or resumes) reading its socket while the connection stays up.
    /// On resuming, the silence of the stall does not count against dead-server detection.
    public func pauseReading(_ client: Int, _ paused: Bool) {
        guard clients[client].state == .open || clients[client].state == .closing else { return }
        loop.pauseReading(clients[client].connection, paused)
        if !paused { clients[client].lastReceivedNs = EventLoop.now() }
    }

    /// Whether the client's current connection is stalled by `pauseReading`.
    public func isReadingPaused(_ client: Int) -> Bool {
        clients[client].state == .open && loop.isReadingPaused(clients[client].connection)
    }

    /// Schedules one of the application's timers (`layer` `.application`).
    public func schedule(at deadline: UInt64, token: TimerToken) {
        precondition(token.layer == .application, "the application's timers are of the application layer")
        loop.schedule(at: deadline, token: token)
    }

    // MARK: Internals

    func bind(_ id: ConnectionID, to client: Int) {
        let i = Int(id.index)
        if i >= clientBySlot.count { clientBySlot.append(contentsOf: repeatElement(-1, count: i + 1 - clientBySlot.count + 64)) }
        clientBySlot[i] = Int32(client)
    }

    @inline(__always)
    func client(for id: ConnectionID) -> Int? {
        let i = Int(id.index)
        guard i < clientBySlot.count else { return nil }
        let c = Int(clientBySlot[i])
        guard c >= 0, clients[c].connection == id, clients[c].state != .ended, clients[c].state != .idle else { return nil }
        return c
    }

    func scheduleInternal(_ kind: TimerKind, client: Int, at deadline: UInt64) {
        loop.schedule(at: deadline, token: TimerToken(layer: .connection, kind, slot: client, epoch: clients[client].epoch))
    }

    /// Carries out a step of the close handshake: its Close frame, then what it says about TCP,
    /// under the close timeout (the wait is ours to bound, §7.1.1).
    func carryOut(_ client: Int, _ step: WebSocketCloseHandshake.Step) {
        let id = clients[client].connection
        let queued = loop.writeMaskedClose(id, step, key: UInt32(truncatingIfNeeded: random.next()))
        metrics.count(.bytesSent, UInt64(queued))
        switch step.transport {
        case .unchanged:
            return
        case .awaitClose:
            break
        case .awaitFIN, .close:  // a client never closes TCP first (`.close` is the server's)
            loop.shutdownWriteAfterFlush(id)
        }
        clients[client].state = .closing
        scheduleInternal(.closeTimeout, client: client, at: EventLoop.now() + endpoint.closeTimeoutNs)
    }

    func end(_ client: Int, _ outcome: WebSocketEnd) {
        let wasOpen = clients[client].state == .open || clients[client].state == .closing
        if clients[client].state == .connecting || clients[client].state == .upgrading { inFlightConnects -= 1 }
        clients[client].state = .ended
        clients[client].receiver = WebSocketReceiver(role: .client, maxMessageBytes: 0)
        if wasOpen {
            openCount -= 1
            metrics.count(.disconnected)
        }
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

    /// Fails an open connection (§7.1.7): the close code the failure calls for, then TCP goes.
    func fail(_ client: Int, _ failure: WebSocketFailure) {
        carryOut(client, clients[client].closing.failed(failure))
    }

    // MARK: EventLoopHandler

    public func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {
        guard let c = client(for: id), clients[c].state == .connecting else { return }
        if error != 0 {
            end(c, .connectFailed(ErrorClass.connectFailure(error)))
            return
        }
        let now = EventLoop.now()
        metrics.record(.tcpConnect, nanoseconds: now - clients[c].connectStartNs)
        clients[c].state = .upgrading
        clients[c].upgradeStartNs = now
        let key = WebSocketHandshake.makeKey(using: &random)
        clients[c].key = key
        let request = WebSocketHandshake.request(host: endpoint.host, port: Int(endpoint.address.port), path: clients[c].path ?? endpoint.path,
                                                 key: key, subprotocol: endpoint.subprotocol, headers: endpoint.headers)
        request.withUnsafeBytes { loop.write(id, $0) }
        metrics.count(.bytesSent, UInt64(request.count))
        scheduleInternal(.upgradeTimeout, client: c, at: now + endpoint.upgradeTimeoutNs)
    }

    public func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) {
        loop.close(id)  // clients never listen
    }

    public func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        guard let c = client(for: id) else { return buffer.count }
        metrics.count(.bytesReceived, UInt64(buffer.count))
        clients[c].lastReceivedNs = EventLoop.now()
        var offset = 0
        if clients[c].state == .upgrading {
            switch WebSocketHandshake.parseHead(UnsafeRawBufferPointer(buffer), isResponse: true) {
            case .needMore:
                return 0
            case .invalid:
                loop.close(id)
                end(c, .connectFailed(.upgradeInvalid))
                return buffer.count
            case .head(let head):
                switch WebSocketHandshake.validateResponse(head, key: clients[c].key, requestedSubprotocol: endpoint.subprotocol) {
                case .rejected(let status):
                    metrics.upgradeStatuses[status, default: 0] += 1
                    loop.close(id)
                    end(c, .connectFailed(.upgradeRejected))
                    return buffer.count
                case .invalid:
                    loop.close(id)
                    end(c, .connectFailed(.upgradeInvalid))
                    return buffer.count
                case .accepted:
                    metrics.record(.upgrade, nanoseconds: EventLoop.now() - clients[c].upgradeStartNs)
                    metrics.count(.connected)
                    clients[c].state = .open
                    inFlightConnects -= 1
                    openCount += 1
                    offset = head.length
                    application.webSocketOpened(client: c)
                    guard self.client(for: id) != nil else { return buffer.count }
                }
            }
        }
        while offset < buffer.count {
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[offset...])
            let (event, consumed) = clients[c].receiver.next(rest)
            switch event {
            case .needMore:
                return offset
            case .fragment:
                break
            case .message(let opcode, let range):
                if clients[c].state == .open {
                    application.webSocketReceived(client: c, opcode: opcode, payload: UnsafeRawBufferPointer(rebasing: rest[range]))
                }
            case .assembledMessage(let opcode):
                if clients[c].state == .open {
                    clients[c].receiver.assembled.withUnsafeBytes { application.webSocketReceived(client: c, opcode: opcode, payload: $0) }
                }
            case .ping(let range):
                // §5.5.2: answer with a pong carrying the same payload.
                send(c, opcode: .pong, payload: UnsafeRawBufferPointer(rebasing: rest[range]))
            case .pong(let range):
                application.webSocketPong(client: c, payload: UnsafeRawBufferPointer(rebasing: rest[range]))
            case .close(let code, _):
                carryOut(c, clients[c].closing.received(code: code))
                return buffer.count
            case .fail(let failure):
                fail(c, failure)
                return buffer.count
            }
            offset += consumed
            guard self.client(for: id) != nil else { return buffer.count }
        }
        return offset
    }

    public func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {
        guard let c = client(for: id) else { return }
        switch clients[c].state {
        case .connecting, .upgrading:
            end(c, .connectFailed(reason == .endOfFile ? .upgradeInvalid : .connectionReset))
        case .open:
            end(c, .failed(reason == .endOfFile ? .unexpectedEOF : reason == .reset ? .connectionReset : .ioError))
        case .closing:
            finishClosing(c)
        case .idle, .ended:
            break
        }
    }

    func finishClosing(_ c: Int) {
        switch clients[c].closing.outcome {
        case .failed(let failure): end(c, .failed(ErrorClass(failure)))
        case .abnormal: end(c, .failed(.unexpectedEOF))
        case .clean(let code): end(c, .closedCleanly(code: code))
        case .closedByServer(let code): end(c, .closedByServer(code: code))
        case .error(let code): end(c, .closedWithError(code: code))
        }
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
        guard c < clients.count, clients[c].epoch == token.epoch, let kind = token.kind(as: TimerKind.self) else { return }
        switch kind {
        case .upgradeTimeout:
            guard clients[c].state == .upgrading else { return }
            loop.close(clients[c].connection)
            end(c, .connectFailed(.upgradeTimeout))
        case .closeTimeout:
            guard clients[c].state == .closing else { return }
            loop.close(clients[c].connection)
            finishClosing(c)
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
