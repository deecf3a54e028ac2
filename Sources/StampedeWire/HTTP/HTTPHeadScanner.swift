/// Incremental parser of one HTTP/1.1 head (start line + field lines), shared by the request
/// and response parsers. It never consumes: the head must stay in the caller's buffer until it
/// is complete so that its ranges (and later header lookups) stay valid. It remembers how far
/// it has looked, so bytes offered again with more input are not scanned twice; each complete
/// line is interpreted exactly once.
///
/// All positions are offsets into the buffer of the current call; the owner shifts them when
/// it reports a consumed prefix without completing the head.
struct HTTPHeadScanner: Sendable {
    enum Kind: Sendable { case request, response }
    enum Outcome: Sendable, Equatable { case needMore, complete, failed(HTTPParseError) }

    /// Where this message's bytes begin (after an interim response skipped in the same call).
    var base = 0
    /// Next byte to examine for a line feed.
    var scanPos = 0
    var lineStart = 0
    /// Start of the start line (after any tolerated blank lines).
    var headStart = 0
    var startLineDone = false
    var fieldsStart = 0
    /// Start of the blank line, once complete.
    var fieldsEnd = 0
    /// Just past the blank line, once complete.
    var end = 0

    var versionMinor = 1
    var status = 0
    var reason = 0..<0
    var methodRange = 0..<0
    var target = 0..<0

    var contentLength: Int? = nil
    var transferEncodingSeen = false
    var chunkedIsLast = false
    var connectionClose = false
    var connectionKeepAlive = false
    var contentType: Range<Int>? = nil
    var expectContinue = false

    init() {}

    init(base: Int) {
        self.base = base
        scanPos = base
        lineStart = base
        headStart = base
    }

    /// Makes every stored position relative to a buffer that starts `delta` bytes later.
    mutating func shift(by delta: Int) {
        base -= delta
        scanPos -= delta
        lineStart -= delta
        headStart -= delta
        fieldsStart -= delta
        fieldsEnd -= delta
        end -= delta
        reason = (reason.lowerBound - delta)..<(reason.upperBound - delta)
        methodRange = (methodRange.lowerBound - delta)..<(methodRange.upperBound - delta)
        target = (target.lowerBound - delta)..<(target.upperBound - delta)
        if let r = contentType { contentType = (r.lowerBound - delta)..<(r.upperBound - delta) }
    }

    /// Bytes of the head seen so far (for end-of-stream diagnostics).
    var hasPartialInput: Bool { scanPos > base }

    /// Continues scanning `buf` from where the previous call stopped.
    mutating func scan(_ buf: UnsafeRawBufferPointer, kind: Kind, maxHeadBytes: Int) -> Outcome {
        let n = buf.count
        // The blank line must end within maxHeadBytes of the message start; looking no further
        // bounds both memory (the caller's buffer) and work on hostile input.
        let limit = min(n, base + maxHeadBytes)
        while true {
            guard let lf = HTTPBytes.firstIndex(of: HTTPBytes.lf, in: buf, from: scanPos, to: limit) else {
                scanPos = max(scanPos, limit)
                return n >= base + maxHeadBytes ? .failed(.headTooLarge) : .needMore
            }
            // RFC 9112 §2.2: a recipient MAY accept a bare LF as a line terminator.
            var lineEnd = lf
            if lineEnd > lineStart && buf[lineEnd - 1] == HTTPBytes.cr { lineEnd -= 1 }
            let line = lineStart..<lineEnd
            lineStart = lf + 1
            scanPos = lf + 1
            if !startLineDone {
                if line.isEmpty {
                    // RFC 9112 §2.2: ignore empty lines before the start line (some clients send
                    // an extra CRLF after a POST body).
                    headStart = lineStart
                    continue
                }
                let ok = kind == .response ? parseStatusLine(buf, line) : parseRequestLine(buf, line)
                if !ok { return .failed(kind == .response ? .malformedStatusLine : .malformedRequestLine) }
                startLineDone = true
                fieldsStart = lineStart
                continue
            }
            if line.isEmpty {
                fieldsEnd = line.lowerBound
                end = lf + 1
                return .complete
            }
            if let error = parseFieldLine(buf, line) { return .failed(error) }
        }
    }

    /// `HTTP/1.x SP 3DIGIT [SP reason-phrase]` (RFC 9112 §4). The SP before an empty reason
    /// is required by the grammar but often missing in practice, so it is optional here.
    private mutating func parseStatusLine(_ buf: UnsafeRawBufferPointer, _ line: Range<Int>) -> Bool {
        let s = line.lowerBound
        guard line.count >= 12, matchesVersion(buf, s), buf[s + 8] == HTTPBytes.sp else { return false }
        var code = 0
        for i in (s + 9)..<(s + 12) {
            let d = buf[i] &- 0x30
            guard d < 10 else { return false }
            code = code * 10 + Int(d)
        }
        guard code >= 100 else { return false }
        if line.count > 12 {
            guard buf[s + 12] == HTTPBytes.sp else { return false }
            reason = (s + 13)..<line.upperBound
        } else {
            reason = line.upperBound..<line.upperBound
        }
        status = code
        return true
    }

    /// `method SP request-target SP HTTP/1.x` (RFC 9112 §3).
    private mutating func parseRequestLine(_ buf: UnsafeRawBufferPointer, _ line: Range<Int>) -> Bool {
        var i = line.lowerBound
        while i < line.upperBound && HTTPBytes.isTokenChar(buf[i]) { i += 1 }
        guard i > line.lowerBound, i < line.upperBound, buf[i] == HTTPBytes.sp else { return false }
        methodRange = line.lowerBound..<i
        i += 1
        let targetStart = i
        // The target has no whitespace or controls (RFC 3986 characters, RFC 9112 §3.2).
        while i < line.upperBound && buf[i] > HTTPBytes.sp && buf[i] != 0x7F { i += 1 }
        guard i > targetStart, i < line.upperBound, buf[i] == HTTPBytes.sp else { return false }
        target = targetStart..<i
        i += 1
        return line.upperBound - i == 8 && matchesVersion(buf, i)
    }

    /// `HTTP/1.` and a digit at `s`; records the minor version.
    private mutating func matchesVersion(_ buf: UnsafeRawBufferPointer, _ s: Int) -> Bool {
        // "HTTP/1." byte by byte: the protocol name is case-sensitive (RFC 9112 §2.3).
        guard buf[s] == 0x48, buf[s + 1] == 0x54, buf[s + 2] == 0x54, buf[s + 3] == 0x50,
              buf[s + 4] == 0x2F, buf[s + 5] == 0x31, buf[s + 6] == 0x2E else { return false }
        let minor = buf[s + 7] &- 0x30
        guard minor < 10 else { return false }
        versionMinor = Int(minor)
        return true
    }

    /// One `name: value` line; records the fields that decide framing and persistence.
    private mutating func parseFieldLine(_ buf: UnsafeRawBufferPointer, _ line: Range<Int>) -> HTTPParseError? {
        let s = line.lowerBound
        // RFC 9112 §5.2: obs-fold. Rejecting is allowed and safer than unfolding in place.
        if HTTPBytes.isOWS(buf[s]) { return .malformedHeader }
        var i = s
        while i < line.upperBound && HTTPBytes.isTokenChar(buf[i]) { i += 1 }
        // No whitespace between name and colon (RFC 9112 §5.1): it has been used for smuggling.
        guard i > s, i < line.upperBound, buf[i] == HTTPBytes.colon else { return .malformedHeader }
        let name = s..<i
        var v = i + 1
        while v < line.upperBound {
            // RFC 9110 §5.5: NUL or CR in a value is dangerous; reject the message.
            let b = buf[v]
            if b == 0 || b == HTTPBytes.cr { return .malformedHeader }
            v += 1
        }
        let value = HTTPBytes.trimOWS(buf, (i + 1)..<line.upperBound)
        switch name.count {
        case 14 where HTTPBytes.equalsIgnoringCase(buf, name, "content-length"):
            return recordContentLength(buf, value)
        case 17 where HTTPBytes.equalsIgnoringCase(buf, name, "transfer-encoding"):
            recordTransferEncoding(buf, value)
        case 10 where HTTPBytes.equalsIgnoringCase(buf, name, "connection"):
            if HTTPFieldValue.containsToken("close", in: buf, value) { connectionClose = true }
            if HTTPFieldValue.containsToken("keep-alive", in: buf, value) { connectionKeepAlive = true }
        case 12 where HTTPBytes.equalsIgnoringCase(buf, name, "content-type"):
            if contentType == nil { contentType = value }
        case 6 where HTTPBytes.equalsIgnoringCase(buf, name, "expect"):
            if HTTPBytes.equalsIgnoringCase(buf, value, "100-continue") { expectContinue = true }
        default:
            break
        }
        return nil
    }

    /// RFC 9110 §8.6: a list of identical values (`5, 5`, or repeated fields) may be accepted
    /// as that value; anything else is an unrecoverable framing error.
    private mutating func recordContentLength(_ buf: UnsafeRawBufferPointer, _ value: Range<Int>) -> HTTPParseError? {
        var i = value.lowerBound
        while true {
            while i < value.upperBound && HTTPBytes.isOWS(buf[i]) { i += 1 }
            var n = 0
            var digits = 0
            while i < value.upperBound {
                let d = buf[i] &- 0x30
                guard d < 10 else { break }
                // 18 digits cannot overflow Int64 and exceed any body we would accept.
                digits += 1
                if digits > 18 { return .invalidContentLength }
                n = n * 10 + Int(d)
                i += 1
            }
            guard digits > 0 else { return .invalidContentLength }
            if let previous = contentLength, previous != n { return .conflictingContentLength }
            contentLength = n
            while i < value.upperBound && HTTPBytes.isOWS(buf[i]) { i += 1 }
            if i == value.upperBound { break }
            guard buf[i] == HTTPBytes.comma else { return .invalidContentLength }
            i += 1
        }
        return nil
    }

    /// Only whether chunked is the final coding matters (RFC 9112 §6.3 items 3–4); other
    /// codings are the application's business, and a message can list codings over several lines.
    private mutating func recordTransferEncoding(_ buf: UnsafeRawBufferPointer, _ value: Range<Int>) {
        transferEncodingSeen = true
        var start = value.lowerBound
        while start < value.upperBound {
            let comma = HTTPBytes.firstIndex(of: HTTPBytes.comma, in: buf, from: start, to: value.upperBound) ?? value.upperBound
            let paramStart = HTTPBytes.firstIndex(of: HTTPBytes.semicolon, in: buf, from: start, to: comma) ?? comma
            let coding = HTTPBytes.trimOWS(buf, start..<paramStart)
            if !coding.isEmpty { chunkedIsLast = HTTPBytes.equalsIgnoringCase(buf, coding, "chunked") }
            start = comma + 1
        }
    }
}
