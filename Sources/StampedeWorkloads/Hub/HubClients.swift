import Foundation
import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeSession
import StampedeWire

/// Simulated ASP.NET Core SignalR clients, modelled on the official ones, for one event loop,
/// generic over the hub protocol so the per-message code is specialised for JSON or MessagePack.
/// A bare §N in these files is a section of docs/protocols.md, the protocol facts they follow.
///
/// This file holds the client table, the run's phases and the timers; the rest is split by
/// concern: `+Connecting` (negotiate, connections, requests), `+Transports` (what the loop
/// reports on them: WebSocketClientSession, HTTPClientExchange), `+HubProtocol` (the
/// HubProtocolSession of each client: handshake, keep-alive, resume), `+Calls` (the send
/// schedule and the stamped calls), `+Replies` (what comes back), `+Reconnect` (ending,
/// reconnecting, storms, churn). A client's state is likewise one small record per concern:
/// `HubEndpoint` (where, which transport), `HubConnections` (the two connections and their
/// exchanges), `HubCalls` (the send schedule, calls in flight), `HubReconnectState`.
///
/// Each client owns up to two TCP connections: `main` (the WebSocket, the SSE stream or the
/// long poll) and `side` (negotiate, and the POSTs that carry client messages on SSE and long
/// polling). Latency stamps travel inside the invocation id (ids are the caller's choice), so
/// a Completion or StreamItem carries its own send times and no per-call table is kept.
public final class HubClients<Codec: HubProtocolCodec>: EventLoopHandler, LoopWorkload, @unchecked Sendable {
    public let loop: EventLoop
    public let plan: HubPlan
    public var metrics = MetricsShard()
    var random: FastRandom
    /// The clients' state. `HubClient` is not generic, so code that is (this class, over the
    /// codec) reaches its fields directly instead of copying a whole client through the
    /// generic value witnesses on every access.
    var clients: [HubClient]
    /// Each client's hub protocol session (the one part that depends on the codec).
    var sessions: [HubProtocolSession<Codec>]
    /// Which client and role each connection slot belongs to (`owner`).
    var owners = ConnectionOwners<HubConnections.Role>()
    var scratch: UnsafeMutableRawBufferPointer
    let address: SocketAddress
    let hostHeader: [UInt8]
    /// Where clients start (shared by every client that no redirect moved).
    let homes: [HubPlace]
    let reconnectPolicy: ReconnectPolicy
    var userNames: [[UInt8]]
    var phase: WorkloadPhase = .idle
    var schedule: LoadSchedule
    public internal(set) var openCount = 0
    public internal(set) var inFlightConnects = 0
    public internal(set) var notYetStarted: Int
    public internal(set) var totalOutstanding: UInt64 = 0
    var stormBook = StormBook()
    public var storms: [StormShard] { stormBook.shards }

    enum TimerKind: UInt8 { case connect = 1, send = 2, handshakeTimeout = 3, reconnect = 4, keepAliveSweep = 5, closeTimeout = 6, stallEnd = 7 }

    public init(loop: EventLoop, plan: HubPlan, address: SocketAddress, random: FastRandom) {
        self.loop = loop
        self.plan = plan
        self.address = address
        self.random = random
        hostHeader = HTTPClientRequest.hostValue(host: plan.base.host, port: plan.base.port, defaultPort: 80)
        let session = HubProtocolSession<Codec>(.init(maxMessageLength: plan.maxMessageBytes))  // replaced at each start
        // Client k starts at homes[k % count]: `plan.addresses` gives one address per client when
        // there are several; each distinct address gets one place, which its clients share.
        var distinct: [HubPlace] = []
        let host = hostHeader
        homes = (plan.addresses.isEmpty ? [address] : plan.addresses).map { a in
            if let known = distinct.first(where: { $0.address == a }) { return known }
            let made = HubPlace(base: plan.base, address: a, hostHeader: host)
            distinct.append(made)
            return made
        }
        let prototype = HubClient(endpoint: HubEndpoint(place: homes[0]))
        clients = Array(repeating: prototype, count: plan.load.globalIndices.count)
        sessions = Array(repeating: session, count: plan.load.globalIndices.count)
        notYetStarted = plan.load.globalIndices.count
        reconnectPolicy = ReconnectPolicy(plan.spec.reconnect)
        userNames = Array(repeating: [], count: plan.load.globalIndices.count)  // made on use (`userName`)
        schedule = plan.load.schedule
        for (k, g) in plan.load.globalIndices.enumerated() { clients[k].calls.sendSlot = schedule.sendSlot(globalIndex: g) }
        scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: max(64 * 1024, plan.messageSize * 2 + 4096), alignment: 16)
        loop.handler = self
    }

    deinit { scratch.deallocate() }

    // MARK: LoopWorkload

    public var reconnectingCount: Int {
        clients.indices.reduce(0) { $0 + (clients[$1].phase == .waitingToReconnect || sessions[$1].isResuming ? 1 : 0) }
    }

    public var liveClients: Int {
        // By index: `clients.reduce` would copy every client's record to read one field.
        clients.indices.reduce(0) { $0 + (clients[$1].phase == .idle || clients[$1].phase == .ended ? 0 : 1) }
    }

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
        loop.schedule(at: startNs + 1_000_000_000, token: token(.keepAliveSweep, 0))
    }

    public func beginMessages(startNs: UInt64, endNs: UInt64) {
        phase = .messages
        guard schedule.beginMessages(startNs: startNs, endNs: endNs), plan.spec.operation != .none, plan.spec.call != nil else { return }
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

    @inline(__always) func sendToken(_ k: Int) -> TimerToken { token(.send, k, epoch: clients[k].calls.sendEpoch) }

    public func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {
        let k = token.index
        let epoch = token.epoch
        switch token.kind(as: TimerKind.self) {
        case .connect:
            notYetStarted -= 1
            if phase == .rampUp { start(k) }
        case .send:
            // A chain that was replaced (a restarted schedule) stops here.
            guard clients[k].calls.sendEpoch == epoch else { return }
            guard phase == .messages else { clients[k].calls.sendChain = false; return }
            switch plan.load.loadModel {
            case .open:
                if clients[k].phase == .connected {
                    clients[k].calls.dueSequence += 1
                    sendDue(k)
                } else if isReconnecting(k) {
                    // Calls keep falling due while the client reconnects: dropped and counted, or
                    // queued for after the handshake (issue 4, item 4).
                    dueWhileDisconnected(k)
                } else {
                    clients[k].calls.sendChain = false  // ended: nothing more is due
                    return
                }
                let next = schedule.intended(slot: clients[k].calls.sendSlot, sequence: clients[k].calls.dueSequence)
                if schedule.isInPhase(next) { loop.schedule(at: next, token: token) } else { clients[k].calls.sendChain = false }
            case .closed:
                // Closed model: nothing is due while disconnected; the chain starts again on reconnect.
                guard clients[k].phase == .connected else { return }
                let seq = clients[k].calls.nextSequence
                clients[k].calls.nextSequence += 1
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
            guard clients[k].connections.mainState != .none, loop.isReadingPaused(clients[k].connections.main) else { return }
            loop.pauseReading(clients[k].connections.main, false)
            sessions[k].dataReceived(now: EventLoop.now())
            if clients[k].reconnect.storm.storm == Int32(truncatingIfNeeded: epoch) { stormRecovered(k) }
        case .keepAliveSweep:
            keepAliveSweep(now: EventLoop.now())
            if phase != .closing { loop.schedule(at: deadline + 1_000_000_000, token: token) }
        case nil:
            break
        }
    }

    // MARK: Phases

    static func isConnecting(_ p: HubClientPhase) -> Bool { p == .negotiating || p == .connecting || p == .handshaking || p == .joining }

    /// Moves a client to `next`, keeping `openCount` and `inFlightConnects` equal to the number of
    /// clients connected and connecting.
    func setPhase(_ k: Int, _ next: HubClientPhase) {
        let old = clients[k].phase
        guard old != next else { return }
        if Self.isConnecting(old) { inFlightConnects -= 1 }
        if old == .connected { openCount -= 1; metrics.count(.disconnected) }
        if Self.isConnecting(next) { inFlightConnects += 1 }
        if next == .connected { openCount += 1 }
        clients[k].phase = next
    }

    /// Client-to-server stream ids (numeric, as the official clients' counters).
    var nextStreamId: UInt64 = 1
    /// The call's and the join's method names as bytes, made once.
    lazy var callMethod: [UInt8] = Array((plan.spec.call?.method ?? "").utf8)
    lazy var joinMethod: [UInt8] = Array((plan.spec.join?.method ?? "").utf8)
    /// Text arguments rendered once per client (those without `{sequence}`), by argument index.
    var renderedText: [[[UInt8]]] = []
}
