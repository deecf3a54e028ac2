// Target `websocket`: WebSocketFrameCodec.parseHeader / applyMask and the WebSocketReceiver
// state machine, for both roles.

func fuzzWebSocket(_ data: UnsafeRawBufferPointer) {
    checkHeader(data)
    checkMask(data)
    // Server: masked frames required, small limit (1009 paths). Client: unmasked, no limit
    // (64-bit lengths up to Int.max / 2 must not overflow).
    for (role, limit) in [(WebSocketReceiver.Role.server, 256), (.client, Int.max)] {
        var none: InputRandom? = nil
        var split: InputRandom? = InputRandom(data, salt: role == .server ? 1 : 2)
        let whole = receive(data, role: role, limit: limit, random: &none)
        let pieces = receive(data, role: role, limit: limit, random: &split)
        checkSame(whole, pieces, "websocket: whole and split input differ")
    }
}

private func checkHeader(_ data: UnsafeRawBufferPointer) {
    switch WebSocketFrameCodec.parseHeader(data) {
    case .needMore:
        check(data.count < WebSocketFrameCodec.maxHeaderLength, "needMore with a full header's bytes")
    case .invalidLength:
        check(data.count >= 10 && data[1] & 0x7F == 127 && data[2] & 0x80 != 0, "invalidLength without a 64-bit length")
    case .header(let h):
        check(h.headerLength >= 2 && h.headerLength <= WebSocketFrameCodec.maxHeaderLength && h.headerLength <= data.count,
              "header length out of range")
        check(h.payloadLength >= 0 && h.frameLength >= h.headerLength, "negative payload length")
        // The writer's header for the parsed values re-parses to the same header when the
        // length was sent in its shortest form.
        if h.headerLength == WebSocketFrameCodec.headerLength(payloadLength: h.payloadLength, masked: h.masked),
           h.payloadLength < Int.max / 2, h.reservedBits == 0, let op = h.opcode {
            var out = [UInt8](repeating: 0, count: WebSocketFrameCodec.maxHeaderLength)
            let n = out.withUnsafeMutableBytes {
                WebSocketFrameCodec.writeHeader(into: $0.baseAddress!, fin: h.fin, opcode: op, payloadLength: h.payloadLength,
                                                maskKey: h.masked ? h.maskKey : nil)
            }
            check(n == h.headerLength, "writeHeader length differs")
            check(out[0..<n].elementsEqual(UnsafeRawBufferPointer(rebasing: data[0..<n])), "writeHeader bytes differ")
        }
    }
}

/// The word-at-a-time mask equals a byte loop, also when applied in two pieces.
private func checkMask(_ data: UnsafeRawBufferPointer) {
    guard data.count >= 5 else { return }
    let key = [data[0], data[1], data[2], data[3]]
    let packed = UInt32(key[0]) | UInt32(key[1]) << 8 | UInt32(key[2]) << 16 | UInt32(key[3]) << 24
    let payload = Array(UnsafeRawBufferPointer(rebasing: data[4...]))
    var expected = payload
    for i in expected.indices { expected[i] ^= key[i & 3] }
    var whole = payload
    whole.withUnsafeMutableBytes { WebSocketFrameCodec.applyMask($0, maskKey: packed) }
    check(whole == expected, "applyMask differs from the byte loop")
    let cut = Int(data[4]) % (payload.count + 1)
    var pieces = payload
    pieces.withUnsafeMutableBytes { p in
        WebSocketFrameCodec.applyMask(UnsafeMutableRawBufferPointer(rebasing: p[0..<cut]), maskKey: packed, keyOffset: 0)
        WebSocketFrameCodec.applyMask(UnsafeMutableRawBufferPointer(rebasing: p[cut...]), maskKey: packed, keyOffset: cut)
    }
    check(pieces == expected, "applyMask with a key offset differs")
}

private func receive(_ data: UnsafeRawBufferPointer, role: WebSocketReceiver.Role, limit: Int, random: inout InputRandom?) -> EventLog {
    var receiver = WebSocketReceiver(role: role, maxMessageBytes: limit)
    var log = EventLog()
    drive(data, random: &random) { buf in
        let (event, consumed) = receiver.next(buf)
        check(consumed >= 0 && consumed <= buf.count, "consumed beyond the buffer")
        let raw = UnsafeRawBufferPointer(buf)
        let frame = 0..<consumed
        switch event {
        case .needMore:
            check(consumed == 0, "needMore consumed bytes")
            return StepResult(consumed: 0, needsInput: true)
        case .fail(let f):
            check(consumed == 0, "fail consumed bytes")
            log.tag(0x46); log.int(Int(f.closeCode))
            return StepResult(consumed: 0, stop: true)
        case .message(let op, let payload):
            check(op == .text || op == .binary, "message with a control opcode")
            checkRange(payload, within: frame, "message payload outside the frame")
            check(payload.count <= limit, "message over the limit")
            if op == .text { check(UTF8Validator.isValid(UnsafeRawBufferPointer(rebasing: raw[payload])), "invalid UTF-8 text delivered") }
            log.tag(0x4D); log.int(Int(op.rawValue)); log.data(raw, payload)
        case .assembledMessage(let op):
            check(op == .text || op == .binary, "assembled control message")
            check(receiver.assembled.count <= limit, "assembled message over the limit")
            if op == .text { check(receiver.assembled.withUnsafeBytes { UTF8Validator.isValid($0) }, "invalid UTF-8 text assembled") }
            log.tag(0x41); log.int(Int(op.rawValue)); log.data(receiver.assembled)
        case .fragment:
            log.tag(0x66)
        case .ping(let payload), .pong(let payload):
            checkRange(payload, within: frame, "control payload outside the frame")
            check(payload.count <= 125, "control payload over 125 bytes")
            if case .ping = event { log.tag(0x49) } else { log.tag(0x4F) }
            log.data(raw, payload)
        case .close(let code, let reason):
            checkRange(reason, within: frame, "close reason outside the frame")
            if let code { check(WebSocketFrameCodec.isValidCloseCode(code), "invalid close code delivered") }
            else { check(reason.isEmpty, "reason without a code") }
            check(UTF8Validator.isValid(UnsafeRawBufferPointer(rebasing: raw[reason])), "invalid UTF-8 close reason")
            log.tag(0x43); log.int(Int(code ?? 0)); log.data(raw, reason)
        }
        // Every delivered event is one whole frame.
        check(consumed >= 2, "event without consuming its frame")
        return StepResult(consumed: consumed)
    }
    return log
}
