import CStampedeLinux
import StampedeLoop
import StampedeSession
import StampedeWire
#if canImport(Glibc)
import Glibc
#endif

// The hub server, one concern per file in this folder:
// - HubServer.swift: configuration, public API, faults, the loop's callbacks, the socket table;
//   HubServer+Statistics.swift: what it counts.
// - HubServer+HTTP.swift: request routing and negotiate; the transports in
//   HubServer+WebSockets.swift, HubServer+ServerSentEvents.swift, HubServer+LongPolling.swift.
// - HubServer+Connections.swift: a hub connection's life (claim, end, dispose), its timers
//   (handshake timeout, keep-alive, client timeout) and output; HubServer+Handshake.swift: its
//   input up to the handshake; HubServer+StatefulReconnect.swift: ack, sequence and replay.
// - HubServer+Methods.swift: the hub methods and completions; HubServer+CounterStreams.swift,
//   HubServer+Broadcast.swift, and the groups in HubGroupTable.swift.
// - Records and helpers named after their types: HubSocket, HubConnection, HubStatefulState,
//   HubMethod, HubBroadcast, HubTokenKey, HubTimer, HubBytes, HubScratch.

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
        /// Negotiated ids no transport has claimed yet, kept at once. A negotiate beyond it
        /// disposes the oldest (`Statistics.unclaimedEvicted`): a flood of negotiates that are
        /// never followed by a transport holds bounded state, not `disconnectTimeout` worth of
        /// them. A real client claims its id within a round trip, so only a flood reaches it.
        public var maxUnclaimedNegotiations = 10_000
        /// A long poll with nothing to deliver is answered 200 empty after this long (s).
        public var pollTimeoutSeconds: Double = 15
        /// Largest hub message accepted (the handshake included); bigger closes the connection.
        public var maximumReceiveMessageSize = 32 * 1024
        /// Honour `useStatefulReconnect=true` in negotiate.
        public var allowStatefulReconnect = true
        /// Negotiate requires `Authorization: Bearer <token>`, as a hub behind an authorization
        /// policy would (others get 401); nil: anyone may negotiate.
        public var token: String? = nil
        /// Unacked bytes a stateful connection keeps for replay; beyond it the connection is closed.
        public var statefulReconnectBufferSize = 4 << 20
        /// Output limit and timeouts of every socket (see `ServerLimits`); `maxOutputBytes` also
        /// bounds a long-polling connection's messages waiting for a poll.
        public var limits = ServerLimits()
        public init() {}
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
    /// Negotiated ids not yet claimed, oldest first (HubServer+Connections.swift).
    var unclaimed = HubUnclaimedQueue()
    /// Handshaken connections: everyone a SendMessage reaches.
    var members: [HubConnection] = []
    var groups = HubGroupTable()
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
    /// `stampede serve --processes`: called with every SendMessage/SendToGroup broadcast as a
    /// record for the other server processes (HubServer+Backplane.swift). Set before the loop
    /// starts; called on the loop thread.
    public var remoteBroadcast: ((UnsafeRawBufferPointer) -> Void)?
    /// `--max-connections`: the limit on open WebSocket connections (shared by a `--processes`
    /// group), or nil. Set before the loop starts.
    public var connectionQuota: ConnectionQuota?
    var isShutDown = false
    var faults = FaultState()

    let keepAliveNs: UInt64
    let clientTimeoutNs: UInt64
    let handshakeTimeoutNs: UInt64
    let disconnectTimeoutNs: UInt64
    let pollTimeoutNs: UInt64
    let maxMessage: Int
    /// `configuration.token`'s bytes.
    let requiredToken: [UInt8]?

    /// Creates the server and starts listening on `address` (port 0 picks a free port).
    /// With `tls`, every connection speaks TLS first (https:// and wss://).
    public init(loop: EventLoop, address: SocketAddress, path: String = "/hub",
                configuration: Configuration = Configuration(), tls: TLSContext? = nil) throws(LoopError) {
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
        requiredToken = configuration.token.map { Array($0.utf8) }
        // The largest single write: a poll answer with a full queue, or a stateful replay (each
        // holds one message past its limit).
        let largest = max(configuration.limits.maxOutputBytes, configuration.statefulReconnectBufferSize) + maxMessage + 64 * 1024
        limits = configuration.limits.effective(forLargestWrite: largest, highWaterMark: 0)
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
        case .delay:
            break  // not acted out by the hub yet (`supportsDelay` is false)
        }
    }

    /// The statistics and the fault state as one JSON line. Call on the loop thread.
    public func statusJSON() -> String {
        "{\"server\":\"hub\",\"path\":\"\(path)\",\"port\":\(port),\"rejectingSeconds\":\(faults.rejectingSecondsLeft() ?? 0),"
            + statisticsJSONMembers(statisticsNow()) + "}"
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
}
