// Making calls: the open and closed send schedules, calls due while reconnecting, the stamped
// invocation (invoke, send, stream, upload) and its arguments, and what connecting changes for
// the schedule (§4). A bare §N is a section of docs/protocols.md.

import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeWire

extension HubClients {
    // MARK: Calls

    /// Open model: sends every due call the connection has room for, each stamped with its own
    /// intended time. Only once connected: calls due during a restart wait for the handshake (and join).
    func sendDue(_ k: Int) {
        guard clients[k].phase == .connected else { return }
        while clients[k].calls.nextSequence < clients[k].calls.dueSequence {
            if clients[k].endpoint.transport == .webSockets && loop.isBackedUp(clients[k].connections.main) {
                metrics.count(.sendsDeferred)
                return
            }
            let seq = clients[k].calls.nextSequence
            call(k, sequence: seq, intendedNs: schedule.intended(slot: clients[k].calls.sendSlot, sequence: seq))
            clients[k].calls.nextSequence = seq + 1
        }
    }

    /// Whether client `k` is between losing its connection and having it back (its open-model
    /// send chain goes on meanwhile).
    @inline(__always)
    func isReconnecting(_ k: Int) -> Bool {
        clients[k].reconnect.everConnected && (clients[k].phase == .waitingToReconnect || Self.isConnecting(clients[k].phase))
    }

    /// A call fell due while client `k` reconnects: `drop` counts it sent and lost now; `queue`
    /// keeps it (only its sequence number) for after the reconnect, up to the queue's bound.
    @inline(__always)
    func dueWhileDisconnected(_ k: Int) {
        clients[k].calls.dueSequence += 1
        dropDue(k, keeping: plan.load.keptWhileDisconnected)
    }

    /// Counts the calls that fell due and will not be sent — all but the newest `keeping` — as
    /// sent and lost (`dropped_while_disconnected`), oldest first.
    func dropDue(_ k: Int, keeping: UInt32 = 0) {
        let n = clients[k].calls.skipDue(keeping: keeping)
        guard n > 0 else { return }
        metrics.count(.messagesSent, UInt64(n))
        metrics.lose(.droppedWhileDisconnected, UInt64(n))
    }

    /// A local instant in the run's clock, for stamps (`HubPlan.stampClockOffsetNs`).
    @inline(__always) func stampNow(_ localNs: UInt64) -> UInt64 { runClock(localNs, offsetNs: plan.stampClockOffsetNs) }

    /// Makes the scenario's call, stamped: the stamp is the invocation id (so the reply carries
    /// it) and fills any `{stamp}` argument.
    func call(_ k: Int, sequence: UInt32, intendedNs: UInt64) {
        guard let spec = plan.spec.call else { return }
        let stamp = MessageStamp(sender: plan.load.sender(k), sequence: sequence, intendedNs: stampNow(intendedNs),
                                 actualNs: stampNow(EventLoop.now()))
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
            clients[k].calls.track(stream: sequence)
        }
        metrics.count(.messagesSent)
        metrics.count(Self.perTransport(clients[k].endpoint.transport, .sentWebSockets, .sentServerSentEvents, .sentLongPolling))
        if plan.spec.operation == .send && plan.spec.receiveMethod == nil {
            // Nothing comes back for a send and no handler reports it: handing it to the transport is its delivery.
            metrics.count(.messagesDelivered)
        } else {
            clients[k].calls.outstanding += 1
            totalOutstanding += 1
        }
    }

    /// An empty stream id list: MessagePack then writes the 6-item Invocation the official clients
    /// send (some peers fail on the valid 5-item form).
    static var noStreams: UnsafeBufferPointer<UInt64> { UnsafeBufferPointer(start: nil, count: 0) }


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
                    userName(k).withUnsafeBytes { w.string($0) }
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

    /// Client `k`'s user name (`{user}`), made at its first use: a run whose arguments never
    /// name the user keeps none. Churn gives a client a new one (`+Reconnect`).
    func userName(_ k: Int) -> [UInt8] {
        if userNames[k].isEmpty { userNames[k] = Array("\(plan.runTag)-user-\(plan.load.globalIndices[k])".utf8) }
        return userNames[k]
    }

    func renderText(_ parts: [TemplatePart], k: Int, sequence: UInt32) -> String {
        var s = ""
        for p in parts {
            switch p {
            case .literal(let l): s += l
            case .client: s += String(plan.load.globalIndices[k])
            case .clientModulo(let n): s += String(plan.load.globalIndices[k] % n)
            case .user: s += String(decoding: userName(k), as: UTF8.self)
            case .sequence: s += String(sequence)
            }
        }
        return s
    }

    func connected(_ k: Int) {
        setPhase(k, .connected)
        let arrival = clients[k].reconnect.connected()
        metrics.count(.connected)
        metrics.count(Self.perTransport(clients[k].endpoint.transport, .connectedWebSockets, .connectedServerSentEvents, .connectedLongPolling))
        if arrival != .first {
            if arrival == .joinedAsNewUser || arrival == .rampedUp {
                // A new user, not a reconnect: nothing was queued for it.
                metrics.count(arrival == .rampedUp ? .rampedUp : .churnJoined)
            } else {
                metrics.count(.reconnected)
                stormRecovered(k)
            }
            if phase == .messages {
                switch plan.load.loadModel {
                case .open:
                    // The send chain went on during the gap: what was queued goes now, each call
                    // with its own intended time. A client without a running chain rejoins the schedule.
                    if !clients[k].calls.sendChain { rejoinSchedule(k) }
                    sendDue(k)
                case .closed:
                    clients[k].calls.sendEpoch &+= 1
                    if let next = schedule.nextAfterReply(now: EventLoop.now()) { loop.schedule(at: next, token: sendToken(k)) }
                }
            }
        }
    }

    /// Open model: a reconnected client whose send chain had stopped (it was not connected when
    /// the message phase began) picks the schedule up where it is now; the calls before were
    /// never due for it, so they are not counted.
    func rejoinSchedule(_ k: Int) {
        guard schedule.paces else { return }
        dropDue(k)  // nothing is pending without a chain; if something is, it is counted, not forgotten
        let now = EventLoop.now()
        clients[k].calls.rejoin(atSequence: schedule.sequencesDue(slot: clients[k].calls.sendSlot, now: now))
        let next = schedule.intended(slot: clients[k].calls.sendSlot, sequence: clients[k].calls.nextSequence)
        if schedule.isInPhase(next) {
            loop.schedule(at: next, token: sendToken(k))
            clients[k].calls.sendChain = true
        }
    }
}
