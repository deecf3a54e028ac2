import Foundation
import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeSession
import StampedeWire

/// Everything one loop's hub clients share: where the hub is and what each client does.
public struct HubPlan: Sendable {
    public var totalClients: Int
    /// Global indices of the clients on this loop.
    public var globalIndices: [Int]
    public var connectRate: Double
    public var loadModel: LoadModel
    /// Open model: calls per second over all clients.
    public var totalRate: Double
    public var thinkTimeNs: UInt64
    /// Size of the `{stamp}` argument text.
    public var messageSize: Int
    public var spec: HubSpec
    /// The hub's base URL (negotiate is appended to its path).
    public var base: HubURL
    /// The bearer token, already resolved (never logged).
    public var accessToken: String?
    /// Extra request headers, rendered `Name: value\r\n`.
    public var extraHeaderLines: [UInt8]
    public var connectTimeoutNs: UInt64
    public var maxMessageBytes: Int
    public var sourceAddresses: [UInt32]
    public var runTag: String
    /// Open model: what happens to calls that fall due while a client is reconnecting (waiting
    /// for its reconnect delay, or restarting: negotiate, transport, handshake, join). A stateful
    /// resume is not a disconnect for this purpose: there, as in the official clients, the
    /// connection stays Connected and calls wait in the replay buffer.
    public var whileDisconnected: DisconnectedSends = .drop
    /// Seeds the open model's permutation of send slots (the scenario's seed).
    public var seed: UInt64 = 0
    /// `queue`: the most calls one client keeps while it reconnects. The queue is only a count
    /// (sequence numbers; each call is written when it is sent), so this bounds the burst a
    /// client sends when it is back, not memory; when it is full the oldest call is dropped and
    /// counted (`dropped_while_disconnected`), as an app's bounded send queue would.
    public var maxQueuedWhileDisconnected: UInt32 = 10_000

    public init(totalClients: Int, globalIndices: [Int], connectRate: Double, loadModel: LoadModel, totalRate: Double,
                thinkTimeNs: UInt64, messageSize: Int, spec: HubSpec, base: HubURL, accessToken: String?,
                extraHeaderLines: [UInt8], connectTimeoutNs: UInt64, maxMessageBytes: Int, sourceAddresses: [UInt32], runTag: String) {
        self.totalClients = totalClients; self.globalIndices = globalIndices; self.connectRate = connectRate
        self.loadModel = loadModel; self.totalRate = totalRate; self.thinkTimeNs = thinkTimeNs; self.messageSize = messageSize
        self.spec = spec; self.base = base; self.accessToken = accessToken; self.extraHeaderLines = extraHeaderLines
        self.connectTimeoutNs = connectTimeoutNs; self.maxMessageBytes = maxMessageBytes; self.sourceAddresses = sourceAddresses
        self.runTag = runTag
    }
}

/// Simulated ASP.NET Core SignalR clients, modelled on the official ones, for one event loop,
/// generic over the hub protocol so the per-message code is specialised for JSON or MessagePack.
/// A bare §N in this file is a section of docs/protocols.md, the protocol facts they follow.
///
/// Each client owns up to two TCP connections: `main` (the WebSocket, the SSE stream or the
/// long poll) and `side` (negotiate, and the POSTs that carry client messages on SSE and long
/// polling). Latency stamps travel inside the invocation id (ids are the caller's choice), so
/// a Completion or StreamItem carries its own send times and no per-call table is kept.
public final class HubClients<Codec: HubProtocolCodec>: EventLoopHandler, LoopWorkload, @unchecked Sendable {
    enum Phase: UInt8 { case idle, negotiating, connecting, handshaking, joining, connected, waitingToReconnect, closing, ended }
    enum MainState: UInt8 { case none, tcp, wsUpgrade, wsOpen, sseHead, sseStream, pollFirst, pollWaiting, pollIdle }
    enum SideState: UInt8 { case none, tcp, idle, negotiate, post, delete }
    enum Role: UInt8 { case main = 1, side = 2 }

    struct Client {
        var phase: Phase = .idle
        var epoch: UInt32 = 0
        var transportIndex = 0
        var transport: HubTransport = .webSockets
        var base: HubURL
        /// Where `base` is, and its Host header value (both change with a negotiate redirect).
        var address: SocketAddress
        var hostHeader: [UInt8]
        var redirects = 0
        var redirectToken: String? = nil
        var negotiated: NegotiatedConnection? = nil
        var main = ConnectionID(index: .max, generation: 0)
        var side = ConnectionID(index: .max, generation: 0)
        var mainState = MainState.none
        var sideState = SideState.none
        var mainHTTP = HTTPResponseParser()
        var sideHTTP = HTTPResponseParser()
        var sse = SSEParser()
        /// SSE body bytes not yet consumed by the event parser.
        var sseBytes: [UInt8] = []
        var receiver = WebSocketReceiver(role: .client, maxMessageBytes: 1)
        var closeHandshake = WebSocketCloseHandshake(role: .client)
        var wsKey = ""
        var sideBody: [UInt8] = []
        var sideStatus = 0
        /// Framed hub messages waiting for the side connection (SSE and long polling).
        var postQueue: [UInt8] = []
        /// The POST and poll requests of this connection, built once (they are sent per message).
        var postRequest: HTTPClientRequest? = nil
        var pollRequest: HTTPClientRequest? = nil
        /// Hub bytes received but not yet a complete message.
        var inbound: [UInt8] = []
        var handshakeDone = false
        /// Open model: the next sequence number to send, and the first not yet due; the calls in
        /// between are due and not yet sent (deferred by backpressure, or queued while reconnecting).
        var nextSequence: UInt32 = 0
        var dueSequence: UInt32 = 0
        var scheduleStartNs: UInt64 = 0
        /// The send chain's own epoch (the connection's `epoch` changes with every restart, and the
        /// open-model chain goes on through a reconnect); replaced only when a chain is restarted.
        var sendEpoch: UInt32 = 0
        /// Open model: a send chain is running (a timer of `sendEpoch` is pending).
        var sendChain = false
        var outstanding: UInt32 = 0
        var lastSentNs: UInt64 = 0
        var lastReceivedNs: UInt64 = 0
        var phaseStartNs: UInt64 = 0
        var reconnect = ReconnectTimeline()
        var everConnected = false
        /// Stateful reconnect (§6): numbered messages sent and received on this logical
        /// connection, the sent ones not yet acknowledged, and the resume bookkeeping.
        var stateful = false
        var sentSequence: UInt64 = 0
        var receivedSequence: UInt64 = 0
        var ackedReceived: UInt64 = 0
        var replay: [UInt8] = []
        var replayEnds: [(id: UInt64, end: Int)] = []
        var awaitingSequence = false
        var duplicatesToSkip: UInt64 = 0
        var resuming = false
        /// Streams in flight when cancelling after N items: (sequence, items so far, cancelled).
        /// A few slots per client; a stream that finds none is simply read to the end.
        var streams: [StreamTrack] = []
        var storm = StormClientTrack()
        /// Churn: this client left and is joining again as a new user.
        var churnJoining = false
        var churnGeneration: UInt32 = 0
        init(base: HubURL, address: SocketAddress, hostHeader: [UInt8]) {
            self.base = base; self.address = address; self.hostHeader = hostHeader
        }
    }

    struct StreamTrack {
        var sequence: UInt32 = .max
        var items = 0
        var cancelled = false
    }

    public let loop: EventLoop
    public let plan: HubPlan
    public var metrics = MetricsShard()
    var random: FastRandom
    var clients: [Client]
    var slotClient: [Int32] = []
    var slotRole: [UInt8] = []
    var scratch: UnsafeMutableRawBufferPointer
    let address: SocketAddress
    let hostHeader: [UInt8]
    let reconnectPolicy: ReconnectPolicy
    var userNames: [[UInt8]]
    var phase: ChatWorkload.Phase = .idle
    var schedule: LoadSchedule
    public private(set) var openCount = 0
    public private(set) var inFlightConnects = 0
    public private(set) var notYetStarted: Int
    public private(set) var totalOutstanding: UInt64 = 0
    var stormBook = StormBook()
    public var storms: [StormShard] { stormBook.shards }

    enum TimerKind: UInt8 { case connect = 1, send = 2, handshakeTimeout = 3, reconnect = 4, keepAliveSweep = 5, closeTimeout = 6, stallEnd = 7 }

    public init(loop: EventLoop, plan: HubPlan, address: SocketAddress, random: FastRandom) {
        self.loop = loop
        self.plan = plan
        self.address = address
        self.random = random
        hostHeader = HTTPClientRequest.hostValue(host: plan.base.host, port: plan.base.port, defaultPort: 80)
        clients = Array(repeating: Client(base: plan.base, address: address, hostHeader: hostHeader), count: plan.globalIndices.count)
        notYetStarted = plan.globalIndices.count
        reconnectPolicy = ReconnectPolicy(plan.spec.reconnect)
        userNames = plan.globalIndices.map { Array("\(plan.runTag)-user-\($0)".utf8) }
        schedule = LoadSchedule(totalClients: plan.totalClients, connectRate: plan.connectRate, loadModel: plan.loadModel,
                                totalRate: plan.totalRate, thinkTimeNs: plan.thinkTimeNs, seed: plan.seed)
        scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: max(64 * 1024, plan.messageSize * 2 + 4096), alignment: 16)
        loop.handler = self
    }

    deinit { scratch.deallocate() }

    // MARK: LoopWorkload

    public var reconnectingCount: Int {
        clients.reduce(0) { $0 + ($1.phase == .waitingToReconnect || $1.resuming ? 1 : 0) }
    }

    public var liveClients: Int {
        clients.reduce(0) { $0 + ($1.phase == .idle || $1.phase == .ended ? 0 : 1) }
    }

    public func beginRampUp(startNs: UInt64) {
        phase = .rampUp
        for (k, g) in plan.globalIndices.enumerated() {
            loop.schedule(at: schedule.connectTime(start: startNs, globalIndex: g), token: token(.connect, k))
        }
        loop.schedule(at: startNs + 1_000_000_000, token: token(.keepAliveSweep, 0))
    }

    public func beginMessages(startNs: UInt64, endNs: UInt64) {
        phase = .messages
        guard schedule.beginMessages(endNs: endNs), plan.spec.operation != .none, plan.spec.call != nil else { return }
        for (k, g) in plan.globalIndices.enumerated() where clients[k].phase == .connected {
            let first = schedule.firstSend(start: startNs, globalIndex: g, random: &random)
            clients[k].scheduleStartNs = first
            if schedule.isInPhase(first) {
                loop.schedule(at: first, token: sendToken(k))
                clients[k].sendChain = plan.loadModel == .open
            }
        }
    }

    public func beginDrain() {
        if phase == .messages || phase == .rampUp { phase = .draining }
    }

    public func closeAll(lostReason: LossReason) {
        phase = .closing
        for k in clients.indices {
            dropDue(k)  // due (queued or deferred) and never sent
            loseOutstanding(k, lostReason)
            switch clients[k].phase {
            case .idle, .ended: continue
            case .waitingToReconnect:
                setPhase(k, .ended)
            case let p where Self.isConnecting(p):
                // Negotiate, connect, handshake or join cut off: nothing timed out or failed.
                fail(k, .interrupted)
            default:
                closeGracefully(k)
            }
        }
    }

    // MARK: Timers

    @inline(__always) func token(_ kind: TimerKind, _ client: Int, epoch: UInt32 = 0) -> TimerToken {
        TimerToken(kind, slot: client, epoch: epoch)
    }

    @inline(__always) func sendToken(_ k: Int) -> TimerToken { token(.send, k, epoch: clients[k].sendEpoch) }

    public func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {
        let k = token.index
        let epoch = token.epoch
        switch token.kind(as: TimerKind.self) {
        case .connect:
            notYetStarted -= 1
            if phase == .rampUp { start(k) }
        case .send:
            // A chain that was replaced (a restarted schedule) stops here.
            guard clients[k].sendEpoch == epoch else { return }
            guard phase == .messages else { clients[k].sendChain = false; return }
            switch plan.loadModel {
            case .open:
                if clients[k].phase == .connected {
                    clients[k].dueSequence += 1
                    sendDue(k)
                } else if isReconnecting(k) {
                    // Calls keep falling due while the client reconnects: dropped and counted, or
                    // queued for after the handshake (issue 4, item 4).
                    dueWhileDisconnected(k)
                } else {
                    clients[k].sendChain = false  // ended: nothing more is due
                    return
                }
                let next = deadline + schedule.intervalNs
                if schedule.isInPhase(next) { loop.schedule(at: next, token: token) } else { clients[k].sendChain = false }
            case .closed:
                // Closed model: nothing is due while disconnected; the chain starts again on reconnect.
                guard clients[k].phase == .connected else { return }
                let seq = clients[k].nextSequence
                clients[k].nextSequence += 1
                call(k, sequence: seq, intendedNs: deadline)
            }
        case .handshakeTimeout:
            guard clients[k].epoch == epoch, clients[k].phase == .handshaking || clients[k].phase == .negotiating
                    || clients[k].phase == .connecting else { return }
            fail(k, clients[k].phase == .handshaking ? .handshakeTimeout : .connectTimeout)
        case .reconnect:
            guard clients[k].epoch == epoch, clients[k].phase == .waitingToReconnect else { return }
            if phase == .closing { setPhase(k, .ended); return }
            start(k)
        case .closeTimeout:
            guard clients[k].epoch == epoch, clients[k].phase == .closing else { return }
            closeMain(k)
            closeSide(k)
            setPhase(k, .ended)
        case .stallEnd:
            // A stall's epoch is its storm's index: only the stall of that storm ends here.
            guard clients[k].mainState != .none, loop.isReadingPaused(clients[k].main) else { return }
            loop.pauseReading(clients[k].main, false)
            clients[k].lastReceivedNs = EventLoop.now()
            if clients[k].storm.storm == Int32(truncatingIfNeeded: epoch) { stormRecovered(k) }
        case .keepAliveSweep:
            keepAliveSweep(now: EventLoop.now())
            if phase != .closing { loop.schedule(at: deadline + 1_000_000_000, token: token) }
        case nil:
            break
        }
    }

    /// Once a second: ping clients that sent nothing for a keep-alive interval, and fail those
    /// that heard nothing for the server timeout (§5). Long polling has neither.
    func keepAliveSweep(now: UInt64) {
        let keepAlive = nanoseconds(plan.spec.keepAliveSeconds)
        let serverTimeout = nanoseconds(plan.spec.serverTimeoutSeconds)
        for k in clients.indices where clients[k].phase == .connected || clients[k].phase == .joining {
            // Long polling has no keep-alive; a stalled client is frozen and judges nothing.
            guard clients[k].transport != .longPolling, !loop.isReadingPaused(clients[k].main) else { continue }
            if now - clients[k].lastReceivedNs >= serverTimeout {
                fail(k, .serverTimeout)
                continue
            }
            if now - clients[k].lastSentNs >= keepAlive {
                sendHub(k, numbered: false) { out in Codec.writePing(into: out) }
            }
            // Stateful reconnect: acknowledge what arrived, coalesced to about once a second (§6).
            if clients[k].stateful && !clients[k].resuming && clients[k].receivedSequence > clients[k].ackedReceived {
                let id = clients[k].receivedSequence
                clients[k].ackedReceived = id
                sendHub(k, numbered: false) { out in Codec.writeAck(into: out, sequenceId: id) }
            }
        }
    }

    // MARK: Phases

    static func isConnecting(_ p: Phase) -> Bool { p == .negotiating || p == .connecting || p == .handshaking || p == .joining }

    /// Moves a client to `next`, keeping `openCount` and `inFlightConnects` equal to the number of
    /// clients connected and connecting.
    func setPhase(_ k: Int, _ next: Phase) {
        let old = clients[k].phase
        guard old != next else { return }
        if Self.isConnecting(old) { inFlightConnects -= 1 }
        if old == .connected { openCount -= 1; metrics.count(.disconnected) }
        if Self.isConnecting(next) { inFlightConnects += 1 }
        if next == .connected { openCount += 1 }
        clients[k].phase = next
    }

    // MARK: Connecting

    /// Starts (or restarts) a client: negotiate unless skipped, then the transport.
    func start(_ k: Int) {
        clients[k].epoch &+= 1
        clients[k].base = plan.base
        clients[k].address = address
        clients[k].hostHeader = hostHeader
        clients[k].redirects = 0
        clients[k].redirectToken = nil
        clients[k].transportIndex = 0
        clients[k].handshakeDone = false
        clients[k].inbound.removeAll(keepingCapacity: true)
        clients[k].postQueue.removeAll(keepingCapacity: true)
        clients[k].postRequest = nil
        clients[k].pollRequest = nil
        resetStatefulState(k)
        clients[k].phaseStartNs = EventLoop.now()
        metrics.count(.connectAttempts)
        loop.schedule(at: EventLoop.now() + nanoseconds(plan.spec.handshakeTimeoutSeconds) + plan.connectTimeoutNs * 2,
                      token: token(.handshakeTimeout, k, epoch: clients[k].epoch))
        if plan.spec.skipNegotiation {
            clients[k].negotiated = nil
            clients[k].transport = .webSockets
            setPhase(k, .connecting)
            openMain(k)
        } else {
            negotiate(k)
        }
    }

    func resetStatefulState(_ k: Int) {
        clients[k].stateful = false
        clients[k].sentSequence = 0
        clients[k].receivedSequence = 0
        clients[k].ackedReceived = 0
        clients[k].replay.removeAll(keepingCapacity: false)
        clients[k].replayEnds.removeAll(keepingCapacity: false)
        clients[k].awaitingSequence = false
        clients[k].duplicatesToSkip = 0
        clients[k].resuming = false
    }

    func negotiate(_ k: Int) {
        setPhase(k, .negotiating)
        clients[k].phaseStartNs = EventLoop.now()
        if clients[k].sideState == .idle {
            sendNegotiate(k)
        } else {
            openSide(k)
        }
    }

    func openSide(_ k: Int) { open(k, .side) }
    func openMain(_ k: Int) { open(k, .main) }

    /// (Re)opens one of the client's two connections.
    func open(_ k: Int, _ role: Role) {
        if role == .main { closeMain(k) } else { closeSide(k) }
        switch connect(k) {
        case .success(let id):
            if role == .main {
                clients[k].main = id
                clients[k].mainState = .tcp
                clients[k].mainHTTP = HTTPResponseParser()
            } else {
                clients[k].side = id
                clients[k].sideState = .tcp
                clients[k].sideHTTP = HTTPResponseParser()
            }
            bind(id, k, role)
        case .failure(let e):
            fail(k, ErrorClass.connectFailure(e.errno))
        }
    }

    func connect(_ k: Int) -> Result<ConnectionID, LoopError> {
        let source = plan.sourceAddresses.isEmpty ? nil : plan.sourceAddresses[k % plan.sourceAddresses.count]
        return loop.connect(to: clients[k].address, from: source, timeoutNs: plan.connectTimeoutNs)
    }

    func bind(_ id: ConnectionID, _ k: Int, _ role: Role) {
        let i = Int(id.index)
        if i >= slotClient.count {
            let grow = i + 1 - slotClient.count + 64
            slotClient.append(contentsOf: repeatElement(-1, count: grow))
            slotRole.append(contentsOf: repeatElement(0, count: grow))
        }
        slotClient[i] = Int32(k)
        slotRole[i] = role.rawValue
    }

    @inline(__always)
    func owner(_ id: ConnectionID) -> (client: Int, role: Role)? {
        let i = Int(id.index)
        guard i < slotClient.count, slotClient[i] >= 0 else { return nil }
        let k = Int(slotClient[i])
        if clients[k].main == id && slotRole[i] == Role.main.rawValue { return (k, .main) }
        if clients[k].side == id && slotRole[i] == Role.side.rawValue { return (k, .side) }
        return nil
    }

    func closeMain(_ k: Int) {
        if clients[k].mainState != .none { loop.close(clients[k].main) }
        clients[k].mainState = .none
        clients[k].main = ConnectionID(index: .max, generation: 0)
    }

    /// Forgets the main connection and lets the loop close it once its output (a Close) is written.
    func closeMainAfterFlush(_ k: Int) {
        if clients[k].mainState != .none { loop.closeAfterFlush(clients[k].main) }
        clients[k].mainState = .none
        clients[k].main = ConnectionID(index: .max, generation: 0)
    }

    /// Writes the WebSocket Close frame a close-handshake step calls for, if any.
    func writeClose(_ k: Int, _ step: WebSocketCloseHandshake.Step) {
        loop.writeMaskedClose(clients[k].main, step, key: UInt32(truncatingIfNeeded: random.next()))
    }

    func closeSide(_ k: Int) {
        if clients[k].sideState != .none { loop.close(clients[k].side) }
        clients[k].sideState = .none
        clients[k].side = ConnectionID(index: .max, generation: 0)
    }

    static func perTransport(_ t: HubTransport, _ ws: Counter, _ sse: Counter, _ lp: Counter) -> Counter {
        switch t {
        case .webSockets: ws
        case .serverSentEvents: sse
        case .longPolling: lp
        }
    }

    // MARK: HTTP requests

    /// Builds a request; the token goes in the Authorization header unless `tokenInTarget`.
    func makeRequest(_ k: Int, method: HTTPMethod, target: String, accept: StaticString? = nil,
                     contentType: StaticString? = nil, tokenInTarget: Bool = false) -> HTTPClientRequest {
        let bearer = tokenInTarget ? nil : clients[k].redirectToken ?? plan.accessToken
        return HTTPClientRequest(method: method, target: Array(target.utf8), host: clients[k].hostHeader,
                                 bearerToken: bearer.map { Array($0.utf8) },
                                 accept: accept.map { Array(String(describing: $0).utf8) },
                                 contentType: contentType.map { Array(String(describing: $0).utf8) },
                                 extraHeaderLines: plan.extraHeaderLines)
    }

    func sendRequest(_ k: Int, on id: ConnectionID, method: HTTPMethod, target: String, accept: StaticString? = nil,
                     contentType: StaticString? = nil, body: UnsafeRawBufferPointer? = nil, tokenInTarget: Bool = false) {
        send(makeRequest(k, method: method, target: target, accept: accept, contentType: contentType, tokenInTarget: tokenInTarget),
             on: id, body: body)
    }

    /// Writes a request (head and body) on `id`.
    func send(_ request: HTTPClientRequest, on id: ConnectionID, body: UnsafeRawBufferPointer? = nil) {
        let headLength = request.headLength(contentLength: body?.count)
        loop.write(id, reserving: headLength + (body?.count ?? 0)) { out in
            request.write(into: UnsafeMutableRawBufferPointer(start: out, count: headLength + (body?.count ?? 0)), body: body) ?? 0
        }
    }

    func sendNegotiate(_ k: Int) {
        clients[k].sideState = .negotiate
        clients[k].sideBody.removeAll(keepingCapacity: true)
        let target = clients[k].base.negotiateTarget(version: plan.spec.negotiateVersion, statefulReconnect: plan.spec.statefulReconnect)
        sendRequest(k, on: clients[k].side, method: .post, target: target, contentType: "text/plain;charset=UTF-8",
                    body: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// The transport URL with `id`; browsers put the token in the query only where they cannot
    /// set headers (WebSocket and EventSource), which `tokenInQuery` simulates.
    func transportTarget(_ k: Int, forStream: Bool = false) -> String {
        let token = plan.spec.tokenInQuery && forStream ? (clients[k].redirectToken ?? plan.accessToken) : nil
        return clients[k].base.transportTarget(id: clients[k].negotiated?.idForRequests, accessToken: token)
    }

    /// POSTs whatever is queued, if the side connection is free (one POST in flight, §2).
    func flushPosts(_ k: Int) {
        guard clients[k].sideState == .idle, !clients[k].postQueue.isEmpty else { return }
        clients[k].sideState = .post
        if clients[k].postRequest == nil {
            clients[k].postRequest = makeRequest(k, method: .post, target: transportTarget(k),
                                                 contentType: plan.spec.protocolKind == .json ? "text/plain;charset=UTF-8" : "application/octet-stream")
        }
        let request = clients[k].postRequest!
        clients[k].postQueue.withUnsafeBytes { body in send(request, on: clients[k].side, body: body) }
        clients[k].postQueue.removeAll(keepingCapacity: true)
    }

    // MARK: Choosing and opening a transport

    func negotiated(_ k: Int, _ body: [UInt8]) {
        switch NegotiateResponse.parse(body, askedStatefulReconnect: plan.spec.statefulReconnect) {
        case .failure:
            fail(k, .negotiateFailed)
        case .success(.error):
            fail(k, .negotiateFailed)
        case .success(.redirect(let url, let token)):
            clients[k].redirects += 1
            // The official clients give up after 100 redirects; Stampede also never leaves loopback.
            guard clients[k].redirects <= 100, let next = HubURL.parse(url), let nextAddress = SocketAddress(host: next.host, port: next.port),
                  nextAddress.isLoopback else {
                fail(k, .negotiateFailed)
                return
            }
            clients[k].base = next
            if let token { clients[k].redirectToken = token }
            if nextAddress == clients[k].address && clients[k].sideState == .idle {
                sendNegotiate(k)
            } else {
                clients[k].address = nextAddress
                clients[k].hostHeader = HTTPClientRequest.hostValue(host: next.host, port: next.port, defaultPort: 80)
                openSide(k)
            }
        case .success(.connect(let connection)):
            metrics.record(.negotiate, nanoseconds: EventLoop.now() - clients[k].phaseStartNs)
            clients[k].negotiated = connection
            clients[k].transportIndex = 0
            openNextTransport(k)
        }
    }

    /// Opens the first transport (from the current index on) that the scenario allows and the server offers.
    func openNextTransport(_ k: Int) {
        let wanted = plan.spec.transports
        while clients[k].transportIndex < wanted.count {
            let t = wanted[clients[k].transportIndex]
            if clients[k].negotiated?.offers(t, for: plan.spec.protocolKind) ?? (t == .webSockets) {
                clients[k].transport = t
                setPhase(k, .connecting)
                clients[k].phaseStartNs = EventLoop.now()
                if t == .webSockets { closeSide(k) }
                openMain(k)
                return
            }
            clients[k].transportIndex += 1
        }
        fail(k, .noTransport)
    }

    func mainConnected(_ k: Int) {
        let id = clients[k].main
        metrics.record(.tcpConnect, nanoseconds: EventLoop.now() - clients[k].phaseStartNs)
        clients[k].phaseStartNs = EventLoop.now()
        switch clients[k].transport {
        case .webSockets:
            clients[k].mainState = .wsUpgrade
            clients[k].receiver = WebSocketReceiver(role: .client, maxMessageBytes: plan.maxMessageBytes)
            clients[k].closeHandshake = WebSocketCloseHandshake(role: .client)
            let key = WebSocketHandshake.makeKey(using: &random)
            clients[k].wsKey = key
            var headers: [(String, String)] = []
            if !plan.spec.tokenInQuery, let t = clients[k].redirectToken ?? plan.accessToken { headers.append(("Authorization", "Bearer " + t)) }
            let extra = String(decoding: plan.extraHeaderLines, as: UTF8.self)
            for line in extra.split(separator: "\r\n") {
                if let colon = line.firstIndex(of: ":") {
                    headers.append((String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)))
                }
            }
            let request = WebSocketHandshake.request(host: clients[k].base.host, port: clients[k].base.port, path: transportTarget(k, forStream: true), key: key,
                                                     subprotocol: nil, headers: headers)
            request.withUnsafeBytes { loop.write(id, $0) }
        case .serverSentEvents:
            clients[k].mainState = .sseHead
            clients[k].sse = SSEParser(maxEventBytes: plan.maxMessageBytes)
            clients[k].sseBytes.removeAll(keepingCapacity: true)
            sendRequest(k, on: id, method: .get, target: transportTarget(k, forStream: true), accept: "text/event-stream",
                        tokenInTarget: plan.spec.tokenInQuery)
        case .longPolling:
            clients[k].mainState = .pollFirst
            sendRequest(k, on: id, method: .get, target: transportTarget(k))
        }
    }

    /// The transport is up: send the handshake (§3) over it (WebSockets) or by POST (SSE, long polling).
    func transportOpened(_ k: Int) {
        metrics.record(.upgrade, nanoseconds: EventLoop.now() - clients[k].phaseStartNs)
        setPhase(k, .handshaking)
        clients[k].phaseStartNs = EventLoop.now()
        let stateful = plan.spec.statefulReconnect && clients[k].negotiated?.useStatefulReconnect == true && clients[k].transport == .webSockets
        if let n = HubHandshake.writeRequest(protocolName: Codec.protocolName, version: stateful ? 2 : 1, into: scratch) {
            // The handshake is JSON text whatever the hub protocol (§3).
            sendTransportBytes(k, UnsafeRawBufferPointer(rebasing: scratch[0..<n]), text: true)
        }
        clients[k].stateful = stateful
    }

    /// Stateful reconnect after an abrupt drop: the same URL and id again, no negotiate and no
    /// handshake (§6). On success the client never left Connected.
    func resume(_ k: Int) {
        clients[k].resuming = true
        clients[k].awaitingSequence = true
        metrics.count(.reconnectAttempts)
        stormAttempt(k)
        openMain(k)
    }

    /// The socket is back: tell the server where our numbering resumes, then replay what it has
    /// not acknowledged (it skips what it already processed).
    func resumed(_ k: Int) {
        clients[k].resuming = false
        metrics.count(.reconnected)
        stormRecovered(k)
        let first = clients[k].replayEnds.first?.id ?? clients[k].sentSequence + 1
        sendHub(k, numbered: false) { out in Codec.writeSequence(into: out, sequenceId: first) }
        clients[k].replay.withUnsafeBytes { bytes in
            var start = 0
            for entry in clients[k].replayEnds {
                sendTransportBytes(k, UnsafeRawBufferPointer(rebasing: bytes[start..<entry.end]), text: plan.spec.protocolKind == .json)
                start = entry.end
            }
        }
    }

    /// Sends framed hub bytes over the client's transport.
    func sendTransportBytes(_ k: Int, _ bytes: UnsafeRawBufferPointer, text: Bool) {
        clients[k].lastSentNs = EventLoop.now()
        metrics.count(.bytesSent, UInt64(bytes.count))
        switch clients[k].transport {
        case .webSockets:
            guard clients[k].mainState == .wsOpen else { return }
            loop.writeMaskedFrame(clients[k].main, opcode: text ? .text : .binary, payload: bytes, key: UInt32(truncatingIfNeeded: random.next()))
        case .serverSentEvents, .longPolling:
            clients[k].postQueue.append(contentsOf: bytes)
            flushPosts(k)
        }
    }

    /// Writes one hub message with `write` into the scratch buffer and sends it.
    /// `numbered`: message types 1–5, which stateful reconnect numbers and keeps until acknowledged.
    @inline(__always)
    func sendHub(_ k: Int, numbered: Bool = true, _ write: (UnsafeMutableRawBufferPointer) -> Int?) {
        guard let n = write(scratch) else { return }
        let bytes = UnsafeRawBufferPointer(rebasing: scratch[0..<n])
        if clients[k].stateful && numbered {
            clients[k].sentSequence += 1
            clients[k].replay.append(contentsOf: bytes)
            clients[k].replayEnds.append((clients[k].sentSequence, clients[k].replay.count))
            // While the socket is being reopened the message waits in the replay buffer.
            if clients[k].resuming { return }
        }
        sendTransportBytes(k, bytes, text: plan.spec.protocolKind == .json)
    }

    // MARK: Calls

    /// Open model: sends every due call the connection has room for, each stamped with its own
    /// intended time. Only once connected: calls due during a restart wait for the handshake (and join).
    func sendDue(_ k: Int) {
        guard clients[k].phase == .connected else { return }
        while clients[k].nextSequence < clients[k].dueSequence {
            if clients[k].transport == .webSockets && loop.isBackedUp(clients[k].main) {
                metrics.count(.sendsDeferred)
                return
            }
            let seq = clients[k].nextSequence
            call(k, sequence: seq, intendedNs: schedule.intended(first: clients[k].scheduleStartNs, sequence: seq))
            clients[k].nextSequence = seq + 1
        }
    }

    /// Whether client `k` is between losing its connection and having it back (its open-model
    /// send chain goes on meanwhile).
    @inline(__always)
    func isReconnecting(_ k: Int) -> Bool {
        clients[k].everConnected && (clients[k].phase == .waitingToReconnect || Self.isConnecting(clients[k].phase))
    }

    /// A call fell due while client `k` reconnects: `drop` counts it sent and lost now; `queue`
    /// keeps it (only its sequence number) for after the reconnect, up to the queue's bound.
    @inline(__always)
    func dueWhileDisconnected(_ k: Int) {
        clients[k].dueSequence += 1
        switch plan.whileDisconnected {
        case .drop: dropDue(k)
        case .queue: dropDue(k, keeping: plan.maxQueuedWhileDisconnected)
        }
    }

    /// Counts the calls that fell due and will not be sent — all but the newest `keeping` — as
    /// sent and lost (`dropped_while_disconnected`), oldest first.
    func dropDue(_ k: Int, keeping: UInt32 = 0) {
        let pending = clients[k].dueSequence &- clients[k].nextSequence
        guard clients[k].dueSequence > clients[k].nextSequence, pending > keeping else { return }
        let n = pending - keeping
        metrics.count(.messagesSent, UInt64(n))
        metrics.lose(.droppedWhileDisconnected, UInt64(n))
        clients[k].nextSequence += n
    }

    /// Makes the scenario's call, stamped: the stamp is the invocation id (so the reply carries
    /// it) and fills any `{stamp}` argument.
    func call(_ k: Int, sequence: UInt32, intendedNs: UInt64) {
        guard let spec = plan.spec.call else { return }
        let stamp = ChatStamp(sender: UInt32(plan.globalIndices[k]), sequence: sequence, intendedNs: intendedNs, actualNs: EventLoop.now())
        var stampBytes: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        let method = callMethod
        method.withUnsafeBytes { methodName in
        withUnsafeMutableBytes(of: &stampBytes) { raw in
            let n = ChatCodec.writeStamp(stamp, into: raw.baseAddress!)
            let stampText = UnsafeRawBufferPointer(rebasing: raw[0..<n])
            let id: HubInvocationID = .utf8(stampText)
            sendHub(k) { out in
                switch plan.spec.operation {
                case .invoke:
                    Codec.writeInvocation(into: out, invocationId: id, target: .utf8(methodName), streamIds: Self.noStreams) { w in
                        writeArguments(&w, spec.arguments, k: k, sequence: sequence, stamp: stampText)
                    }
                case .send:
                    Codec.writeInvocation(into: out, invocationId: nil, target: .utf8(methodName), streamIds: Self.noStreams) { w in
                        writeArguments(&w, spec.arguments, k: k, sequence: sequence, stamp: stampText)
                    }
                case .stream:
                    Codec.writeStreamInvocation(into: out, invocationId: id, target: .utf8(methodName), streamIds: Self.noStreams) { w in
                        writeArguments(&w, spec.arguments, k: k, sequence: sequence, stamp: stampText)
                    }
                case .upload:
                    withUnsafePointer(to: nextStreamId) { streamId in
                        Codec.writeInvocation(into: out, invocationId: id, target: .utf8(methodName),
                                              streamIds: UnsafeBufferPointer(start: streamId, count: 1)) { w in
                            writeArguments(&w, spec.arguments, k: k, sequence: sequence, stamp: stampText)
                        }
                    }
                case .none:
                    nil
                }
            }
            if plan.spec.operation == .upload {
                // Client-to-server stream (§4): items on the stream id, then a Completion ends it.
                let streamId = HubInvocationID.number(nextStreamId)
                for _ in 0..<plan.spec.uploadItems {
                    sendHub(k) { out in
                        Codec.writeStreamItem(into: out, invocationId: streamId) { w in
                            w.paddedString(prefix: stampText, totalLength: plan.messageSize, pad: UInt8(ascii: "x"))
                        }
                    }
                }
                sendHub(k) { out in Codec.writeCompletion(into: out, invocationId: streamId) }
                nextStreamId &+= 1
            }
        }
        }
        if plan.spec.operation == .stream, plan.spec.cancelStreamAfterItems != nil {
            if clients[k].streams.isEmpty { clients[k].streams = Array(repeating: StreamTrack(), count: 4) }
            if let slot = clients[k].streams.firstIndex(where: { $0.sequence == .max }) {
                clients[k].streams[slot] = StreamTrack(sequence: sequence, items: 0, cancelled: false)
            }
        }
        metrics.count(.messagesSent)
        metrics.count(Self.perTransport(clients[k].transport, .sentWebSockets, .sentServerSentEvents, .sentLongPolling))
        if plan.spec.operation == .send && plan.spec.receiveMethod == nil {
            // Nothing comes back for a send and no handler reports it: handing it to the transport is its delivery.
            metrics.count(.messagesDelivered)
        } else {
            clients[k].outstanding += 1
            totalOutstanding += 1
        }
    }

    /// An empty stream id list: MessagePack then writes the 6-item Invocation the official clients
    /// send (some peers fail on the valid 5-item form).
    static var noStreams: UnsafeBufferPointer<UInt64> { UnsafeBufferPointer(start: nil, count: 0) }

    /// Client-to-server stream ids (numeric, as the official clients' counters).
    var nextStreamId: UInt64 = 1
    /// The call's and the join's method names as bytes, made once.
    lazy var callMethod: [UInt8] = Array((plan.spec.call?.method ?? "").utf8)
    lazy var joinMethod: [UInt8] = Array((plan.spec.join?.method ?? "").utf8)
    /// Text arguments rendered once per client (those without `{sequence}`), by argument index.
    var renderedText: [[[UInt8]]] = []

    /// `cache`: render text arguments without `{sequence}` once per client (the call's arguments
    /// are written per message; building a String each time would allocate on the hot path).
    func writeArguments<W: HubValueWriter>(_ w: inout W, _ templates: [ArgumentTemplate], k: Int, sequence: UInt32,
                                           stamp: UnsafeRawBufferPointer, cache: Bool = true) {
        for (index, t) in templates.enumerated() {
            switch t {
            case .stamp: w.paddedString(prefix: stamp, totalLength: plan.messageSize, pad: UInt8(ascii: "x"))
            case .integer(let v): w.int(v)
            case .number(let v): w.double(v)
            case .boolean(let v): w.bool(v)
            case .null: w.null()
            case .text(let parts):
                if parts.count == 1, case .user = parts[0] {
                    userNames[k].withUnsafeBytes { w.string($0) }
                } else if cache && !parts.contains(.sequence) {
                    if renderedText.isEmpty { renderedText = Array(repeating: [], count: clients.count) }
                    if renderedText[k].isEmpty {
                        renderedText[k] = templates.map { t in
                            if case .text(let p) = t { Array(renderText(p, k: k, sequence: 0).utf8) } else { [] }
                        }
                    }
                    renderedText[k][index].withUnsafeBytes { w.string($0) }
                } else {
                    let text = renderText(parts, k: k, sequence: sequence)
                    text.utf8.withContiguousStorageIfAvailable { w.string(UnsafeRawBufferPointer($0)) }
                        ?? Array(text.utf8).withUnsafeBytes { w.string($0) }
                }
            }
        }
    }

    func renderText(_ parts: [TemplatePart], k: Int, sequence: UInt32) -> String {
        var s = ""
        for p in parts {
            switch p {
            case .literal(let l): s += l
            case .client: s += String(plan.globalIndices[k])
            case .clientModulo(let n): s += String(plan.globalIndices[k] % n)
            case .user: s += String(decoding: userNames[k], as: UTF8.self)
            case .sequence: s += String(sequence)
            }
        }
        return s
    }

    // MARK: Receiving hub messages

    /// Parses every complete hub message in `bytes` (prefixed by any earlier partial one).
    func receiveHub(_ k: Int, _ bytes: UnsafeRawBufferPointer) {
        clients[k].lastReceivedNs = EventLoop.now()
        if clients[k].inbound.isEmpty {
            let used = parseHub(k, bytes)
            if used < bytes.count, isAlive(k) { clients[k].inbound.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[used...])) }
        } else {
            clients[k].inbound.append(contentsOf: bytes)
            var pending = clients[k].inbound
            clients[k].inbound = []
            let used = pending.withUnsafeBytes { parseHub(k, $0) }
            if isAlive(k) {
                pending.removeFirst(used)
                clients[k].inbound = pending
            }
        }
    }

    func isAlive(_ k: Int) -> Bool { clients[k].phase != .ended && clients[k].phase != .waitingToReconnect && clients[k].phase != .idle }

    /// Returns the bytes used; stops at a partial message.
    func parseHub(_ k: Int, _ buffer: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        if !clients[k].handshakeDone {
            switch HubHandshake.parseResponse(buffer) {
            case .needMore:
                return 0
            case .error(let errorRange):
                noteHubError(buffer, errorRange, context: "handshake")
                fail(k, .handshakeFailed)
                return buffer.count
            case .invalid:
                fail(k, .handshakeFailed)
                return buffer.count
            case .success(let consumed):
                clients[k].handshakeDone = true
                offset = consumed
                handshakeCompleted(k)
                guard isAlive(k) else { return buffer.count }
            }
        }
        while offset < buffer.count {
            let rest = UnsafeRawBufferPointer(rebasing: buffer[offset...])
            switch Codec.parse(rest, maxMessageLength: plan.maxMessageBytes) {
            case .needMore:
                return offset
            case .failure:
                fail(k, .protocolError)
                return buffer.count
            case .message(let message, let consumed):
                handle(k, message, rest)
                offset += consumed
                guard isAlive(k) else { return buffer.count }
            }
        }
        return offset
    }

    func handshakeCompleted(_ k: Int) {
        metrics.record(.handshake, nanoseconds: EventLoop.now() - clients[k].phaseStartNs)
        if let join = plan.spec.join {
            setPhase(k, .joining)
            joinMethod.withUnsafeBytes { methodName in
                sendHub(k) { out in
                    Codec.writeInvocation(into: out, invocationId: "join", target: .utf8(methodName), streamIds: Self.noStreams) { w in
                        writeArguments(&w, join.arguments, k: k, sequence: 0, stamp: UnsafeRawBufferPointer(start: nil, count: 0), cache: false)
                    }
                }
            }
        } else {
            connected(k)
        }
    }

    func connected(_ k: Int) {
        setPhase(k, .connected)
        clients[k].reconnect.connected()
        metrics.count(.connected)
        metrics.count(Self.perTransport(clients[k].transport, .connectedWebSockets, .connectedServerSentEvents, .connectedLongPolling))
        if clients[k].everConnected {
            if clients[k].churnJoining {
                // A new user, not a reconnect: nothing was queued for it.
                clients[k].churnJoining = false
                metrics.count(.churnJoined)
            } else {
                metrics.count(.reconnected)
                stormRecovered(k)
            }
            if phase == .messages {
                switch plan.loadModel {
                case .open:
                    // The send chain went on during the gap: what was queued goes now, each call
                    // with its own intended time. A client without a running chain rejoins the schedule.
                    if !clients[k].sendChain { rejoinSchedule(k) }
                    sendDue(k)
                case .closed:
                    clients[k].sendEpoch &+= 1
                    if let next = schedule.nextAfterReply(now: EventLoop.now()) { loop.schedule(at: next, token: sendToken(k)) }
                }
            }
        }
        clients[k].everConnected = true
    }

    /// Open model: a reconnected client whose send chain had stopped (it was not connected when
    /// the message phase began) picks the schedule up where it is now; the calls before were
    /// never due for it, so they are not counted.
    func rejoinSchedule(_ k: Int) {
        guard schedule.intervalNs > 0 else { return }
        dropDue(k)  // nothing is pending without a chain; if something is, it is counted, not forgotten
        let now = EventLoop.now()
        let seqNow = now > clients[k].scheduleStartNs ? UInt32((now - clients[k].scheduleStartNs) / schedule.intervalNs) + 1 : 0
        clients[k].nextSequence = max(clients[k].nextSequence, seqNow)
        clients[k].dueSequence = clients[k].nextSequence
        clients[k].sendEpoch &+= 1
        let next = schedule.intended(first: clients[k].scheduleStartNs, sequence: clients[k].nextSequence)
        if schedule.isInPhase(next) {
            loop.schedule(at: next, token: sendToken(k))
            clients[k].sendChain = true
        }
    }

    func handle(_ k: Int, _ m: HubMessage, _ buffer: UnsafeRawBufferPointer) {
        if clients[k].stateful {
            switch m.messageType {
            case .invocation, .streamItem, .completion, .streamInvocation, .cancelInvocation:
                // After a resume everything before the server's Sequence is ignored, and replays
                // of messages already processed are skipped (§6).
                if clients[k].awaitingSequence { return }
                if clients[k].duplicatesToSkip > 0 { clients[k].duplicatesToSkip -= 1; return }
                clients[k].receivedSequence += 1
            case .ack:
                acknowledge(k, upTo: m.sequenceId)
                return
            case .sequence:
                let next = clients[k].receivedSequence + 1
                guard m.sequenceId <= next else { fail(k, .protocolError); return }
                clients[k].awaitingSequence = false
                clients[k].duplicatesToSkip = next - m.sequenceId
                return
            default:
                break
            }
        }
        switch m.messageType {
        case .completion:
            guard let idRange = m.invocationId else { return }
            let id = UnsafeRawBufferPointer(rebasing: buffer[idRange])
            if clients[k].phase == .joining && id.elementsEqual("join".utf8) {
                if let errorRange = m.error {
                    noteHubError(buffer, errorRange, context: "join")
                    fail(k, .hubError)
                    return
                }
                connected(k)
                return
            }
            guard let stamp = ChatCodec.parseStamp(id) else { return }  // unknown ids are ignored (§4)
            if let slot = streamSlot(k, stamp.sequence) {
                let cancelled = clients[k].streams[slot].cancelled
                clients[k].streams[slot] = StreamTrack()
                if cancelled { return }  // the call was complete when we cancelled it
            }
            guard clients[k].outstanding > 0 else { return }
            clients[k].outstanding -= 1
            totalOutstanding -= 1
            if let errorRange = m.error {
                metrics.count(.messagesFailed)
                metrics.error(.hubError)
                noteHubError(buffer, errorRange, context: nil)
            } else if !resultAsExpected(m, buffer, stamp: stamp) {
                metrics.count(.messagesFailed)
                metrics.error(.unexpectedReply)
            } else {
                let now = EventLoop.now()
                metrics.count(.messagesDelivered)
                metrics.record(.roundTrip, nanoseconds: now &- stamp.intendedNs)
                metrics.record(.roundTripUncorrected, nanoseconds: now &- stamp.actualNs)
            }
            if plan.loadModel == .closed && phase == .messages {
                if let next = schedule.nextAfterReply(now: EventLoop.now()) { loop.schedule(at: next, token: sendToken(k)) }
            }
        case .streamItem:
            guard let idRange = m.invocationId, let stamp = ChatCodec.parseStamp(UnsafeRawBufferPointer(rebasing: buffer[idRange])) else { return }
            if let slot = streamSlot(k, stamp.sequence) {
                if clients[k].streams[slot].cancelled { return }
                clients[k].streams[slot].items += 1
                metrics.count(.streamItems)
                metrics.record(.streamItem, nanoseconds: EventLoop.now() &- stamp.intendedNs)
                if let limit = plan.spec.cancelStreamAfterItems, clients[k].streams[slot].items >= limit {
                    cancelStream(k, slot: slot, id: UnsafeRawBufferPointer(rebasing: buffer[idRange]), stamp: stamp)
                }
                return
            }
            metrics.count(.streamItems)
            metrics.record(.streamItem, nanoseconds: EventLoop.now() &- stamp.intendedNs)
        case .invocation:
            guard let targetRange = m.target else { return }
            let target = UnsafeRawBufferPointer(rebasing: buffer[targetRange])
            if let idRange = m.invocationId {
                answerClientResult(k, target: target, id: UnsafeRawBufferPointer(rebasing: buffer[idRange]))
            }
            if let receive = plan.spec.receiveMethod, equalsIgnoringCase(target, receive), let args = m.arguments {
                received(k, buffer, args)
            }
        case .ping:
            break
        case .close:
            // §6: a Close with allowReconnect may reconnect; without it the close is final.
            let error = m.error != nil
            if let errorRange = m.error {
                metrics.error(.closedWithError)
                noteHubError(buffer, errorRange, context: "close")
            }
            if m.allowReconnect { drop(k, reason: error ? nil : nil) } else { end(k, failed: error ? .closedWithError : nil, reconnect: false) }
        case .streamInvocation, .cancelInvocation, .ack, .sequence, .none:
            break
        }
    }

    /// Keeps the server's error text for `hub_errors`: a Completion's as it is, others (`join`,
    /// `handshake`, `close`) prefixed with what produced them. Rare path: the String is fine here.
    func noteHubError(_ buffer: UnsafeRawBufferPointer, _ range: Range<Int>, context: String?) {
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: buffer[range]), as: UTF8.self)
        metrics.countHubError(context.map { "\($0): \(text)" } ?? text)
    }

    /// Checks a Completion's result against the scenario's `expect`.
    func resultAsExpected(_ m: HubMessage, _ buffer: UnsafeRawBufferPointer, stamp: ChatStamp) -> Bool {
        switch plan.spec.expectedResult {
        case .any:
            return true
        case .echo:
            guard let r = m.result, let contents = Codec.stringContents(buffer, value: r),
                  let echoed = ChatCodec.parseStamp(UnsafeRawBufferPointer(rebasing: buffer[contents])) else { return false }
            return echoed == stamp
        case .text(let expected):
            guard let r = m.result, let contents = Codec.stringContents(buffer, value: r) else { return false }
            return UnsafeRawBufferPointer(rebasing: buffer[contents]).elementsEqual(expected.utf8)
        }
    }

    func streamSlot(_ k: Int, _ sequence: UInt32) -> Int? {
        clients[k].streams.isEmpty ? nil : clients[k].streams.firstIndex { $0.sequence == sequence }
    }

    /// Cancels a stream (§4 CancelInvocation): from the client's side the call is then complete;
    /// a Completion or items the server sends after it are ignored.
    func cancelStream(_ k: Int, slot: Int, id: UnsafeRawBufferPointer, stamp: ChatStamp) {
        clients[k].streams[slot].cancelled = true
        sendHub(k) { out in Codec.writeCancelInvocation(into: out, invocationId: .utf8(id)) }
        metrics.count(.streamsCancelled)
        guard clients[k].outstanding > 0 else { return }
        clients[k].outstanding -= 1
        totalOutstanding -= 1
        let now = EventLoop.now()
        metrics.count(.messagesDelivered)
        metrics.record(.roundTrip, nanoseconds: now &- stamp.intendedNs)
        metrics.record(.roundTripUncorrected, nanoseconds: now &- stamp.actualNs)
        if plan.loadModel == .closed && phase == .messages {
            if let next = schedule.nextAfterReply(now: now) { loop.schedule(at: next, token: sendToken(k)) }
        }
    }

    /// Drops replay-buffered messages the server has acknowledged.
    func acknowledge(_ k: Int, upTo id: UInt64) {
        var dropCount = 0
        var dropBytes = 0
        for entry in clients[k].replayEnds {
            guard entry.id <= id else { break }
            dropCount += 1
            dropBytes = entry.end
        }
        guard dropCount > 0 else { return }
        clients[k].replay.removeFirst(dropBytes)
        clients[k].replayEnds.removeFirst(dropCount)
        for i in clients[k].replayEnds.indices { clients[k].replayEnds[i].end -= dropBytes }
    }

    /// A server-to-client invocation with an id expects a Completion (client results, §4).
    func answerClientResult(_ k: Int, target: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer) {
        if let result = plan.spec.clientResults.first(where: { equalsIgnoringCase(target, $0.method) }) {
            let value = Array(result.value.utf8)
            sendHub(k) { out in
                value.withUnsafeBytes { v in Codec.writeCompletion(into: out, invocationId: .utf8(id), result: { w in w.string(v) }) }
            }
            metrics.count(.clientResults)
        } else {
            sendHub(k) { out in Codec.writeCompletion(into: out, invocationId: .utf8(id), error: "Client didn't provide a result.") }
        }
    }

    /// A `receive` handler call: find a stamp in its string arguments.
    func received(_ k: Int, _ buffer: UnsafeRawBufferPointer, _ args: Range<Int>) {
        guard let count = Codec.arrayCount(buffer, array: args) else { return }
        for i in 0..<count {
            guard let element = Codec.arrayElement(buffer, array: args, at: i),
                  let contents = Codec.stringContents(buffer, value: element),
                  let stamp = ChatCodec.parseStamp(UnsafeRawBufferPointer(rebasing: buffer[contents])) else { continue }
            let now = EventLoop.now()
            if Int(stamp.sender) == plan.globalIndices[k] {
                guard plan.spec.operation == .send, clients[k].outstanding > 0 else { return }
                clients[k].outstanding -= 1
                totalOutstanding -= 1
                metrics.count(.messagesDelivered)
                metrics.record(.roundTrip, nanoseconds: now &- stamp.intendedNs)
                metrics.record(.roundTripUncorrected, nanoseconds: now &- stamp.actualNs)
                if plan.loadModel == .closed && phase == .messages {
                    if let next = schedule.nextAfterReply(now: now) { loop.schedule(at: next, token: sendToken(k)) }
                }
            } else {
                metrics.count(.fanoutReceived)
                metrics.record(.fanout, nanoseconds: now &- stamp.intendedNs)
                metrics.record(.fanoutUncorrected, nanoseconds: now &- stamp.actualNs)
            }
            return
        }
    }

    func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ name: String) -> Bool {
        // Hub method names are case-insensitive in ASP.NET Core.
        var i = 0
        for c in name.utf8 {
            guard i < bytes.count, bytes[i] | 0x20 == c | 0x20 else { return false }
            i += 1
        }
        return i == bytes.count
    }

    // MARK: Ending

    func loseOutstanding(_ k: Int, _ reason: LossReason) {
        if clients[k].outstanding > 0 {
            metrics.lose(reason, UInt64(clients[k].outstanding))
            totalOutstanding -= UInt64(clients[k].outstanding)
            clients[k].outstanding = 0
        }
    }

    /// Fails a client with `error`: counted, connections dropped, reconnect if the policy says so.
    func fail(_ k: Int, _ error: ErrorClass) {
        metrics.error(error)
        end(k, failed: error, reconnect: true)
    }

    /// The connection dropped without a final Close: reconnect if the policy says so.
    func drop(_ k: Int, reason: ErrorClass?) {
        end(k, failed: reason, reconnect: true)
    }

    func end(_ k: Int, failed: ErrorClass?, reconnect: Bool) {
        noteDropped(k)
        if Self.isConnecting(clients[k].phase) && !clients[k].everConnected { metrics.count(.connectFailed) }
        loseOutstanding(k, phase == .closing ? .interrupted : .connectionClosed)
        closeMain(k)
        closeSide(k)
        clients[k].epoch &+= 1
        if reconnect && phase != .closing && failed != .handshakeFailed,
           let next = clients[k].reconnect.failed(atNs: EventLoop.now(), policy: reconnectPolicy, unitRandom: random.unit()) {
            setPhase(k, .waitingToReconnect)
            metrics.count(.reconnectAttempts)
            stormAttempt(k)
            loop.schedule(at: next, token: token(.reconnect, k, epoch: clients[k].epoch))
        } else {
            dropDue(k)  // queued calls that will never get a connection
            if phase != .closing { stormBook.gaveUp(&clients[k].storm) }
            setPhase(k, .ended)
        }
    }

    func stormAttempt(_ k: Int) {
        stormBook.attempt(&clients[k].storm, nowNs: EventLoop.now())
    }

    func stormRecovered(_ k: Int) {
        stormBook.recovered(&clients[k].storm, nowNs: EventLoop.now())
    }

    /// A connected client lost its connection after a server or command event: one of the
    /// clients that event affected (unless a storm already tracks it).
    func noteDropped(_ k: Int) {
        guard clients[k].everConnected, phase != .closing,
              clients[k].phase == .connected || clients[k].phase == .joining else { return }
        stormBook.dropped(&clients[k].storm)
    }

    /// Event `index` at `atNs`: from now until the next event, clients whose connection drops
    /// (a server fault, a restart by an external command) are counted as affected by it.
    public func watch(index: Int, atNs: UInt64) { stormBook.watch(index: index, atNs: atNs) }

    /// Storm `index`: `fraction` of the connected clients lose their connection now — an abrupt
    /// reset, or a clean client-side close (Close message, then the transport) — and reconnect
    /// by their policy (or resume, with stateful reconnect, after a reset); or, `.stall`, they
    /// stop reading for `stallNs`.
    public func storm(index: Int, atNs: UInt64, fraction: Double, mode: StormMode, stallNs: UInt64) {
        if index >= 0 { watch(index: index, atNs: atNs) }
        for k in clients.indices where clients[k].phase == .connected && clients[k].mainState != .none {
            guard random.unit() < fraction else { continue }
            if index >= 0 {
                stormBook.hit(&clients[k].storm, storm: index)
            }
            switch mode {
            case .reset:
                loop.close(clients[k].main, reset: true)
                mainLost(k, .reset)
            case .close:
                leaveWithClose(k)
                drop(k, reason: nil)
            case .stall:
                guard index >= 0 else { continue }
                loop.pauseReading(clients[k].main, true)
                loop.schedule(at: atNs + stallNs, token: token(.stallEnd, k, epoch: UInt32(index)))
            }
        }
    }

    /// A client-side leave: a Close message, then the main transport goes (on WebSockets after a
    /// Close frame, once both are flushed; the leaving user does not wait for the answer). The
    /// caller decides what the client does next.
    func leaveWithClose(_ k: Int) {
        sendHub(k, numbered: false) { out in Codec.writeClose(into: out, error: nil, allowReconnect: false) }
        if clients[k].transport == .webSockets {
            if clients[k].mainState == .wsOpen { writeClose(k, clients[k].closeHandshake.sending(code: 1000)) }
            closeMainAfterFlush(k)
        } else {
            closeMain(k)
        }
    }

    /// Churn: up to `count` connected clients with nothing in flight leave (a Close message,
    /// then the transport) and start again at once as new users. Returns how many left.
    @discardableResult
    public func churn(count: Int) -> Int {
        guard phase == .messages, !clients.isEmpty else { return 0 }
        var left = 0
        var k = Int(random.next() % UInt64(clients.count))
        for _ in clients.indices where left < count {
            k = k + 1 == clients.count ? 0 : k + 1
            guard clients[k].phase == .connected, clients[k].mainState != .none, clients[k].outstanding == 0, !clients[k].resuming,
                  !loop.isReadingPaused(clients[k].main) else { continue }
            leaveWithClose(k)
            closeSide(k)
            clients[k].epoch &+= 1  // the leaving user's timers end here…
            clients[k].sendEpoch &+= 1  // …and so does its send chain: the joiner starts its own
            clients[k].sendChain = false
            setPhase(k, .idle)
            metrics.count(.churnLeft)
            clients[k].churnGeneration &+= 1
            userNames[k] = Array("\(plan.runTag)-user-\(plan.globalIndices[k])-\(clients[k].churnGeneration)".utf8)
            clients[k].churnJoining = true
            clients[k].reconnect.connected()
            start(k)
            left += 1
        }
        return left
    }

    /// Close message (best effort), then the transport's own close.
    func closeGracefully(_ k: Int) {
        if clients[k].phase == .connected || clients[k].phase == .joining {
            sendHub(k, numbered: false) { out in Codec.writeClose(into: out, error: nil, allowReconnect: false) }
        }
        switch clients[k].transport {
        case .webSockets where clients[k].mainState == .wsOpen:
            // Our Close; keep reading for the answer, bounded by the close timeout below.
            writeClose(k, clients[k].closeHandshake.sending(code: 1000))
            loop.shutdownWriteAfterFlush(clients[k].main)
        case .longPolling where clients[k].sideState == .idle:
            clients[k].sideState = .delete
            sendRequest(k, on: clients[k].side, method: .delete, target: transportTarget(k))
        default:
            break
        }
        if clients[k].transport == .serverSentEvents {
            // SSE stops by dropping the request (§2); the side connection goes once the Close POST is written.
            closeMain(k)
            if clients[k].sideState != .none { loop.closeAfterFlush(clients[k].side) }
            clients[k].sideState = .none
            clients[k].side = ConnectionID(index: .max, generation: 0)
            setPhase(k, .ended)
            return
        }
        setPhase(k, .closing)
        clients[k].epoch &+= 1
        // Give the peer a moment to finish the close, then drop whatever is left.
        loop.schedule(at: EventLoop.now() + 2_000_000_000, token: token(.closeTimeout, k, epoch: clients[k].epoch))
    }

    // MARK: EventLoopHandler

    public func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {
        guard let (k, role) = owner(id) else { return }
        if error != 0 {
            fail(k, ErrorClass.connectFailure(error))
            return
        }
        switch role {
        case .side:
            clients[k].sideState = .idle
            if clients[k].phase == .negotiating { sendNegotiate(k) } else { flushPosts(k) }
        case .main:
            mainConnected(k)
        }
    }

    public func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) { loop.close(id) }

    public func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        guard let (k, role) = owner(id) else { return buffer.count }
        metrics.count(.bytesReceived, UInt64(buffer.count))
        let bytes = UnsafeRawBufferPointer(buffer)
        switch role {
        case .side: return receivedSide(k, bytes)
        case .main:
            if clients[k].transport == .webSockets { return receivedWebSocket(k, id, buffer) }
            return receivedHTTPMain(k, bytes)
        }
    }

    func receivedSide(_ k: Int, _ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        let epoch = clients[k].epoch
        let side = clients[k].side
        // Keep asking until the parser needs more: a response that ends exactly at the end of
        // the input reports `.end` only when asked again with nothing left.
        while true {
            let (event, used) = clients[k].sideHTTP.next(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            offset += used
            switch event {
            case .needMore: return offset
            case .error:
                fail(k, .protocolError)
                return bytes.count
            case .head(let head):
                clients[k].sideStatus = head.status
            case .body(let r):
                if clients[k].sideState == .negotiate {
                    clients[k].sideBody.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[(offset - used)...])[r])
                }
            case .end:
                let status = clients[k].sideStatus
                let state = clients[k].sideState
                clients[k].sideState = .idle
                switch state {
                case .negotiate:
                    guard status == 200 else { httpFailure(k, status); return bytes.count }
                    negotiated(k, clients[k].sideBody)
                case .post:
                    // 200 ok; 404 gone; anything else fails the connection (§2).
                    guard status == 200 else { httpFailure(k, status); return bytes.count }
                    flushPosts(k)
                case .delete:
                    // 202: the server ends the open poll too; nothing more to wait for.
                    closeMain(k)
                    closeSide(k)
                    setPhase(k, .ended)
                    return bytes.count
                default:
                    break
                }
                // A redirect may have replaced the side connection: these bytes belong to the old one.
                guard clients[k].epoch == epoch, clients[k].side == side else { return bytes.count }
            }
        }
    }

    func httpFailure(_ k: Int, _ status: Int) {
        metrics.upgradeStatuses[status, default: 0] += 1
        fail(k, .httpStatus)
    }

    func receivedWebSocket(_ k: Int, _ id: ConnectionID, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
        var offset = 0
        if clients[k].mainState == .wsUpgrade {
            switch WebSocketHandshake.parseHead(UnsafeRawBufferPointer(buffer), isResponse: true) {
            case .needMore: return 0
            case .invalid:
                fail(k, .upgradeInvalid)
                return buffer.count
            case .head(let head):
                switch WebSocketHandshake.validateResponse(head, key: clients[k].wsKey, requestedSubprotocol: nil) {
                case .rejected(let status):
                    httpFailure(k, status)
                    return buffer.count
                case .invalid:
                    fail(k, .upgradeInvalid)
                    return buffer.count
                case .accepted:
                    clients[k].mainState = .wsOpen
                    offset = head.length
                    if clients[k].resuming { resumed(k) } else { transportOpened(k) }
                }
            }
        }
        let epoch = clients[k].epoch
        while offset < buffer.count {
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[offset...])
            let (event, consumed) = clients[k].receiver.next(rest)
            switch event {
            case .needMore: return offset
            case .fragment, .pong: break
            case .message(_, let range):
                // JSON may arrive in Binary frames too (aiosignalr does): accept either opcode.
                receiveHub(k, UnsafeRawBufferPointer(rebasing: rest[range]))
            case .assembledMessage:
                let assembled = clients[k].receiver.assembled
                assembled.withUnsafeBytes { receiveHub(k, $0) }
            case .ping(let range):
                // RFC 6455 §5.5.2: answer with a pong carrying the same payload.
                loop.writeMaskedFrame(id, opcode: .pong, payload: UnsafeRawBufferPointer(rebasing: rest[range]),
                                      key: UInt32(truncatingIfNeeded: random.next()))
            case .close(let code, _):
                // Answer the server's Close (or take its answer to ours), then close once the answer is
                // written: the client may close rather than wait for the server's FIN (RFC 6455 §7.1.1),
                // and this one moves on at once, to reconnect or to end.
                writeClose(k, clients[k].closeHandshake.received(code: code))
                closeMainAfterFlush(k)
                if clients[k].phase == .closing { closeSide(k); setPhase(k, .ended); return buffer.count }
                if case .error = clients[k].closeHandshake.outcome { metrics.error(.closedWithError) }
                drop(k, reason: nil)
                return buffer.count
            case .fail(let f):
                writeClose(k, clients[k].closeHandshake.failed(f))  // §7.1.7: the failure's code, then TCP goes
                closeMainAfterFlush(k)
                fail(k, ErrorClass(f))
                return buffer.count
            }
            offset += consumed
            guard clients[k].epoch == epoch else { return buffer.count }
        }
        return offset
    }

    func receivedHTTPMain(_ k: Int, _ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        let epoch = clients[k].epoch
        while true {  // as in receivedSide: `.end` may need one more call with nothing left
            let slice = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let (event, used) = clients[k].mainHTTP.next(slice)
            switch event {
            case .needMore: return offset + used
            case .error:
                fail(k, .protocolError)
                return bytes.count
            case .head(let head):
                offset += used
                guard head.status == 200 || (head.status == 204 && clients[k].transport == .longPolling) else {
                    httpFailure(k, head.status)
                    return bytes.count
                }
                if head.status == 204 {
                    // Long polling: the server ended the connection (§2), or confirmed our DELETE.
                    if clients[k].phase == .closing { closeMain(k); closeSide(k); setPhase(k, .ended) } else { drop(k, reason: nil) }
                    return bytes.count
                }
                if clients[k].mainState == .sseHead {
                    clients[k].mainState = .sseStream
                    openSideForPosts(k)
                    transportOpened(k)
                }
            case .body(let r):
                offset += used
                let piece = UnsafeRawBufferPointer(rebasing: slice[r])
                if clients[k].transport == .serverSentEvents {
                    feedSSE(k, piece)
                } else if clients[k].mainState == .pollWaiting {
                    // A poll body holds complete framed messages; pieces go straight to the hub parser.
                    receiveHub(k, piece)
                }
            case .end:
                offset += used
                if clients[k].transport == .longPolling { pollEnded(k) }
            }
            guard clients[k].epoch == epoch else { return bytes.count }
        }
    }

    func pollEnded(_ k: Int) {
        if clients[k].mainState == .pollFirst {
            // The first poll returns at once and starts the hub; the handshake goes by POST.
            openSideForPosts(k)
            transportOpened(k)
        }
        guard isAlive(k), clients[k].phase != .closing else { return }
        clients[k].mainState = .pollWaiting
        if clients[k].pollRequest == nil { clients[k].pollRequest = makeRequest(k, method: .get, target: transportTarget(k)) }
        send(clients[k].pollRequest!, on: clients[k].main)
    }

    func openSideForPosts(_ k: Int) {
        if clients[k].sideState == .none { openSide(k) }
    }

    /// SSE body bytes: the parser wants every unconsumed byte offered again with the next piece.
    func feedSSE(_ k: Int, _ piece: UnsafeRawBufferPointer) {
        clients[k].sseBytes.append(contentsOf: piece)
        var bytes = clients[k].sseBytes
        clients[k].sseBytes = []
        var offset = 0
        let epoch = clients[k].epoch
        bytes.withUnsafeBytes { all in
            while offset < all.count {
                let rest = UnsafeRawBufferPointer(rebasing: all[offset...])
                let (event, used) = clients[k].sse.next(rest)
                offset += used
                switch event {
                case .needMore: return
                case .event(let data):
                    receiveHub(k, UnsafeRawBufferPointer(rebasing: rest[data]))
                case .assembledEvent:
                    let assembled = clients[k].sse.assembled
                    assembled.withUnsafeBytes { receiveHub(k, $0) }
                case .error:
                    fail(k, .protocolError)
                    return
                }
                if clients[k].epoch != epoch { return }
            }
        }
        guard clients[k].epoch == epoch else { return }
        bytes.removeFirst(min(offset, bytes.count))
        clients[k].sseBytes = bytes
    }

    public func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {
        guard let (k, role) = owner(id) else { return }
        switch role {
        case .main:
            mainLost(k, reason)
        case .side:
            clients[k].sideState = .none
            // A keep-alive connection the server closed between requests is reopened on demand.
            if clients[k].phase == .negotiating { fail(k, .unexpectedEOF) }
        }
    }

    /// The main connection is gone without a close handshake: resume it (stateful reconnect) or
    /// drop the client (and let the reconnect policy decide).
    func mainLost(_ k: Int, _ reason: CloseReason) {
        clients[k].mainState = .none
        if clients[k].phase == .closing { closeSide(k); setPhase(k, .ended); return }
        metrics.error(reason == .endOfFile ? .unexpectedEOF : .connectionReset)
        // A hub message cut off by the end of the connection (a truncated VarInt or record) is malformed too.
        if !clients[k].inbound.isEmpty { metrics.error(.protocolError) }
        if clients[k].stateful && clients[k].phase == .connected && !clients[k].resuming {
            noteDropped(k)
            resume(k)
            return
        }
        drop(k, reason: nil)
    }

    /// Fault injection: abruptly resets the main connection of `fraction` of the connected
    /// clients, as a network blip would.
    public func dropConnections(fraction: Double) {
        storm(index: -1, atNs: EventLoop.now(), fraction: fraction, mode: .reset, stallNs: 0)
    }

    public func writable(_ id: ConnectionID, loop: EventLoop) {
        guard let (k, role) = owner(id), role == .main, phase == .messages, plan.loadModel == .open else { return }
        sendDue(k)
    }
}
