/// Kinds of JSON values, as the scanner reports them.
enum HubJSONKind: UInt8 {
    case object, array, string, number, trueValue, falseValue, null
}

/// A strict RFC 8259 scanner over raw bytes: it validates and skips values without building
/// anything. Nesting is tracked in a 64-bit mask instead of recursion or a heap stack, which is
/// also where the depth limit of 64 comes from (System.Text.Json's default MaxDepth is 64 too).
/// Every index is checked against `end`, so hostile input can only make it return nil.
enum HubJSONScanner {
    static let maxDepth = 64

    @inline(__always)
    static func skipWhitespace(_ b: UnsafeRawBufferPointer, _ i: inout Int, _ end: Int) {
        while i < end {
            let c = b[i]
            guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
            i += 1
        }
    }

    /// Scans a string starting at its opening quote; on success `i` is just past the closing
    /// quote. Rejects raw control characters, bad escapes and invalid UTF-8 (overlongs,
    /// surrogates, code points above U+10FFFF). `hasEscape` tells whether contents are raw text.
    static func scanString(_ b: UnsafeRawBufferPointer, _ i: inout Int, _ end: Int, hasEscape: inout Bool) -> Bool {
        guard i < end, b[i] == 0x22 else { return false }
        var p = i + 1
        while p < end {
            let c = b[p]
            if c == 0x22 { i = p + 1; return true }
            if c == 0x5C {
                hasEscape = true
                guard p + 1 < end else { return false }
                switch b[p + 1] {
                case 0x22, 0x5C, 0x2F, 0x62, 0x66, 0x6E, 0x72, 0x74: p += 2
                case 0x75:
                    guard p + 5 < end else { return false }
                    for k in 2...5 where hexValue(b[p + k]) == nil { return false }
                    p += 6
                default: return false
                }
                continue
            }
            if c < 0x20 { return false }
            if c < 0x80 { p += 1; continue }
            guard let n = utf8SequenceLength(b, p, end) else { return false }
            p += n
        }
        return false
    }

    /// Length of the valid UTF-8 sequence starting with a non-ASCII byte at `p` (Unicode Table 3-7).
    @inline(__always)
    static func utf8SequenceLength(_ b: UnsafeRawBufferPointer, _ p: Int, _ end: Int) -> Int? {
        let c = b[p]
        @inline(__always) func cont(_ k: Int, _ lo: UInt8 = 0x80, _ hi: UInt8 = 0xBF) -> Bool {
            p + k < end && b[p + k] >= lo && b[p + k] <= hi
        }
        switch c {
        case 0xC2...0xDF: return cont(1) ? 2 : nil
        case 0xE0: return cont(1, 0xA0) && cont(2) ? 3 : nil
        case 0xE1...0xEC, 0xEE, 0xEF: return cont(1) && cont(2) ? 3 : nil
        case 0xED: return cont(1, 0x80, 0x9F) && cont(2) ? 3 : nil
        case 0xF0: return cont(1, 0x90) && cont(2) && cont(3) ? 4 : nil
        case 0xF1...0xF3: return cont(1) && cont(2) && cont(3) ? 4 : nil
        case 0xF4: return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : nil
        default: return nil
        }
    }

    @inline(__always)
    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }

    @inline(__always)
    static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`; the caller checks what follows.
    static func scanNumber(_ b: UnsafeRawBufferPointer, _ i: inout Int, _ end: Int) -> Bool {
        var p = i
        if p < end && b[p] == 0x2D { p += 1 }
        guard p < end else { return false }
        if b[p] == 0x30 {
            p += 1
        } else if b[p] >= 0x31 && b[p] <= 0x39 {
            while p < end && isDigit(b[p]) { p += 1 }
        } else {
            return false
        }
        if p < end && b[p] == 0x2E {
            p += 1
            guard p < end && isDigit(b[p]) else { return false }
            while p < end && isDigit(b[p]) { p += 1 }
        }
        if p < end && (b[p] == 0x65 || b[p] == 0x45) {
            p += 1
            if p < end && (b[p] == 0x2B || b[p] == 0x2D) { p += 1 }
            guard p < end && isDigit(b[p]) else { return false }
            while p < end && isDigit(b[p]) { p += 1 }
        }
        i = p
        return true
    }

    static func scanLiteral(_ b: UnsafeRawBufferPointer, _ i: inout Int, _ end: Int, _ word: StaticString) -> Bool {
        let n = word.utf8CodeUnitCount
        guard n <= end - i else { return false }
        let w = word.utf8Start
        for k in 0..<n where b[i + k] != w[k] { return false }
        i += n
        return true
    }

    /// Validates one complete value starting at `i` (no leading whitespace) and moves `i` past
    /// it. `depth` is the nesting already around the value: its own containers may use the rest
    /// of the 64 levels. Returns the kind of the value, or nil if it is not valid JSON.
    /// Scans one JSON object that fills `b[i..<end]` (surrounding whitespace allowed), calling
    /// `member(key, keyHasEscapes, value, kind)` for each member in order. Returns false when the
    /// text is not exactly one valid object, or when `member` returns false. The handshake
    /// response and every hub message are such an object.
    static func scanObject(_ b: UnsafeRawBufferPointer, from start: Int, to end: Int,
                           member: (Range<Int>, Bool, Range<Int>, HubJSONKind) -> Bool) -> Bool {
        var i = start
        skipWhitespace(b, &i, end)
        guard i < end, b[i] == 0x7B else { return false }
        i += 1
        skipWhitespace(b, &i, end)
        guard i < end else { return false }
        if b[i] == 0x7D {
            i += 1
        } else {
            while true {
                let keyStart = i + 1
                var escaped = false
                guard scanString(b, &i, end, hasEscape: &escaped) else { return false }
                let key = keyStart..<(i - 1)
                skipWhitespace(b, &i, end)
                guard i < end, b[i] == 0x3A else { return false }
                i += 1
                skipWhitespace(b, &i, end)
                let valueStart = i
                guard let kind = scanValue(b, &i, end, depth: 1), member(key, escaped, valueStart..<i, kind) else { return false }
                skipWhitespace(b, &i, end)
                guard i < end else { return false }
                if b[i] == 0x2C {
                    i += 1
                    skipWhitespace(b, &i, end)
                    continue
                }
                guard b[i] == 0x7D else { return false }
                i += 1
                break
            }
        }
        skipWhitespace(b, &i, end)
        return i == end
    }

    static func scanValue(_ b: UnsafeRawBufferPointer, _ i: inout Int, _ end: Int, depth outer: Int) -> HubJSONKind? {
        var p = i
        var depth = 0
        var isArray: UInt64 = 0  // bit d set: level d+1 is an array, clear: an object
        let limit = maxDepth - outer
        var kind: HubJSONKind? = nil

        valueLoop: while true {
            // A value is expected at p.
            guard p < end else { return nil }
            let c = b[p]
            switch c {
            case 0x7B, 0x5B:  // { [
                if kind == nil { kind = c == 0x7B ? .object : .array }
                guard depth < limit else { return nil }
                if c == 0x5B { isArray |= 1 << UInt64(depth) } else { isArray &= ~(1 << UInt64(depth)) }
                depth += 1
                p += 1
                skipWhitespace(b, &p, end)
                guard p < end else { return nil }
                if b[p] == (c == 0x7B ? 0x7D : 0x5D) {
                    p += 1  // an empty container is a complete value
                    depth -= 1
                } else if c == 0x7B {
                    guard scanMemberName(b, &p, end) else { return nil }
                    continue valueLoop
                } else {
                    continue valueLoop
                }
            case 0x22:
                var escaped = false
                guard scanString(b, &p, end, hasEscape: &escaped) else { return nil }
                if kind == nil { kind = .string }
            case 0x74:
                guard scanLiteral(b, &p, end, "true") else { return nil }
                if kind == nil { kind = .trueValue }
            case 0x66:
                guard scanLiteral(b, &p, end, "false") else { return nil }
                if kind == nil { kind = .falseValue }
            case 0x6E:
                guard scanLiteral(b, &p, end, "null") else { return nil }
                if kind == nil { kind = .null }
            case 0x2D, 0x30...0x39:
                guard scanNumber(b, &p, end) else { return nil }
                if kind == nil { kind = .number }
            default:
                return nil
            }
            // A value ended at p: close containers until one continues with a comma.
            while depth > 0 {
                skipWhitespace(b, &p, end)
                guard p < end else { return nil }
                let inArray = isArray & (1 << UInt64(depth - 1)) != 0
                let c2 = b[p]
                if c2 == 0x2C {
                    p += 1
                    skipWhitespace(b, &p, end)
                    if !inArray { guard scanMemberName(b, &p, end) else { return nil } }
                    continue valueLoop
                }
                guard c2 == (inArray ? 0x5D : 0x7D) else { return nil }
                p += 1
                depth -= 1
            }
            i = p
            return kind
        }
    }

    /// `"name" ws : ws` of an object member, leaving `p` at the value.
    static func scanMemberName(_ b: UnsafeRawBufferPointer, _ p: inout Int, _ end: Int) -> Bool {
        var escaped = false
        guard scanString(b, &p, end, hasEscape: &escaped) else { return false }
        skipWhitespace(b, &p, end)
        guard p < end, b[p] == 0x3A else { return false }
        p += 1
        skipWhitespace(b, &p, end)
        return true
    }

    /// Whether the JSON string contents `b[range]` (escapes raw) equal the ASCII `name`.
    /// Escaped names (`"typ\u0065"`) are compared by their decoded text, as System.Text.Json does.
    static func contentsEqual(_ b: UnsafeRawBufferPointer, _ range: Range<Int>, hasEscape: Bool, _ name: StaticString) -> Bool {
        contentsEqual(b, range, hasEscape: hasEscape, UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
    }

    /// Whether the JSON string contents `b[range]` (escapes raw) decode to the UTF-8 bytes `name`.
    /// Escapes are decoded as they are met (`\uXXXX` to UTF-8, surrogate pairs joined), so
    /// nothing is copied; a lone surrogate equals nothing.
    static func contentsEqual(_ b: UnsafeRawBufferPointer, _ range: Range<Int>, hasEscape: Bool, _ name: UnsafeRawBufferPointer) -> Bool {
        let n = name.count
        if !hasEscape {
            guard range.count == n else { return false }
            for k in 0..<n where b[range.lowerBound + k] != name[k] { return false }
            return true
        }
        var p = range.lowerBound
        var k = 0
        while p < range.upperBound {
            guard b[p] == 0x5C, p + 1 < range.upperBound else {
                guard k < n, name[k] == b[p] else { return false }
                k += 1
                p += 1
                continue
            }
            let scalar: UInt32
            switch b[p + 1] {
            case 0x75:
                guard p + 5 < range.upperBound, let v = hex4(b, p + 2) else { return false }
                p += 6
                if v >= 0xD800 && v < 0xDC00 {
                    guard p + 5 < range.upperBound, b[p] == 0x5C, b[p + 1] == 0x75, let low = hex4(b, p + 2),
                          low >= 0xDC00, low < 0xE000 else { return false }
                    p += 6
                    scalar = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                } else {
                    guard v < 0xDC00 || v >= 0xE000 else { return false }
                    scalar = v
                }
            case 0x62: scalar = 0x08; p += 2
            case 0x66: scalar = 0x0C; p += 2
            case 0x6E: scalar = 0x0A; p += 2
            case 0x72: scalar = 0x0D; p += 2
            case 0x74: scalar = 0x09; p += 2
            default: scalar = UInt32(b[p + 1]); p += 2
            }
            guard matchUTF8(scalar, name, &k) else { return false }
        }
        return k == n
    }

    /// Whether `name[k...]` starts with the UTF-8 encoding of `scalar`; moves `k` past it.
    @inline(__always)
    static func matchUTF8(_ scalar: UInt32, _ name: UnsafeRawBufferPointer, _ k: inout Int) -> Bool {
        let len = scalar < 0x80 ? 1 : scalar < 0x800 ? 2 : scalar < 0x10000 ? 3 : 4
        guard len <= name.count - k else { return false }
        let lead: UInt32 = len == 1 ? 0 : len == 2 ? 0xC0 : len == 3 ? 0xE0 : 0xF0
        for j in 0..<len {
            let shift = UInt32(6 * (len - 1 - j))
            let unit = j == 0 ? lead | scalar >> shift : 0x80 | (scalar >> shift & 0x3F)
            guard name[k + j] == UInt8(truncatingIfNeeded: unit) else { return false }
        }
        k += len
        return true
    }

    static func hex4(_ b: UnsafeRawBufferPointer, _ p: Int) -> UInt32? {
        guard p + 3 < b.count else { return nil }
        var v: UInt32 = 0
        for k in 0..<4 {
            guard let h = hexValue(b[p + k]) else { return nil }
            v = v << 4 | UInt32(h)
        }
        return v
    }

    /// An integer number token (no fraction or exponent) that fits Int64.
    static func integer(_ b: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int64? {
        var p = range.lowerBound
        let end = range.upperBound
        guard p < end else { return nil }
        let negative = b[p] == 0x2D
        if negative { p += 1 }
        guard p < end, end - p <= 19 else { return nil }
        var magnitude: UInt64 = 0
        while p < end {
            guard isDigit(b[p]) else { return nil }
            magnitude = magnitude * 10 + UInt64(b[p] - 0x30)  // ≤ 19 digits: no overflow
            p += 1
        }
        if negative { return magnitude <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- magnitude) : nil }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    /// A non-negative integer number token that fits UInt64.
    static func unsignedInteger(_ b: UnsafeRawBufferPointer, _ range: Range<Int>) -> UInt64? {
        guard !range.isEmpty, range.upperBound <= b.count, range.count <= 20 else { return nil }
        var v: UInt64 = 0
        for p in range {
            guard isDigit(b[p]) else { return nil }
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(UInt64(b[p] - 0x30))
            if o1 || o2 { return nil }
            v = s
        }
        return v
    }
}
