import StampedeWire

/// A response head with the facts HTTP clients act on, found in one walk over the header
/// fields (a lookup per field would scan the head once for each). Ranges index the buffer of
/// the `next` call that reported the head. When a field appears more than once, the last one
/// counts (ETag, Location and Retry-After are singletons, RFC 9110 §8.8.3, §10.2.2, §10.2.3).
public struct HTTPExchangeHead: Sendable, Equatable {
    /// Status, framing, Content-Type, persistence and the head's ranges, as parsed.
    public var response: HTTPResponseHead
    /// The ETag value (entity tag with its quotes and any `W/`), as sent.
    public var etag: Range<Int>?
    /// The Location value, as sent.
    public var location: Range<Int>?
    /// The Retry-After value, as sent.
    public var retryAfter: Range<Int>?
    /// Retry-After in its delay-seconds form (RFC 9110 §10.2.3), decimals accepted; nil for the
    /// HTTP-date form, a negative or an unreadable value. The last readable one counts.
    public var retryAfterSeconds: Double?
    /// The X-RateLimit-Remaining value, as sent.
    public var rateLimitRemaining: Range<Int>?
    /// The value of `Configuration.watchedField`. That name is compared first, so it wins over
    /// the fields above if it names one of them.
    public var watchedField: Range<Int>?
    /// The media type of Content-Type is `text/event-stream`.
    public var isEventStream: Bool

    /// The status code.
    public var status: Int { response.status }
    /// The connection can carry another request after this response.
    public var isReusable: Bool { !response.connectionClose }
    /// How the body is delimited.
    public var framing: HTTPBodyFraming { response.body }

    /// Memberwise, for tests.
    public init(response: HTTPResponseHead, etag: Range<Int>? = nil, location: Range<Int>? = nil, retryAfter: Range<Int>? = nil,
                retryAfterSeconds: Double? = nil, rateLimitRemaining: Range<Int>? = nil, watchedField: Range<Int>? = nil,
                isEventStream: Bool = false) {
        self.response = response
        self.etag = etag
        self.location = location
        self.retryAfter = retryAfter
        self.retryAfterSeconds = retryAfterSeconds
        self.rateLimitRemaining = rateLimitRemaining
        self.watchedField = watchedField
        self.isEventStream = isEventStream
    }

    /// Reads the facts of `head` from `buffer`.
    init(_ head: HTTPResponseHead, in buffer: UnsafeRawBufferPointer, watchedField watched: [UInt8]?) {
        self.init(response: head)
        if let t = head.contentType {
            let semicolon = buffer[t].firstIndex(of: 0x3B) ?? t.upperBound
            var end = semicolon
            while end > t.lowerBound && (buffer[end - 1] == 0x20 || buffer[end - 1] == 0x09) { end -= 1 }
            isEventStream = HTTPFieldValue.equalsIgnoringCase("text/event-stream", in: buffer, t.lowerBound..<end)
        }
        for field in head.headerFields(in: buffer) {
            if let watched, watched.withUnsafeBytes({ HTTPFieldValue.equalsIgnoringCase($0, in: buffer, field.name) }) {
                watchedField = field.value
                continue
            }
            switch field.name.count {
            case 4 where HTTPFieldValue.equalsIgnoringCase("ETag", in: buffer, field.name):
                etag = field.value
            case 8 where HTTPFieldValue.equalsIgnoringCase("Location", in: buffer, field.name):
                location = field.value
            case 11 where HTTPFieldValue.equalsIgnoringCase("Retry-After", in: buffer, field.name):
                retryAfter = field.value
                if let s = JSONFields.decimal(UnsafeRawBufferPointer(rebasing: buffer[field.value])), s >= 0 { retryAfterSeconds = s }
            case 21 where HTTPFieldValue.equalsIgnoringCase("X-RateLimit-Remaining", in: buffer, field.name):
                rateLimitRemaining = field.value
            default:
                break
            }
        }
    }

    /// The same head with every range moved `delta` bytes later.
    func shifted(by delta: Int) -> HTTPExchangeHead {
        func move(_ r: Range<Int>) -> Range<Int> { (r.lowerBound + delta)..<(r.upperBound + delta) }
        var h = self
        h.response.reason = move(h.response.reason)
        h.response.contentType = h.response.contentType.map(move)
        h.response.range = move(h.response.range)
        h.response.fieldsRange = move(h.response.fieldsRange)
        h.etag = etag.map(move)
        h.location = location.map(move)
        h.retryAfter = retryAfter.map(move)
        h.rateLimitRemaining = rateLimitRemaining.map(move)
        h.watchedField = watchedField.map(move)
        return h
    }
}
