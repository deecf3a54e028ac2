// Target `flow-session`: arbitrary server bytes through a compiled flow. The input (after a
// 101 for the fixed key) is what a server sends; a WebSocketClientSession turns it into
// messages and a MessageFlowSession runs the flow below over them, whole and in pieces, with
// identical outcomes either way: steps done or failed, the rule that takes each frame, and what
// the runtime would read from it (captures, the correlated sequence, the stamp).
//
// The first input byte picks one of three flows (JSON pub/sub, STOMP text, MQTT binary) and
// whether its steps are strict; the rest is the server's byte stream.

private let flowKey = "dGhlIHNhbXBsZSBub25jZQ=="

private func path(_ text: String) -> FieldSelector { .path(try! JSONPath(parsing: text)) }
private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// The pub/sub flow of docs/websocket.md, a STOMP flow and an MQTT flow, compiled in code.
private func fuzzFlows(strict: Bool) -> [MessageFlow] {
    var pubsub = MessageFlow()
    pubsub.captures = ["session"]
    var welcome = MessageFlow.Expect(match: FrameMatch([.equals(path("$.type"), bytes("welcome"))]), text: "welcome")
    welcome.captures = [.init(slot: 0, selector: path("$.session"))]
    welcome.strict = strict
    var authOK = MessageFlow.Expect(match: FrameMatch([.equals(path("$.op"), bytes("auth_ok"))]), text: "auth_ok")
    authOK.strict = strict
    pubsub.connect = [.expect(welcome), .send(try! MessageTemplate(text: #"{"op":"auth","session":"{session}"}"#)), .expect(authOK)]
    pubsub.sends = [.init(template: try! MessageTemplate(text: #"{"op":"publish","id":{sequence},"data":{"stamp":"{stamp}"}}"#))]
    pubsub.replies = [
        .init(name: "ack", match: FrameMatch([.equals(path("$.op"), bytes("ack"))]), measure: .correlate(sent: path("$.id"), received: path("$.id"))),
        .init(name: "event", match: FrameMatch([.equals(path("$.op"), bytes("event"))]), measure: .stamp(.selector(path("$.data.stamp")))),
    ]
    pubsub.responds = [.init(name: "ping", match: FrameMatch([.equals(path("$.type"), bytes("ping"))]), template: try! MessageTemplate(text: #"{"type":"pong"}"#))]
    pubsub.ignores = [.init(name: "presence", match: FrameMatch([.equals(path("$.type"), bytes("presence"))]))]

    var stomp = MessageFlow()
    var connected = MessageFlow.Expect(match: FrameMatch([.prefix(bytes("CONNECTED\n"))]), text: "CONNECTED")
    connected.strict = strict
    stomp.connect = [.send(try! MessageTemplate(text: "CONNECT\naccept-version:1.2\n\n\0")), .expect(connected)]
    let receiptID = FieldSelector.between(start: bytes("receipt-id:"), end: bytes("\n"))
    stomp.replies = [
        .init(name: "receipt", match: FrameMatch([.prefix(bytes("RECEIPT\n"))]), measure: .correlate(sent: .between(start: bytes("receipt:"), end: bytes("\n")), received: receiptID)),
        .init(name: "message", match: FrameMatch([.prefix(bytes("MESSAGE\n"))]), measure: .stamp(.search)),
    ]
    stomp.ignores = [.init(name: "heartbeat", match: FrameMatch([.prefix(bytes("\n"))]))]

    var mqtt = MessageFlow()
    var connack = MessageFlow.Expect(match: FrameMatch([.masked(offset: 0, bytes: [0x20, 0x02, 0x00, 0x00], mask: [0xFF, 0xFF, 0xFF, 0xFF])]), text: "CONNACK")
    connack.strict = strict
    mqtt.connect = [.send(try! MessageTemplate(binaryHex: "10 0c 0004 4d515454 04 02 003c 0000")), .expect(connack)]
    mqtt.replies = [
        .init(name: "puback", match: FrameMatch([.masked(offset: 0, bytes: [0x40, 0x02], mask: [0xFF, 0xFF])]), measure: .correlate(sent: .bytes(offset: 12, length: 2), received: .bytes(offset: 2, length: 2))),
        .init(name: "delivery", match: FrameMatch([.masked(offset: 0, bytes: [0x30], mask: [0xF0]), .opcode(isText: false)]), measure: .stamp(.search)),
    ]
    return [pubsub, stomp, mqtt]
}

private let lenientFlows = fuzzFlows(strict: false)
private let strictFlows = fuzzFlows(strict: true)

func fuzzFlowSession(_ data: UnsafeRawBufferPointer) {
    guard let control = data.first else { return }
    let flows = control & 0x04 != 0 ? strictFlows : lenientFlows
    let flow = flows[Int(control & 0x03) % flows.count]
    var input = WebSocketHandshake.switchingProtocols(key: flowKey)
    input.append(contentsOf: UnsafeRawBufferPointer(rebasing: data[1...]))
    input.withUnsafeBytes { stream in
        var none: InputRandom? = nil
        var split: InputRandom? = InputRandom(stream, salt: 5)
        let whole = runFlow(stream, flow, random: &none)
        let pieces = runFlow(stream, flow, random: &split)
        checkSame(whole, pieces, "flow-session: whole and split input differ")
    }
}

/// The flow's answer to one message, and what the runtime would read from the frame.
private func take(_ payload: UnsafeRawBufferPointer, isText: Bool, _ session: inout MessageFlowSession, _ flow: MessageFlow, _ log: inout EventLog) {
    let bounds = 0..<payload.count
    let readyBefore = session.isReady
    let outcome = session.received(payload, isText: isText, flow)
    log.tag(0x46); log.data(Array("\(outcome)".utf8))
    switch outcome {
    case .stepDone(let index):
        check(!readyBefore, "flow-session: a step done after the connect")
        guard case .expect(let expect) = flow.connect[index] else { return check(false, "flow-session: a send step matched a frame") }
        for capture in expect.captures {
            if let r = capture.selector.extract(payload) { checkRange(r, within: bounds, "flow-session: capture outside the frame"); log.data(payload, r) }
        }
        steps(&session, flow, &log)
    case .stepFailed(let index):
        check(!readyBefore && index == session.step, "flow-session: a step failed out of turn")
    case .reply(let i):
        check(readyBefore, "flow-session: a reply measured before the connect")
        switch flow.replies[i].measure {
        case .correlate(_, let received): log.uint(UInt64(MessageFlow.sequence(in: payload, at: received) ?? .max))
        case .stamp(let source):
            if let s = MessageFlow.stamp(in: payload, source) { log.uint(UInt64(s.sender)); log.uint(UInt64(s.sequence)); log.uint(s.intendedNs) }
        case .none: break
        }
    case .respond, .ignore, .unrecognised:
        break
    }
}

/// Carries out connect steps until one waits or the flow is ready.
private func steps(_ session: inout MessageFlowSession, _ flow: MessageFlow, _ log: inout EventLog) {
    for _ in 0...flow.connect.count {
        let action = session.nextStep(flow)
        log.tag(0x53); log.data(Array("\(action)".utf8))
        if case .send = action { continue }
        return
    }
    check(false, "flow-session: connect steps without end")
}

private func runFlow(_ input: UnsafeRawBufferPointer, _ flow: MessageFlow, random: inout InputRandom?) -> EventLog {
    let configuration = WebSocketClientSession.Configuration(host: "127.0.0.1", port: 9001, path: "/", subprotocol: nil,
                                                              upgradeTimeoutNs: 10_000_000_000, closeTimeoutNs: 2_000_000_000,
                                                              maxMessageBytes: 1 << 16)
    var ws = WebSocketClientSession(configuration: configuration)
    var session = MessageFlowSession()
    var log = EventLog()
    _ = ws.connected(now: 1, key: flowKey)
    drive(input, random: &random) { buf in
        let (action, consumed) = ws.next(buf, now: 1)
        let raw = UnsafeRawBufferPointer(buf)
        switch action {
        case .needMore: return StepResult(consumed: consumed, needsInput: true)
        case .opened: steps(&session, flow, &log)
        case .message(let op, let range):
            take(UnsafeRawBufferPointer(rebasing: raw[range]), isText: op == .text, &session, flow, &log)
        case .assembledMessage(let op):
            let assembled = ws.assembled
            assembled.withUnsafeBytes { take($0, isText: op == .text, &session, flow, &log) }
        case .closing, .ended: return StepResult(consumed: consumed, stop: true)
        default: break
        }
        return StepResult(consumed: consumed, needsInput: consumed == 0)
    }
    return log
}
