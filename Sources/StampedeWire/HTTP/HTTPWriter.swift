/// A cursor that appends bytes to a caller-provided buffer. Running out of room is sticky:
/// later appends do nothing and `result` is nil, so a caller composes a whole message and
/// checks once.
public struct HTTPByteWriter {
    /// The destination, written from its start.
    public let buffer: UnsafeMutableRawBufferPointer
    /// Bytes written so far.
    public private(set) var count = 0
    /// An append did not fit.
    public private(set) var overflowed = false

    /// Starts writing at the beginning of `buffer`.
    public init(_ buffer: UnsafeMutableRawBufferPointer) {
        self.buffer = buffer
    }

    /// Bytes written, or nil if anything did not fit.
    public var result: Int? { overflowed ? nil : count }

    @inline(__always) mutating func reserve(_ n: Int) -> UnsafeMutableRawPointer? {
        if overflowed || n == 0 { return nil }
        guard n <= buffer.count - count, let base = buffer.baseAddress else {
            overflowed = true
            return nil
        }
        defer { count += n }
        return base + count
    }

    /// Appends raw bytes.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty, let src = bytes.baseAddress else { return }
        reserve(bytes.count)?.copyMemory(from: src, byteCount: bytes.count)
    }

    /// Appends a literal (field names, fixed values).
    public mutating func append(_ text: StaticString) {
        append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends an array's bytes without copying the array.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Appends one byte.
    public mutating func append(byte: UInt8) {
        reserve(1)?.storeBytes(of: byte, as: UInt8.self)
    }

    /// A non-negative decimal (negative values are written as 0: lengths are never negative).
    public mutating func appendDecimal(_ value: Int) {
        var v = UInt64(max(0, value))
        let digits = HTTPByteWriter.decimalDigits(v)
        guard let p = reserve(digits) else { return }
        var i = digits
        repeat {
            i -= 1
            p.storeBytes(of: UInt8(0x30 + v % 10), toByteOffset: i, as: UInt8.self)
            v /= 10
        } while v != 0
    }

    /// A non-negative value in lowercase hex without leading zeros (a chunk-size).
    public mutating func appendHex(_ value: Int) {
        var v = UInt64(max(0, value))
        let digits = HTTPByteWriter.hexDigits(v)
        guard let p = reserve(digits) else { return }
        var i = digits
        repeat {
            i -= 1
            p.storeBytes(of: httpHexDigitsLower[Int(v & 0xF)], toByteOffset: i, as: UInt8.self)
            v >>= 4
        } while v != 0
    }

    /// `bytes` percent-encoded for a query component (see `HTTPPercentEncoding`).
    public mutating func appendPercentEncoded(_ bytes: UnsafeRawBufferPointer) {
        let n = HTTPPercentEncoding.encodedCount(bytes)
        guard let p = reserve(n) else { return }
        _ = HTTPPercentEncoding.encode(bytes, into: UnsafeMutableRawBufferPointer(start: p, count: n))
    }

    static func decimalDigits(_ v: UInt64) -> Int {
        var n = 1
        var x = v
        while x >= 10 { x /= 10; n += 1 }
        return n
    }

    static func hexDigits(_ v: UInt64) -> Int {
        v == 0 ? 1 : (64 - v.leadingZeroBitCount + 3) / 4
    }
}

let httpHexDigitsLower: HTTPStaticBytes = HTTPStaticBytes("0123456789abcdef")
let httpHexDigitsUpper: HTTPStaticBytes = HTTPStaticBytes("0123456789ABCDEF")

/// A StaticString's bytes, indexable without allocating.
struct HTTPStaticBytes: Sendable {
    let text: StaticString
    init(_ text: StaticString) { self.text = text }
    @inline(__always) subscript(i: Int) -> UInt8 { text.utf8Start[i] }
}

/// A client request's fixed parts, built once per connection and written per request without
/// allocating. Header values are copied verbatim: run `validate()` after building one from
/// untrusted input (a negotiate response can carry an access token), since a CR or LF there
/// would inject header lines.
public struct HTTPClientRequest: Sendable, Equatable {
    /// GET, POST or DELETE in SignalR's transports.
    public var method: HTTPMethod
    /// Origin-form request-target: path plus `?query`, already percent-encoded.
    public var target: [UInt8]
    /// The Host field value: `host`, `host:port`, or `[v6]:port` (see `hostValue`).
    public var host: [UInt8]
    /// Sent as `Authorization: Bearer <token>` when non-nil.
    public var bearerToken: [UInt8]?
    /// Sent as `Accept:` when non-nil (`text/event-stream` for SSE).
    public var accept: [UInt8]?
    /// Sent only with a body (or `Content-Length: 0` for POST/PUT/PATCH).
    public var contentType: [UInt8]?
    /// Extra header lines, pre-rendered, each ending in CRLF.
    public var extraHeaderLines: [UInt8]
    /// `Connection: keep-alive` when true (HTTP/1.1's default, sent for proxies and old
    /// servers), `Connection: close` when false. Ignored when `upgrade` is set.
    public var keepAlive: Bool
    /// Asks to switch protocols (RFC 9110 §7.8): `Upgrade: <protocol>` and `Connection: Upgrade`
    /// instead of the keep-alive field, as a WebSocket opening handshake does (RFC 6455 §4.1).
    public var upgrade: HTTPUpgradeProtocol? = nil

    /// Builds a request template; nothing is validated here (see `validate()`).
    public init(method: HTTPMethod, target: [UInt8], host: [UInt8], bearerToken: [UInt8]? = nil, accept: [UInt8]? = nil,
                contentType: [UInt8]? = nil, extraHeaderLines: [UInt8] = [], keepAlive: Bool = true) {
        self.method = method
        self.target = target
        self.host = host
        self.bearerToken = bearerToken
        self.accept = accept
        self.contentType = contentType
        self.extraHeaderLines = extraHeaderLines
        self.keepAlive = keepAlive
    }

    /// The Host value for a URL's host and port: the port is omitted when it is the scheme's
    /// default (RFC 9110 §7.2), IPv6 literals are bracketed (RFC 3986 §3.2.2). Allocates: build once.
    public static func hostValue(host: String, port: Int, defaultPort: Int) -> [UInt8] {
        let h = host.contains(":") && !host.hasPrefix("[") ? "[" + host + "]" : host
        return Array((port == defaultPort ? h : h + ":" + String(port)).utf8)
    }

    /// Whether every part can be written safely: a non-empty target without whitespace or
    /// controls, field values without CR, LF or NUL, and extra lines that are complete
    /// `name: value` CRLF lines.
    public func validate() -> Bool {
        func clean(_ bytes: [UInt8]) -> Bool { !bytes.contains { $0 == HTTPBytes.cr || $0 == HTTPBytes.lf || $0 == 0 } }
        guard !target.isEmpty, !target.contains(where: { $0 <= HTTPBytes.sp || $0 == 0x7F }) else { return false }
        guard !host.isEmpty, clean(host) else { return false }
        for part in [bearerToken, accept, contentType] {
            if let p = part, !clean(p) { return false }
        }
        return Self.validHeaderLines(extraHeaderLines)
    }

    static func validHeaderLines(_ lines: [UInt8]) -> Bool {
        var lineStart = 0
        var i = 0
        while i < lines.count {
            let b = lines[i]
            if b == HTTPBytes.lf {
                guard i > lineStart, lines[i - 1] == HTTPBytes.cr else { return false }
                let line = lineStart..<(i - 1)
                guard let colon = lines[line].firstIndex(of: HTTPBytes.colon), colon > lineStart,
                      lines[lineStart..<colon].allSatisfy(HTTPBytes.isTokenChar),
                      !lines[line].contains(where: { $0 == HTTPBytes.cr || $0 == 0 }) else { return false }
                lineStart = i + 1
            }
            i += 1
        }
        return lineStart == lines.count
    }

    /// Writes the head and `body` (when non-nil) into `out`; returns the bytes written, or nil
    /// when `out` is too small (what was written is then garbage).
    public func write(into out: UnsafeMutableRawBufferPointer, body: UnsafeRawBufferPointer? = nil) -> Int? {
        var w = HTTPByteWriter(out)
        writeHead(&w, contentLength: body?.count)
        if let body { w.append(body) }
        return w.result
    }

    /// Writes only the head, announcing `contentLength` body bytes that the caller sends itself
    /// (nil: no body; POST/PUT/PATCH then still say `Content-Length: 0`).
    public func writeHead(into out: UnsafeMutableRawBufferPointer, contentLength: Int?) -> Int? {
        var w = HTTPByteWriter(out)
        writeHead(&w, contentLength: contentLength)
        return w.result
    }

    /// The head alone as a new array, for a request sent once per connection (a WebSocket
    /// upgrade); allocates.
    public func headBytes(contentLength: Int? = nil) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: headLength(contentLength: contentLength)) { buf, n in
            n = writeHead(into: UnsafeMutableRawBufferPointer(buf), contentLength: contentLength) ?? 0
        }
    }

    /// Bytes `writeHead` needs for this `contentLength`.
    public func headLength(contentLength: Int?) -> Int {
        var n = method.name.utf8CodeUnitCount + 1 + target.count + 11 // " HTTP/1.1\r\n"
        n += 6 + host.count + 2
        if let t = bearerToken { n += 22 + t.count + 2 } // "Authorization: Bearer "
        if let a = accept { n += 8 + a.count + 2 }
        let length = contentLength ?? (method.expectsBody ? 0 : nil)
        if let length {
            if let c = contentType { n += 14 + c.count + 2 }
            n += 16 + HTTPByteWriter.decimalDigits(UInt64(max(0, length))) + 2
        }
        if let u = upgrade {
            n += 9 + u.token.utf8CodeUnitCount + 2 + 21 // "Upgrade: " … "\r\n" "Connection: Upgrade\r\n"
        } else {
            n += keepAlive ? 24 : 19
        }
        return n + extraHeaderLines.count + 2
    }

    func writeHead(_ w: inout HTTPByteWriter, contentLength: Int?) {
        w.append(method.name)
        w.append(byte: HTTPBytes.sp)
        w.append(target)
        w.append(" HTTP/1.1\r\nHost: ")
        w.append(host)
        w.append("\r\n")
        if let t = bearerToken {
            w.append("Authorization: Bearer ")
            w.append(t)
            w.append("\r\n")
        }
        if let a = accept {
            w.append("Accept: ")
            w.append(a)
            w.append("\r\n")
        }
        if let length = contentLength ?? (method.expectsBody ? 0 : nil) {
            if let c = contentType {
                w.append("Content-Type: ")
                w.append(c)
                w.append("\r\n")
            }
            w.append("Content-Length: ")
            w.appendDecimal(length)
            w.append("\r\n")
        }
        if let u = upgrade {
            w.append("Upgrade: ")
            w.append(u.token)
            w.append("\r\nConnection: Upgrade\r\n")
        } else {
            w.append(keepAlive ? "Connection: keep-alive\r\n" : "Connection: close\r\n")
        }
        w.append(extraHeaderLines)
        w.append("\r\n")
    }
}

/// A protocol a client request asks to upgrade to (RFC 9110 §7.8).
public enum HTTPUpgradeProtocol: UInt8, Sendable {
    /// RFC 6455 §4.1.
    case webSocket

    /// The protocol's token in the Upgrade field.
    public var token: StaticString {
        switch self {
        case .webSocket: "websocket"
        }
    }
}

/// Percent-encoding of query components (RFC 3986 §2.1, §2.3): everything except the
/// unreserved set `A-Z a-z 0-9 - . _ ~` becomes `%XX` (uppercase hex, §6.2.2.1). Stricter than
/// JavaScript's encodeURIComponent (which leaves `!'()*`), and so safe in any query parser.
public enum HTTPPercentEncoding {
    @inline(__always) static func isUnreserved(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E: true
        default: false
        }
    }

    /// Length of `value` once encoded.
    public static func encodedCount(_ value: UnsafeRawBufferPointer) -> Int {
        var n = value.count
        for b in value where !isUnreserved(b) { n += 2 }
        return n
    }

    /// Encodes `value` into `out`; returns the bytes written or nil if `out` is too small.
    public static func encode(_ value: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        guard encodedCount(value) <= out.count else { return nil }
        var o = 0
        for b in value {
            if isUnreserved(b) {
                out[o] = b
                o += 1
            } else {
                out[o] = 0x25
                out[o + 1] = httpHexDigitsUpper[Int(b >> 4)]
                out[o + 2] = httpHexDigitsUpper[Int(b & 0xF)]
                o += 3
            }
        }
        return o
    }

    /// Convenience for building targets once per connection (allocates).
    public static func encoded(_ value: [UInt8]) -> [UInt8] {
        value.withUnsafeBytes { src in
            [UInt8](unsafeUninitializedCapacity: encodedCount(src)) { out, n in
                n = encode(src, into: UnsafeMutableRawBufferPointer(out)) ?? 0
            }
        }
    }

    /// Decodes `%XX` escapes (and `+` as space when `plusIsSpace`, as form-style query strings
    /// do) from `value` into `out`, which needs at most `value.count` bytes. Returns the bytes
    /// written, or nil for a malformed escape or a too-small `out`.
    public static func decode(_ value: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, plusIsSpace: Bool = true) -> Int? {
        var i = 0
        var o = 0
        while i < value.count {
            guard o < out.count else { return nil }
            var b = value[i]
            if b == 0x25 {
                guard i + 2 < value.count, let hi = HTTPBytes.hexValue(value[i + 1]), let lo = HTTPBytes.hexValue(value[i + 2]) else { return nil }
                b = UInt8(hi << 4 | lo)
                i += 3
            } else {
                if b == 0x2B && plusIsSpace { b = HTTPBytes.sp }
                i += 1
            }
            out[o] = b
            o += 1
        }
        return o
    }
}

/// Query-string lookups on a request-target, for the reference server (`id=`, `access_token=`).
public enum HTTPQuery {
    /// The raw (still percent-encoded) value of the first `name=` parameter in the query of
    /// `buffer[target]`, an empty range for a bare `name`, or nil if absent. Names compare
    /// byte for byte, as ASP.NET does after decoding plain ASCII names.
    public static func value(of name: StaticString, inTarget target: Range<Int>, of buffer: UnsafeRawBufferPointer) -> Range<Int>? {
        let end = HTTPBytes.firstIndex(of: 0x23, in: buffer, from: target.lowerBound, to: target.upperBound) ?? target.upperBound // '#'
        guard let q = HTTPBytes.firstIndex(of: 0x3F, in: buffer, from: target.lowerBound, to: end) else { return nil } // '?'
        let key = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        var start = q + 1
        while start <= end {
            let amp = HTTPBytes.firstIndex(of: 0x26, in: buffer, from: start, to: end) ?? end // '&'
            let eq = HTTPBytes.firstIndex(of: 0x3D, in: buffer, from: start, to: amp) // '='
            let keyEnd = eq ?? amp
            if keyEnd - start == key.count && (0..<key.count).allSatisfy({ buffer[start + $0] == key[$0] }) {
                return eq.map { ($0 + 1)..<amp } ?? amp..<amp
            }
            start = amp + 1
        }
        return nil
    }
}

/// Server-side writers for the reference server: response heads and chunked framing.
public enum HTTPResponseWriter {
    /// Writes `HTTP/1.1 <status> <reason>` and the framing fields for `body`:
    /// `.length(n)` → Content-Length, `.chunked` → Transfer-Encoding: chunked, `.none` → neither
    /// (1xx, 204, 304), `.untilClose` → neither plus `Connection: close`. `extraHeaderLines` are
    /// pre-rendered CRLF-terminated lines. Returns the bytes written or nil if `out` is too small.
    public static func writeHead(into out: UnsafeMutableRawBufferPointer, status: Int, reason: StaticString,
                                 contentType: StaticString? = nil, body: HTTPBodyFraming, connectionClose: Bool = false,
                                 extraHeaderLines: UnsafeRawBufferPointer? = nil) -> Int? {
        var w = HTTPByteWriter(out)
        w.append("HTTP/1.1 ")
        w.appendDecimal(min(max(status, 100), 999))
        w.append(byte: HTTPBytes.sp)
        w.append(reason)
        w.append("\r\n")
        if let c = contentType {
            w.append("Content-Type: ")
            w.append(c)
            w.append("\r\n")
        }
        switch body {
        case .length(let n):
            w.append("Content-Length: ")
            w.appendDecimal(n)
            w.append("\r\n")
        case .chunked:
            w.append("Transfer-Encoding: chunked\r\n")
        case .none, .untilClose:
            break
        }
        if connectionClose || body == .untilClose { w.append("Connection: close\r\n") }
        if let extra = extraHeaderLines { w.append(extra) }
        w.append("\r\n")
        return w.result
    }

    /// Writes one chunk: hex size line, `payload`, CRLF (RFC 9112 §7.1). An empty payload would
    /// be the last-chunk, so it writes nothing and returns 0.
    public static func writeChunk(_ payload: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        guard !payload.isEmpty else { return 0 }
        var w = HTTPByteWriter(out)
        w.appendHex(payload.count)
        w.append("\r\n")
        w.append(payload)
        w.append("\r\n")
        return w.result
    }

    /// Bytes `writeChunk` needs for a payload of `count` bytes.
    public static func chunkLength(payloadCount count: Int) -> Int {
        count <= 0 ? 0 : HTTPByteWriter.hexDigits(UInt64(count)) + 4 + count
    }

    /// The last-chunk with an empty trailer section: ends a chunked body.
    public static let lastChunk: StaticString = "0\r\n\r\n"
}
