import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeWire

/// The WebSocket clients one event loop owns, speaking a declared flow (ChatWorkload+Flow.swift):
/// the scenario's own (`workload: websocket`, `plan.flow`: connect steps, messages, replies), or
/// the chat protocol as a built-in flow (`workload: chat`: it sends `{"message","user","userID"}`
/// and receives every broadcast, `WebSocketFlowSpec.chat`), on the same send chains, reconnects,
/// storms and churn.
///
/// Every message text carries a `MessageStamp` (sender, sequence, intended and actual send time),
/// so the sender measures its round trip from its own echo and every other client measures
/// fan-out delivery from the broadcast, with no shared state between loops.
public final class ChatWorkload: WebSocketApplication, @unchecked Sendable {
    /// The part of a scenario one loop needs.
    public struct Plan: Sendable {
        /// The clients, their pacing, and sends due while reconnecting (shared with the other workloads).
        public var load: LoadPlan
        public var messageSize: Int
        public var runTag: String
        /// What a client does when its connection drops.
        public var reconnect: ReconnectSpec = .none
        public var heartbeat: Heartbeat? = nil
        /// This process's clock − the run's clock (a worker on another host than its
        /// coordinator): stamps are written and read in the run's clock, so a broadcast sent on
        /// one host and received on another is timed right. 0 on one host.
        public var stampClockOffsetNs: Int64 = 0
        /// The declared flow (`workload: websocket`; nil: the chat protocol), and its secrets' values.
        public var flow: WebSocketFlowSpec? = nil
        public var secretValues: [String: String] = [:]

        public init(load: LoadPlan, messageSize: Int, runTag: String) {
            self.load = load; self.messageSize = messageSize; self.runTag = runTag
        }
    }

    enum TimerKind: UInt8 { case connect = 1, send = 2, reconnect = 3, heartbeatSweep = 4, stallEnd = 5, flowStep = 6, replySweep = 7 }

    public let ws: WebSocketClients
    public let plan: Plan
    public private(set) var phase: WorkloadPhase = .idle
    /// Next sequence number to send, per client.
    var nextSequence: [UInt32]
    /// Open model: sequence numbers whose intended time has come (sent or deferred).
    var dueSequence: [UInt32]
    /// Own messages sent and not yet echoed, per client.
    var outstanding: [UInt32]
    /// Open model: each client's place in the aggregate stream (`LoadSchedule.sendSlot`).
    var sendSlots: [UInt32]
    /// When the message phase began (clients that connect later start from it).
    var messageStartNs: UInt64 = 0
    var schedule: LoadSchedule
    /// Clients whose connect has not been attempted yet.
    public private(set) var notYetStarted: Int
    let reconnectPolicy: ReconnectPolicy
    var everOpened: [Bool]
    var reconnectTimeline: [ReconnectTimeline]
    var sendEpoch: [UInt32]
    var waitingToReconnect = 0
    /// Clients between losing their connection and getting it back (their send chain goes on).
    var reconnecting: [Bool]
    var stormBook = StormBook()
    public var storms: [StormShard] { stormBook.shards }
    var stormTrack: [StormClientTrack]
    /// Churn: clients leaving now to come back as new users, and those joining as new users.
    var churnLeaving: [Bool]
    var churnJoining: [Bool]
    var churnGeneration: [UInt32]
    /// `clients.stages`: clients not connected because the profile does not want them now,
    /// those closing to be parked, and those joining because it rose.
    var parked: [Bool]
    var parkOnClose: [Bool]
    var rampJoining: [Bool]
    /// Last application heartbeat and ping per client.
    var lastHeartbeatNs: [UInt64]
    var lastPingNs: [UInt64]
    lazy var heartbeatText: [UInt8] = Array((plan.heartbeat?.text ?? "heart").utf8)
    public internal(set) var totalOutstanding: UInt64 = 0
    /// The flow, each client's connect progress and captures, its messages awaiting replies,
    /// and its `{user}` name.
    let flow: FlowProgram
    var flowConnections: [FlowConnection] = []
    var pending: [PendingSends] = []
    var users: [[UInt8]] = []
    /// `fanout: {same: …}`: the fan-out each client's message is due.
    var fanoutPeers: [UInt32] = []

    /// A local instant in the run's clock (`Plan.stampClockOffsetNs`).
    @inline(__always) func runClock(_ localNs: UInt64) -> UInt64 { StampedeWorkloads.runClock(localNs, offsetNs: plan.stampClockOffsetNs) }

    public init(ws: WebSocketClients, plan: Plan) {
        self.ws = ws
        self.plan = plan
        let n = plan.load.globalIndices.count
        nextSequence = Array(repeating: 0, count: n)
        flow = FlowProgram(spec: plan.flow ?? .chat(messageSize: plan.messageSize), secretValues: plan.secretValues)
        dueSequence = Array(repeating: 0, count: n)
        outstanding = Array(repeating: 0, count: n)
        notYetStarted = n
        reconnectPolicy = ReconnectPolicy(plan.reconnect)
        everOpened = Array(repeating: false, count: n)
        reconnectTimeline = Array(repeating: ReconnectTimeline(), count: n)
        sendEpoch = Array(repeating: 0, count: n)
        reconnecting = Array(repeating: false, count: n)
        lastHeartbeatNs = Array(repeating: 0, count: n)
        lastPingNs = Array(repeating: 0, count: n)
        stormTrack = Array(repeating: StormClientTrack(), count: n)
        churnLeaving = Array(repeating: false, count: n)
        churnJoining = Array(repeating: false, count: n)
        churnGeneration = Array(repeating: 0, count: n)
        parked = Array(repeating: false, count: n)
        parkOnClose = Array(repeating: false, count: n)
        rampJoining = Array(repeating: false, count: n)
        schedule = plan.load.schedule
        sendSlots = plan.load.globalIndices.map { [schedule] in schedule.sendSlot(globalIndex: $0) }
        ws.application = self
        ws.connectsWhenReady = true
        ws.metrics.named = flow.namedMetrics()
        flowConnections = Array(repeating: FlowConnection(), count: n)
        pending = Array(repeating: PendingSends(), count: n)
        users = plan.load.globalIndices.map { Self.user(runTag: plan.runTag, globalIndex: $0, generation: 0) }
        fanoutPeers = flow.fanoutPeers(of: plan.load.globalIndices, totalClients: plan.load.totalClients, runTag: plan.runTag)
    }

    // MARK: Phases (called by the engine on the loop thread)

    /// Schedules every client's connect: global client g at `start + g / connectRate`.
    public func beginRampUp(startNs: UInt64) {
        phase = .rampUp
        for (k, g) in plan.load.globalIndices.enumerated() {
            if let initial = plan.load.initialClients, g >= initial {
                // Held back until `clients.stages` wants it.
                parked[k] = true
                notYetStarted -= 1
                continue
            }
            ws.schedule(at: schedule.connectTime(start: startNs, globalIndex: g), token: token(.connect, k))
        }
        if plan.heartbeat != nil { ws.schedule(at: startNs + 250_000_000, token: token(.heartbeatSweep, 0)) }
        if flow.replyTimeoutNs != nil { ws.schedule(at: startNs + replySweepIntervalNs, token: TimerToken(TimerKind.replySweep, slot: 0)) }
    }

    /// Starts sending. Open model: client g's messages are intended at
    /// `start + slot(g)/clients × interval + k × interval`, so the total stream is evenly spaced at
    /// the rate (or follows `message.stages`: `LoadSchedule`).
    public func beginMessages(startNs: UInt64, endNs: UInt64) {
        phase = .messages
        guard schedule.beginMessages(startNs: startNs, endNs: endNs) else { return }
        messageStartNs = startNs
        for k in plan.load.globalIndices.indices where ws.isReady(k) { startSending(k) }
    }

    /// Client `k`'s first message of the phase (open model: its slot in the even stream).
    func startSending(_ k: Int) {
        let first = schedule.firstSend(globalIndex: plan.load.globalIndices[k], random: &ws.random)
        if schedule.isInPhase(first) { ws.schedule(at: first, token: token(.send, k)) }
    }

    /// Stops scheduling new messages; outstanding echoes may still arrive.
    public func beginDrain() {
        if phase == .messages || phase == .rampUp { phase = .draining }
    }

    /// Counts what is still outstanding as lost for `reason`, then closes every connection cleanly.
    /// Counts the messages that fell due and were never sent as sent and lost.
    func dropDue(_ k: Int) {
        // Open model only: the closed model has nothing due (it sends after each reply).
        guard plan.load.loadModel == .open, dueSequence[k] > nextSequence[k] else { return }
        let n = dueSequence[k] - nextSequence[k]
        ws.metrics.count(.messagesSent, UInt64(n))
        ws.metrics.lose(.droppedWhileDisconnected, UInt64(n))
        nextSequence[k] = dueSequence[k]
    }

    public func closeAll(lostReason: LossReason) {
        phase = .closing
        for k in plan.load.globalIndices.indices { dropDue(k) }
        for k in pending.indices { _ = pending[k].dropAll() }
        for k in outstanding.indices where outstanding[k] > 0 {
            ws.metrics.lose(lostReason, UInt64(outstanding[k]))
            totalOutstanding -= UInt64(outstanding[k])
            outstanding[k] = 0
        }
        for k in plan.load.globalIndices.indices { ws.close(k) }
    }

    /// Clients not yet ended (connecting, open or closing).
    public var liveClients: Int {
        var n = 0
        for k in plan.load.globalIndices.indices {
            let s = ws.state(of: k)
            if s != .ended && s != .idle { n += 1 }
        }
        return n
    }

    // MARK: Sending

    /// A timer of `client`'s, in its current send chain (so a chain replaced after a reconnect stops).
    @inline(__always) func token(_ kind: TimerKind, _ client: Int) -> TimerToken {
        TimerToken(kind, slot: client, epoch: sendEpoch[client])
    }

    @inline(__always)
    func sendMessage(_ k: Int, sequence: UInt32, intendedNs: UInt64) {
        // `{sequence}` counts from 1.
        flowSendMessage(k, flow, sequence: sequence &+ 1, intendedNs: intendedNs)
        ws.metrics.count(.messagesSent)
        outstanding[k] += 1
        totalOutstanding += 1
    }

    /// Open model: sends every due message the socket has room for, each stamped with its own intended time.
    func sendDue(_ k: Int) {
        while nextSequence[k] < dueSequence[k] {
            if ws.isBackedUp(k) { return }
            let seq = nextSequence[k]
            sendMessage(k, sequence: seq, intendedNs: schedule.intended(slot: sendSlots[k], sequence: seq))
            nextSequence[k] = seq + 1
        }
    }

    // MARK: WebSocketApplication

    public func applicationTimer(_ token: TimerToken, deadline: UInt64) {
        let k = token.index
        let epoch = token.epoch
        switch token.kind(as: TimerKind.self) {
        case .connect:
            notYetStarted -= 1
            if phase == .rampUp { ws.connect(k) }
        case .heartbeatSweep:
            heartbeatSweep(now: EventLoop.now())
            if phase != .closing { ws.schedule(at: deadline + 250_000_000, token: token) }
        case .stallEnd:
            // A stall's epoch is its storm's index: only the stall of that storm ends here.
            guard ws.isReadingPaused(k) else { return }
            ws.pauseReading(k, false)
            if stormTrack[k].storm == Int32(truncatingIfNeeded: epoch) { stormBook.recovered(&stormTrack[k], nowNs: EventLoop.now()) }
        case .reconnect:
            waitingToReconnect -= 1
            guard phase == .messages || phase == .draining || phase == .rampUp else { return }
            ws.metrics.count(.reconnectAttempts)
            stormBook.attempt(&stormTrack[k], nowNs: EventLoop.now())
            ws.connect(k)
        case .flowStep:
            flowStepTimedOut(k, epoch: epoch)
        case .replySweep:
            replySweep(flow, now: EventLoop.now())
            if phase != .closing { ws.schedule(at: deadline + replySweepIntervalNs, token: token) }
        case .send:
            guard phase == .messages, sendEpoch[k] == epoch else { return }
            if !ws.isReady(k) {
                // Open model: messages keep falling due while the client reconnects: dropped
                // and counted, or queued for after the reconnect.
                guard reconnecting[k], plan.load.loadModel == .open else { return }
                dueSequence[k] += 1
                if plan.load.whileDisconnected == .drop { dropDue(k) }
                let next = schedule.intended(slot: sendSlots[k], sequence: dueSequence[k])
                if schedule.isInPhase(next) { ws.schedule(at: next, token: token) }
                return
            }
            switch plan.load.loadModel {
            case .open:
                dueSequence[k] += 1
                if ws.isBackedUp(k) { ws.metrics.count(.sendsDeferred) }
                sendDue(k)
                let next = schedule.intended(slot: sendSlots[k], sequence: dueSequence[k])
                if schedule.isInPhase(next) { ws.schedule(at: next, token: token) }
            case .closed:
                let seq = nextSequence[k]
                nextSequence[k] = seq + 1
                sendMessage(k, sequence: seq, intendedNs: deadline)
            }
        case nil:
            break
        }
    }

    /// Every 250 ms: application heartbeats and pings that are due, and dead-server detection
    /// (nothing received for the timeout: drop the connection; the reconnect policy applies).
    func heartbeatSweep(now: UInt64) {
        guard let h = plan.heartbeat else { return }
        let interval = h.intervalSeconds.map { nanoseconds($0) }
        let pingInterval = h.pingIntervalSeconds.map { nanoseconds($0) }
        let timeout = h.timeoutSeconds.map { nanoseconds($0) }
        // A stalled client is frozen: it neither sends heartbeats nor judges the server.
        for k in plan.load.globalIndices.indices where ws.isReady(k) && !ws.isReadingPaused(k) {
            if let timeout, now &- ws.lastReceivedNs(of: k) >= timeout, now > ws.lastReceivedNs(of: k) {
                ws.abort(k, reset: false, reason: .serverTimeout)
                continue
            }
            if let interval, now &- lastHeartbeatNs[k] >= interval {
                lastHeartbeatNs[k] = now
                heartbeatText.withUnsafeBytes { ws.send(k, opcode: .text, payload: $0) }
                ws.metrics.count(.heartbeatsSent)
            }
            if let pingInterval, now &- lastPingNs[k] >= pingInterval {
                lastPingNs[k] = now
                var stamp = now
                withUnsafeBytes(of: &stamp) { ws.send(k, opcode: .ping, payload: $0) }
                ws.metrics.count(.pingsSent)
            }
        }
    }

    public func webSocketPong(client k: Int, payload: UnsafeRawBufferPointer) {
        ws.metrics.count(.pongsReceived)
        // Our pings carry their send time; a pong with another payload (unsolicited) is only counted.
        guard payload.count == 8 else { return }
        let sent = payload.loadUnaligned(as: UInt64.self)
        let now = EventLoop.now()
        if sent <= now { ws.metrics.record(.pingRoundTrip, nanoseconds: now - sent) }
    }

    public func webSocketOpened(client k: Int) {
        flowOpened(k, flow)
    }

    /// The client is connected (a flow's connect steps done): reconnect and churn bookkeeping,
    /// and its send chain.
    func clientReady(_ k: Int) {
        reconnectTimeline[k].connected()
        let now = EventLoop.now()
        lastHeartbeatNs[k] = now
        lastPingNs[k] = now
        if churnJoining[k] {
            // A new user in the room, not a reconnect: its schedule starts where the run is now.
            churnJoining[k] = false
            reconnecting[k] = false
            ws.metrics.count(rampJoining[k] ? .rampedUp : .churnJoined)
            rampJoining[k] = false
            rejoinSchedule(k)
        } else if everOpened[k] {
            ws.metrics.count(.reconnected)
            stormBook.recovered(&stormTrack[k], nowNs: EventLoop.now())
            if reconnecting[k] && plan.load.loadModel == .open {
                // The send chain went on during the gap; queued messages go now, each with its intended time.
                reconnecting[k] = false
                if phase == .messages { sendDue(k) }
            } else {
                reconnecting[k] = false
                rejoinSchedule(k)
            }
        } else if phase == .messages {
            // A flow's connect steps can end after the message phase began.
            startSending(k)
        }
        everOpened[k] = true
    }

    /// A reconnected client picks its schedule up where it is now (the messages of the gap were
    /// never sent, so they are not counted).
    func rejoinSchedule(_ k: Int) {
        guard phase == .messages else { return }
        sendEpoch[k] &+= 1
        let now = EventLoop.now()
        switch plan.load.loadModel {
        case .open:
            guard schedule.paces else { return }
            nextSequence[k] = max(nextSequence[k], schedule.sequencesDue(slot: sendSlots[k], now: now))
            dueSequence[k] = nextSequence[k]
            let next = schedule.intended(slot: sendSlots[k], sequence: nextSequence[k])
            if schedule.isInPhase(next) { ws.schedule(at: next, token: token(.send, k)) }
        case .closed:
            if let next = schedule.nextAfterReply(now: now) { ws.schedule(at: next, token: token(.send, k)) }
        }
    }

    public func webSocketReceived(client k: Int, opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer) {
        flowReceived(k, flow, opcode: opcode, payload: payload)
    }

    public func webSocketEnded(client k: Int, end: WebSocketEnd) {
        _ = pending[k].dropAll()
        flowConnections[k].session.restart()
        if outstanding[k] > 0 {
            ws.metrics.lose(.connectionClosed, UInt64(outstanding[k]))
            totalOutstanding -= UInt64(outstanding[k])
            outstanding[k] = 0
        }
        if churnLeaving[k] {
            churnLeaving[k] = false
            if parkOnClose[k] {
                // `clients.stages` fell: it stays away until the profile rises again.
                parkOnClose[k] = false
                parked[k] = true
                ws.metrics.count(.rampedDown)
                return
            }
            guard phase == .messages || phase == .draining else { return }
            ws.metrics.count(.churnLeft)
            joinAsNewUser(k)
            return
        }
        // Reconnect while the run goes on, as long as the policy allows (never after a first connect failed).
        guard everOpened[k], phase == .messages || phase == .draining || phase == .rampUp else { return }
        // Dropped by the server (or the network) after a server or command event: one of its affected clients.
        stormBook.dropped(&stormTrack[k])
        if let next = reconnectTimeline[k].failed(atNs: EventLoop.now(), policy: reconnectPolicy, unitRandom: ws.random.unit()) {
            waitingToReconnect += 1
            reconnecting[k] = true
            ws.schedule(at: next, token: token(.reconnect, k))
        } else {
            reconnecting[k] = false
            dropDue(k)  // queued messages that will never get a connection
            stormBook.gaveUp(&stormTrack[k])
        }
    }

    /// Event `index` at `atNs`: from now until the next event, clients whose connection drops
    /// (a server fault, a restart by an external command) are counted as affected by it.
    public func watch(index: Int, atNs: UInt64) { stormBook.watch(index: index, atNs: atNs) }

    /// Storm `index`: `fraction` of the open clients lose their connection now (or, `.stall`,
    /// stop reading it for `stallNs`).
    public func storm(index: Int, atNs: UInt64, fraction: Double, mode: StormMode, stallNs: UInt64) {
        if index >= 0 { watch(index: index, atNs: atNs) }
        for k in plan.load.globalIndices.indices where ws.isReady(k) && !churnLeaving[k] {
            guard ws.random.unit() < fraction else { continue }
            if index >= 0 {
                stormBook.hit(&stormTrack[k], storm: index)
            }
            switch mode {
            case .reset: ws.abort(k, reset: true)
            case .close: ws.close(k)
            case .stall:
                guard index >= 0 else { continue }
                ws.pauseReading(k, true)
                ws.schedule(at: atNs + stallNs, token: TimerToken(TimerKind.stallEnd, slot: k, epoch: UInt32(index)))
            }
        }
    }

    /// Churn: `count` connected clients with nothing in flight leave (a clean close) and come
    /// back at once as new users (a new name and id, a fresh connect). Returns how many left.
    @discardableResult
    public func churn(count: Int) -> Int {
        let n = plan.load.globalIndices.count
        guard n > 0, phase == .messages else { return 0 }
        var left = 0
        var k = Int(ws.random.next() % UInt64(n))
        for _ in 0..<n where left < count {
            k = k + 1 == n ? 0 : k + 1
            guard ws.isReady(k), outstanding[k] == 0, !churnLeaving[k], !ws.isReadingPaused(k) else { continue }
            dropDue(k)
            churnLeaving[k] = true
            sendEpoch[k] &+= 1  // the leaving user's send chain ends here
            ws.close(k)
            left += 1
        }
        return left
    }

    /// A stable, readable `{user}` per client (generation > 0: the users who took its place after
    /// churn). The run tag is a scenario name (letters, digits, `._-`), so the name is JSON-safe.
    static func user(runTag: String, globalIndex g: Int, generation: UInt32) -> [UInt8] {
        Array((generation == 0 ? "\(runTag)-user-\(g)" : "\(runTag)-user-\(g)-\(generation)").utf8)
    }

    /// A churned client's slot comes back as someone new.
    func joinAsNewUser(_ k: Int) {
        churnGeneration[k] &+= 1
        users[k] = Self.user(runTag: plan.runTag, globalIndex: plan.load.senderBase + plan.load.globalIndices[k], generation: churnGeneration[k])
        churnJoining[k] = true
        reconnectTimeline[k].connected()
        ws.connect(k)
    }

    public func webSocketWritable(client k: Int) {
        if phase == .messages && plan.load.loadModel == .open { sendDue(k) }
    }
}

