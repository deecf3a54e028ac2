/// What is wrong with a path or a template of a declared flow, and where: `column` is 1-based,
/// counted in characters of the text that was parsed (the YAML value, not the file line), so
/// the scenario loader can report `file:line: websocket.send[0].text: …`.
public enum FlowSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A path is empty or does not start with `$`.
    case pathMustStartWithDollar(column: Int)
    /// After `$` or a step, something other than `.key`, `[N]` or `['key']`.
    case pathUnexpected(Character, column: Int)
    /// `.` at the end of a path or followed by nothing usable as a key.
    case pathEmptyKey(column: Int)
    /// `[` not closed, a quote not closed, or an index that is not a non-negative integer.
    case pathBadBracket(column: Int)
    /// `{name` without its closing `}`.
    case unterminatedPlaceholder(column: Int)
    /// A placeholder the encoding does not know (`{sequence:u8}`, `{client%x}`, a capture in binary).
    case unknownPlaceholder(String, column: Int, hint: String)
    /// A capture or secret name the scenario does not declare (reported by `bindNames`).
    case undeclaredName(String, column: Int)
    /// A character in a binary (hex) template that is neither a hex digit, whitespace nor a placeholder.
    case notHex(Character, column: Int)
    /// A byte whose two hex digits are split by whitespace or a placeholder, or a lone last digit.
    case oddHexDigits(column: Int)
    /// A lone `}` is literal, but a `{` that opens nothing (in a hex template) is not.
    case strayBrace(column: Int)

    /// 1-based column of the problem.
    public var column: Int {
        switch self {
        case .pathMustStartWithDollar(let c), .pathUnexpected(_, let c), .pathEmptyKey(let c), .pathBadBracket(let c),
             .unterminatedPlaceholder(let c), .unknownPlaceholder(_, let c, _), .undeclaredName(_, let c),
             .notHex(_, let c), .oddHexDigits(let c), .strayBrace(let c):
            return c
        }
    }

    public var description: String {
        switch self {
        case .pathMustStartWithDollar(let c):
            return "column \(c): a path starts with $ (for example $.type or $[0].id)"
        case .pathUnexpected(let ch, let c):
            return "column \(c): unexpected '\(ch)' in path; steps are .key, [N] or ['key']"
        case .pathEmptyKey(let c):
            return "column \(c): empty key after '.'; write ['…'] for keys with dots, brackets or spaces"
        case .pathBadBracket(let c):
            return "column \(c): bad [...] step; write [N] for an array index or ['key'] for a key"
        case .unterminatedPlaceholder(let c):
            return "column \(c): placeholder not closed with '}'; write {{ for a literal {"
        case .unknownPlaceholder(let name, let c, let hint):
            return "column \(c): unknown placeholder {\(name)}" + (hint.isEmpty ? "" : "; \(hint)")
        case .undeclaredName(let name, let c):
            return "column \(c): {\(name)} is not a capture or secret declared before this template; write {{ for a literal {"
        case .notHex(let ch, let c):
            return "column \(c): '\(ch)' is not a hex digit; binary templates are hex bytes, whitespace and {placeholders}"
        case .oddHexDigits(let c):
            return "column \(c): a byte needs two hex digits together (\"0c\", not \"c\" or \"0 c\")"
        case .strayBrace(let c):
            return "column \(c): '{' does not open a placeholder"
        }
    }

    /// Column (1-based, in characters) of byte `offset` of UTF-8 `text`.
    static func column(of offset: Int, in text: [UInt8]) -> Int {
        var c = 1
        // Continuation bytes (10xxxxxx) belong to the character before them.
        for i in 0..<min(offset, text.count) where text[i] & 0xC0 != 0x80 { c += 1 }
        return c
    }

    /// The character starting at byte `offset` of `text`, for messages.
    static func character(at offset: Int, in text: [UInt8]) -> Character {
        guard offset < text.count else { return " " }
        var end = offset + 1
        while end < text.count, text[end] & 0xC0 == 0x80 { end += 1 }
        return String(decoding: text[offset..<end], as: UTF8.self).first ?? " "
    }
}
