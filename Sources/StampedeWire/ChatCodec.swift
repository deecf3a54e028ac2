/// The stamp's text form (`s…:q…:t…:a…:`, hex fields), which every workload writes into its
/// messages (a flow's `{stamp}` puts a marker before it: `FlowStamp`), and the chat server's
/// parser (`ChatServerParser`). The chat client itself is a declared flow
/// (`WebSocketFlowSpec.chat`). Writing and reading touch only the caller's buffers.
public enum ChatCodec {

    /// Length of the stamp text before padding (hex fields, so at most 56 bytes).
    @inlinable
    public static func stampLength(_ s: MessageStamp) -> Int {
        4 + 4 + hexDigits(UInt64(s.sender)) + hexDigits(UInt64(s.sequence)) + hexDigits(s.intendedNs) + hexDigits(s.actualNs)
    }

    @usableFromInline @inline(__always)
    static func writeField(_ out: UnsafeMutableRawPointer, _ at: Int, _ tag: UInt8, _ value: UInt64) -> Int {
        out.storeBytes(of: tag, toByteOffset: at, as: UInt8.self)
        var p = at + 1
        let digits = hexDigits(value)
        var v = value
        var i = digits - 1
        while i >= 0 {
            let nibble = UInt8(v & 0xF)
            out.storeBytes(of: nibble < 10 ? 48 + nibble : 87 + nibble, toByteOffset: p + i, as: UInt8.self)
            v >>= 4
            i -= 1
        }
        p += digits
        out.storeBytes(of: UInt8(ascii: ":"), toByteOffset: p, as: UInt8.self)
        return p + 1
    }

    @usableFromInline
    static func hexDigits(_ v: UInt64) -> Int { v == 0 ? 1 : (64 - v.leadingZeroBitCount + 3) / 4 }

    /// Writes the stamp text `s…:q…:t…:a…:` (hex fields) at `out`; returns its length
    /// (`stampLength(stamp)`, at most 56 bytes).
    @inlinable
    public static func writeStamp(_ stamp: MessageStamp, into out: UnsafeMutableRawPointer) -> Int {
        var p = writeField(out, 0, UInt8(ascii: "s"), UInt64(stamp.sender))
        p = writeField(out, p, UInt8(ascii: "q"), UInt64(stamp.sequence))
        p = writeField(out, p, UInt8(ascii: "t"), stamp.intendedNs)
        return writeField(out, p, UInt8(ascii: "a"), stamp.actualNs)
    }

    /// Reads a stamp written by `writeStamp` at the start of `bytes` (padding after it is ignored).
    public static func parseStamp(_ bytes: UnsafeRawBufferPointer) -> MessageStamp? {
        var i = 0
        guard let s = readField(bytes, &i, UInt8(ascii: "s")), s <= UInt64(UInt32.max),
              let q = readField(bytes, &i, UInt8(ascii: "q")), q <= UInt64(UInt32.max),
              let t = readField(bytes, &i, UInt8(ascii: "t")),
              let a = readField(bytes, &i, UInt8(ascii: "a")) else { return nil }
        return MessageStamp(sender: UInt32(s), sequence: UInt32(q), intendedNs: t, actualNs: a)
    }

    static func readField(_ b: UnsafeRawBufferPointer, _ i: inout Int, _ tag: UInt8) -> UInt64? {
        guard i < b.count, b[i] == tag else { return nil }
        i += 1
        var v: UInt64 = 0
        var digits = 0
        while i < b.count {
            let c = b[i]
            let d: UInt8
            switch c {
            case 48...57: d = c - 48
            case 97...102: d = c - 87
            case UInt8(ascii: ":"):
                i += 1
                return digits > 0 ? v : nil
            default: return nil
            }
            digits += 1
            if digits > 16 { return nil }
            v = v << 4 | UInt64(d)
            i += 1
        }
        return nil
    }

    @inline(__always) static func isJSONSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }

}

/// The three fields the chat server needs from a client message, as ranges of their raw
/// (still escaped) string contents, so the broadcast can copy them verbatim.
public struct ChatClientFields: Sendable, Equatable {
    public var message: Range<Int>
    public var user: Range<Int>
    public var userID: Range<Int>
}

/// A strict, allocation-free JSON scanner for one object: validates the whole text and picks
/// out the string fields the chat server relays. Anything else in the object is allowed.
public enum ChatServerParser {
    public static func parse(_ b: UnsafeRawBufferPointer) -> ChatClientFields? {
        var s = Scanner(bytes: b)
        s.skipSpace()
        guard s.peek() == UInt8(ascii: "{") else { return nil }
        s.i += 1
        var message: Range<Int>? = nil, user: Range<Int>? = nil, userID: Range<Int>? = nil
        s.skipSpace()
        if s.peek() == UInt8(ascii: "}") { return nil }
        while true {
            s.skipSpace()
            guard let key = s.string() else { return nil }
            s.skipSpace()
            guard s.peek() == UInt8(ascii: ":") else { return nil }
            s.i += 1
            s.skipSpace()
            if s.peek() == UInt8(ascii: "\"") {
                guard let v = s.string() else { return nil }
                if s.equals(key, "message") { message = v } else if s.equals(key, "user") { user = v } else if s.equals(key, "userID") { userID = v }
            } else {
                guard s.value(depth: 0) else { return nil }
            }
            s.skipSpace()
            guard let c = s.peek() else { return nil }
            s.i += 1
            if c == UInt8(ascii: "}") { break }
            guard c == UInt8(ascii: ",") else { return nil }
        }
        s.skipSpace()
        guard s.i == b.count, let m = message, let u = user, let id = userID else { return nil }
        return ChatClientFields(message: m, user: u, userID: id)
    }

    struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var i = 0
        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        func peek() -> UInt8? { i < bytes.count ? bytes[i] : nil }
        mutating func skipSpace() { while i < bytes.count, ChatCodec.isJSONSpace(bytes[i]) { i += 1 } }

        func equals(_ r: Range<Int>, _ s: StaticString) -> Bool {
            guard r.count == s.utf8CodeUnitCount else { return false }
            let p = s.utf8Start
            for k in 0..<r.count where bytes[r.lowerBound + k] != p[k] { return false }
            return true
        }

        /// A JSON string at `i`; returns the range of its contents (between the quotes).
        mutating func string() -> Range<Int>? {
            guard peek() == UInt8(ascii: "\"") else { return nil }
            i += 1
            let start = i
            while i < bytes.count {
                let c = bytes[i]
                if c == UInt8(ascii: "\"") { i += 1; return start..<(i - 1) }
                if c < 0x20 { return nil }
                if c == UInt8(ascii: "\\") {
                    i += 1
                    guard let e = peek() else { return nil }
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                         UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        i += 1
                    case UInt8(ascii: "u"):
                        guard i + 4 < bytes.count else { return nil }
                        for k in 1...4 where !isHex(bytes[i + k]) { return nil }
                        i += 5
                    default: return nil
                    }
                    continue
                }
                i += 1
            }
            return nil
        }

        func isHex(_ c: UInt8) -> Bool { (48...57).contains(c) || (65...70).contains(c) || (97...102).contains(c) }

        /// Any JSON value (bounded nesting so hostile input cannot exhaust the stack).
        mutating func value(depth: Int) -> Bool {
            guard depth < 32, let c = peek() else { return false }
            switch c {
            case UInt8(ascii: "\""): return string() != nil
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let close = c == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                i += 1
                skipSpace()
                if peek() == close { i += 1; return true }
                while true {
                    skipSpace()
                    if c == UInt8(ascii: "{") {
                        guard string() != nil else { return false }
                        skipSpace()
                        guard peek() == UInt8(ascii: ":") else { return false }
                        i += 1
                        skipSpace()
                    }
                    guard value(depth: depth + 1) else { return false }
                    skipSpace()
                    guard let n = peek() else { return false }
                    i += 1
                    if n == close { return true }
                    if n != UInt8(ascii: ",") { return false }
                }
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default: return number()
            }
        }

        mutating func literal(_ s: StaticString) -> Bool {
            let n = s.utf8CodeUnitCount
            guard i + n <= bytes.count, equals(i..<(i + n), s) else { return false }
            i += n
            return true
        }

        mutating func number() -> Bool {
            let start = i
            if peek() == UInt8(ascii: "-") { i += 1 }
            var digits = 0
            while let c = peek(), (48...57).contains(c) { i += 1; digits += 1 }
            guard digits > 0 else { return false }
            if peek() == UInt8(ascii: ".") {
                i += 1
                var f = 0
                while let c = peek(), (48...57).contains(c) { i += 1; f += 1 }
                guard f > 0 else { return false }
            }
            if let e = peek(), e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
                i += 1
                if let sgn = peek(), sgn == UInt8(ascii: "+") || sgn == UInt8(ascii: "-") { i += 1 }
                var x = 0
                while let c = peek(), (48...57).contains(c) { i += 1; x += 1 }
                guard x > 0 else { return false }
            }
            return i > start
        }
    }
}
