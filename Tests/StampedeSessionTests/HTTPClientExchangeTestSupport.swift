import Testing
import StampedeWire
@testable import StampedeSession

/// Drives an `HTTPClientExchange` as a connection would: bytes are appended to a pending
/// buffer, actions are pulled until the exchange needs more, consumed bytes are dropped. The
/// actions are logged as text (consecutive body pieces joined, so logs compare across splits).
struct ExchangeDriver {
    var exchange: HTTPClientExchange
    var pending: [UInt8] = []
    var log: [String] = []
    var heads: [HTTPExchangeHead] = []
    /// Header values read when each head arrived, by name.
    var headValues: [[String: String]] = []
    /// Start the next exchange (with this body handling) when one completes reusable.
    var restartWith: HTTPExchangeBody? = nil
    var clock = FakeClock()

    init(_ configuration: HTTPClientExchange.Configuration = .init(), body: HTTPExchangeBody = .pieces, method: HTTPMethod = .get,
         restartWith: HTTPExchangeBody? = nil) {
        exchange = HTTPClientExchange(configuration: configuration)
        self.restartWith = restartWith
        _ = exchange.start(method: method, body: body, now: clock.now)
    }

    mutating func feed(_ text: String) { feed(Array(text.utf8)) }

    mutating func feed(_ bytes: [UInt8]) {
        pending += bytes
        drain()
    }

    /// Feeds `bytes` in pieces of the given sizes (the rest in one last piece).
    mutating func feed(_ bytes: [UInt8], pieces: [Int]) {
        var i = 0
        for n in pieces where i < bytes.count {
            let end = min(bytes.count, i + n)
            feed(Array(bytes[i..<end]))
            i = end
        }
        if i < bytes.count { feed(Array(bytes[i...])) }
    }

    mutating func drain() {
        var budget = 10_000
        while budget > 0 {
            budget -= 1
            var done = false
            let consumed = pending.withUnsafeBytes { buf -> Int in
                let (action, consumed) = exchange.next(buf)
                precondition(consumed >= 0 && consumed <= buf.count)
                done = record(action, buf)
                return consumed
            }
            pending.removeFirst(consumed)
            if done { return }
        }
        Issue.record("the exchange makes no progress")
    }

    /// Logs one action; true when the caller should stop pulling.
    mutating func record(_ action: HTTPClientExchange.Action, _ buf: UnsafeRawBufferPointer) -> Bool {
        switch action {
        case .needMore:
            return true
        case .head(let h):
            heads.append(h)
            var values: [String: String] = [:]
            for f in h.response.headerFields(in: buf) { values[text(buf, f.name).lowercased()] = text(buf, f.value) }
            if let e = h.etag { values["@etag"] = text(buf, e) }
            if let l = h.location { values["@location"] = text(buf, l) }
            if let w = h.watchedField { values["@watched"] = text(buf, w) }
            if let r = h.rateLimitRemaining { values["@ratelimit"] = text(buf, r) }
            headValues.append(values)
            log.append("head \(h.status)")
        case .body(let r):
            let piece = text(buf, r)
            if let last = log.last, last.hasPrefix("body ") { log[log.count - 1] = last + piece } else { log.append("body " + piece) }
        case .event(let r):
            log.append("event " + text(buf, r))
        case .heldEvent:
            log.append("event " + exchange.withHeldEvent { String(decoding: $0, as: UTF8.self) })
        case .complete(let reusable):
            if exchange.bodyHandling == .collect { log.append("collected " + String(decoding: exchange.collectedBody, as: UTF8.self)) }
            log.append(reusable ? "complete" : "complete, close")
            if reusable, let body = restartWith {
                clock.advance(seconds: 0.001)
                _ = exchange.start(body: body, now: clock.now)
                return false
            }
            return true
        case .ended(let reason):
            log.append("ended \(reason)")
            return true
        }
        return false
    }

    mutating func closed() {
        if let action = exchange.connectionClosed() {
            _ = pending.withUnsafeBytes { record(action, $0) }
        }
    }

    func text(_ buf: UnsafeRawBufferPointer, _ r: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: buf[r]), as: UTF8.self)
    }
}

/// The log of `input` fed whole, then fed split at every byte boundary and one byte at a time:
/// all must be equal; returns the whole-input log.
func logAtEverySplit(_ input: String, _ configuration: HTTPClientExchange.Configuration = .init(), body: HTTPExchangeBody = .pieces,
                     restartWith: HTTPExchangeBody? = nil, close: Bool = false) -> [String] {
    let bytes = Array(input.utf8)
    func run(_ pieces: [Int]) -> [String] {
        var d = ExchangeDriver(configuration, body: body, restartWith: restartWith)
        d.feed(bytes, pieces: pieces)
        if close { d.closed() }
        return d.log
    }
    let whole = run([])
    for i in 1..<max(bytes.count, 2) {
        let split = run([i])
        if split != whole { Issue.record("split at \(i): \(split) != \(whole)"); return whole }
    }
    let bytewise = run(Array(repeating: 1, count: bytes.count))
    if bytewise != whole { Issue.record("one byte at a time: \(bytewise) != \(whole)") }
    return whole
}
