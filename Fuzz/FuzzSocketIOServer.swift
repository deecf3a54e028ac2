// Target `socketio-server`: SocketIOServerSession (Engine.IO 4 polling, the WebSocket upgrade,
// pings, Socket.IO namespaces, acks, binary reassembly, maxPayload, the queue limit) over
// arbitrary commands. The first input byte picks the settings (the handshake transport, small
// limits); the rest is a list of commands separated by 0xFF, each a command byte and its bytes:
// a WebSocket text or binary message, a POST body, a GET poll, the timer, an upgrade attached,
// a transport lost, a server close. The harness answers like the reference server (accept or
// refuse every CONNECT by its auth's length, ack every event with an id, echo binary packets),
// and logs every action, poll answer and WebSocket frame.
//
// Run twice: with each POST body whole, and with each body's records posted one by one. The two
// must log the same (records are independent), and each run checks ranges, that the session
// ends once and says nothing after, and that its queue stays under the limit.

func fuzzSocketIOServer(_ data: UnsafeRawBufferPointer) {
    guard let settings = data.first else { return }
    let input = UnsafeRawBufferPointer(rebasing: data[1...])
    let whole = socketIOServerRun(input, settings: settings, splitPosts: false)
    let split = socketIOServerRun(input, settings: settings, splitPosts: true)
    checkSame(whole, split, "socketio-server: a POST whole and record by record differ")
}

private func socketIOServerRun(_ input: UnsafeRawBufferPointer, settings: UInt8, splitPosts: Bool) -> EventLog {
    var log = EventLog()
    let configuration = SocketIOServerSession.Configuration(
        pingIntervalNs: 1_000_000_000, pingTimeoutNs: 500_000_000, maxPayload: 1 << 20,
        maxQueuedBytes: settings & 2 != 0 ? 64 * 1024 : 1 << 20, maxAttachments: settings & 4 != 0 ? 2 : 64)
    var now: UInt64 = 1_000_000_000
    var s = SocketIOServerSession(sid: Array("fuzzsid".utf8), transport: settings & 1 == 0 ? .polling : .webSocket,
                                  configuration: configuration, now: now)
    var ended = false
    let empty = UnsafeRawBufferPointer(start: nil, count: 0)

    func note(_ r: SocketIOServerSession.SendResult) {
        log.tag(0x53); log.int(Int(r == .writeNow ? 0 : r == .queued ? 1 : r == .overflow ? 2 : 3))
        if r == .overflow { ended = true }
    }
    func act(_ a: SocketIOServerSession.Action, _ buf: UnsafeRawBufferPointer) {
        check(!ended || a == .none || a == .ignored, "an action after the end")
        func range(_ r: Range<Int>?, _ b: UnsafeRawBufferPointer) {
            guard let r else { log.int(-1); return }
            checkRange(r, within: 0..<b.count, "range outside the buffer")
            log.data(b, r)
        }
        switch a {
        case .none: log.tag(0x6E)
        case .ignored: log.tag(0x49)
        case .connectRequested(let ns, let auth):
            log.tag(0x43); range(ns, buf); range(auth, buf)
            let name = ns.map { Array(buf[$0]) } ?? [0x2F]
            if auth.count % 2 == 0 { note(s.acceptConnect(namespace: name, socketID: Array("x".utf8))) }
            else { note(s.refuseConnect(namespace: name, message: Array("no".utf8))) }
        case .disconnected(let ns): log.tag(0x44); range(ns, buf)
        case .packet(let p):
            log.tag(0x50); log.int(Int(p.type.rawValue)); range(p.namespace, buf); range(p.data, buf)
            if let id = p.ackId { note(s.queueSocketIO(.ack, namespace: [0x2F], ackId: id, data: UnsafeRawBufferPointer(rebasing: buf[p.data]))) }
        case .binaryPacket(let p):
            let head = s.binaryPacket
            let attachments = s.attachments
            check(attachments.count == p.attachments, "a binary packet without all its attachments")
            head.withUnsafeBytes { h in log.tag(0x42); range(p.namespace, h); range(p.data, h) }
            for a in attachments { log.data(a) }
            note(head.withUnsafeBytes { s.queueSocketIO(.binaryAck, attachments: attachments.count, namespace: [0x2F], ackId: p.ackId ?? 0, data: $0) })
            for a in attachments { note(a.withUnsafeBytes { s.sendBinary($0) }) }
        case .sendProbeAnswer: log.tag(0x70)
        case .upgraded: log.tag(0x55)
        case .upgradeFailed: log.tag(0x46)
        case .ended(let end):
            log.tag(0x45); log.data(Array("\(end)".utf8))
            ended = true
        }
    }
    func deliver() {
        if s.pollAnswerDue { s.takePollPayload { log.tag(0x47); log.data($0) } }
        s.drainWebSocket { binary, bytes in log.tag(binary ? 0x62 : 0x74); log.data(bytes) }
        check(s.outbox.count <= configuration.maxQueuedBytes, "the queue passed its limit")
    }

    var offset = 0
    while offset < input.count {
        var end = offset
        while end < input.count && input[end] != 0xFF { end += 1 }
        guard end > offset else {  // an empty command
            offset = end + 1
            continue
        }
        let command = input[offset]
        let body = UnsafeRawBufferPointer(rebasing: input[(offset + 1)..<end])
        offset = end + 1
        switch command % 9 {
        case 0, 1:
            act(s.webSocketMessage(body, binary: command % 9 == 1, now: now), body)
        case 2:
            let pieces: [Range<Int>]
            if splitPosts {
                var cuts: [Range<Int>] = []
                var start = 0
                for i in 0..<body.count where body[i] == 0x1E { cuts.append(start..<i); start = i + 1 }
                cuts.append(start..<body.count)
                pieces = body.isEmpty ? [] : cuts
            } else {
                pieces = body.isEmpty ? [] : [0..<body.count]
            }
            for piece in pieces where !ended {
                let part = UnsafeRawBufferPointer(rebasing: body[piece])
                // An empty record is an error whole or alone.
                var at = 0
                if part.isEmpty { act(s.post(empty, from: 0, now: now).action, empty) }
                while at < part.count && !ended {
                    let (a, next) = s.post(part, from: at, now: now)
                    check(next > at && next <= part.count, "post made no progress")
                    act(a, part)
                    at = next
                }
            }
        case 3:
            switch s.poll(now: now) {
            case .answerNow: log.tag(0x61)
            case .hold: log.tag(0x68)
            case .badRequest: log.tag(0x72)
            case .ended(let e): act(.ended(e), empty)
            }
        case 4:
            now += 600_000_000
            act(s.timerFired(deadline: s.deadline, now: now), empty)
        case 5:
            log.tag(0x57); log.int(s.webSocketAttached() ? 1 : 0)
        case 6:
            act(s.webSocketLost(), empty)
        case 7:
            act(s.pollLost(), empty)
        default:
            act(s.close(), empty)
        }
        deliver()
    }
    return log
}
