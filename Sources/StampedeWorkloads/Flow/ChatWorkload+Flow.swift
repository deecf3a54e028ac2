import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeSession
import StampedeWire

/// A declared flow (`workload: websocket`) on the chat client's scheduling: the same send
/// chains, reconnects, storms, churn and heartbeats, with the messages, connect steps and
/// replies the scenario declares instead of the chat protocol's.
extension ChatWorkload {
    // MARK: Connecting

    /// The upgrade is done: the connect steps run (the client is connected after the last one).
    func flowOpened(_ k: Int, _ flow: FlowProgram) {
        flowConnections[k].epoch &+= 1
        flowConnections[k].session.restart()
        flowConnections[k].upgradedNs = EventLoop.now()
        if let table = flowConnections[k].values { table.clearCaptures() } else { flowConnections[k].values = flow.makeValueTable() }
        runSteps(k, flow)
    }

    /// Carries out the session's connect actions: sends until a step waits (armed with its
    /// timeout) or the last one is done.
    func runSteps(_ k: Int, _ flow: FlowProgram) {
        while true {
            switch flowConnections[k].session.nextStep(flow.spec.flow) {
            case .send(let index):
                guard case .send(let template) = flow.spec.connect[index] else { return }
                sendTemplate(k, template, sequence: 0, intendedNs: EventLoop.now())
            case .wait(_, let timeoutSeconds):
                let deadline = EventLoop.now() + UInt64(timeoutSeconds * 1e9)
                ws.schedule(at: deadline, token: TimerToken(TimerKind.flowStep, slot: k, epoch: flowConnections[k].epoch))
                return
            case .ready:
                if let slot = flow.connectFlowSlot { ws.metrics.named.record(slot, nanoseconds: EventLoop.now() &- flowConnections[k].upgradedNs) }
                ws.ready(k)
                clientReady(k)
                return
            }
        }
    }

    /// An expect step's timer: the step is still waiting, so the connect failed.
    func flowStepTimedOut(_ k: Int, epoch: UInt32) {
        guard flowConnections[k].epoch == epoch, !flowConnections[k].session.isReady, ws.state(of: k) == .open else { return }
        failStep(k, flow, .expectTimeout)
    }

    func failStep(_ k: Int, _ flow: FlowProgram, _ error: ErrorClass) {
        let step = flowConnections[k].session.step
        var what = ""
        if step < flow.spec.connect.count, case .expect(let e) = flow.spec.connect[step] { what = e.text }
        ws.metrics.error(error)
        ws.metrics.countStepError("\(error.key): connect step \(step) (\(what))")
        ws.close(k, code: 1000)
    }

    // MARK: Sending

    /// One scheduled message of the flow: an entry picked by weight, rendered straight into the frame.
    @inline(__always)
    func flowSendMessage(_ k: Int, _ flow: FlowProgram, sequence: UInt32, intendedNs: UInt64) {
        let entry = flow.pickSend(flow.cumulativeWeights.count > 1 ? ws.random.unit() : 0)
        let actual = sendTemplate(k, flow.spec.sends[entry].template, sequence: sequence, intendedNs: intendedNs)
        pending[k].sent(sequence, intendedNs: intendedNs, actualNs: actual)
        if !fanoutPeers.isEmpty { ws.metrics.count(.fanoutExpected, UInt64(fanoutPeers[k])) }
    }

    /// Renders `template` for client `k` into one frame and sends it; returns the send time.
    @discardableResult
    func sendTemplate(_ k: Int, _ template: MessageTemplate, sequence: UInt32, intendedNs: UInt64) -> UInt64 {
        let now = EventLoop.now()
        let stamp = MessageStamp(sender: plan.load.sender(k), sequence: sequence, intendedNs: runClock(intendedNs),
                                 actualNs: runClock(now))
        renderAndSend(k, template, stamp: stamp)
        return now
    }

    /// Writes the template's frame straight into the connection's write queue: no allocation.
    @inline(__always)
    func renderAndSend(_ k: Int, _ template: MessageTemplate, stamp: MessageStamp) {
        guard let table = flowConnections[k].values else { return }
        let opcode: WebSocketOpcode = template.encoding == .binary ? .binary : .text
        let random = ws.random.next()
        users[k].withUnsafeBytes { user in
            var values = TemplateValues(stamp: stamp, client: plan.load.globalIndices[k], sequence: stamp.sequence, user: user,
                                        named: UnsafeBufferPointer(table.named), random: random)
            let length = template.length(values)
            ws.send(k, opcode: opcode, length: length) { out in _ = template.render(into: out, &values) }
        }
    }

    // MARK: Receiving

    func flowReceived(_ k: Int, _ flow: FlowProgram, opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer) {
        let isText = opcode == .text
        switch flowConnections[k].session.received(payload, isText: isText, flow.spec.flow) {
        case .stepDone(let index):
            guard case .expect(let expect) = flow.spec.connect[index] else { return }
            for capture in expect.captures {
                guard let range = capture.selector.extract(payload) else { continue }
                flowConnections[k].values?.capture(capture.slot, UnsafeRawBufferPointer(rebasing: payload[range]))
            }
            flowConnections[k].epoch &+= 1  // the step's timer is stale now
            runSteps(k, flow)
        case .stepFailed: failStep(k, flow, .expectMismatch)
        case .reply(let i): replyReceived(k, flow, rule: i, payload: payload)
        case .respond(let i): respond(k, flow, i)
        case .ignore(let i):
            ws.metrics.count(.flowIgnored)
            ws.metrics.named.count(flow.ignoreCounter(i))
        case .unrecognised: unrecognised(k, flow, payload, isText: isText)
        }
    }

    func respond(_ k: Int, _ flow: FlowProgram, _ i: Int) {
        ws.metrics.count(.flowResponded)
        ws.metrics.named.count(flow.respondCounter(i))
        sendTemplate(k, flow.spec.responds[i].template, sequence: 0, intendedNs: EventLoop.now())
    }

    func unrecognised(_ k: Int, _ flow: FlowProgram, _ payload: UnsafeRawBufferPointer, isText: Bool) {
        ws.metrics.count(.unrecognisedFrames)
        guard ws.metrics.wantsSample else { return }
        flow.masked(payload).withUnsafeBytes { ws.metrics.keepSample($0, isText: isText) }
    }

    /// A reply rule took the frame: measured by its correlated message or its stamp.
    func replyReceived(_ k: Int, _ flow: FlowProgram, rule i: Int, payload: UnsafeRawBufferPointer) {
        if let slot = flow.replyCounterSlot[i] { ws.metrics.named.count(slot) }
        let rule = flow.spec.replies[i]
        let nowLocal = EventLoop.now()
        switch rule.measure {
        case .none:
            return
        case .correlate(_, let received):
            guard let sequence = MessageFlow.sequence(in: payload, at: received), let entry = pending[k].entry(sequence) else {
                ws.metrics.count(.unrecognisedFrames)
                return
            }
            if let slot = flow.replyLatencySlot[i] {
                ws.metrics.named.record(slot, nanoseconds: nowLocal &- entry.intendedNs)
                ws.metrics.named.record(slot + 1, nanoseconds: nowLocal &- entry.actualNs)
            }
            delivered(k, sequence)
        case .stamp(let source):
            guard let stamp = MessageFlow.stamp(in: payload, source) else {
                ws.metrics.count(.unparsedMessages)
                return
            }
            let now = runClock(nowLocal)
            if stamp.sender == plan.load.sender(k) {
                if let slot = flow.replyLatencySlot[i] {
                    ws.metrics.named.record(slot, nanoseconds: now &- stamp.intendedNs)
                    ws.metrics.named.record(slot + 1, nanoseconds: now &- stamp.actualNs)
                }
                guard pending[k].entry(stamp.sequence) != nil else { return }
                ws.metrics.record(.roundTrip, nanoseconds: now &- stamp.intendedNs)
                ws.metrics.record(.roundTripUncorrected, nanoseconds: now &- stamp.actualNs)
                delivered(k, stamp.sequence)
            } else {
                ws.metrics.count(.fanoutReceived)
                ws.metrics.record(.fanout, nanoseconds: now &- stamp.intendedNs)
                ws.metrics.record(.fanoutUncorrected, nanoseconds: now &- stamp.actualNs)
            }
        }
    }

    /// Message `sequence` got its first measured reply; later replies to it only add latency samples.
    func delivered(_ k: Int, _ sequence: UInt32) {
        guard pending[k].deliver(sequence) else { return }
        outstanding[k] -= 1
        totalOutstanding -= 1
        ws.metrics.count(.messagesDelivered)
        if plan.load.loadModel == .closed && phase == .messages {
            if let next = schedule.nextAfterReply(now: EventLoop.now()) { ws.schedule(at: next, token: token(.send, k)) }
        }
    }

    // MARK: Losing

    /// Every quarter of the reply timeout (at most every 250 ms): messages past it are lost (`no_reply`).
    func replySweep(_ flow: FlowProgram, now: UInt64) {
        guard let timeout = flow.replyTimeoutNs, now > timeout else { return }
        let cutoff = now - timeout
        for k in pending.indices where outstanding[k] > 0 {
            let n = pending[k].expire(sentAtOrBefore: cutoff)
            guard n > 0 else { continue }
            ws.metrics.lose(.noReply, UInt64(n))
            outstanding[k] -= UInt32(n)
            totalOutstanding -= UInt64(n)
            if plan.load.loadModel == .closed && phase == .messages {
                if let next = schedule.nextAfterReply(now: now) { ws.schedule(at: next, token: token(.send, k)) }
            }
        }
    }

    var replySweepIntervalNs: UInt64 { min(250_000_000, max(1_000_000, (flow.replyTimeoutNs ?? 0) / 4)) }
}
