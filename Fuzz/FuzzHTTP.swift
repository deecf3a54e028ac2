// Targets `sse` (SSEParser), `http-response` (HTTPResponseParser, with endOfStream()) and
// `http-request` (HTTPRequestParser, which the reference server runs on untrusted input).

// MARK: - SSE

func fuzzSSE(_ data: UnsafeRawBufferPointer) {
    var settings = InputRandom(data, salt: 7)
    // Default limits, or small ones so the line/event limits and the copy fallback are reached.
    let small = settings.next() & 1 == 0
    let make = { small ? SSEParser(maxEventBytes: 40, maxLineBytes: 48) : SSEParser() }
    var none: InputRandom? = nil
    var split: InputRandom? = InputRandom(data, salt: 8)
    let whole = sseRun(data, make(), random: &none)
    let pieces = sseRun(data, make(), random: &split)
    checkSame(whole, pieces, "sse: whole and split input differ")
}

private func sseRun(_ data: UnsafeRawBufferPointer, _ parser: SSEParser, random: inout InputRandom?) -> EventLog {
    var p = parser
    var log = EventLog()
    drive(data, random: &random) { buf in
        let b = UnsafeRawBufferPointer(buf)
        let (event, consumed) = p.next(b)
        check(consumed >= 0 && consumed <= b.count, "consumed beyond the buffer")
        switch event {
        case .needMore:
            // What the caller must keep buffered stays bounded (the type's documentation: up to
            // about twice the line limit while a lone data line waits for its blank line).
            check(b.count - consumed <= 2 * p.maxLineBytes + 2, "SSE retains too many bytes")
            return StepResult(consumed: consumed, needsInput: true)
        case .error(let e):
            check(consumed == 0, "error consumed bytes")
            log.tag(0x45); log.int(e == .lineTooLong ? 1 : 2)
            return StepResult(consumed: 0, stop: true)
        // Zero copy or assembled is compared too: like SSEParserTests, the choice must not
        // depend on how the input was split.
        case .event(let d):
            check(consumed > 0, "event without consuming it")
            checkRange(d, within: 0..<consumed, "event data outside the consumed bytes")
            check(d.count <= p.maxEventBytes, "event over the limit")
            log.tag(0x44); log.data(b, d)
        case .assembledEvent:
            check(consumed > 0, "event without consuming it")
            check(p.assembled.count <= p.maxEventBytes, "assembled event over the limit")
            log.tag(0x41); log.data(p.assembled)
        }
        log.data(p.eventType); log.data(p.lastEventID); log.int(p.reconnectionTime ?? -1)
        return StepResult(consumed: consumed)
    }
    return log
}

// MARK: - HTTP response

func fuzzHTTPResponse(_ data: UnsafeRawBufferPointer) {
    var settings = InputRandom(data, salt: 9)
    let bits = settings.next()
    let small = bits & 1 != 0
    let interim = bits & 2 != 0
    let toHEAD = bits & 4 != 0
    let make = {
        var p = small ? HTTPResponseParser(maxHeadBytes: 200, maxChunkLineBytes: 12, reportsInterimResponses: interim)
                      : HTTPResponseParser(reportsInterimResponses: interim)
        p.nextResponseIsToHEAD = toHEAD
        return p
    }
    var none: InputRandom? = nil
    var split: InputRandom? = InputRandom(data, salt: 10)
    let whole = httpRun(data, make(), random: &none)
    let pieces = httpRun(data, make(), random: &split)
    checkSame(whole, pieces, "http-response: whole and split input differ")
}

private func httpRun(_ data: UnsafeRawBufferPointer, _ parser: HTTPResponseParser, random: inout InputRandom?) -> EventLog {
    var p = parser
    var log = EventLog()
    var body: [UInt8] = []
    func flushBody() {
        if !body.isEmpty { log.tag(0x42); log.data(body); body.removeAll(keepingCapacity: true) }
    }
    func logEvent(_ event: HTTPResponseParser.Event?) {
        switch event {
        case .error(let e)?: log.tag(0x45); log.data(Array("\(e)".utf8))
        case .end?: log.tag(0x2E)
        case nil: log.tag(0x30)
        default: log.tag(0x3F)
        }
    }
    drive(data, random: &random) { buf in
        let b = UnsafeRawBufferPointer(buf)
        let (event, consumed) = p.next(b)
        check(consumed >= 0 && consumed <= b.count, "consumed beyond the buffer")
        switch event {
        case .needMore:
            return StepResult(consumed: consumed, needsInput: true)
        case .error:
            flushBody(); logEvent(event)
            return StepResult(consumed: consumed, stop: true)
        case .end:
            flushBody(); logEvent(event)
        case .body(let r):
            check(!r.isEmpty, "empty body piece")
            checkRange(r, within: 0..<consumed, "body outside the consumed bytes")
            body.append(contentsOf: UnsafeRawBufferPointer(rebasing: b[r]))
        case .head(let h):
            flushBody()
            check(h.range.upperBound == consumed && h.range.lowerBound >= 0, "head range is not the consumed bytes")
            checkRange(h.fieldsRange, within: h.range, "fields outside the head")
            checkRange(h.reason, within: h.range, "reason outside the head")
            check(h.status >= 100 && h.status <= 999, "status out of range")
            // HTTP/1.2 … 1.9 parse as their digit and are treated as 1.1 (RFC 9112 §2.3).
            check(h.versionMinor >= 0 && h.versionMinor <= 9, "version out of range")
            if let n = h.contentLength { check(n >= 0, "negative content length") }
            if case .length(let n) = h.body { check(n >= 0 && h.contentLength == n, "length framing without its field") }
            log.tag(0x48); log.int(h.status); log.int(h.versionMinor); log.int(h.contentLength ?? -1)
            log.int(h.isChunked ? 1 : 0); log.int(h.connectionClose ? 1 : 0); log.data(Array("\(h.body)".utf8))
            log.data(b, h.reason)
            if let t = h.contentType {
                checkRange(t, within: h.fieldsRange, "content type outside the fields")
                log.data(b, t)
            }
            for field in h.headerFields(in: b) {
                checkRange(field.name, within: h.fieldsRange, "field name outside the fields")
                checkRange(field.value, within: h.fieldsRange, "field value outside the fields")
                check(!field.name.isEmpty, "empty field name")
                log.data(b, field.name); log.data(b, field.value)
            }
            if let v = h.value(forHeader: "content-length", in: b) { _ = HTTPFieldValue.decimal(in: b, v) }
        }
        return StepResult(consumed: consumed)
    }
    flushBody()
    // The connection closes after the last byte.
    logEvent(p.endOfStream())
    return log
}

// MARK: - HTTP request (the reference server's parser)

func fuzzHTTPRequest(_ data: UnsafeRawBufferPointer) {
    var settings = InputRandom(data, salt: 11)
    let small = settings.next() & 1 != 0
    let make = { small ? HTTPRequestParser(maxHeadBytes: 200, maxChunkLineBytes: 12) : HTTPRequestParser() }
    var none: InputRandom? = nil
    var split: InputRandom? = InputRandom(data, salt: 12)
    let whole = httpRequestRun(data, make(), random: &none)
    let pieces = httpRequestRun(data, make(), random: &split)
    checkSame(whole, pieces, "http-request: whole and split input differ")
}

private func httpRequestRun(_ data: UnsafeRawBufferPointer, _ parser: HTTPRequestParser, random: inout InputRandom?) -> EventLog {
    var p = parser
    var log = EventLog()
    var body: [UInt8] = []
    func flushBody() {
        if !body.isEmpty { log.tag(0x42); log.data(body); body.removeAll(keepingCapacity: true) }
    }
    drive(data, random: &random) { buf in
        let b = UnsafeRawBufferPointer(buf)
        let (event, consumed) = p.next(b)
        check(consumed >= 0 && consumed <= b.count, "consumed beyond the buffer")
        switch event {
        case .needMore:
            return StepResult(consumed: consumed, needsInput: true)
        case .error(let e):
            flushBody(); log.tag(0x45); log.data(Array("\(e)".utf8))
            return StepResult(consumed: consumed, stop: true)
        case .end:
            flushBody(); log.tag(0x2E)
        case .body(let r):
            check(!r.isEmpty, "empty body piece")
            checkRange(r, within: 0..<consumed, "body outside the consumed bytes")
            body.append(contentsOf: UnsafeRawBufferPointer(rebasing: b[r]))
        case .head(let h):
            flushBody()
            check(h.range.upperBound == consumed && h.range.lowerBound >= 0, "head range is not the consumed bytes")
            checkRange(h.methodRange, within: h.range, "method outside the head")
            checkRange(h.target, within: h.range, "target outside the head")
            checkRange(h.fieldsRange, within: h.range, "fields outside the head")
            check(!h.methodRange.isEmpty && !h.target.isEmpty, "empty method or target")
            check(h.versionMinor >= 0 && h.versionMinor <= 9, "version out of range")
            check(h.body != .untilClose, "request read until close")
            if case .length(let n) = h.body { check(n >= 0 && h.contentLength == n, "length framing without its field") }
            log.tag(0x48); log.data(b, h.methodRange); log.data(b, h.target); log.int(h.versionMinor)
            log.int(h.contentLength ?? -1); log.int(h.isChunked ? 1 : 0); log.int(h.expectsContinue ? 1 : 0)
            log.int(h.connectionClose ? 1 : 0); log.data(Array("\(h.body)".utf8))
            if let t = h.contentType { checkRange(t, within: h.fieldsRange, "content type outside the fields"); log.data(b, t) }
            for field in h.headerFields(in: b) {
                checkRange(field.name, within: h.fieldsRange, "field name outside the fields")
                checkRange(field.value, within: h.fieldsRange, "field value outside the fields")
                log.data(b, field.name); log.data(b, field.value)
            }
        }
        return StepResult(consumed: consumed)
    }
    flushBody()
    log.int(p.isInsideMessage ? 1 : 0)
    return log
}
