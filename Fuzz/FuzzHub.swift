// Targets `json-hub` (0x1E record splitting, JSONHubProtocol.parse and its value helpers, the
// handshake response, JSONFields) and `msgpack-hub` (VarInt length prefix,
// MessagePackHubProtocol.parse/decode, the MessagePack reader and value helpers).

// MARK: - JSON

func fuzzJSONHub(_ data: UnsafeRawBufferPointer) {
    // The eight-bytes-at-a-time separator search equals a byte loop.
    let naive = data.firstIndex(of: JSONHubProtocol.recordSeparator).map { $0 + 1 }
    check(JSONHubProtocol.recordLength(data) == naive, "recordLength differs from a byte loop")

    var settings = InputRandom(data, salt: 3)
    let limit = settings.next() & 1 == 0 ? Int.max : 200
    var none: InputRandom? = nil
    var split: InputRandom? = InputRandom(data, salt: 4)
    let whole = jsonRun(data, limit: limit, random: &none)
    let pieces = jsonRun(data, limit: limit, random: &split)
    checkSame(whole, pieces, "json-hub: whole and split input differ")

    switch HubHandshake.parseResponse(data) {
    case .success(let consumed):
        check(consumed >= 1 && consumed <= data.count && data[consumed - 1] == 0x1E, "handshake consumed is not a record")
    case .error(let r):
        checkRange(r, within: 0..<data.count, "handshake error outside the buffer")
        checkJSONString(data, r)
    case .needMore, .invalid:
        break
    }
    _ = JSONFields.objectHasKeys(data, [Array("type".utf8), Array("t".utf8)])
    _ = JSONFields.number(data, key: Array("t".utf8))
    _ = JSONFields.decimal(data)
}

private func jsonRun(_ data: UnsafeRawBufferPointer, limit: Int, random: inout InputRandom?) -> EventLog {
    var log = EventLog()
    drive(data, random: &random) { buf in
        let b = UnsafeRawBufferPointer(buf)
        switch JSONHubProtocol.parse(b, maxMessageLength: limit) {
        case .needMore:
            check(b.count <= limit, "needMore over the limit")
            return StepResult(consumed: 0, needsInput: true)
        case .failure(let e):
            log.tag(0x45); log.data(Array(e.description.utf8))
            return StepResult(consumed: 0, stop: true)
        case .message(let m, let consumed):
            check(consumed >= 1 && consumed <= b.count && b[consumed - 1] == JSONHubProtocol.recordSeparator, "record without its separator")
            check(consumed - 1 <= limit, "record over the limit")
            // Decoding the record on its own gives the same message.
            check(JSONHubProtocol.decode(UnsafeRawBufferPointer(rebasing: b[0..<consumed])) == .success(m), "decode differs from parse")
            logJSONMessage(m, b, record: 0..<(consumed - 1), &log)
            return StepResult(consumed: consumed)
        }
    }
    return log
}

private func logJSONMessage(_ m: HubMessage, _ b: UnsafeRawBufferPointer, record: Range<Int>, _ log: inout EventLog) {
    log.tag(0x4D); log.int(Int(m.type)); log.uint(m.sequenceId); log.int(m.allowReconnect ? 1 : 0)
    // String fields are contents between quotes: they must unescape.
    for r in [m.invocationId, m.target, m.error] {
        guard let r else { log.int(-1); continue }
        checkRange(r, within: record, "string field outside the record")
        check(r.lowerBound >= 1 && b[r.lowerBound - 1] == 0x22 && b[r.upperBound] == 0x22, "string field not quoted")
        log.data(unescaped(UnsafeRawBufferPointer(rebasing: b[r])))
    }
    for r in [m.arguments, m.streamIds, m.item, m.result, m.headers] {
        guard let r else { log.int(-1); continue }
        checkRange(r, within: record, "value field outside the record")
        log.data(b, r)
    }
    if let args = m.arguments {
        guard let n = JSONHubProtocol.arrayCount(b, array: args) else { check(false, "arguments not an array"); return }
        for k in 0..<min(n, 16) {
            guard let e = JSONHubProtocol.arrayElement(b, array: args, at: k) else { check(false, "missing argument"); return }
            checkRange(e, within: args, "argument outside the array")
            if let s = JSONHubProtocol.stringContents(b, value: e) { checkJSONString(b, s) }
            _ = JSONHubProtocol.int64(b, value: e)
        }
        check(JSONHubProtocol.arrayElement(b, array: args, at: n) == nil, "argument past the end")
    }
    if let ids = m.streamIds {
        guard let n = JSONHubProtocol.arrayCount(b, array: ids) else { check(false, "streamIds not an array"); return }
        for k in 0..<min(n, 16) {
            guard let e = JSONHubProtocol.arrayElement(b, array: ids, at: k),
                  let s = JSONHubProtocol.stringContents(b, value: e) else { check(false, "stream id not a string"); return }
            checkJSONString(b, s)
        }
    }
}

/// A string the scanner accepted unescapes, into valid UTF-8 no longer than its escaped form.
private func unescaped(_ contents: UnsafeRawBufferPointer) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: contents.count)
    let n = out.withUnsafeMutableBytes { JSONHubProtocol.unescapeString(contents, into: $0) }
    guard let n else { check(false, "validated string does not unescape"); return [] }
    out.removeLast(out.count - n)
    check(out.withUnsafeBytes { UTF8Validator.isValid($0) }, "unescaped string is not UTF-8")
    return out
}

private func checkJSONString(_ b: UnsafeRawBufferPointer, _ r: Range<Int>) {
    _ = unescaped(UnsafeRawBufferPointer(rebasing: b[r]))
}

// MARK: - MessagePack

func fuzzMessagePackHub(_ data: UnsafeRawBufferPointer) {
    checkLengthPrefix(data)

    var settings = InputRandom(data, salt: 5)
    let limit = settings.next() & 1 == 0 ? MessagePackHubProtocol.maxBodyLength : 200
    var none: InputRandom? = nil
    var split: InputRandom? = InputRandom(data, salt: 6)
    let whole = msgpackRun(data, limit: limit, random: &none)
    let pieces = msgpackRun(data, limit: limit, random: &split)
    checkSame(whole, pieces, "msgpack-hub: whole and split input differ")

    // The input as a bare body, and as a stream of items for the reader.
    if case .success(let m) = MessagePackHubProtocol.decode(body: data) {
        var log = EventLog()
        logMessagePackMessage(m, data, body: 0..<data.count, &log)
    }
    var r = MessagePackHubProtocol.Reader(data)
    while !r.isAtEnd {
        let before = r.position
        let peeked = r.peek()
        check(r.position == before, "peek moved")
        guard let skipped = r.skip() else {
            check(r.position == before, "failed skip moved")
            guard r.read() == peeked else { check(false, "read differs from peek"); return }
            if peeked == nil { break }
            check(r.position > before && r.position <= data.count, "read out of bounds")
            continue
        }
        check(skipped.lowerBound == before && skipped.upperBound == r.position && skipped.upperBound <= data.count && !skipped.isEmpty,
              "skip range wrong")
    }
}

/// The reader agrees with a plain LEB128 decoder.
private func checkLengthPrefix(_ data: UnsafeRawBufferPointer) {
    var value = 0
    var expected = MessagePackHubProtocol.LengthPrefix.needMore
    for k in 0..<min(data.count, 5) {
        let b = data[k]
        if k == 4 {
            expected = b > 7 ? .invalid : .value(length: value + Int(b) << 28, prefixLength: 5)
            break
        }
        value += Int(b & 0x7F) << (7 * k)
        if b < 0x80 { expected = .value(length: value, prefixLength: k + 1); break }
    }
    let got = MessagePackHubProtocol.readLengthPrefix(data)
    check(got == expected, "readLengthPrefix differs from LEB128")
    if case .value(let length, let prefix) = got {
        check(length >= 0 && length <= MessagePackHubProtocol.maxBodyLength, "prefix length out of range")
        // Written back, the length re-reads the same (in its shortest form).
        var out = [UInt8](repeating: 0, count: 5)
        let n = out.withUnsafeMutableBytes { MessagePackHubProtocol.writeLengthPrefix(length, into: $0) }
        check(n == MessagePackHubProtocol.lengthPrefixSize(length) && n! <= prefix, "writeLengthPrefix size")
        let again = out.withUnsafeBytes { MessagePackHubProtocol.readLengthPrefix($0) }
        check(again == .value(length: length, prefixLength: n!), "length prefix does not round-trip")
    }
}

private func msgpackRun(_ data: UnsafeRawBufferPointer, limit: Int, random: inout InputRandom?) -> EventLog {
    var log = EventLog()
    drive(data, random: &random) { buf in
        let b = UnsafeRawBufferPointer(buf)
        switch MessagePackHubProtocol.parse(b, maxMessageLength: limit) {
        case .needMore:
            return StepResult(consumed: 0, needsInput: true)
        case .failure(let e):
            log.tag(0x45); log.data(Array(e.description.utf8))
            return StepResult(consumed: 0, stop: true)
        case .message(let m, let consumed):
            check(consumed >= 2 && consumed <= b.count, "message consumed out of range")
            guard case .value(let length, let prefix) = MessagePackHubProtocol.readLengthPrefix(b),
                  prefix + length == consumed else { check(false, "consumed is not prefix + body"); return StepResult(consumed: 0, stop: true) }
            check(length <= limit, "body over the limit")
            logMessagePackMessage(m, b, body: prefix..<consumed, &log)
            return StepResult(consumed: consumed)
        }
    }
    return log
}

private func logMessagePackMessage(_ m: HubMessage, _ b: UnsafeRawBufferPointer, body: Range<Int>, _ log: inout EventLog) {
    log.tag(0x4D); log.int(Int(m.type)); log.uint(m.sequenceId); log.int(m.allowReconnect ? 1 : 0)
    for r in [m.invocationId, m.target, m.error, m.arguments, m.streamIds, m.item, m.result, m.headers] {
        guard let r else { log.int(-1); continue }
        checkRange(r, within: body, "field outside the body")
        log.data(b, r)
    }
    // Value fields are whole items: skipping one from its start ends at its end.
    for r in [m.arguments, m.streamIds, m.item, m.result, m.headers] {
        guard let r else { continue }
        var reader = MessagePackHubProtocol.Reader(b, range: r)
        check(reader.skip() == r, "value field is not one item")
    }
    if let args = m.arguments {
        guard let n = MessagePackHubProtocol.arrayCount(b, array: args) else { check(false, "arguments not an array"); return }
        for k in 0..<min(n, 16) {
            guard let e = MessagePackHubProtocol.arrayElement(b, array: args, at: k) else { check(false, "missing argument"); return }
            checkRange(e, within: args, "argument outside the array")
            if let s = MessagePackHubProtocol.stringContents(b, value: e) { checkRange(s, within: e, "string outside its item") }
            _ = MessagePackHubProtocol.int64(b, value: e)
        }
        check(MessagePackHubProtocol.arrayElement(b, array: args, at: n) == nil, "argument past the end")
    }
}
