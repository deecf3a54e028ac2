/// The request methods Stampede sends or serves. Anything else parses as a request whose
/// `method` is nil (its bytes are still in `methodRange`).
public enum HTTPMethod: UInt8, Sendable, CaseIterable {
    case get, head, post, put, delete, options, patch

    /// The method token as sent on the wire (methods are case-sensitive, RFC 9110 §9.1).
    public var name: StaticString {
        switch self {
        case .get: "GET"
        case .head: "HEAD"
        case .post: "POST"
        case .put: "PUT"
        case .delete: "DELETE"
        case .options: "OPTIONS"
        case .patch: "PATCH"
        }
    }

    /// Methods whose requests carry a body by convention, so an empty one still says
    /// `Content-Length: 0` (RFC 9110 §8.6: a user agent SHOULD send it for POST without a body,
    /// and some servers answer 411 otherwise).
    public var expectsBody: Bool { self == .post || self == .put || self == .patch }

    /// The method whose token is `buf[range]` (case-sensitive), or nil.
    init?(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>) {
        guard !range.isEmpty else { return nil }
        let candidate: HTTPMethod
        switch (range.count, buf[range.lowerBound]) {
        case (3, 0x47): candidate = .get
        case (3, 0x50): candidate = .put
        case (4, 0x48): candidate = .head
        case (4, 0x50): candidate = .post
        case (5, 0x50): candidate = .patch
        case (6, 0x44): candidate = .delete
        case (7, 0x4F): candidate = .options
        default: return nil
        }
        guard HTTPBytes.equals(buf, range, candidate.name) else { return nil }
        self = candidate
    }
}

/// How a message body is delimited (RFC 9112 §6.3).
public enum HTTPBodyFraming: Sendable, Equatable {
    /// No body at all: 1xx, 204, 304, a response to HEAD, or a request without length.
    case none
    /// Exactly this many bytes (Content-Length).
    case length(Int)
    /// Transfer-Encoding with chunked as the final coding.
    case chunked
    /// A response that runs until the server closes the connection.
    case untilClose
}

/// Why a message could not be parsed. The connection cannot be reused after any of these:
/// message boundaries are lost.
public enum HTTPParseError: Error, Sendable, Equatable {
    /// The status line is not `HTTP/1.x NNN reason`.
    case malformedStatusLine
    /// The request line is not `method SP target SP HTTP/1.x`.
    case malformedRequestLine
    /// A field line without a colon, with a bad name, whitespace before the colon, a NUL or a
    /// bare CR (RFC 9110 §5.5), or obsolete line folding (RFC 9112 §5.2).
    case malformedHeader
    /// The head is larger than the parser's limit.
    case headTooLarge
    /// Content-Length is not a non-negative decimal (RFC 9110 §8.6).
    case invalidContentLength
    /// Several Content-Length values that differ (RFC 9112 §6.3 item 5).
    case conflictingContentLength
    /// A request with both Transfer-Encoding and Content-Length: a smuggling vector that a
    /// server ought to reject (RFC 9112 §6.3 item 3).
    case conflictingFraming
    /// A request whose transfer coding does not end in chunked (RFC 9112 §6.3 item 4).
    case unsupportedTransferEncoding
    /// A chunk-size that is empty, not hex, or too large to represent.
    case invalidChunkSize
    /// A chunk-size line (with extensions) longer than the parser's limit.
    case chunkLineTooLong
    /// Chunk data not followed by CRLF, or a malformed end of the trailer section.
    case malformedChunk
    /// The trailer section is larger than the head limit.
    case trailersTooLarge
    /// The connection ended in the middle of a message.
    case unexpectedEndOfStream
}
