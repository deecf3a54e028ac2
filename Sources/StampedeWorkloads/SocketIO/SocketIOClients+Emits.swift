// Emits: the open and closed send schedules (the hub client's `HubCalls`), emits due while
// reconnecting, rendering an emit (packet head, then the data template, then its binary
// attachments), and what comes back: acks (`ack`) and received events (`round_trip`, `fanout`).

import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeSession
import StampedeWire

extension SocketIOClients {
    // MARK: Schedule

    func sendTimerFired(_ k: Int, deadline: UInt64, token: TimerToken) {
        switch plan.load.loadModel {
        case .open:
            if clients[k].phase == .connected {
                clients[k].calls.dueSequence += 1
                sendDue(k)
            } else if isReconnecting(k) {
                clients[k].calls.dueSequence += 1
                dropDue(k, keeping: plan.load.keptWhileDisconnected)
            } else {
                clients[k].calls.sendChain = false
                return
            }
            let next = schedule.intended(slot: clients[k].calls.sendSlot, sequence: clients[k].calls.dueSequence)
            if schedule.isInPhase(next) { loop.schedule(at: next, token: token) } else { clients[k].calls.sendChain = false }
        case .closed:
            guard clients[k].phase == .connected else { return }
            let seq = clients[k].calls.nextSequence
            clients[k].calls.nextSequence += 1
            scheduledEmit(k, sequence: seq, intendedNs: deadline)
        }
    }

    /// Open model: sends every due emit the connection has room for, each with its own intended time.
    func sendDue(_ k: Int) {
        guard clients[k].phase == .connected else { return }
        while clients[k].calls.nextSequence < clients[k].calls.dueSequence {
            if let id = activeConnection(k), loop.isBackedUp(id) {
                metrics.count(.sendsDeferred)
                return
            }
            let seq = clients[k].calls.nextSequence
            clients[k].calls.nextSequence = seq + 1
            scheduledEmit(k, sequence: seq, intendedNs: schedule.intended(slot: clients[k].calls.sendSlot, sequence: seq))
        }
    }

    @inline(__always)
    func isReconnecting(_ k: Int) -> Bool {
        clients[k].reconnect.everConnected && (clients[k].phase == .waitingToReconnect || Self.isConnecting(clients[k].phase))
    }

    /// Counts the emits that fell due and will not be sent — all but the newest `keeping` — as
    /// sent and lost (`dropped_while_disconnected`).
    func dropDue(_ k: Int, keeping: UInt32 = 0) {
        let n = clients[k].calls.skipDue(keeping: keeping)
        guard n > 0 else { return }
        metrics.count(.messagesSent, UInt64(n))
        metrics.lose(.droppedWhileDisconnected, UInt64(n))
    }

    // MARK: Emitting

    /// What settles a scheduled emit: its ack, the client's own echo (a `receive` event with its
    /// stamp), or nothing (handing it to the transport delivers it).
    var emitAwaitsAck: Bool { plan.spec.emit?.ack ?? false }
    var emitAwaitsEcho: Bool { !emitAwaitsAck && plan.spec.receive != nil && (plan.spec.emit?.data.carriesStamp ?? false) }

    /// One scheduled emit, stamped with its id (its ack id) and intended time.
    func scheduledEmit(_ k: Int, sequence: UInt32, intendedNs: UInt64) {
        guard let e = plan.spec.emit else { return }
        let id = clients[k].pending.next
        let now = EventLoop.now()
        let stamp = MessageStamp(sender: plan.load.sender(k), sequence: id, intendedNs: stampNow(intendedNs), actualNs: stampNow(now))
        metrics.count(.messagesSent)
        guard emit(k, e, ackId: e.ack ? UInt64(id) : nil, sequence: sequence, stamp: stamp) else {
            metrics.count(.messagesFailed)
            metrics.error(.messageTooBig)
            return
        }
        metrics.count(clients[k].session.messageTransport == .websocket ? .sentWebSockets : .sentLongPolling)
        if emitAwaitsAck || emitAwaitsEcho {
            clients[k].pending.sent(id, intendedNs: intendedNs, actualNs: now)
            totalOutstanding += 1
        } else {
            metrics.count(.messagesDelivered)
        }
    }

    /// Renders `e` (its packet head with `ackId`, its data, then its attachments) and sends it;
    /// false when it is larger than the server's `maxPayload` or our buffer (nothing is sent).
    func emit(_ k: Int, _ e: SocketIOSpec.Emit, ackId: UInt64?, sequence: UInt32, stamp: MessageStamp) -> Bool {
        let limit = min(scratch.count, clients[k].session.maxPayload ?? .max)
        guard let head = clients[k].session.writeHead(e.binary.isEmpty ? .event : .binaryEvent, attachments: e.binary.count, ackId: ackId,
                                                      into: UnsafeMutableRawBufferPointer(rebasing: scratch[0..<limit])),
              let n = render(k, e.data, at: head, sequence: sequence, stamp: stamp, limit: limit) else { return false }
        sendPacket(k, UnsafeRawBufferPointer(rebasing: scratch[0..<(head + n)]), binary: false)
        for attachment in e.binary {
            guard let m = render(k, attachment, at: 0, sequence: sequence, stamp: stamp, limit: limit) else { return false }
            sendPacket(k, UnsafeRawBufferPointer(rebasing: scratch[0..<m]), binary: true)
        }
        return true
    }

    /// Renders `template` into `scratch` at `at`; the bytes written, nil when they would pass `limit`.
    func render(_ k: Int, _ template: MessageTemplate, at: Int, sequence: UInt32, stamp: MessageStamp, limit: Int? = nil) -> Int? {
        let user = templatesNameUser ? userName(k) : []
        return user.withUnsafeBytes { u in
            var values = TemplateValues(stamp: stamp, client: plan.load.globalIndices[k], sequence: sequence, user: u,
                                        named: UnsafeBufferPointer(named), random: random.next())
            let length = template.length(values)
            guard let base = scratch.baseAddress, at + length <= (limit ?? scratch.count) else { return nil }
            return template.render(into: base + at, &values)
        }
    }

    // MARK: What comes back

    /// An ACK (or BINARY_ACK) with `id`: a connect emit's, or a scheduled emit's (`ack`).
    func ackReceived(_ k: Int, _ id: UInt64?) {
        guard let id else { return }
        if clients[k].phase == .joining {
            if id == Self.connectAckBase + UInt64(clients[k].connectStep) {
                clients[k].connectStep += 1
                runConnectEmits(k)
            }
            return
        }
        guard id <= UInt64(UInt32.max), let entry = clients[k].pending.entry(UInt32(id)), clients[k].pending.deliver(UInt32(id)) else { return }
        let now = EventLoop.now()
        metrics.count(.acksReceived)
        metrics.record(.ack, nanoseconds: now &- entry.intendedNs)
        metrics.record(.ackUncorrected, nanoseconds: now &- entry.actualNs)
        delivered(k)
    }

    /// An EVENT (or BINARY_EVENT, `buffer` its head) the scenario receives: its stamp says whose it is.
    func eventReceived(_ k: Int, _ p: SocketIOPacket, _ buffer: UnsafeRawBufferPointer) {
        guard let receive = plan.spec.receive, let name = p.eventName(in: buffer),
              UnsafeRawBufferPointer(rebasing: buffer[name]).elementsEqual(receive.event.utf8) else { return }
        let data = UnsafeRawBufferPointer(rebasing: buffer[p.data])
        let found: MessageStamp?
        if let path = receive.stamp {
            found = path.value(in: data).flatMap { FlowStamp.parse(UnsafeRawBufferPointer(rebasing: data[$0])) }
        } else {
            found = FlowStamp.search(data)
        }
        guard let stamp = found else {
            metrics.count(.unparsedMessages)
            return
        }
        let now = stampNow(EventLoop.now())
        if stamp.sender == plan.load.sender(k) {
            guard clients[k].pending.entry(stamp.sequence) != nil else { return }
            metrics.record(.roundTrip, nanoseconds: now &- stamp.intendedNs)
            metrics.record(.roundTripUncorrected, nanoseconds: now &- stamp.actualNs)
            if emitAwaitsEcho && clients[k].pending.deliver(stamp.sequence) { delivered(k) }
        } else {
            metrics.count(.fanoutReceived)
            metrics.record(.fanout, nanoseconds: now &- stamp.intendedNs)
            metrics.record(.fanoutUncorrected, nanoseconds: now &- stamp.actualNs)
        }
    }

    /// A scheduled emit got its answer.
    func delivered(_ k: Int) {
        totalOutstanding -= 1
        metrics.count(.messagesDelivered)
        if plan.load.loadModel == .closed && phase == .messages, let next = schedule.nextAfterReply(now: EventLoop.now()) {
            loop.schedule(at: next, token: sendToken(k))
        }
    }
}
