// What comes back: Completions, StreamItems (and cancelling streams), server invocations
// (client results and `receive` handlers), the join's answer, and the hub errors kept for the
// report (§4). A bare §N is a section of docs/protocols.md.

import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeWire

extension HubClients {
    /// A message of types 1–5 the session delivered (new, in order).
    func handle(_ k: Int, _ m: HubMessage, _ buffer: UnsafeRawBufferPointer) {
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
            if let slot = clients[k].calls.streamSlot(stamp.sequence) {
                if clients[k].calls.streamCompleted(slot: slot) { return }  // the call was complete when we cancelled it
            }
            guard clients[k].calls.answered() else { return }
            totalOutstanding -= 1
            if let errorRange = m.error {
                metrics.count(.messagesFailed)
                metrics.error(.hubError)
                noteHubError(buffer, errorRange, context: nil)
            } else if !resultAsExpected(m, buffer, stamp: stamp) {
                metrics.count(.messagesFailed)
                metrics.error(.unexpectedReply)
            } else {
                let now = stampNow(EventLoop.now())
                metrics.count(.messagesDelivered)
                metrics.record(.roundTrip, nanoseconds: now &- stamp.intendedNs)
                metrics.record(.roundTripUncorrected, nanoseconds: now &- stamp.actualNs)
            }
            if plan.load.loadModel == .closed && phase == .messages {
                if let next = schedule.nextAfterReply(now: EventLoop.now()) { loop.schedule(at: next, token: sendToken(k)) }
            }
        case .streamItem:
            guard let idRange = m.invocationId, let stamp = ChatCodec.parseStamp(UnsafeRawBufferPointer(rebasing: buffer[idRange])) else { return }
            if let slot = clients[k].calls.streamSlot(stamp.sequence) {
                if clients[k].calls.streams[slot].cancelled { return }
                clients[k].calls.streams[slot].items += 1
                metrics.count(.streamItems)
                metrics.record(.streamItem, nanoseconds: stampNow(EventLoop.now()) &- stamp.intendedNs)
                if let limit = plan.spec.cancelStreamAfterItems, clients[k].calls.streams[slot].items >= limit {
                    cancelStream(k, slot: slot, id: UnsafeRawBufferPointer(rebasing: buffer[idRange]), stamp: stamp)
                }
                return
            }
            metrics.count(.streamItems)
            metrics.record(.streamItem, nanoseconds: stampNow(EventLoop.now()) &- stamp.intendedNs)
        case .invocation:
            guard let targetRange = m.target else { return }
            let target = UnsafeRawBufferPointer(rebasing: buffer[targetRange])
            if let idRange = m.invocationId {
                answerClientResult(k, target: target, id: UnsafeRawBufferPointer(rebasing: buffer[idRange]))
            }
            if let receive = plan.spec.receiveMethod, equalsIgnoringCase(target, receive), let args = m.arguments {
                received(k, buffer, args)
            }
        default:
            // Ping, Close, Ack and Sequence are the session's; a StreamInvocation or a
            // CancelInvocation from the server asks nothing of a client.
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
    func resultAsExpected(_ m: HubMessage, _ buffer: UnsafeRawBufferPointer, stamp: MessageStamp) -> Bool {
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

    /// Cancels a stream (§4 CancelInvocation): from the client's side the call is then complete;
    /// a Completion or items the server sends after it are ignored.
    func cancelStream(_ k: Int, slot: Int, id: UnsafeRawBufferPointer, stamp: MessageStamp) {
        clients[k].calls.streams[slot].cancelled = true
        sendHub(k) { out in Codec.writeCancelInvocation(into: out, invocationId: .utf8(id)) }
        metrics.count(.streamsCancelled)
        guard clients[k].calls.answered() else { return }
        totalOutstanding -= 1
        let now = stampNow(EventLoop.now())
        metrics.count(.messagesDelivered)
        metrics.record(.roundTrip, nanoseconds: now &- stamp.intendedNs)
        metrics.record(.roundTripUncorrected, nanoseconds: now &- stamp.actualNs)
        if plan.load.loadModel == .closed && phase == .messages {
            if let next = schedule.nextAfterReply(now: EventLoop.now()) { loop.schedule(at: next, token: sendToken(k)) }
        }
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
            let now = stampNow(EventLoop.now())
            if stamp.sender == plan.load.sender(k) {
                guard plan.spec.operation == .send, clients[k].calls.answered() else { return }
                totalOutstanding -= 1
                metrics.count(.messagesDelivered)
                metrics.record(.roundTrip, nanoseconds: now &- stamp.intendedNs)
                metrics.record(.roundTripUncorrected, nanoseconds: now &- stamp.actualNs)
                if plan.load.loadModel == .closed && phase == .messages {
                    if let next = schedule.nextAfterReply(now: EventLoop.now()) { loop.schedule(at: next, token: sendToken(k)) }
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
}
