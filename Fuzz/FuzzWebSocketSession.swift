// Target `websocket-session`: WebSocketClientSession and WebSocketServerSession fed arbitrary
// bytes, whole and in pieces, with identical actions either way.
//
// The first input byte is a control byte, the rest is what the peer sends:
//   bit 0: client only: the rest is the raw answer to the upgrade (else a valid 101 for the
//          fixed key comes first, so the frame paths are reached);
//   bit 1: we close first (the client as soon as it is open, the server before any input);
//   bits 2-3: how a connection still up at the end ends: 0 EOF, 1 reset, 2 error, 3 its timer;
//   bit 4: a 256-byte message limit (1009 paths) instead of none.
// Besides "same actions", each run checks: ranges lie in the consumed frames, nothing is
// delivered or answered once closing started, at most one Close is sent, exactly one `ended`.

private let fuzzKey = "dGhlIHNhbXBsZSBub25jZQ=="
private let fuzzNow: UInt64 = 1_000_000_000

func fuzzWebSocketSession(_ data: UnsafeRawBufferPointer) {
    guard let control = data.first else { return }
    let peer = UnsafeRawBufferPointer(rebasing: data[1...])
    let limit = control & 0x10 != 0 ? 256 : Int.max / 2
    let closeFirst = control & 0x02 != 0
    let ending = Int(control >> 2 & 3)

    var clientInput = control & 0x01 != 0 ? [] : WebSocketHandshake.switchingProtocols(key: fuzzKey)
    clientInput.append(contentsOf: peer)
    clientInput.withUnsafeBytes { input in
        var none: InputRandom? = nil
        var split: InputRandom? = InputRandom(input, salt: 3)
        let whole = runClient(input, limit: limit, closeFirst: closeFirst, ending: ending, random: &none)
        let pieces = runClient(input, limit: limit, closeFirst: closeFirst, ending: ending, random: &split)
        checkSame(whole, pieces, "websocket-session client: whole and split input differ")
    }
    var none: InputRandom? = nil
    var split: InputRandom? = InputRandom(peer, salt: 4)
    let whole = runServer(peer, limit: limit, closeFirst: closeFirst, ending: ending, random: &none)
    let pieces = runServer(peer, limit: limit, closeFirst: closeFirst, ending: ending, random: &split)
    checkSame(whole, pieces, "websocket-session server: whole and split input differ")
}

/// Logs a Close body (code and reason bytes) or its absence.
private func logClose(_ log: inout EventLog, _ payload: WebSocketClosePayload?) {
    guard let payload else { log.tag(0x2D); return }
    payload.withUnsafeBytes { log.data($0) }
}

private func logEnd(_ log: inout EventLog, _ end: some Equatable, _ closeTransport: Bool) {
    log.tag(0x45); log.data(Array("\(end)".utf8)); log.int(closeTransport ? 1 : 0)
}

private func runClient(_ input: UnsafeRawBufferPointer, limit: Int, closeFirst: Bool, ending: Int, random: inout InputRandom?) -> EventLog {
    let configuration = WebSocketClientSession.Configuration(host: "127.0.0.1", port: 9001, path: "/", subprotocol: nil,
                                                              upgradeTimeoutNs: 10_000_000_000, closeTimeoutNs: 2_000_000_000,
                                                              maxMessageBytes: limit)
    var s = WebSocketClientSession(configuration: configuration)
    var log = EventLog()
    var ends = 0
    var closesSent = 0
    // Logs a command's answer; true when it ended the session.
    func record(_ action: WebSocketClientSession.Action) -> Bool {
        switch action {
        case .closing(let send, let shutdownWrite, let deadline):
            if send != nil { closesSent += 1 }
            check(closesSent <= 1, "a second Close sent")
            log.tag(0x43); logClose(&log, send); log.int(shutdownWrite ? 1 : 0); log.uint(deadline ?? 0)
        case .ended(let end, let closeTransport):
            ends += 1
            logEnd(&log, end, closeTransport)
            return true
        case .none:
            log.tag(0x30)
        default:
            check(false, "a command answered with an input action")
        }
        return false
    }

    let first = s.connected(now: fuzzNow, key: fuzzKey)
    check(first == .sendUpgradeRequest(deadline: fuzzNow + configuration.upgradeTimeoutNs), "connected without the request")
    drive(input, random: &random) { buf in
        let stateBefore = s.state
        let (action, consumed) = s.next(buf, now: fuzzNow)
        check(consumed >= 0 && consumed <= buf.count, "consumed beyond the buffer")
        let raw = UnsafeRawBufferPointer(buf)
        let frame = 0..<consumed
        switch action {
        case .needMore:
            return StepResult(consumed: consumed, needsInput: true)
        case .sendUpgradeRequest, .none:
            check(false, "input answered with a command action")
        case .opened:
            check(stateBefore == .upgrading && s.state == .open && consumed > 0, "opened out of turn")
            log.tag(0x4F)
            if closeFirst && record(s.close(code: 1000, now: fuzzNow)) { return StepResult(consumed: consumed, stop: true) }
        case .message(let op, let payload):
            check(stateBefore == .open, "message delivered while not open")
            checkRange(payload, within: frame, "message payload outside the frame")
            check(payload.count <= limit, "message over the limit")
            log.tag(0x4D); log.int(Int(op.rawValue)); log.data(raw, payload)
        case .assembledMessage(let op):
            check(stateBefore == .open, "message delivered while not open")
            check(s.assembled.count <= limit, "assembled message over the limit")
            log.tag(0x4D); log.int(Int(op.rawValue)); log.data(s.assembled)
        case .sendPong(let payload):
            check(stateBefore == .open, "ping answered while not open")
            checkRange(payload, within: frame, "ping payload outside the frame")
            log.tag(0x49); log.data(raw, payload)
        case .pong(let payload):
            checkRange(payload, within: frame, "pong payload outside the frame")
            log.tag(0x50); log.data(raw, payload)
        case .closing, .ended:
            if record(action) { return StepResult(consumed: consumed, stop: true) }
        }
        check(consumed > 0, "an action without input")
        return StepResult(consumed: consumed)
    }
    if ends == 0 {
        let deadline = s.deadline
        let action: WebSocketClientSession.Action
        switch ending {
        case 0: action = s.transportClosed(.endOfFile)
        case 1: action = s.transportClosed(.reset)
        case 2: action = s.transportClosed(.error)
        default:
            // An open connection waits for no timer: the runtime would drop it itself.
            check(s.timerFired(deadline: deadline &+ 1) == .none, "a stale timer acted")
            action = s.state == .open ? s.abort() : s.timerFired(deadline: deadline)
        }
        _ = record(action)
    }
    check(ends == 1 && s.state == .ended, "not exactly one end")
    check(s.transportClosed(.reset) == .none && s.abort() == .none && s.close(now: fuzzNow) == .none, "acted after the end")
    return log
}

private func runServer(_ input: UnsafeRawBufferPointer, limit: Int, closeFirst: Bool, ending: Int, random: inout InputRandom?) -> EventLog {
    var s = WebSocketServerSession(maxMessageBytes: limit, closeTimeoutNs: 2_000_000_000)
    var log = EventLog()
    var ends = 0
    var closesSent = 0
    func record(_ action: WebSocketServerSession.Action) -> Bool {
        switch action {
        case .closing(let send, let deadline):
            closesSent += 1
            log.tag(0x43); logClose(&log, send); log.uint(deadline ?? 0)
        case .closeTransport(let send, let end):
            if send != nil { closesSent += 1 }
            ends += 1
            log.tag(0x54); logClose(&log, send); logEnd(&log, end, true)
        case .ended(let end, let closeTransport):
            ends += 1
            logEnd(&log, end, closeTransport)
        case .none:
            log.tag(0x30)
        default:
            check(false, "a command answered with an input action")
        }
        check(closesSent <= 1, "a second Close sent")
        return ends > 0
    }

    if closeFirst { _ = record(s.close(code: 1012, reason: "service restart", now: fuzzNow)) }
    drive(input, random: &random) { buf in
        let stateBefore = s.state
        let (action, consumed) = s.next(buf, now: fuzzNow)
        check(consumed >= 0 && consumed <= buf.count, "consumed beyond the buffer")
        let raw = UnsafeRawBufferPointer(buf)
        let frame = 0..<consumed
        switch action {
        case .needMore:
            return StepResult(consumed: consumed, needsInput: true)
        case .none:
            check(false, "input answered with a command action")
        case .message(let op, let payload):
            check(stateBefore == .open, "message delivered while not open")
            checkRange(payload, within: frame, "message payload outside the frame")
            check(payload.count <= limit, "message over the limit")
            if op == .text { check(UTF8Validator.isValid(UnsafeRawBufferPointer(rebasing: raw[payload])), "invalid UTF-8 text delivered") }
            log.tag(0x4D); log.int(Int(op.rawValue)); log.data(raw, payload)
        case .assembledMessage(let op):
            check(stateBefore == .open, "message delivered while not open")
            check(s.assembled.count <= limit, "assembled message over the limit")
            log.tag(0x4D); log.int(Int(op.rawValue)); log.data(s.assembled)
        case .sendPong(let payload):
            check(stateBefore == .open, "ping answered while not open")
            checkRange(payload, within: frame, "ping payload outside the frame")
            log.tag(0x49); log.data(raw, payload)
        case .pong(let payload):
            checkRange(payload, within: frame, "pong payload outside the frame")
            log.tag(0x50); log.data(raw, payload)
        case .closing, .closeTransport, .ended:
            if record(action) { return StepResult(consumed: consumed, stop: true) }
        }
        check(consumed > 0, "an action without input")
        return StepResult(consumed: consumed)
    }
    if ends == 0 {
        let deadline = s.deadline
        switch ending {
        case 0: _ = record(s.transportClosed(.endOfFile))
        case 1: _ = record(s.transportClosed(.reset))
        case 2: _ = record(s.transportClosed(.error))
        default:
            check(s.timerFired(deadline: deadline &+ 1) == .none, "a stale timer acted")
            _ = record(s.state == .open ? s.abort() : s.timerFired(deadline: deadline))
        }
    }
    check(ends == 1 && s.state == .ended, "not exactly one end")
    check(s.transportClosed(.reset) == .none && s.abort() == .none && s.close(code: 1000, now: fuzzNow) == .none, "acted after the end")
    return log
}
