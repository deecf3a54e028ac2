// Target `hub-session`: HubProtocolSession (handshake, messages, keep-alive, stateful
// reconnect's numbering, acks, resume and duplicate skipping, Close) over arbitrary bytes,
// with the JSON or the MessagePack codec. The first input byte picks the settings; the rest is
// what the server sent. The harness sends and resumes in answer to what it receives (never to
// how the input was split), so the whole and the split run must log the same actions: message
// kinds and bytes, what the session wrote, and the end with its class.

func fuzzHubSession(_ data: UnsafeRawBufferPointer) {
    guard let settings = data.first else { return }
    let input = UnsafeRawBufferPointer(rebasing: data[1...])
    let stateful = settings & 2 != 0
    let limit = settings & 4 != 0 ? 64 : 1 << 16
    let replayCap = settings & 8 != 0 ? 200 : 1 << 20
    var none: InputRandom? = nil
    var split: InputRandom? = InputRandom(data, salt: 11)
    if settings & 1 == 0 {
        let whole = hubSessionRun(JSONHubProtocol.self, input, stateful: stateful, limit: limit, replayCap: replayCap, random: &none)
        let pieces = hubSessionRun(JSONHubProtocol.self, input, stateful: stateful, limit: limit, replayCap: replayCap, random: &split)
        checkSame(whole, pieces, "hub-session (json): whole and split input differ")
    } else {
        let whole = hubSessionRun(MessagePackHubProtocol.self, input, stateful: stateful, limit: limit, replayCap: replayCap, random: &none)
        let pieces = hubSessionRun(MessagePackHubProtocol.self, input, stateful: stateful, limit: limit, replayCap: replayCap, random: &split)
        checkSame(whole, pieces, "hub-session (msgpack): whole and split input differ")
    }
}

private func hubSessionRun<C: HubProtocolCodec>(_: C.Type, _ input: UnsafeRawBufferPointer, stateful: Bool, limit: Int, replayCap: Int,
                                                 random: inout InputRandom?) -> EventLog {
    var log = EventLog()
    var session = HubProtocolSession<C>(.init(maxMessageLength: limit, keepAliveIntervalNs: 3_000_000_000,
                                              serverTimeoutNs: 40_000_000_000, maxReplayBytes: replayCap))
    let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
    defer { out.deallocate() }
    var now: UInt64 = 1_000_000_000
    var sent: UInt64 = 0
    if let n = session.handshakeRequest(statefulReconnect: stateful, now: now, into: out) {
        log.tag(0x48); log.data(UnsafeRawBufferPointer(rebasing: out[0..<n]))
    }
    func wrote(_ tag: UInt8, _ r: Range<Int>?) {
        guard let r else { return }
        checkRange(r, within: 0..<out.count, "write outside the buffer")
        log.tag(tag); log.data(UnsafeRawBufferPointer(rebasing: out[r]))
    }
    drive(input, random: &random) { buf in
        let b = UnsafeRawBufferPointer(buf)
        let (action, consumed) = session.next(b)
        check(consumed >= 0 && consumed <= b.count, "consumed more than given")
        switch action {
        case .needMore:
            check(consumed == 0, "needMore consumed bytes")
            return StepResult(consumed: 0, needsInput: true)
        case .handshakeCompleted:
            check(consumed > 0 && b[consumed - 1] == 0x1E, "handshake response without its separator")
            log.tag(0x4F); log.data(b, 0..<consumed)
        case .skipped:
            check(consumed > 0, "skipped nothing")
            log.tag(0x53); log.data(b, 0..<consumed)
        case .message(let m):
            check(consumed > 0, "message of no bytes")
            check(m.type >= 1 && m.type <= 5, "delivered a type the session keeps")
            for r in [m.invocationId, m.target, m.arguments, m.streamIds, m.item, m.result, m.error, m.headers] {
                if let r { checkRange(r, within: 0..<consumed, "message field outside the message") }
            }
            log.tag(0x4D); log.int(Int(m.type)); log.data(b, 0..<consumed)
            // Answers that depend only on the message: send one numbered message per delivery,
            // resume on a CancelInvocation, come back on a StreamInvocation.
            sent += 1
            let id = sent
            switch session.send(now: now, into: out, { o in C.writeCompletion(into: o, invocationId: .number(id)) }) {
            case .write(let n): wrote(0x57, 0..<n)
            case .held: log.tag(0x68)
            case .notSent: log.tag(0x6E)
            }
            if m.type == HubMessageType.cancelInvocation.rawValue && session.canResume {
                session.beginResume()
                log.tag(0x52)
            } else if m.type == HubMessageType.streamInvocation.rawValue && session.isResuming {
                wrote(0x51, session.resumed(now: now, into: out).map { 0..<$0 })
                session.forEachReplayMessage { r in log.tag(0x50); log.data(r) }
            }
        case .ended(let end):
            log.tag(0x45)
            switch end {
            case .handshakeRejected(let r):
                checkRange(r, within: 0..<b.count, "handshake error outside the buffer")
                log.int(1); log.data(b, r)
            case .handshakeInvalid: log.int(2)
            case .protocolError(let e): log.int(3); log.data(Array(e.description.utf8))
            case .sequenceAhead: log.int(4)
            case .closedByServer(let error, let allow):
                log.int(5); log.int(allow ? 1 : 0)
                if let error { checkRange(error, within: 0..<b.count, "close error outside the buffer"); log.data(b, error) }
            case .serverTimeout: check(false, "server timeout from next")
            }
            check(session.hasEnded, "ended but not ended")
            return StepResult(consumed: 0, stop: true)
        }
        // Time moves one second per action: pings, acks and the server timeout fall due.
        now += 1_000_000_000
        let step = session.keepAliveCheck(now: now, into: out)
        wrote(0x49, step.ping)
        wrote(0x41, step.ack)
        if step.serverTimedOut {
            log.tag(0x54)
            return StepResult(consumed: consumed, stop: true)
        }
        check(session.replayBytes <= replayCap, "replay over its cap")
        return StepResult(consumed: consumed)
    }
    return log
}
