/// The SignalR JSON hub protocol (HubProtocol.md "JSON Encoding"): each message is one JSON
/// object followed by the record separator 0x1E, several per transport message.
///
/// Decoding validates the whole record as strict RFC 8259 JSON, ignores unknown properties
/// and reports ranges into the input; writing fills a caller's buffer. No step allocates.
public enum JSONHubProtocol: HubProtocolCodec {
    /// Ends every JSON hub message and handshake message. Valid JSON never contains it raw
    /// (control characters must be escaped in strings), so splitting on it is safe.
    public static let recordSeparator: UInt8 = 0x1E

    public static var protocolName: StaticString { "json" }

    // MARK: Framing

    /// Length of the first complete record in `buffer`, separator included, or nil while the
    /// separator has not arrived (keep buffering, docs/protocols.md §7).
    public static func recordLength(_ buffer: UnsafeRawBufferPointer) -> Int? {
        guard let base = buffer.baseAddress else { return nil }
        let n = buffer.count
        var i = 0
        // Eight bytes at a time: a word has a 0x1E byte iff (w ^ 0x1E…) has a zero byte.
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let pattern: UInt64 = 0x1E1E_1E1E_1E1E_1E1E
        while n - i >= 8 {
            let w = base.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ pattern
            if (w &- ones) & ~w & highs != 0 { break }
            i += 8
        }
        while i < n {
            if buffer[i] == recordSeparator { return i + 1 }
            i += 1
        }
        return nil
    }

    /// Frames and decodes the first record of `buffer`. Ranges index `buffer`.
    /// `maxMessageLength` caps a record (separator excluded), so a peer that never sends 0x1E
    /// cannot make the caller buffer forever.
    public static func parse(_ buffer: UnsafeRawBufferPointer, maxMessageLength: Int = .max) -> HubParseResult {
        guard let n = recordLength(buffer) else {
            return buffer.count > maxMessageLength ? .failure(.messageTooLarge) : .needMore
        }
        if n - 1 > maxMessageLength { return .failure(.messageTooLarge) }
        switch decode(UnsafeRawBufferPointer(rebasing: buffer[0..<n])) {
        case .success(let m): return .message(m, consumed: n)
        case .failure(let e): return .failure(e)
        }
    }

    // MARK: Decoding

    /// Decodes one record: the JSON text, optionally followed by its 0x1E (as `recordLength`
    /// delimits it). Ranges index `record`.
    ///
    /// Protocol errors (docs/protocols.md §7): invalid JSON; a non-object; missing or non-integer
    /// `type`; Invocation/StreamInvocation without a non-empty string `target` or an array
    /// `arguments`; StreamItem without `item`; Completion with both `result` and `error`;
    /// StreamItem/Completion/StreamInvocation/CancelInvocation without a non-empty
    /// `invocationId`; Ack/Sequence without an integer `sequenceId`; ill-typed known fields.
    /// A `null` invocationId, error or headers counts as absent, as in the .NET server.
    public static func decode(_ record: UnsafeRawBufferPointer) -> Result<HubMessage, HubProtocolError> {
        do {
            return .success(try decodeRecord(record))
        } catch {
            return .failure(error)
        }
    }

    static func decodeRecord(_ b: UnsafeRawBufferPointer) throws(HubProtocolError) -> HubMessage {
        var end = b.count
        if end > 0 && b[end - 1] == recordSeparator { end -= 1 }
        var i = 0
        HubJSONScanner.skipWhitespace(b, &i, end)
        guard i < end else { throw .invalidJSON }
        guard b[i] == 0x7B else {
            guard HubJSONScanner.scanValue(b, &i, end, depth: 0) != nil else { throw .invalidJSON }
            HubJSONScanner.skipWhitespace(b, &i, end)
            throw i == end ? .notAnObject : .invalidJSON
        }
        var fields = Fields()
        let valid = HubJSONScanner.scanObject(b, from: 0, to: end) { key, escaped, value, kind in
            fields.assign(b, key: key, escaped: escaped, Field(range: value, kind: kind))
            return true
        }
        guard valid else { throw .invalidJSON }
        return try fields.message(b)
    }

    struct Field {
        var range: Range<Int>
        var kind: HubJSONKind
        /// String contents without the quotes.
        var contents: Range<Int> { (range.lowerBound + 1)..<(range.upperBound - 1) }
    }

    /// The known properties of the envelope; a repeated property keeps its last value, as the
    /// .NET reader does. Everything else is validated JSON and otherwise ignored.
    struct Fields {
        var type: Field?
        var invocationId: Field?
        var target: Field?
        var arguments: Field?
        var streamIds: Field?
        var item: Field?
        var result: Field?
        var error: Field?
        var allowReconnect: Field?
        var sequenceId: Field?
        var headers: Field?

        mutating func assign(_ b: UnsafeRawBufferPointer, key: Range<Int>, escaped: Bool, _ v: Field) {
            func named(_ name: StaticString) -> Bool { HubJSONScanner.contentsEqual(b, key, hasEscape: escaped, name) }
            if named("type") { type = v }
            else if named("invocationId") { invocationId = v }
            else if named("target") { target = v }
            else if named("arguments") { arguments = v }
            else if named("item") { item = v }
            else if named("result") { result = v }
            else if named("error") { error = v }
            else if named("headers") { headers = v }
            else if named("streamIds") { streamIds = v }
            else if named("allowReconnect") { allowReconnect = v }
            else if named("sequenceId") { sequenceId = v }
        }

        func message(_ b: UnsafeRawBufferPointer) throws(HubProtocolError) -> HubMessage {
            guard let type else { throw .missingType }
            // .NET reads `type` as Int32; other integers are unknown types to ignore.
            guard type.kind == .number, let t = HubJSONScanner.integer(b, type.range),
                  t >= Int64(Int32.min), t <= Int64(Int32.max) else { throw .invalidType }
            var m = HubMessage(type: t >= 1 && t <= 255 ? UInt8(t) : 0)
            switch m.messageType {
            case .invocation?, .streamInvocation?:
                m.headers = try headersValue()
                m.invocationId = try id(required: m.type == HubMessageType.streamInvocation.rawValue)
                guard let target, target.kind != .null else { throw .missingTarget }
                guard target.kind == .string else { throw .invalidTarget }
                guard !target.contents.isEmpty else { throw .missingTarget }
                m.target = target.contents
                guard let arguments else { throw .missingArguments }
                guard arguments.kind == .array else { throw .invalidArguments }
                m.arguments = arguments.range
                if let streamIds, streamIds.kind != .null {
                    guard streamIds.kind == .array, JSONHubProtocol.walkArray(b, streamIds.range, { _, _, kind in
                        kind == .string
                    }) == .completed else { throw .invalidStreamIds }
                    m.streamIds = streamIds.range
                }
            case .streamItem?:
                m.headers = try headersValue()
                m.invocationId = try id(required: true)
                guard let item else { throw .missingItem }
                m.item = item.range
            case .completion?:
                m.headers = try headersValue()
                m.invocationId = try id(required: true)
                m.error = try text(error)
                if let result {
                    guard m.error == nil else { throw .resultAndError }
                    m.result = result.range
                }
            case .cancelInvocation?:
                m.headers = try headersValue()
                m.invocationId = try id(required: true)
            case .ping?:
                break
            case .close?:
                m.error = try text(error)
                if let allowReconnect {
                    switch allowReconnect.kind {
                    case .trueValue: m.allowReconnect = true
                    case .falseValue, .null: m.allowReconnect = false
                    default: throw .invalidAllowReconnect
                    }
                }
            case .ack?, .sequence?:
                guard let sequenceId else { throw .missingSequenceId }
                guard sequenceId.kind == .number,
                      let v = HubJSONScanner.unsignedInteger(b, sequenceId.range) else { throw .invalidSequenceId }
                m.sequenceId = v
            case nil:
                break  // unknown type: the caller ignores it, so its fields are not checked
            }
            return m
        }

        /// Empty ids count as absent: .NET treats `string.IsNullOrEmpty(invocationId)` so.
        func id(required: Bool) throws(HubProtocolError) -> Range<Int>? {
            var r: Range<Int>? = nil
            if let invocationId, invocationId.kind != .null {
                guard invocationId.kind == .string else { throw .invalidInvocationId }
                if !invocationId.contents.isEmpty { r = invocationId.contents }
            }
            if required && r == nil { throw .missingInvocationId }
            return r
        }

        func text(_ f: Field?) throws(HubProtocolError) -> Range<Int>? {
            guard let f, f.kind != .null else { return nil }
            guard f.kind == .string else { throw .invalidError }
            return f.contents
        }

        func headersValue() throws(HubProtocolError) -> Range<Int>? {
            guard let headers, headers.kind != .null else { return nil }
            guard headers.kind == .object else { throw .invalidHeaders }
            return headers.range
        }
    }

    // MARK: Values inside a decoded message

    enum Walk { case completed, stopped, invalid }

    /// Visits the elements of the array value `b[array]` until `visit` returns false.
    /// Checks bounds and syntax itself, so any range is safe to pass.
    static func walkArray(_ b: UnsafeRawBufferPointer, _ array: Range<Int>,
                          _ visit: (Int, Range<Int>, HubJSONKind) -> Bool) -> Walk {
        guard array.lowerBound >= 0, array.upperBound <= b.count, !array.isEmpty, b[array.lowerBound] == 0x5B else { return .invalid }
        let end = array.upperBound
        var i = array.lowerBound + 1
        HubJSONScanner.skipWhitespace(b, &i, end)
        guard i < end else { return .invalid }
        if b[i] == 0x5D {
            i += 1
        } else {
            var n = 0
            while true {
                let start = i
                guard let kind = HubJSONScanner.scanValue(b, &i, end, depth: 1) else { return .invalid }
                if !visit(n, start..<i, kind) { return .stopped }
                n += 1
                HubJSONScanner.skipWhitespace(b, &i, end)
                guard i < end else { return .invalid }
                if b[i] == 0x2C {
                    i += 1
                    HubJSONScanner.skipWhitespace(b, &i, end)
                    continue
                }
                guard b[i] == 0x5D else { return .invalid }
                i += 1
                break
            }
        }
        HubJSONScanner.skipWhitespace(b, &i, end)
        return i == end ? .completed : .invalid
    }

    /// Number of elements of the JSON array `buffer[array]` (e.g. `HubMessage.arguments`).
    public static func arrayCount(_ buffer: UnsafeRawBufferPointer, array: Range<Int>) -> Int? {
        var count = 0
        let walk = walkArray(buffer, array) { _, _, _ in count += 1; return true }
        return walk == .completed ? count : nil
    }

    /// Range of element `index` of the JSON array `buffer[array]`; O(index) (elements are
    /// scanned, not indexed, to stay allocation-free).
    public static func arrayElement(_ buffer: UnsafeRawBufferPointer, array: Range<Int>, at index: Int) -> Range<Int>? {
        var found: Range<Int>? = nil
        _ = walkArray(buffer, array) { k, r, _ in
            if k == index { found = r; return false }
            return true
        }
        return found
    }

    /// Contents range (between the quotes, escapes raw) of the JSON string value `buffer[value]`.
    public static func stringContents(_ buffer: UnsafeRawBufferPointer, value: Range<Int>) -> Range<Int>? {
        guard value.lowerBound >= 0, value.upperBound <= buffer.count else { return nil }
        var i = value.lowerBound
        var escaped = false
        guard HubJSONScanner.scanString(buffer, &i, value.upperBound, hasEscape: &escaped), i == value.upperBound else { return nil }
        return (value.lowerBound + 1)..<(value.upperBound - 1)
    }

    /// The JSON integer `buffer[value]` (no fraction or exponent) if it fits Int64.
    public static func int64(_ buffer: UnsafeRawBufferPointer, value: Range<Int>) -> Int64? {
        guard value.lowerBound >= 0, value.upperBound <= buffer.count else { return nil }
        var i = value.lowerBound
        guard HubJSONScanner.scanNumber(buffer, &i, value.upperBound), i == value.upperBound else { return nil }
        return HubJSONScanner.integer(buffer, value)
    }

    /// Decodes JSON string contents (as a `HubMessage` string range gives them) into UTF-8 in
    /// `out`, returning the byte count, or nil if `out` is too small or an escape is malformed.
    /// A `\u` surrogate pair becomes one 4-byte character; a lone surrogate becomes U+FFFD.
    public static func unescapeString(_ contents: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        var sink = HubByteSink(out)
        var i = 0
        let end = contents.count
        var run = 0
        while i < end {
            guard contents[i] == 0x5C else { i += 1; continue }
            sink.bytes(UnsafeRawBufferPointer(rebasing: contents[run..<i]))
            guard i + 1 < end else { return nil }
            switch contents[i + 1] {
            case 0x22, 0x5C, 0x2F: sink.byte(contents[i + 1]); i += 2
            case 0x62: sink.byte(0x08); i += 2
            case 0x66: sink.byte(0x0C); i += 2
            case 0x6E: sink.byte(0x0A); i += 2
            case 0x72: sink.byte(0x0D); i += 2
            case 0x74: sink.byte(0x09); i += 2
            case 0x75:
                guard i + 5 < end, var scalar = HubJSONScanner.hex4(contents, i + 2) else { return nil }
                i += 6
                if scalar >= 0xD800 && scalar <= 0xDBFF {
                    if i + 5 < end, contents[i] == 0x5C, contents[i + 1] == 0x75,
                       let low = HubJSONScanner.hex4(contents, i + 2), low >= 0xDC00 && low <= 0xDFFF {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        i += 6
                    } else {
                        scalar = 0xFFFD
                    }
                } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                    scalar = 0xFFFD
                }
                writeUTF8(scalar, &sink)
            default:
                return nil
            }
            run = i
        }
        sink.bytes(UnsafeRawBufferPointer(rebasing: contents[run..<end]))
        return sink.result
    }

    static func writeUTF8(_ v: UInt32, _ sink: inout HubByteSink) {
        switch v {
        case 0..<0x80:
            sink.byte(UInt8(v))
        case 0x80..<0x800:
            sink.byte(0xC0 | UInt8(v >> 6))
            sink.byte(0x80 | UInt8(v & 0x3F))
        case 0x800..<0x10000:
            sink.byte(0xE0 | UInt8(v >> 12))
            sink.byte(0x80 | UInt8(v >> 6 & 0x3F))
            sink.byte(0x80 | UInt8(v & 0x3F))
        default:
            sink.byte(0xF0 | UInt8(v >> 18))
            sink.byte(0x80 | UInt8(v >> 12 & 0x3F))
            sink.byte(0x80 | UInt8(v >> 6 & 0x3F))
            sink.byte(0x80 | UInt8(v & 0x3F))
        }
    }
}
