/// Byte-level helpers shared by the HTTP/1.1 and SSE codecs: ASCII classes and line-end search.
/// Everything works on raw buffers so the codecs never build Strings on the hot path.
enum HTTPBytes {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let htab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A
    static let comma: UInt8 = 0x2C
    static let semicolon: UInt8 = 0x3B

    /// ASCII lowercase; other bytes unchanged (field names are case-insensitive, RFC 9110 §5.1).
    @inline(__always) static func lower(_ b: UInt8) -> UInt8 {
        b &- 0x41 < 26 ? b | 0x20 : b
    }

    /// `tchar` of RFC 9110 §5.6.2: the characters of a token (field names, methods, codings).
    @inline(__always) static func isTokenChar(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: true
        default: false
        }
    }

    @inline(__always) static func isOWS(_ b: UInt8) -> Bool { b == sp || b == htab }

    /// Value of a hex digit, or nil.
    @inline(__always) static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: Int(b &- 0x30)
        case 0x41...0x46: Int(b &- 0x41 &+ 10)
        case 0x61...0x66: Int(b &- 0x61 &+ 10)
        default: nil
        }
    }

    /// First index of `byte` in `buf[from..<to]`, or nil. Eight bytes per step: newlines are
    /// sparse in HTTP heads and SSE streams, so most words are rejected at once.
    static func firstIndex(of byte: UInt8, in buf: UnsafeRawBufferPointer, from: Int, to: Int) -> Int? {
        guard from < to, let base = buf.baseAddress else { return nil }
        var i = from
        #if _endian(little)
        let pattern = UInt64(byte) &* 0x0101_0101_0101_0101
        while i + 8 <= to {
            let x = base.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ pattern
            // Classic "has zero byte": the lowest set bit marks the first zero byte exactly
            // (borrows only corrupt higher bytes), and little-endian puts it first in memory.
            let z = (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080
            if z != 0 { return i + z.trailingZeroBitCount >> 3 }
            i += 8
        }
        #endif
        while i < to {
            if base.load(fromByteOffset: i, as: UInt8.self) == byte { return i }
            i += 1
        }
        return nil
    }

    /// First index of a CR or LF in `buf[from..<to]`, or nil (SSE lines end in CR, LF or CRLF).
    static func firstLineBreak(in buf: UnsafeRawBufferPointer, from: Int, to: Int) -> Int? {
        guard from < to, let base = buf.baseAddress else { return nil }
        var i = from
        #if _endian(little)
        while i + 8 <= to {
            let w = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            let a = w ^ 0x0A0A_0A0A_0A0A_0A0A
            let b = w ^ 0x0D0D_0D0D_0D0D_0D0D
            let za = (a &- 0x0101_0101_0101_0101) & ~a & 0x8080_8080_8080_8080
            let zb = (b &- 0x0101_0101_0101_0101) & ~b & 0x8080_8080_8080_8080
            let z = za | zb
            if z != 0 { return i + z.trailingZeroBitCount >> 3 }
            i += 8
        }
        #endif
        while i < to {
            let c = base.load(fromByteOffset: i, as: UInt8.self)
            if c == lf || c == cr { return i }
            i += 1
        }
        return nil
    }

    /// Whether `buf[range]` equals `name` ignoring ASCII case.
    static func equalsIgnoringCase(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>, _ name: UnsafeRawBufferPointer) -> Bool {
        guard range.count == name.count else { return false }
        var j = 0
        for i in range {
            if lower(buf[i]) != lower(name[j]) { return false }
            j += 1
        }
        return true
    }

    /// Whether `buf[range]` is exactly `text`.
    static func equals(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>, _ text: StaticString) -> Bool {
        guard range.count == text.utf8CodeUnitCount else { return false }
        var j = 0
        for i in range {
            if buf[i] != text.utf8Start[j] { return false }
            j += 1
        }
        return true
    }

    /// A configured limit kept in a range where offset arithmetic cannot overflow.
    static func clampLimit(_ n: Int) -> Int { Swift.min(Swift.max(n, 1), 1 << 40) }

    static func equalsIgnoringCase(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>, _ name: StaticString) -> Bool {
        equalsIgnoringCase(buf, range, UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
    }

    /// `range` without leading and trailing SP/HTAB (OWS, RFC 9110 §5.6.3).
    static func trimOWS(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>) -> Range<Int> {
        var lo = range.lowerBound
        var hi = range.upperBound
        while lo < hi && isOWS(buf[lo]) { lo += 1 }
        while hi > lo && isOWS(buf[hi - 1]) { hi -= 1 }
        return lo..<hi
    }
}

/// One header field of a parsed head: ranges into the buffer the head was parsed from.
public struct HTTPHeaderField: Sendable, Equatable {
    /// The field name as sent (compare case-insensitively).
    public var name: Range<Int>
    /// The field value without surrounding whitespace.
    public var value: Range<Int>

    /// A field from its name and (trimmed) value ranges.
    public init(name: Range<Int>, value: Range<Int>) {
        self.name = name
        self.value = value
    }
}

/// Walks the header lines of a head that a parser has already validated, without allocating.
/// Valid only while the head's bytes are still at the same place in the buffer.
public struct HTTPHeaderFieldIterator: IteratorProtocol, Sequence {
    let buffer: UnsafeRawBufferPointer
    var position: Int
    let end: Int

    /// Iterates the lines of `buffer[fields]`, as found in a parsed head's `fieldsRange`.
    public init(buffer: UnsafeRawBufferPointer, fields: Range<Int>) {
        self.buffer = buffer
        self.position = fields.lowerBound
        self.end = Swift.min(fields.upperBound, buffer.count)
    }

    /// The next field line, or nil after the last; lines without a colon (never in a parsed head) are skipped.
    public mutating func next() -> HTTPHeaderField? {
        while position < end {
            let lineStart = position
            let lf = HTTPBytes.firstIndex(of: HTTPBytes.lf, in: buffer, from: position, to: end) ?? end
            position = lf + 1
            var lineEnd = lf
            if lineEnd > lineStart && buffer[lineEnd - 1] == HTTPBytes.cr { lineEnd -= 1 }
            guard let colon = HTTPBytes.firstIndex(of: HTTPBytes.colon, in: buffer, from: lineStart, to: lineEnd) else { continue }
            return HTTPHeaderField(name: lineStart..<colon, value: HTTPBytes.trimOWS(buffer, (colon + 1)..<lineEnd))
        }
        return nil
    }
}

/// What parsed request and response heads share: where their header lines are, and lookups
/// over them. Lookups scan the head once per call, so a caller that needs many fields should
/// walk `headerFields(in:)` once instead.
public protocol HTTPMessageHead: Sendable {
    /// The header lines (after the start line, before the blank line) in the parsed buffer.
    var fieldsRange: Range<Int> { get }
}

extension HTTPMessageHead {
    /// All header fields, in order; valid while the head is still in `buffer`.
    public func headerFields(in buffer: UnsafeRawBufferPointer) -> HTTPHeaderFieldIterator {
        HTTPHeaderFieldIterator(buffer: buffer, fields: fieldsRange)
    }

    /// The value range of the first field called `name` (ASCII case-insensitive), or nil.
    public func value(forHeader name: StaticString, in buffer: UnsafeRawBufferPointer) -> Range<Int>? {
        value(forHeader: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), in: buffer)
    }

    /// The value range of the first field called `name` (ASCII case-insensitive), or nil.
    public func value(forHeader name: String, in buffer: UnsafeRawBufferPointer) -> Range<Int>? {
        var name = name
        return name.withUTF8 { value(forHeader: UnsafeRawBufferPointer($0), in: buffer) }
    }

    /// The value range of the first field whose name is the bytes `name` (ASCII case-insensitive).
    public func value(forHeader name: UnsafeRawBufferPointer, in buffer: UnsafeRawBufferPointer) -> Range<Int>? {
        for field in headerFields(in: buffer) where HTTPBytes.equalsIgnoringCase(buffer, field.name, name) {
            return field.value
        }
        return nil
    }
}

/// Helpers for interpreting field values in place.
public enum HTTPFieldValue {
    /// Whether the comma-separated list in `buffer[value]` has the element `token`
    /// (ASCII case-insensitive; parameters after `;` ignored), as for Connection or Transfer-Encoding.
    public static func containsToken(_ token: StaticString, in buffer: UnsafeRawBufferPointer, _ value: Range<Int>) -> Bool {
        var start = value.lowerBound
        while start <= value.upperBound {
            let comma = HTTPBytes.firstIndex(of: HTTPBytes.comma, in: buffer, from: start, to: value.upperBound) ?? value.upperBound
            let element = HTTPBytes.firstIndex(of: HTTPBytes.semicolon, in: buffer, from: start, to: comma) ?? comma
            if HTTPBytes.equalsIgnoringCase(buffer, HTTPBytes.trimOWS(buffer, start..<element), token) { return true }
            start = comma + 1
        }
        return false
    }

    /// The non-negative decimal in `buffer[value]` (e.g. Retry-After seconds), or nil when it is
    /// empty, has other characters or exceeds 18 digits.
    public static func decimal(in buffer: UnsafeRawBufferPointer, _ value: Range<Int>) -> Int? {
        guard !value.isEmpty, value.count <= 18 else { return nil }
        var n = 0
        for i in value {
            let d = buffer[i] &- 0x30
            guard d < 10 else { return nil }
            n = n * 10 + Int(d)
        }
        return n
    }

    /// Whether `buffer[value]` equals `text`, ignoring ASCII case.
    public static func equalsIgnoringCase(_ text: StaticString, in buffer: UnsafeRawBufferPointer, _ value: Range<Int>) -> Bool {
        HTTPBytes.equalsIgnoringCase(buffer, value, text)
    }

    /// Whether `buffer[value]` equals the bytes `text`, ignoring ASCII case.
    public static func equalsIgnoringCase(_ text: UnsafeRawBufferPointer, in buffer: UnsafeRawBufferPointer, _ value: Range<Int>) -> Bool {
        HTTPBytes.equalsIgnoringCase(buffer, value, text)
    }
}
