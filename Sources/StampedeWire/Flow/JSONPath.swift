/// A small JSONPath: object keys and array indices from the root (`$`, `$.a.b`, `$[3]`,
/// `$['a b']`, `$[4].body.stamp`). Evaluated by scanning the frame's bytes: values before the
/// one wanted are skipped (strictly, by `HubJSONScanner`), nothing is decoded or copied, and the
/// scan stops as soon as the value is found, so a path near the front of a large frame is cheap.
public struct JSONPath: Sendable, Equatable {
    public enum Step: Sendable, Equatable {
        /// An object member, by its decoded (unescaped) UTF-8 name.
        case key([UInt8])
        case index(Int)
    }

    public let steps: [Step]
    /// The path as written, for messages.
    public let text: String

    /// Parses `$` followed by `.key`, `[N]` or `['key']` / `["key"]` steps (inside quotes, `\`
    /// escapes the next character). A dotted key ends at the next `.` or `[`.
    public init(parsing text: String) throws(FlowSyntaxError) {
        let b = Array(text.utf8)
        func column(_ i: Int) -> Int { FlowSyntaxError.column(of: i, in: b) }
        guard b.first == UInt8(ascii: "$") else { throw .pathMustStartWithDollar(column: 1) }
        var steps: [Step] = []
        var i = 1
        while i < b.count {
            switch b[i] {
            case UInt8(ascii: "."):
                let start = i + 1
                var j = start
                while j < b.count, b[j] != UInt8(ascii: "."), b[j] != UInt8(ascii: "[") {
                    if Self.needsBrackets(b[j]) { throw .pathUnexpected(FlowSyntaxError.character(at: j, in: b), column: column(j)) }
                    j += 1
                }
                guard j > start else { throw .pathEmptyKey(column: column(i)) }
                steps.append(.key(Array(b[start..<j])))
                i = j
            case UInt8(ascii: "["):
                let open = i
                i += 1
                guard i < b.count else { throw .pathBadBracket(column: column(open)) }
                if b[i] == UInt8(ascii: "'") || b[i] == UInt8(ascii: "\"") {
                    let quote = b[i]
                    i += 1
                    var key: [UInt8] = []
                    while i < b.count, b[i] != quote {
                        if b[i] == UInt8(ascii: "\\") { i += 1 }
                        guard i < b.count else { break }
                        key.append(b[i])
                        i += 1
                    }
                    // Past the closing quote, then `]`.
                    guard i + 1 < b.count, b[i] == quote, b[i + 1] == UInt8(ascii: "]") else { throw .pathBadBracket(column: column(open)) }
                    steps.append(.key(key))
                    i += 2
                } else {
                    var n = 0, digits = 0
                    while i < b.count, b[i] >= 0x30, b[i] <= 0x39, digits < 10 {
                        n = n * 10 + Int(b[i] - 0x30)
                        digits += 1
                        i += 1
                    }
                    guard digits > 0, digits < 10, i < b.count, b[i] == UInt8(ascii: "]") else { throw .pathBadBracket(column: column(open)) }
                    steps.append(.index(n))
                    i += 1
                }
            default:
                throw .pathUnexpected(FlowSyntaxError.character(at: i, in: b), column: column(i))
            }
        }
        self.steps = steps
        self.text = text
    }

    /// Characters that end or confuse a dotted key; such keys are written `['…']`.
    static func needsBrackets(_ c: UInt8) -> Bool {
        c == UInt8(ascii: "]") || c == UInt8(ascii: "'") || c == UInt8(ascii: "\"") || ChatCodec.isJSONSpace(c)
    }

    /// The value's range in `json`: a string's contents without its quotes (escapes as written),
    /// a number / true / false / null as written, an object or array as its whole text.
    /// nil when absent, or when the bytes are not well-formed enough to find it. The first
    /// member wins when a key repeats. Bytes after the value are not looked at.
    public func value(in json: UnsafeRawBufferPointer) -> Range<Int>? {
        let end = json.count
        var p = 0
        HubJSONScanner.skipWhitespace(json, &p, end)
        for (depth, step) in steps.enumerated() {
            guard p < end else { return nil }
            switch step {
            case .key(let key):
                guard json[p] == 0x7B, let v = key.withUnsafeBytes({ Self.member($0, of: json, at: p, depth: depth) }) else { return nil }
                p = v
            case .index(let n):
                guard json[p] == 0x5B, let v = Self.element(n, of: json, at: p, depth: depth) else { return nil }
                p = v
            }
        }
        var q = p
        guard let kind = HubJSONScanner.scanValue(json, &q, end, depth: steps.count) else { return nil }
        return kind == .string ? (p + 1)..<(q - 1) : p..<q
    }

    /// Start of the value of member `key` of the object whose `{` is at `start`.
    static func member(_ key: UnsafeRawBufferPointer, of b: UnsafeRawBufferPointer, at start: Int, depth: Int) -> Int? {
        let end = b.count
        var i = start + 1
        HubJSONScanner.skipWhitespace(b, &i, end)
        while i < end, b[i] == 0x22 {
            let nameStart = i + 1
            var escaped = false
            guard HubJSONScanner.scanString(b, &i, end, hasEscape: &escaped) else { return nil }
            let nameRange = nameStart..<(i - 1)
            HubJSONScanner.skipWhitespace(b, &i, end)
            guard i < end, b[i] == 0x3A else { return nil }
            i += 1
            HubJSONScanner.skipWhitespace(b, &i, end)
            if HubJSONScanner.contentsEqual(b, nameRange, hasEscape: escaped, key) { return i }
            guard HubJSONScanner.scanValue(b, &i, end, depth: depth + 1) != nil else { return nil }
            HubJSONScanner.skipWhitespace(b, &i, end)
            guard i < end, b[i] == 0x2C else { return nil }  // `}` (absent) or malformed
            i += 1
            HubJSONScanner.skipWhitespace(b, &i, end)
        }
        return nil
    }

    /// Start of element `n` of the array whose `[` is at `start`.
    static func element(_ n: Int, of b: UnsafeRawBufferPointer, at start: Int, depth: Int) -> Int? {
        let end = b.count
        var i = start + 1
        HubJSONScanner.skipWhitespace(b, &i, end)
        guard i < end, b[i] != 0x5D else { return nil }
        var k = 0
        while true {
            if k == n { return i }
            guard HubJSONScanner.scanValue(b, &i, end, depth: depth + 1) != nil else { return nil }
            HubJSONScanner.skipWhitespace(b, &i, end)
            guard i < end, b[i] == 0x2C else { return nil }
            i += 1
            HubJSONScanner.skipWhitespace(b, &i, end)
            k += 1
        }
    }
}
