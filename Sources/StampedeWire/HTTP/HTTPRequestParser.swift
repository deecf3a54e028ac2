/// A parsed request head. Ranges index the buffer passed to the `next(_:)` call that
/// reported it, and stay meaningful only until the caller drops the consumed bytes.
public struct HTTPRequestHead: HTTPMessageHead, Equatable {
    /// nil for a method outside `HTTPMethod` (its bytes are in `methodRange`).
    public var method: HTTPMethod?
    /// The method token as sent.
    public var methodRange: Range<Int>
    /// The request-target as sent (origin-form: path and query, still percent-encoded).
    public var target: Range<Int>
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    public var versionMinor: Int
    /// The Content-Length field, if present and valid.
    public var contentLength: Int?
    /// Transfer-Encoding is present (a request is accepted only when chunked is its final coding).
    public var isChunked: Bool
    /// `Expect: 100-continue`: the client waits for a 100 (or a final status) before the body.
    public var expectsContinue: Bool
    /// The client asked to close after the response (`Connection: close`, or HTTP/1.0
    /// without `keep-alive`).
    public var connectionClose: Bool
    /// The first Content-Type value, trimmed.
    public var contentType: Range<Int>?
    /// How the parser will delimit the body that follows (never `.untilClose` for requests).
    public var body: HTTPBodyFraming
    /// The head's bytes, request line through blank line.
    public var range: Range<Int>
    /// The header lines, for `value(forHeader:in:)` and `headerFields(in:)`.
    public var fieldsRange: Range<Int>

    /// The path part of `target`: up to its first '?' (the query) or '#' (a fragment, which a
    /// client should not send), in the same buffer.
    public func path(in buffer: UnsafeRawBufferPointer) -> Range<Int> {
        for i in target where buffer[i] == 0x3F || buffer[i] == 0x23 { return target.lowerBound..<i }  // '?' '#'
        return target
    }

    /// Memberwise, for tests and tools that build heads by hand.
    public init(method: HTTPMethod?, methodRange: Range<Int>, target: Range<Int>, versionMinor: Int, contentLength: Int?, isChunked: Bool,
                expectsContinue: Bool, connectionClose: Bool, contentType: Range<Int>?, body: HTTPBodyFraming,
                range: Range<Int>, fieldsRange: Range<Int>) {
        self.method = method
        self.methodRange = methodRange
        self.target = target
        self.versionMinor = versionMinor
        self.contentLength = contentLength
        self.isChunked = isChunked
        self.expectsContinue = expectsContinue
        self.connectionClose = connectionClose
        self.contentType = contentType
        self.body = body
        self.range = range
        self.fieldsRange = fieldsRange
    }
}

/// Server-side HTTP/1.1 request parser for the reference server, with the same calling
/// convention as `HTTPResponseParser`: pass all unconsumed input, act on the event, drop
/// `consumed` bytes. Bodies may be Content-Length or chunked; a request with neither has none
/// (RFC 9112 §6.3 item 6). Pipelined requests are parsed one after another.
public struct HTTPRequestParser: Sendable {
    /// One step of the request stream.
    public enum Event: Sendable, Equatable {
        case needMore
        /// A request head; the consumed count covers it (look up fields before dropping).
        case head(HTTPRequestHead)
        /// A piece of the body (de-chunked).
        case body(Range<Int>)
        /// The request is complete.
        case end
        /// Answer 400 (or 413/501 as fits) and close: the message boundary is lost.
        case error(HTTPParseError)
    }

    /// Largest head accepted (request line + fields + blank line, with any blank lines before it).
    public let maxHeadBytes: Int
    /// Longest chunk-size line accepted, extensions included.
    public let maxChunkLineBytes: Int

    var scanner = HTTPHeadScanner()
    var decoder = HTTPBodyDecoder()
    var inBody = false
    var failure: HTTPParseError? = nil

    /// Limits are clamped to 1...2^40 so offset arithmetic cannot overflow.
    public init(maxHeadBytes: Int = 16 * 1024, maxChunkLineBytes: Int = 4 * 1024) {
        self.maxHeadBytes = HTTPBytes.clampLimit(maxHeadBytes)
        self.maxChunkLineBytes = HTTPBytes.clampLimit(maxChunkLineBytes)
    }

    /// The next event from `buffer` (see `HTTPResponseParser` for the calling convention).
    public mutating func next(_ buffer: UnsafeRawBufferPointer) -> (event: Event, consumed: Int) {
        if let failure { return (.error(failure), 0) }
        if inBody {
            let (step, used) = decoder.step(buffer, from: 0, maxChunkLineBytes: maxChunkLineBytes, maxTrailerBytes: maxHeadBytes)
            switch step {
            case .body(let r): return (.body(r), used)
            case .needMore: return (.needMore, used)
            case .end:
                inBody = false
                scanner = HTTPHeadScanner()
                return (.end, used)
            case .failed(let e):
                failure = e
                return (.error(e), used)
            }
        }
        switch scanner.scan(buffer, kind: .request, maxHeadBytes: maxHeadBytes) {
        case .needMore:
            return (.needMore, 0)
        case .failed(let e):
            failure = e
            return (.error(e), 0)
        case .complete:
            let s = scanner
            let framing: HTTPBodyFraming
            if s.transferEncodingSeen {
                if s.contentLength != nil {
                    failure = .conflictingFraming
                } else if !s.chunkedIsLast {
                    failure = .unsupportedTransferEncoding
                }
                framing = .chunked
            } else if let n = s.contentLength {
                framing = .length(n)
            } else {
                framing = .none
            }
            if let failure { return (.error(failure), 0) }
            let head = HTTPRequestHead(
                method: HTTPMethod(buffer, s.methodRange), methodRange: s.methodRange, target: s.target, versionMinor: s.versionMinor,
                contentLength: s.contentLength, isChunked: s.transferEncodingSeen, expectsContinue: s.expectContinue,
                connectionClose: s.connectionClose || (s.versionMinor == 0 && !s.connectionKeepAlive),
                contentType: s.contentType, body: framing, range: s.headStart..<s.end, fieldsRange: s.fieldsStart..<s.fieldsEnd)
            decoder.start(framing)
            inBody = true
            scanner = HTTPHeadScanner()
            return (.head(head), s.end)
        }
    }

    /// Forgets everything, for a new connection.
    public mutating func reset() {
        scanner = HTTPHeadScanner()
        decoder = HTTPBodyDecoder()
        inBody = false
        failure = nil
    }

    /// Whether a request is partly received (the client closing now cut it short).
    public var isInsideMessage: Bool { inBody || scanner.hasPartialInput }
}
