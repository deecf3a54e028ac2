// Target `http-exchange` (HTTPClientExchange): arbitrary response bytes on one keep-alive
// connection, a new exchange started after each reusable response, each with its own body
// handling (discard, pieces, collect, events) and sometimes as the answer to HEAD. The input is
// fed whole and in pieces; the two runs must give the same statuses, head facts, body bytes,
// events and end classes (body pieces are compared joined: their boundaries follow the reads).

func fuzzHTTPExchange(_ data: UnsafeRawBufferPointer) {
    var settings = InputRandom(data, salt: 13)
    let bits = settings.next()
    let watched = Array("X-W".utf8)
    // Default limits, or small ones so the size, head and event limits are reached.
    let config = bits & 1 != 0
        ? HTTPClientExchange.Configuration(maxResponseBytes: 24 + Int(bits >> 8 & 0xFF), maxHeadBytes: 200, maxEventBytes: 40,
                                           watchedField: watched)
        : HTTPClientExchange.Configuration(watchedField: watched)
    let plan = ExchangePlan(modes: settings.next(), heads: settings.next())
    var none: InputRandom? = nil
    var split: InputRandom? = InputRandom(data, salt: 14)
    let whole = exchangeRun(data, config, plan, random: &none)
    let pieces = exchangeRun(data, config, plan, random: &split)
    checkSame(whole, pieces, "http-exchange: whole and split input differ")
}

/// How exchange number i is started: a pure function of the input, the same in both runs.
struct ExchangePlan {
    var modes: UInt64
    var heads: UInt64

    func body(_ i: Int) -> HTTPExchangeBody {
        switch modes >> UInt64(2 * (i % 32)) & 3 {
        case 0: .discard
        case 1: .pieces
        case 2: .collect
        default: .events
        }
    }

    /// One exchange in eight answers a HEAD request.
    func method(_ i: Int) -> HTTPMethod { heads >> UInt64(3 * (i % 21)) & 7 == 0 ? .head : .get }
}

private func exchangeRun(_ data: UnsafeRawBufferPointer, _ config: HTTPClientExchange.Configuration, _ plan: ExchangePlan,
                         random: inout InputRandom?) -> EventLog {
    var x = HTTPClientExchange(configuration: config)
    var log = EventLog()
    var body: [UInt8] = []
    var index = 0
    var finished = false
    func flushBody() {
        if !body.isEmpty { log.tag(0x42); log.data(body); body.removeAll(keepingCapacity: true) }
    }
    func begin() {
        let deadline = x.start(method: plan.method(index), body: plan.body(index), now: 1)
        check(deadline == nil, "a deadline without timeouts")
        check(x.isInProgress && !x.hasHead, "a started exchange is not waiting for its head")
    }
    begin()
    drive(data, random: &random) { buf in
        let b = UnsafeRawBufferPointer(buf)
        let (action, consumed) = x.next(b)
        check(consumed >= 0 && consumed <= b.count, "consumed beyond the buffer")
        switch action {
        case .needMore:
            return StepResult(consumed: consumed, needsInput: true)
        case .head(let h):
            flushBody()
            check(h.response.range.upperBound == consumed && h.response.range.lowerBound >= 0, "head range is not the consumed bytes")
            check(h.status >= 200 || h.status == 101, "an interim head reported")
            check(x.hasHead && x.status == h.status, "the exchange forgot its head")
            log.tag(0x48); log.int(h.status); log.int(h.isReusable ? 1 : 0); log.int(h.isEventStream ? 1 : 0)
            log.data(Array("\(h.framing)".utf8))
            // Any non-negative Double may come back (Retry-After: 6666…): log its bits, not a conversion.
            log.int(h.retryAfterSeconds.map { Int(truncatingIfNeeded: $0.bitPattern) } ?? -1)
            for r in [h.etag, h.location, h.retryAfter, h.rateLimitRemaining, h.watchedField] {
                if let r {
                    checkRange(r, within: h.response.fieldsRange, "a fact outside the fields")
                    log.data(b, r)
                } else {
                    log.tag(0x2D)
                }
            }
        case .body(let r):
            check(x.bodyHandling == .pieces, "body piece in another mode")
            check(!r.isEmpty, "empty body piece")
            checkRange(r, within: 0..<consumed, "body outside the consumed bytes")
            body.append(contentsOf: UnsafeRawBufferPointer(rebasing: b[r]))
        case .event(let r):
            check(x.bodyHandling == .events, "event in another mode")
            checkRange(r, within: 0..<consumed, "event outside the consumed bytes")
            check(r.count <= config.maxEventBytes, "event over the limit")
            log.tag(0x45); log.data(b, r)
        case .heldEvent:
            check(x.bodyHandling == .events, "event in another mode")
            x.withHeldEvent { e in
                check(e.count <= config.maxEventBytes, "held event over the limit")
                log.tag(0x45); log.data(e)
            }
        case .complete(let reusable):
            flushBody()
            check(!x.isInProgress, "complete but still in progress")
            log.tag(0x43); log.int(reusable ? 1 : 0)
            if x.bodyHandling == .collect { log.data(x.collectedBody) }
            guard reusable, index < 40 else {
                finished = true
                return StepResult(consumed: consumed, stop: true)
            }
            index += 1
            begin()
        case .ended(let reason):
            flushBody()
            check(consumed == 0, "an end consumed bytes")
            check(!x.isInProgress, "ended but still in progress")
            log.tag(0x58); log.data(Array("\(reason)".utf8))
            finished = true
            return StepResult(consumed: 0, stop: true)
        }
        return StepResult(consumed: consumed)
    }
    flushBody()
    guard !finished else { return log }
    // The connection closes after the last byte.
    switch x.connectionClosed() {
    case .complete(let reusable)?:
        check(!reusable, "reusable after the close")
        log.tag(0x43); log.int(0)
        if x.bodyHandling == .collect { log.data(x.collectedBody) }
    case .ended(let reason)?: log.tag(0x58); log.data(Array("\(reason)".utf8))
    case nil: log.tag(0x30)
    default: check(false, "unexpected answer to the close")
    }
    return log
}
