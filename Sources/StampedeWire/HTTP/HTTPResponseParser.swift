/// A parsed response head. Ranges index the buffer passed to the `next(_:)` call that
/// reported it, and stay meaningful only until the caller drops the consumed bytes.
public struct HTTPResponseHead: HTTPMessageHead, Equatable {
    /// The status code, 100...999.
    public var status: Int
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    public var versionMinor: Int
    /// The reason phrase (possibly empty); clients should not rely on it (RFC 9112 §4).
    public var reason: Range<Int>
    /// The Content-Length field, if present and valid (even where it does not frame the body,
    /// as in a 304 or a response to HEAD).
    public var contentLength: Int?
    /// Transfer-Encoding has chunked as its final coding.
    public var isChunked: Bool
    /// The connection cannot carry another response after this one: `Connection: close`, an
    /// HTTP/1.0 response without `keep-alive`, a read-until-close body, or Transfer-Encoding
    /// together with Content-Length or in HTTP/1.0 (RFC 9112 §6.3 item 3 and §6.1 say to close
    /// after such a message).
    public var connectionClose: Bool
    /// The first Content-Type value, trimmed.
    public var contentType: Range<Int>?
    /// How the parser will delimit the body that follows.
    public var body: HTTPBodyFraming
    /// The head's bytes, status line through blank line.
    public var range: Range<Int>
    /// The header lines, for `value(forHeader:in:)` and `headerFields(in:)`.
    public var fieldsRange: Range<Int>

    /// Memberwise, for tests and tools that build heads by hand.
    public init(status: Int, versionMinor: Int, reason: Range<Int>, contentLength: Int?, isChunked: Bool, connectionClose: Bool,
                contentType: Range<Int>?, body: HTTPBodyFraming, range: Range<Int>, fieldsRange: Range<Int>) {
        self.status = status
        self.versionMinor = versionMinor
        self.reason = reason
        self.contentLength = contentLength
        self.isChunked = isChunked
        self.connectionClose = connectionClose
        self.contentType = contentType
        self.body = body
        self.range = range
        self.fieldsRange = fieldsRange
    }
}

/// Client-side HTTP/1.1 response parser: a value-type state machine fed the connection's
/// buffered input, one event per call. It never does I/O and never allocates.
///
/// Calling convention: pass everything received and not yet consumed, starting with the bytes
/// left over from the previous call; act on the event; then drop `consumed` bytes from the front.
/// `consumed` may be non-zero with `.needMore` (framing bytes such as chunk-size lines are used
/// up as they arrive), and is zero while a head is incomplete: the head stays in the buffer so
/// that its ranges and `value(forHeader:in:)` work when `.head` is reported. Bytes already
/// examined are not examined again when offered with more input. Once `.error` is returned the
/// parser stays failed: the connection must be closed.
public struct HTTPResponseParser: Sendable {
    /// One step of the response stream.
    public enum Event: Sendable, Equatable {
        /// Nothing complete yet; call again with more input.
        case needMore
        /// A final response head; the consumed count covers it (look up fields before dropping).
        case head(HTTPResponseHead)
        /// A piece of the body (chunk payloads only, never chunk framing).
        case body(Range<Int>)
        /// The response is complete; the next bytes start the next response.
        case end
        /// The stream cannot be parsed further; close the connection.
        case error(HTTPParseError)
    }

    /// Largest head accepted (status line + fields + blank line).
    public let maxHeadBytes: Int
    /// Longest chunk-size line accepted, extensions included.
    public let maxChunkLineBytes: Int
    /// Report 1xx heads other than 101 (then followed by `.end`) instead of skipping them.
    public var reportsInterimResponses: Bool
    /// Set before the next response head arrives when it answers a HEAD request: such a
    /// response has no body whatever its fields say (RFC 9112 §6.3 item 1). Cleared when
    /// that final head is parsed.
    public var nextResponseIsToHEAD = false

    var scanner = HTTPHeadScanner()
    var decoder = HTTPBodyDecoder()
    var inBody = false
    var failure: HTTPParseError? = nil

    /// Limits are clamped to 1...2^40 so offset arithmetic cannot overflow.
    public init(maxHeadBytes: Int = 16 * 1024, maxChunkLineBytes: Int = 4 * 1024, reportsInterimResponses: Bool = false) {
        self.maxHeadBytes = HTTPBytes.clampLimit(maxHeadBytes)
        self.maxChunkLineBytes = HTTPBytes.clampLimit(maxChunkLineBytes)
        self.reportsInterimResponses = reportsInterimResponses
    }

    /// The next event from `buffer` (see the type's calling convention).
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
        var skipped = 0
        while true {
            switch scanner.scan(buffer, kind: .response, maxHeadBytes: maxHeadBytes) {
            case .needMore:
                if skipped > 0 { scanner.shift(by: skipped) }
                return (.needMore, skipped)
            case .failed(let e):
                failure = e
                return (.error(e), skipped)
            case .complete:
                let s = scanner
                // RFC 9110 §15.2: a client must be able to parse 1xx responses it did not ask
                // for (100 Continue, 103 Early Hints) and may ignore them. 101 is final for HTTP.
                if s.status < 200 && s.status != 101 && !reportsInterimResponses {
                    skipped = s.end
                    scanner = HTTPHeadScanner(base: skipped)
                    continue
                }
                let head = makeHead(s)
                nextResponseIsToHEAD = false
                decoder.start(head.body)
                inBody = true
                scanner = HTTPHeadScanner()
                return (.head(head), s.end)
            }
        }
    }

    /// Call when the connection has closed after all received bytes were fed to `next(_:)`.
    /// Returns `.end` when that completes a read-until-close body, nil when no message was in
    /// progress, and `.error(.unexpectedEndOfStream)` when one was cut short.
    public mutating func endOfStream() -> Event? {
        if let failure { return .error(failure) }
        if inBody {
            guard decoder.endsAtClose else {
                failure = .unexpectedEndOfStream
                return .error(.unexpectedEndOfStream)
            }
            inBody = false
            scanner = HTTPHeadScanner()
            return .end
        }
        if scanner.hasPartialInput {
            failure = .unexpectedEndOfStream
            return .error(.unexpectedEndOfStream)
        }
        return nil
    }

    /// Forgets everything, for a new connection (keeps the configuration).
    public mutating func reset() {
        scanner = HTTPHeadScanner()
        decoder = HTTPBodyDecoder()
        inBody = false
        failure = nil
        nextResponseIsToHEAD = false
    }

    private func makeHead(_ s: HTTPHeadScanner) -> HTTPResponseHead {
        let framing: HTTPBodyFraming
        // RFC 9112 §6.3, in order.
        if s.status < 200 || s.status == 204 || s.status == 304 || nextResponseIsToHEAD {
            framing = .none
        } else if s.transferEncodingSeen {
            framing = s.chunkedIsLast ? .chunked : .untilClose
        } else if let n = s.contentLength {
            framing = .length(n)
        } else {
            framing = .untilClose
        }
        let close = s.connectionClose
            || (s.versionMinor == 0 && !s.connectionKeepAlive)
            || framing == .untilClose
            || (s.transferEncodingSeen && s.contentLength != nil)
            || (s.transferEncodingSeen && s.versionMinor == 0) // RFC 9112 §6.1: faulty framing in 1.0
        return HTTPResponseHead(
            status: s.status, versionMinor: s.versionMinor, reason: s.reason, contentLength: s.contentLength,
            isChunked: s.transferEncodingSeen && s.chunkedIsLast, connectionClose: close, contentType: s.contentType,
            body: framing, range: s.headStart..<s.end, fieldsRange: s.fieldsStart..<s.fieldsEnd)
    }
}
