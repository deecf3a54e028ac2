import StampedeLoop
import StampedeSession
import StampedeWire

// The Socket.IO server, one concern per file in this folder:
// - SocketIOServer.swift: configuration, public API, faults, the loop's callbacks, the tables;
//   SocketIOServer+Statistics.swift: what it counts.
// - SocketIOServer+HTTP.swift: requests (handshakes, polls, POSTs, upgrades) and answers.
// - SocketIOServer+Sessions.swift: carrying out what a `SocketIOServerSession` asks (frames,
//   poll answers, the timer, the end), WebSocket frames.
// - SocketIOServer+App.swift: the reference app (auth, join, say, echo) and rooms;
//   SocketIOServer+Backplane.swift: broadcasts across `serve --processes`.
// The protocol itself is the session's (StampedeSession); this runtime owns sockets and tables.

/// The reference Socket.IO 4 server (Socket.IO 5 over Engine.IO 4) on Stampede's own event loop.
///
/// Engine.IO at `path` (default `/socket.io/`): long polling, WebSocket, and the upgrade from
/// one to the other; the server pings every `pingInterval` and closes a client that leaves a
/// ping unanswered for `pingTimeout`. Namespaces: "/" and any other a client asks for. With a
/// `token`, a CONNECT whose auth lacks `"token":"<token>"` gets CONNECT_ERROR
/// `{"message":"not authorized"}`.
///
/// The app: `join(room)` joins the room (ack `[true]`); `say({room?, text})` sends event `said`
/// with the same arguments to the room (or the whole namespace), sender included, and acks
/// `[true]`; any other event with an ack id is acked with its own arguments (`echo`). Binary
/// attachments travel with them.
///
/// Faults (`apply(_:)`): drop every session (Engine.IO close packet then the transport, or RST),
/// answer new sessions 503 for a while, or hang the loop. Everything runs on the loop thread;
/// `statisticsSnapshot()`, and `shutdown()` and `apply(_:)` (through `loop.execute`) are the ways
/// in from other threads.
public final class SocketIOServer: EventLoopHandler, FaultTarget, @unchecked Sendable {
    public struct Configuration: Sendable {
        /// The server pings this often (s).
        public var pingInterval: Double = 25
        /// A ping unanswered this long closes the session (s).
        public var pingTimeout: Double = 20
        /// Largest Engine.IO message or polling body accepted (bytes).
        public var maxPayload = 1_000_000
        /// With a token, namespaces need `"token":"<token>"` in the CONNECT's auth.
        public var token: String? = nil
        /// Output limit and timeouts of every socket (see `ServerLimits`); `maxOutputBytes` also
        /// bounds what waits for a session's next poll.
        public var limits = ServerLimits()
        public init() {}
    }

    public let loop: EventLoop
    public let path: String
    public let configuration: Configuration
    /// The limits in force: the configured ones, with room for a full poll answer.
    public let limits: ServerLimits
    public private(set) var port: UInt16 = 0
    public internal(set) var statistics = Statistics()
    /// `stampede serve --processes`: called with every broadcast as a record for the other server
    /// processes (SocketIOServer+Backplane.swift). Set before the loop starts; called on the loop thread.
    public var remoteBroadcast: ((UnsafeRawBufferPointer) -> Void)?
    /// `--max-connections`: the limit on open Engine.IO sessions (shared by a `--processes`
    /// group), or nil. Set before the loop starts.
    public var connectionQuota: ConnectionQuota?

    let pathBytes: [UInt8]
    let tokenBytes: [UInt8]?
    let sessionConfiguration: SocketIOServerSession.Configuration
    var sockets: [SocketIOSocket?] = []
    var clients: [SocketIOClient?] = []
    var generations: [UInt32] = []
    var freeSlots: [Int] = []
    var bySid: [[UInt8]: SocketIOClient] = [:]
    var rooms = SocketIORooms()
    var random = FastRandom.fromSystem()
    /// Where broadcasts and acks are built.
    var scratch: [UInt8] = []
    var isShutDown = false
    var faults = FaultState()

    /// The session timer (`TimerToken` kind; slot: the client's slot, epoch its generation).
    static let sessionTimer: UInt8 = 1

    /// Creates the server and starts listening on `address` (port 0 picks a free port).
    /// With `tls`, every connection speaks TLS first (https:// and wss://).
    public init(loop: EventLoop, address: SocketAddress, path: String = "/socket.io/",
                configuration: Configuration = Configuration(), tls: TLSContext? = nil) throws(LoopError) {
        self.loop = loop
        self.path = path
        self.configuration = configuration
        var p = Array(path.utf8)
        if p.count > 1 && p.last == UInt8(ascii: "/") { p.removeLast() }
        pathBytes = p
        tokenBytes = configuration.token.map { Array($0.utf8) }
        let maxPayload = min(max(1024, configuration.maxPayload), 64 << 20)
        // A poll answer carries everything queued (base64 makes binary a third larger).
        let largest = configuration.limits.maxOutputBytes * 2 + maxPayload + 64 * 1024
        limits = configuration.limits.effective(forLargestWrite: largest, highWaterMark: 0)
        sessionConfiguration = SocketIOServerSession.Configuration(
            pingIntervalNs: nanoseconds(max(0.001, configuration.pingInterval)), pingTimeoutNs: nanoseconds(max(0.001, configuration.pingTimeout)),
            maxPayload: maxPayload, maxQueuedBytes: configuration.limits.maxOutputBytes)
        limits.install(on: loop)
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
        return s
    }

    /// Closes every session (Engine.IO close packet, then the transport); later handshakes get
    /// 503. Call on the loop thread (`loop.execute`).
    public func shutdown() {
        isShutDown = true
        closeEveryone()
    }

    /// Acts out `fault` (see `TargetFault`). Call on the loop thread: `loop.execute { _ in server.apply(f) }`.
    ///
    /// A clean drop closes every session as a restarting server does (the close packet on its
    /// WebSocket or held poll, then the transport); a reset drop sends RST on every socket and
    /// forgets every session. Reject answers handshakes and upgrades 503 for a while; the polls
    /// and POSTs of existing sessions go on. A stall blocks the loop thread.
    public func apply(_ fault: TargetFault) {
        statistics.faultsApplied += 1
        switch fault {
        case .drop(let reset):
            statistics.connectionsDropped += clients.reduce(0) { $0 + ($1 == nil ? 0 : 1) }
            if reset { resetEveryone() } else { closeEveryone() }
        case .reject(let seconds):
            faults.startRejecting(seconds: seconds)
        case .stall(let seconds):
            FaultState.stall(loop, seconds: seconds)
        case .delay:
            break  // not acted out (`supportsDelay` is false)
        }
    }

    /// The statistics and the fault state as one JSON line. Call on the loop thread.
    public func statusJSON() -> String {
        "{\"server\":\"socketio\",\"path\":\"\(path)\",\"port\":\(port),\"rejectingSeconds\":\(faults.rejectingSecondsLeft() ?? 0),"
            + statisticsJSONMembers(statisticsNow()) + "}"
    }

    func closeEveryone() {
        for case let c? in clients { handle(c, c.session.close()) }
        for case let s? in sockets where s.mode == .http {
            loop.closeAfterFlush(s.id)
            forget(s)
        }
    }

    func resetEveryone() {
        for case let s? in sockets {
            loop.close(s.id, reset: true)
            forget(s)
        }
        for case let c? in clients {
            c.pollSocket = nil
            c.webSocket = nil
            dispose(c)
        }
    }

    // MARK: EventLoopHandler

    public func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) {
        let i = Int(id.index)
        if i >= sockets.count { sockets.append(contentsOf: repeatElement(nil, count: i + 1 - sockets.count + 64)) }
        sockets[i] = SocketIOSocket(id: id)
        statistics.accepted += 1
        limits.awaitRequest(id, loop)
    }

    public func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {}

    public func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        guard let s = socket(id) else { return buffer.count }
        switch s.mode {
        case .http: return receivedHTTP(s, buffer)
        case .webSocket: return receivedWebSocket(s, buffer, from: 0)
        case .closed: return buffer.count
        case .poll:
            // A client does not send on a held poll's connection; keep a little (pipelining), no more.
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
        lost(s)
    }

    public func writable(_ id: ConnectionID, loop: EventLoop) {}

    public func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {
        guard token.kind == Self.sessionTimer, token.index < clients.count, let c = clients[token.index],
              c.generation == token.epoch else { return }
        if deadline == c.armed { c.armed = .max }
        handle(c, c.session.timerFired(deadline: deadline, now: EventLoop.now()))
    }

    // MARK: Sockets

    func socket(_ id: ConnectionID) -> SocketIOSocket? {
        let i = Int(id.index)
        guard i < sockets.count, let s = sockets[i], s.id == id else { return nil }
        return s
    }

    /// Stops tracking a socket (the loop closed it, or we asked it to).
    func forget(_ s: SocketIOSocket) {
        let i = Int(s.id.index)
        if i < sockets.count, sockets[i] === s { sockets[i] = nil }
        s.mode = .closed
        s.client = nil
        s.route = .none
        s.body = []
    }

    /// Closes a socket now, whatever it was doing, and tells its session.
    func dropSocket(_ s: SocketIOSocket) {
        loop.close(s.id)
        lost(s)
    }

    /// A socket is gone: a held poll or a WebSocket tells its session.
    func lost(_ s: SocketIOSocket) {
        let c = s.client
        let mode = s.mode
        forget(s)
        guard let c, !c.ended else { return }
        if mode == .poll, c.pollSocket == s.id {
            c.pollSocket = nil
            handle(c, c.session.pollLost())
        } else if mode == .webSocket, c.webSocket == s.id {
            c.webSocket = nil
            handle(c, c.session.webSocketLost())
        }
    }
}
