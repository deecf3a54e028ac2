import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeSession
import StampedeWire

/// Simulated Socket.IO clients (protocol 5 over Engine.IO 4), modelled on the official
/// JavaScript client, for one event loop.
///
/// This file holds the client table, the run's phases and the timers; the rest is split by
/// concern: `+Transports` (what the loop reports on the connections: HTTPClientExchange for the
/// polls and posts, WebSocketClientSession), `+Protocol` (the SocketIOClientSession's answers:
/// the open packet, pings, the upgrade, the namespace, the connect emits), `+Emits` (the send
/// schedule, the stamped emits, acks and received events), `+Reconnect` (ending, reconnecting,
/// storms, churn, closing).
///
/// Each client owns up to three TCP connections (`SocketIOConnections`): the long polls, the
/// posts, and the WebSocket. Every scheduled emit gets an id (`PendingSends`' sequence) that is
/// also its ack id and its stamp's sequence, so an ack or the client's own echo finds its send
/// times, and what is still awaited is known exactly when a connection ends.
public final class SocketIOClients: EventLoopHandler, LoopWorkload, @unchecked Sendable {
    public let loop: EventLoop
    public let plan: SocketIOPlan
    public var metrics = MetricsShard()
    var random: FastRandom
    var clients: [SocketIOClient]
    /// Which client and role each connection slot belongs to (`owner`).
    var owners = ConnectionOwners<SocketIOConnections.Role>()
    /// Where packets are rendered before they go out, and where binary records are decoded.
    var scratch: UnsafeMutableRawBufferPointer
    var decodeScratch: UnsafeMutableRawBufferPointer
    let address: SocketAddress
    let hostHeader: [UInt8]
    let reconnectPolicy: ReconnectPolicy
    let sessionConfiguration: SocketIOClientSession.Configuration
    /// The secrets as every render borrows them (owned here).
    let named: UnsafeMutableBufferPointer<UnsafeRawBufferPointer>
    var userNames: [[UInt8]]
    var phase: WorkloadPhase = .idle
    var schedule: LoadSchedule
    public internal(set) var openCount = 0
    public internal(set) var inFlightConnects = 0
    public internal(set) var notYetStarted: Int
    public internal(set) var totalOutstanding: UInt64 = 0
    var stormBook = StormBook()
    public var storms: [StormShard] { stormBook.shards }
    /// Whether any template names the user (`{user}`, `{user_uuid}`): only then is a client's name made.
    let templatesNameUser: Bool
    /// The ack timeout (`spec.ackTimeoutSeconds`): emits awaited longer are lost (`no_reply`).
    let ackTimeoutNs: UInt64

    enum TimerKind: UInt8 { case connect = 1, send = 2, handshakeTimeout = 3, reconnect = 4, sweep = 5, closeTimeout = 6, stallEnd = 7 }

    public init(loop: EventLoop, plan: SocketIOPlan, address: SocketAddress, random: FastRandom) {
        self.loop = loop
        self.plan = plan
        self.address = address
        self.random = random
        hostHeader = HTTPClientRequest.hostValue(host: plan.host, port: plan.port, defaultPort: plan.tls == nil ? 80 : 443)
        sessionConfiguration = .init(namespace: Array(plan.spec.namespace.utf8), transports: plan.transportPlan,
                                     maxAttachmentBytes: plan.maxMessageBytes)
        let prototype = SocketIOClient(session: SocketIOClientSession(sessionConfiguration, now: 0))
        clients = Array(repeating: prototype, count: plan.load.globalIndices.count)
        notYetStarted = plan.load.globalIndices.count
        reconnectPolicy = ReconnectPolicy(plan.spec.reconnect)
        userNames = Array(repeating: [], count: plan.load.globalIndices.count)
        schedule = plan.load.schedule
        for (k, g) in plan.load.globalIndices.enumerated() { clients[k].calls.sendSlot = schedule.sendSlot(globalIndex: g) }
        scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: max(64 * 1024, plan.maxMessageBytes + 4096), alignment: 16)
        decodeScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: max(64 * 1024, plan.maxMessageBytes), alignment: 16)
        named = .allocate(capacity: plan.secretValues.count)
        for (i, secret) in plan.secretValues.enumerated() {
            let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: secret.count, alignment: 1)
            copy.copyBytes(from: secret)
            named[i] = UnsafeRawBufferPointer(copy)
        }
        ackTimeoutNs = nanoseconds(plan.spec.ackTimeoutSeconds)
        let spec = plan.spec
        let templates = [spec.auth].compactMap { $0 } + (spec.connect + [spec.emit].compactMap { $0 }).flatMap { [$0.data] + $0.binary }
        templatesNameUser = templates.contains { t in
            t.segments.contains { $0 == .placeholder(.user) || $0 == .placeholder(.userUUID) }
        }
        loop.handler = self
    }

    deinit {
        scratch.deallocate()
        decodeScratch.deallocate()
        for b in named { UnsafeMutableRawBufferPointer(mutating: b).deallocate() }
        named.deallocate()
    }

    // MARK: LoopWorkload

    // Counted by index: `clients.reduce` would copy every client's record (retaining each of its
    // buffers) to read one field, and the engine asks for these every interval and, while
    // closing, every 20 ms.
    public var reconnectingCount: Int { clients.indices.reduce(0) { $0 + (clients[$1].phase == .waitingToReconnect ? 1 : 0) } }

    public var liveClients: Int { clients.indices.reduce(0) { $0 + (clients[$1].phase == .idle || clients[$1].phase == .ended ? 0 : 1) } }

    public func beginRampUp(startNs: UInt64) {
        phase = .rampUp
        for (k, g) in plan.load.globalIndices.enumerated() {
            if let initial = plan.load.initialClients, g >= initial {
                // Held back until `clients.stages` wants it.
                clients[k].reconnect.parked = true
                notYetStarted -= 1
                continue
            }
            loop.schedule(at: schedule.connectTime(start: startNs, globalIndex: g), token: token(.connect, k))
        }
        loop.schedule(at: startNs + sweepIntervalNs, token: token(.sweep, 0))
    }

    public func beginMessages(startNs: UInt64, endNs: UInt64) {
        phase = .messages
        guard schedule.beginMessages(startNs: startNs, endNs: endNs), plan.spec.emit != nil else { return }
        for (k, g) in plan.load.globalIndices.enumerated() where clients[k].phase == .connected {
            let first = schedule.firstSend(globalIndex: g, random: &random)
            if schedule.isInPhase(first) {
                loop.schedule(at: first, token: sendToken(k))
                clients[k].calls.sendChain = plan.load.loadModel == .open
            }
        }
    }

    public func beginDrain() {
        if phase == .messages || phase == .rampUp { phase = .draining }
    }

    public func closeAll(lostReason: LossReason) {
        phase = .closing
        for k in clients.indices {
            dropDue(k)
            loseOutstanding(k, lostReason)
            switch clients[k].phase {
            case .idle, .ended, .closing: continue
            case .waitingToReconnect: setPhase(k, .ended)
            case .opening, .connecting, .joining: fail(k, .interrupted)
            case .connected: closeGracefully(k)
            }
        }
    }

    public func dropConnections(fraction: Double) {
        storm(index: -1, atNs: EventLoop.now(), fraction: fraction, mode: .reset, stallNs: 0)
    }

    // MARK: Timers

    @inline(__always) func token(_ kind: TimerKind, _ client: Int, epoch: UInt32 = 0) -> TimerToken {
        TimerToken(kind, slot: client, epoch: epoch)
    }

    @inline(__always) func sendToken(_ k: Int) -> TimerToken { token(.send, k, epoch: clients[k].calls.sendEpoch) }

    /// How often ack timeouts and server timeouts are checked.
    var sweepIntervalNs: UInt64 { min(1_000_000_000, max(10_000_000, ackTimeoutNs / 4)) }

    public func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {
        let k = token.index
        let epoch = token.epoch
        switch token.kind(as: TimerKind.self) {
        case .connect:
            notYetStarted -= 1
            if phase == .rampUp { start(k) }
        case .send:
            guard clients[k].calls.sendEpoch == epoch else { return }
            guard phase == .messages else { clients[k].calls.sendChain = false; return }
            sendTimerFired(k, deadline: deadline, token: token)
        case .handshakeTimeout:
            guard clients[k].epoch == epoch, Self.isConnecting(clients[k].phase) else { return }
            fail(k, .handshakeTimeout)  // the open packet, the namespace or a connect emit
        case .reconnect:
            guard clients[k].epoch == epoch, clients[k].phase == .waitingToReconnect else { return }
            if phase == .closing { setPhase(k, .ended); return }
            start(k)
        case .closeTimeout:
            guard clients[k].epoch == epoch, clients[k].phase == .closing else { return }
            closeAllConnections(k)
            setPhase(k, .ended)
        case .stallEnd:
            guard let id = activeConnection(k), loop.isReadingPaused(id) else { return }
            loop.pauseReading(id, false)
            clients[k].session.dataReceived(now: EventLoop.now())
            if clients[k].reconnect.storm.storm == Int32(truncatingIfNeeded: epoch) { stormRecovered(k) }
        case .sweep:
            sweep(now: EventLoop.now())
            if phase != .closing { loop.schedule(at: deadline + sweepIntervalNs, token: token) }
        case nil:
            break
        }
    }

    /// Fails clients whose server went silent, and loses emits past the ack timeout.
    func sweep(now: UInt64) {
        for k in clients.indices {
            let p = clients[k].phase
            guard p != .idle && p != .ended && p != .waitingToReconnect else { continue }
            if let id = activeConnection(k), loop.isReadingPaused(id) { continue }  // a stalled client judges nothing
            if clients[k].session.check(now: now) {
                fail(k, .serverTimeout)
                continue
            }
            if clients[k].pending.count > 0, now > ackTimeoutNs {
                let n = clients[k].pending.expire(sentAtOrBefore: now - ackTimeoutNs)
                if n > 0 {
                    metrics.lose(.noReply, UInt64(n))
                    totalOutstanding -= UInt64(n)
                    if plan.load.loadModel == .closed && phase == .messages, let next = schedule.nextAfterReply(now: now) {
                        loop.schedule(at: next, token: sendToken(k))
                    }
                }
            }
        }
    }

    // MARK: Phases

    static func isConnecting(_ p: SocketIOClientPhase) -> Bool { p == .opening || p == .connecting || p == .joining }

    /// Moves a client to `next`, keeping `openCount` and `inFlightConnects` right.
    func setPhase(_ k: Int, _ next: SocketIOClientPhase) {
        let old = clients[k].phase
        guard old != next else { return }
        if Self.isConnecting(old) { inFlightConnects -= 1 }
        if old == .connected { openCount -= 1; metrics.count(.disconnected) }
        if Self.isConnecting(next) { inFlightConnects += 1 }
        if next == .connected { openCount += 1 }
        clients[k].phase = next
    }

    /// The connection that carries the client's packets now (the WebSocket once upgraded).
    func activeConnection(_ k: Int) -> ConnectionID? {
        clients[k].session.messageTransport == .websocket ? clients[k].connections.id(.ws) : clients[k].connections.id(.poll)
    }

    /// Client `k`'s user name (`{user}`), made at its first use.
    func userName(_ k: Int) -> [UInt8] {
        if userNames[k].isEmpty { userNames[k] = Array("\(plan.runTag)-user-\(plan.load.globalIndices[k])".utf8) }
        return userNames[k]
    }

    @inline(__always) func stampNow(_ localNs: UInt64) -> UInt64 { runClock(localNs, offsetNs: plan.stampClockOffsetNs) }
}
