// Target `socketio-session`: SocketIOClientSession (the open packet, pings, the upgrade's probe
// and pause, the namespace's CONNECT / CONNECT_ERROR / DISCONNECT, events, acks, binary packets
// and their attachments) over arbitrary packets. The first input byte picks the settings
// (transports, namespace, attachment limit); the rest is a long-polling payload whose records
// (text, or "b" + base64 for binary) are the server's packets, each arriving on polling or on
// the WebSocket as the settings and its place say. The harness also moves polls, posts and the
// probe along between packets. Checked: no trap, every range inside the buffer it indexes, an
// assembled binary packet with as many attachments as it announced, one end and nothing after,
// and the same actions when the same packets are given one at a time as WebSocket frames would be.

func fuzzSocketIOSession(_ data: UnsafeRawBufferPointer) {
    guard let settings = data.first else { return }
    let payload = UnsafeRawBufferPointer(rebasing: data[1...])
    let a = socketIOSessionRun(payload, settings: settings, copyEach: false)
    let b = socketIOSessionRun(payload, settings: settings, copyEach: true)
    checkSame(a, b, "socketio-session: the same packets gave different actions")
}

private func socketIOSessionRun(_ payload: UnsafeRawBufferPointer, settings: UInt8, copyEach: Bool) -> EventLog {
    let plans: [SocketIOTransportPlan] = [.pollingThenWebSocket, .websocketOnly, .pollingOnly, .pollingThenWebSocket]
    let namespace: [UInt8] = settings & 4 != 0 ? Array("/live".utf8) : Array("/".utf8)
    var session = SocketIOClientSession(.init(namespace: namespace, transports: plans[Int(settings & 3)],
                                              maxAttachmentBytes: settings & 8 != 0 ? 64 : 1 << 16, maxAttachments: 4), now: 0)
    var log = EventLog()
    let decoded = UnsafeMutableRawBufferPointer.allocate(byteCount: max(16, payload.count), alignment: 16)
    let head = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 16)
    defer { decoded.deallocate(); head.deallocate() }
    var ended = false
    var now: UInt64 = 1_000
    var index = 0
    var records = EngineIOPollingPayload(payload)
    while let record = records.next() {
        index += 1
        now += 7_000_000_000
        let transport: SocketIOTransport = settings & 16 != 0 && index % 2 == 0 ? .websocket : .polling
        var packet: UnsafeRawBufferPointer
        var binary = false
        switch record {
        case .text(_, let r):
            checkRange(r, within: 0..<payload.count, "record outside the payload")
            check(r.lowerBound >= 1, "text record without its type")
            packet = UnsafeRawBufferPointer(rebasing: payload[(r.lowerBound - 1)..<r.upperBound])
        case .binary(let r):
            checkRange(r, within: 0..<payload.count, "record outside the payload")
            guard let n = Base64.decode(UnsafeRawBufferPointer(rebasing: payload[r]), into: decoded) else { log.tag(0x42); continue }
            check(n <= decoded.count, "decoded past the buffer")
            packet = UnsafeRawBufferPointer(rebasing: decoded[0..<n])
            binary = true
        case .invalid(let r):
            checkRange(r, within: 0..<payload.count, "record outside the payload")
            log.tag(0x49)
            continue
        }
        // A WebSocket frame is its own buffer: the packet copied out, as a frame's payload would be.
        let copy: [UInt8]? = copyEach ? Array(packet) : nil
        let action = copy.map { c in c.withUnsafeBytes { session.receive($0, binary: binary, on: transport, now: now) } }
            ?? session.receive(packet, binary: binary, on: transport, now: now)
        let length = packet.count
        if ended { check(action == .skipped, "an action after the end") }
        switch action {
        case .opened:
            check(session.open != nil && session.messageTransport != nil, "opened without terms")
            log.tag(0x4F); log.int(session.open?.maxPayload ?? 0)
            if session.shouldProbe { session.probeStarted(); log.tag(0x70) }
        case .sendPong(let t): log.tag(0x50); log.int(Int(t.rawValue))
        case .probeAnswered(let now): log.tag(0x41); log.int(now ? 1 : 0)
        case .probeFailed: log.tag(0x46)
        case .namespaceConnected: log.tag(0x43)
        case .event(let p), .ack(let p):
            checkRange(p.data, within: 0..<length, "data outside the packet")
            if let n = p.namespace { checkRange(n, within: 0..<length, "namespace outside the packet") }
            log.tag(0x45); log.int(Int(p.type.rawValue)); log.uint(p.ackId ?? .max); log.int(p.data.count)
        case .binary(let p):
            let h = session.binaryHead
            checkRange(p.data, within: 0..<h.count, "data outside the binary head")
            check(session.attachments.count == p.attachments, "assembled with the wrong number of attachments")
            log.tag(0x62); log.int(p.attachments); log.data(h)
            for a in session.attachments { log.data(a) }
        case .skipped: log.tag(0x53)
        case .ended(let end):
            check(!ended, "ended twice")
            ended = true
            check(session.hasEnded && session.deadline == nil, "ended but still running")
            if case .namespaceRefused(let m?) = end { checkRange(m, within: 0..<length, "message outside the packet") }
            log.tag(0x58)
        }
        // Requests and the probe move on between packets, by the packet's place only.
        switch index % 4 {
        case 1:
            let step = session.pollCompleted()
            log.int(step == .carryOn ? 0 : step == .upgradeNow ? 1 : 2)
            session.pollStarted()
        case 2: session.postStarted()
        case 3: _ = session.postCompleted()
        default: if session.check(now: now + 60_000_000_000) { log.tag(0x54); ended = true }
        }
        if let n = session.writeHead(.binaryEvent, attachments: index % 3, ackId: UInt64(index), into: head) {
            checkRange(0..<n, within: 0..<head.count, "head past the buffer")
        }
    }
    return log
}
