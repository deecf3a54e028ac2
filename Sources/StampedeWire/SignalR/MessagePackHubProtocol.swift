/// The SignalR MessagePack hub protocol (HubProtocol.md "MessagePack (MsgPack) encoding"):
/// each message is `[VarInt length][body]`, the body one MessagePack array whose first item
/// is the message type.
///
/// Headers: the spec makes them a map, and a non-map is a protocol error (docs/protocols.md §7). The one
/// exception is aiosignalr's quirk of encoding empty headers as the integer 128 (`CC 80`, the
/// byte of an empty map sent as a uint 8): that exact value is read as "no headers", anything
/// else that is not a map fails with `.invalidHeaders`. A map's entries are skipped unchecked,
/// since headers are never interpreted.
public enum MessagePackHubProtocol: HubProtocolCodec {
    public static var protocolName: StaticString { "messagepack" }

    // MARK: VarInt length prefix

    /// Largest body a length prefix may announce (2 GB - 1, five prefix bytes).
    public static let maxBodyLength = Int(Int32.max)

    /// Result of reading a length prefix.
    public enum LengthPrefix: Sendable, Equatable {
        /// The prefix is cut short: wait for more bytes.
        case needMore
        /// Body length and the number of prefix bytes before the body.
        case value(length: Int, prefixLength: Int)
        /// A fifth byte above 0x07 (a length of 2^31 or more, or a sixth byte).
        case invalid
    }

    /// Reads the unsigned LEB128 length at `offset`: 7 bits per byte, least significant group
    /// first, high bit = more; at most 5 bytes, the 5th ≤ 0x07. Non-minimal forms are accepted,
    /// as the .NET reader does.
    public static func readLengthPrefix(_ buffer: UnsafeRawBufferPointer, at offset: Int = 0) -> LengthPrefix {
        guard offset >= 0 else { return .invalid }
        var value = 0
        for k in 0..<5 {
            guard offset + k < buffer.count else { return .needMore }
            let b = buffer[offset + k]
            if k == 4 {
                guard b <= 0x07 else { return .invalid }
                return .value(length: value | Int(b) << 28, prefixLength: 5)
            }
            value |= Int(b & 0x7F) << (7 * k)
            if b & 0x80 == 0 { return .value(length: value, prefixLength: k + 1) }
        }
        return .invalid
    }

    /// Bytes the prefix of a `length`-byte body takes (1…5).
    public static func lengthPrefixSize(_ length: Int) -> Int {
        var n = 1
        var v = length >> 7
        while v > 0 && n < 5 { n += 1; v >>= 7 }
        return n
    }

    /// Writes the prefix of a `length`-byte body; nil if `length` is outside 0…2^31-1 or `out`
    /// is too small.
    public static func writeLengthPrefix(_ length: Int, into out: UnsafeMutableRawBufferPointer) -> Int? {
        guard length >= 0, length <= maxBodyLength else { return nil }
        let n = lengthPrefixSize(length)
        guard out.count >= n else { return nil }
        var v = length
        for k in 0..<n {
            out[k] = UInt8(v & 0x7F) | (k < n - 1 ? 0x80 : 0)
            v >>= 7
        }
        return n
    }

    // MARK: Parsing

    /// Frames and decodes the first message of `buffer`. Ranges index `buffer`.
    /// A truncated prefix or body is `.needMore`; a body longer than `maxMessageLength` fails
    /// at once instead of waiting for up to 2 GB.
    public static func parse(_ buffer: UnsafeRawBufferPointer, maxMessageLength: Int = maxBodyLength) -> HubParseResult {
        switch readLengthPrefix(buffer) {
        case .needMore:
            return .needMore
        case .invalid:
            return .failure(.invalidLengthPrefix)
        case .value(let length, let prefix):
            if length > maxMessageLength { return .failure(.messageTooLarge) }
            if length > buffer.count - prefix { return .needMore }
            switch decode(buffer, body: prefix..<(prefix + length)) {
            case .success(let m): return .message(m, consumed: prefix + length)
            case .failure(let e): return .failure(e)
            }
        }
    }

    /// Decodes a body (no length prefix) that fills `body`; ranges index `body`.
    public static func decode(body: UnsafeRawBufferPointer) -> Result<HubMessage, HubProtocolError> {
        decode(body, body: 0..<body.count)
    }

    /// Decodes the body at `buffer[body]`; ranges index `buffer`.
    ///
    /// Layouts (HubProtocol.md): Invocation `[1, H, Id|nil, Target, [Args], [StreamIds]?]`
    /// (5 items from older clients are valid), StreamItem `[2, H, Id, Item]`, Completion
    /// `[3, H, Id, Kind, Result?]` with kind 1 error / 2 void / 3 value, StreamInvocation like
    /// Invocation with a required id, CancelInvocation `[5, H, Id]`, Ping `[6]`, Close
    /// `[7, Error|nil, AllowReconnect?]` (no headers), Ack `[8, Id]`, Sequence `[9, Id]`.
    /// Extra trailing items are ignored (room for future fields); an empty id is absent, as
    /// in the .NET server.
    public static func decode(_ buffer: UnsafeRawBufferPointer, body: Range<Int>) -> Result<HubMessage, HubProtocolError> {
        guard body.lowerBound >= 0, body.upperBound <= buffer.count else { return .failure(.invalidMessagePack) }
        do {
            return .success(try decodeBody(buffer, body))
        } catch {
            return .failure(error)
        }
    }

    static func decodeBody(_ buffer: UnsafeRawBufferPointer, _ body: Range<Int>) throws(HubProtocolError) -> HubMessage {
        guard !body.isEmpty else { throw .emptyMessage }
        var r = Reader(buffer, range: body)
        guard let first = r.read() else { throw .invalidMessagePack }
        guard case .array(let count) = first, count > 0 else { throw .notAnArray }
        guard let typeValue = r.read() else { throw .invalidMessagePack }
        var m: HubMessage
        switch typeValue {
        case .int(let t): m = HubMessage(type: t >= 1 && t <= 255 ? UInt8(t) : 0)
        case .uint(let t): m = HubMessage(type: t >= 1 && t <= 255 ? UInt8(t) : 0)
        default: throw .invalidType
        }

        func need(_ n: Int) throws(HubProtocolError) { if count < n { throw .missingFields } }

        switch m.messageType {
        case .invocation?, .streamInvocation?:
            try need(5)
            m.headers = try readHeaders(&r)
            m.invocationId = try readId(&r, required: m.type == HubMessageType.streamInvocation.rawValue)
            guard let target = r.read() else { throw .invalidMessagePack }
            switch target {
            case .string(let range) where !range.isEmpty: m.target = range
            case .string, .null: throw .missingTarget
            default: throw .invalidTarget
            }
            guard let args = r.peek() else { throw .invalidMessagePack }
            guard case .array = args else { throw .invalidArguments }
            guard let argsRange = r.skip() else { throw .invalidMessagePack }
            m.arguments = argsRange
            if count > 5 { m.streamIds = try readStreamIds(&r) }
        case .streamItem?:
            try need(4)
            m.headers = try readHeaders(&r)
            m.invocationId = try readId(&r, required: true)
            guard let item = r.skip() else { throw .invalidMessagePack }
            m.item = item
        case .completion?:
            try need(4)
            m.headers = try readHeaders(&r)
            m.invocationId = try readId(&r, required: true)
            guard let kind = r.read() else { throw .invalidMessagePack }
            switch kind.int64 {
            case 1?:
                try need(5)
                guard let error = r.read() else { throw .invalidMessagePack }
                guard case .string(let range) = error else { throw .invalidError }
                m.error = range
            case 2?:
                break
            case 3?:
                try need(5)
                guard let result = r.skip() else { throw .invalidMessagePack }
                m.result = result
            default:
                throw .invalidCompletionKind
            }
        case .cancelInvocation?:
            try need(3)
            m.headers = try readHeaders(&r)
            m.invocationId = try readId(&r, required: true)
        case .ping?:
            break
        case .close?:
            try need(2)
            guard let error = r.read() else { throw .invalidMessagePack }
            switch error {
            case .string(let range): m.error = range
            case .null: break
            default: throw .invalidError
            }
            if count > 2 {
                guard let allow = r.read() else { throw .invalidMessagePack }
                switch allow {
                case .bool(let v): m.allowReconnect = v
                case .null: break
                default: throw .invalidAllowReconnect
                }
            }
        case .ack?, .sequence?:
            guard count >= 2 else { throw .missingSequenceId }
            guard let v = r.read() else { throw .invalidMessagePack }
            guard let id = v.uint64 else { throw .invalidSequenceId }
            m.sequenceId = id
        case nil:
            break  // unknown type: ignored by the caller, so the rest is not read
        }
        return m
    }

    /// See the type's documentation for the aiosignalr quirk.
    static func readHeaders(_ r: inout Reader) throws(HubProtocolError) -> Range<Int>? {
        guard let v = r.peek() else { throw .invalidMessagePack }
        switch v {
        case .map:
            guard let range = r.skip() else { throw .invalidMessagePack }
            return range
        case .uint(128):
            _ = r.read()
            return nil
        default:
            throw .invalidHeaders
        }
    }

    static func readId(_ r: inout Reader, required: Bool) throws(HubProtocolError) -> Range<Int>? {
        guard let v = r.read() else { throw .invalidMessagePack }
        var id: Range<Int>? = nil
        switch v {
        case .string(let range): id = range.isEmpty ? nil : range
        case .null: break
        default: throw .invalidInvocationId
        }
        if required && id == nil { throw .missingInvocationId }
        return id
    }

    static func readStreamIds(_ r: inout Reader) throws(HubProtocolError) -> Range<Int>? {
        let start = r.position
        guard let v = r.read() else { throw .invalidMessagePack }
        switch v {
        case .null:
            return nil
        case .array(let n):
            for _ in 0..<n {
                guard let id = r.read() else { throw .invalidMessagePack }
                guard case .string = id else { throw .invalidStreamIds }
            }
            return start..<r.position
        default:
            throw .invalidStreamIds
        }
    }

    // MARK: Values inside a decoded message

    /// Number of elements of the MessagePack array `buffer[array]`.
    public static func arrayCount(_ buffer: UnsafeRawBufferPointer, array: Range<Int>) -> Int? {
        var r = Reader(buffer, range: array)
        guard r.position == array.lowerBound, case .array(let n)? = r.read() else { return nil }
        return n
    }

    /// Range of element `index` of the MessagePack array `buffer[array]`; O(index).
    public static func arrayElement(_ buffer: UnsafeRawBufferPointer, array: Range<Int>, at index: Int) -> Range<Int>? {
        var r = Reader(buffer, range: array)
        guard r.position == array.lowerBound, case .array(let n)? = r.read(), index >= 0, index < n else { return nil }
        for _ in 0..<index {
            guard r.skip() != nil else { return nil }
        }
        return r.skip()
    }

    /// Payload range of the MessagePack string `buffer[value]`.
    public static func stringContents(_ buffer: UnsafeRawBufferPointer, value: Range<Int>) -> Range<Int>? {
        var r = Reader(buffer, range: value)
        guard r.position == value.lowerBound, case .string(let range)? = r.read() else { return nil }
        return range
    }

    /// The MessagePack integer `buffer[value]` if it fits Int64.
    public static func int64(_ buffer: UnsafeRawBufferPointer, value: Range<Int>) -> Int64? {
        var r = Reader(buffer, range: value)
        guard r.position == value.lowerBound else { return nil }
        return r.read()?.int64
    }
}
