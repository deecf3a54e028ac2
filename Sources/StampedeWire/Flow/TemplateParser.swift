/// Reads a template's text into segments (see `MessageTemplate` for the language).
struct TemplateParser {
    let bytes: [UInt8]
    let encoding: MessageTemplate.Encoding
    var segments: [MessageTemplate.Segment] = []
    /// Column of each segment's start, parallel to `segments`.
    var columns: [Int] = []
    var literal: [UInt8] = []
    var literalStart = 0

    /// Random parts longer than this are surely a typo, and would make frames huge.
    static let maxRandomLength = 4096
    /// `{stamp:N}`: as large as a scenario's `message.size` may be.
    static let maxPaddedStampLength = 16_777_216

    init(bytes: [UInt8], encoding: MessageTemplate.Encoding) {
        self.bytes = bytes
        self.encoding = encoding
    }

    func column(_ i: Int) -> Int { FlowSyntaxError.column(of: i, in: bytes) }

    static func isIdentifierStart(_ c: UInt8) -> Bool {
        (c >= 0x61 && c <= 0x7A) || (c >= 0x41 && c <= 0x5A) || c == 0x5F
    }

    static func isIdentifier(_ c: UInt8) -> Bool { isIdentifierStart(c) || (c >= 0x30 && c <= 0x39) }

    mutating func run() throws(FlowSyntaxError) {
        if encoding == .text { try runText() } else { try runHex() }
        flush(at: bytes.count)
    }

    mutating func runText() throws(FlowSyntaxError) {
        var i = 0
        var escapedOpen = false
        while i < bytes.count {
            let c = bytes[i]
            let next: UInt8? = i + 1 < bytes.count ? bytes[i + 1] : nil
            if c == UInt8(ascii: "{"), next == UInt8(ascii: "{") {
                append(c, at: i)
                escapedOpen = true
                i += 2
            } else if c == UInt8(ascii: "{"), let n = next, Self.isIdentifierStart(n) {
                i = try placeholder(at: i)
            } else if c == UInt8(ascii: "}"), escapedOpen {
                // The partner of a `{{`: `}}` writes one `}`, as `{{` wrote one `{`.
                append(c, at: i)
                escapedOpen = false
                i += next == UInt8(ascii: "}") ? 2 : 1
            } else {
                append(c, at: i)
                i += 1
            }
        }
    }

    mutating func runHex() throws(FlowSyntaxError) {
        var i = 0
        var high: UInt8? = nil
        var highAt = 0
        while i < bytes.count {
            let c = bytes[i]
            if let v = HubJSONScanner.hexValue(c) {
                if let h = high {
                    append(h << 4 | v, at: highAt)
                    high = nil
                } else {
                    high = v
                    highAt = i
                }
                i += 1
                continue
            }
            guard ChatCodec.isJSONSpace(c) || c == UInt8(ascii: "{") else {
                throw .notHex(FlowSyntaxError.character(at: i, in: bytes), column: column(i))
            }
            guard high == nil else { throw .oddHexDigits(column: column(highAt)) }
            if c == UInt8(ascii: "{") {
                guard i + 1 < bytes.count, Self.isIdentifierStart(bytes[i + 1]) else { throw .strayBrace(column: column(i)) }
                i = try placeholder(at: i)
            } else {
                i += 1
            }
        }
        if high != nil { throw .oddHexDigits(column: column(highAt)) }
    }

    mutating func append(_ c: UInt8, at i: Int) {
        if literal.isEmpty { literalStart = i }
        literal.append(c)
    }

    mutating func flush(at i: Int) {
        guard !literal.isEmpty else { return }
        segments.append(.literal(literal))
        columns.append(column(literalStart))
        literal = []
    }

    /// Parses `{name}`, `{name%N}` or `{name:arg}` whose `{` is at `start`; returns the index after `}`.
    mutating func placeholder(at start: Int) throws(FlowSyntaxError) -> Int {
        var i = start + 1
        while i < bytes.count, Self.isIdentifier(bytes[i]) { i += 1 }
        let name = String(decoding: bytes[(start + 1)..<i], as: UTF8.self)
        var separator: UInt8? = nil
        var argument = ""
        if i < bytes.count, bytes[i] == UInt8(ascii: "%") || bytes[i] == UInt8(ascii: ":") {
            separator = bytes[i]
            i += 1
            let argStart = i
            while i < bytes.count, Self.isIdentifier(bytes[i]) { i += 1 }
            argument = String(decoding: bytes[argStart..<i], as: UTF8.self)
        }
        guard i < bytes.count, bytes[i] == UInt8(ascii: "}") else { throw .unterminatedPlaceholder(column: column(start)) }
        let written = String(decoding: bytes[(start + 1)..<i], as: UTF8.self)
        let p = try resolve(name, separator, argument, written: written, column: column(start))
        flush(at: start)
        segments.append(.placeholder(p))
        columns.append(column(start))
        return i + 1
    }

    func resolve(_ name: String, _ separator: UInt8?, _ argument: String, written: String, column: Int) throws(FlowSyntaxError) -> MessageTemplate.Placeholder {
        func unknown(_ hint: String) -> FlowSyntaxError { .unknownPlaceholder(written, column: column, hint: hint) }
        func count(_ max: Int) -> Int? {
            guard !argument.isEmpty, argument.utf8.count <= 9, let n = Int(argument), n >= 1, n <= max else { return nil }
            return n
        }
        let colon = separator == UInt8(ascii: ":"), percent = separator == UInt8(ascii: "%")
        if encoding == .binary {
            switch (name, separator == nil ? "" : argument) {
            case ("stamp", "") where separator == nil: return .stamp
            case ("sequence", "u16") where colon: return .sequenceU16
            case ("sequence", "u32") where colon: return .sequenceU32
            case ("client", "u16") where colon: return .clientU16
            case ("client", "u32") where colon: return .clientU32
            case ("random", _) where colon:
                guard let n = count(Self.maxRandomLength) else { throw unknown("write {random:N} with N from 1 to \(Self.maxRandomLength)") }
                return .randomBytes(n)
            case ("sequence", _), ("client", _):
                throw unknown("binary templates need a width: {\(name):u16} or {\(name):u32}")
            default:
                throw unknown("binary templates take {stamp}, {sequence:u16|u32}, {client:u16|u32} and {random:N}; captures and secrets only go in text templates")
            }
        }
        switch name {
        case "stamp" where colon:
            guard let n = count(Self.maxPaddedStampLength) else { throw unknown("write {stamp:N} with N from 1 to \(Self.maxPaddedStampLength): the stamp padded to N bytes") }
            return .paddedStamp(n)
        case "user_uuid":
            guard separator == nil else { throw unknown("{user_uuid} takes no argument") }
            return .userUUID
        case "stamp", "user", "uuid", "sequence":
            guard separator == nil else {
                throw unknown(name == "sequence" ? "fixed-width {sequence:u16|u32} is for binary templates" : "{\(name)} takes no argument")
            }
            return name == "stamp" ? .stamp : name == "user" ? .user : name == "uuid" ? .uuid : .sequence
        case "client":
            if separator == nil { return .client }
            guard percent, let n = count(1_000_000_000) else {
                throw unknown(colon ? "fixed-width {client:u16|u32} is for binary templates" : "write {client%N} with N from 1")
            }
            return .clientModulo(n)
        case "random_hex":
            guard colon, let n = count(Self.maxRandomLength) else { throw unknown("write {random_hex:N} with N from 1 to \(Self.maxRandomLength)") }
            return .randomHex(n)
        case "random":
            throw unknown("text templates use {random_hex:N}")
        default:
            guard separator == nil else { throw unknown("only {client%N}, {random_hex:N} and binary widths take an argument") }
            return .named(name)
        }
    }
}
