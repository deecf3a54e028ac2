// Shared vocabulary of the SignalR hub protocol codecs (JSON and MessagePack).
// Everything here is a value type over caller-owned bytes: decoding reports ranges into the
// caller's buffer and writing fills a caller's buffer, so a message costs no heap allocation.

/// Hub message types of HubProtocol.md; the raw values are the `type` numbers on the wire.
public enum HubMessageType: UInt8, Sendable, CaseIterable {
    case invocation = 1
    case streamItem = 2
    case completion = 3
    case streamInvocation = 4
    case cancelInvocation = 5
    case ping = 6
    case close = 7
    /// Stateful reconnect (.NET 8+): highest sequence id received.
    case ack = 8
    /// Stateful reconnect (.NET 8+): first sequence id of a replay.
    case sequence = 9
}

/// One decoded hub message as a zero-copy view: every range indexes the buffer that was given
/// to `decode`/`parse`, so the view is only meaningful while that buffer is.
///
/// String fields hold the string *contents*: for JSON the bytes between the quotes with escape
/// sequences left raw (see `JSONHubProtocol.unescapeString`), for MessagePack the str payload.
/// Value fields (`arguments`, `streamIds`, `item`, `result`, `headers`) hold the whole encoded
/// value (JSON text such as `[…]`, or MessagePack bytes), ready for the per-protocol helpers.
public struct HubMessage: Sendable, Equatable {
    /// The `type` number as sent. Types this codec does not know are returned, not rejected,
    /// because the spec says to ignore them (future protocol versions add types); a type that
    /// does not fit a byte is reported as 0, which no message uses. Only `type` is filled then.
    public var type: UInt8
    /// Absent for a non-blocking Invocation; an empty id counts as absent, as in the .NET server.
    public var invocationId: Range<Int>?
    public var target: Range<Int>?
    /// Whole arguments array value (Invocation, StreamInvocation).
    public var arguments: Range<Int>?
    /// Whole stream-id array value, when the peer sent one (upload streams).
    public var streamIds: Range<Int>?
    /// StreamItem value; a null item is a value (present), it is not "missing".
    public var item: Range<Int>?
    /// Completion result, present only when the peer sent one: JSON `"result":null` and
    /// MessagePack result kind 3 with nil are results; a void Completion has none.
    public var result: Range<Int>?
    /// Completion or Close error text contents.
    public var error: Range<Int>?
    /// Close: whether a client with automatic reconnect should reconnect.
    public var allowReconnect: Bool
    /// Ack / Sequence.
    public var sequenceId: UInt64
    /// Whole headers map/object value when the peer sent one; never interpreted (the spec
    /// defines no headers).
    public var headers: Range<Int>?

    /// A message of `type` with no fields set.
    public init(type: UInt8) {
        self.type = type
        allowReconnect = false
        sequenceId = 0
    }

    /// The known message type, or nil for types to ignore.
    public var messageType: HubMessageType? { HubMessageType(rawValue: type) }
}

/// Why bytes are not a valid hub message. Each case is a protocol error after which the peer
/// may close the connection (HubProtocol.md "Errors"; docs/protocols.md §7). Creating one allocates nothing.
public enum HubProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not RFC 8259 JSON: bad syntax or UTF-8, nesting deeper than 64, or bytes after the object.
    case invalidJSON
    /// Valid JSON, but a hub message (or handshake response) must be an object.
    case notAnObject
    case missingType
    /// `type` is not an integer (JSON: not a number fitting Int32; MessagePack: not an int).
    case invalidType
    /// StreamItem, Completion, StreamInvocation and CancelInvocation need a non-empty id.
    case missingInvocationId
    case invalidInvocationId
    /// Invocation and StreamInvocation need a non-empty target.
    case missingTarget
    case invalidTarget
    case missingArguments
    /// `arguments` is not an array.
    case invalidArguments
    /// `streamIds` is not an array of strings.
    case invalidStreamIds
    /// A StreamItem must carry an item (null counts as an item).
    case missingItem
    /// A Completion carries both a result and an error.
    case resultAndError
    /// An error text that is not a string.
    case invalidError
    /// MessagePack Completion result kind other than 1 (error), 2 (void), 3 (value).
    case invalidCompletionKind
    case invalidAllowReconnect
    /// Ack and Sequence need a sequence id.
    case missingSequenceId
    /// The sequence id is not a non-negative integer.
    case invalidSequenceId
    /// Headers that are not a map/object (the aiosignalr integer 128 quirk excepted).
    case invalidHeaders
    /// A MessagePack frame with a zero-length body.
    case emptyMessage
    /// A MessagePack body that is not an array, or is an empty one.
    case notAnArray
    /// A MessagePack array shorter than the message type's layout requires.
    case missingFields
    /// A malformed or truncated MessagePack value inside a complete frame.
    case invalidMessagePack
    /// A VarInt length prefix longer than 5 bytes or above 2^31-1.
    case invalidLengthPrefix
    /// A message longer than the caller's limit.
    case messageTooLarge

    /// The reason as text. Every case returns a string literal, which Swift stores statically,
    /// so reading it allocates nothing either.
    public var description: String {
        switch self {
        case .invalidJSON: "Invalid JSON in hub message."
        case .notAnObject: "Hub message is not a JSON object."
        case .missingType: "Missing required property 'type'."
        case .invalidType: "Message type is not an integer."
        case .missingInvocationId: "Missing required property 'invocationId'."
        case .invalidInvocationId: "Invocation id is not a string."
        case .missingTarget: "Missing or empty 'target'."
        case .invalidTarget: "Target is not a string."
        case .missingArguments: "Missing required property 'arguments'."
        case .invalidArguments: "Arguments are not an array."
        case .invalidStreamIds: "Stream ids are not an array of strings."
        case .missingItem: "Missing required property 'item'."
        case .resultAndError: "The 'error' and 'result' properties are mutually exclusive."
        case .invalidError: "Error is not a string."
        case .invalidCompletionKind: "Invalid invocation result kind."
        case .invalidAllowReconnect: "allowReconnect is not a boolean."
        case .missingSequenceId: "Missing required property 'sequenceId'."
        case .invalidSequenceId: "Sequence id is not a non-negative integer."
        case .invalidHeaders: "Headers are not a map."
        case .emptyMessage: "Empty MessagePack message body."
        case .notAnArray: "MessagePack message body is not a non-empty array."
        case .missingFields: "MessagePack message has too few items for its type."
        case .invalidMessagePack: "Malformed MessagePack value."
        case .invalidLengthPrefix: "Invalid VarInt length prefix."
        case .messageTooLarge: "Message exceeds the maximum message size."
        }
    }
}

/// What a protocol's `parse` found at the start of a receive buffer.
public enum HubParseResult: Sendable, Equatable {
    /// No complete message yet: keep the bytes and read more (docs/protocols.md §3).
    case needMore
    /// One message; its ranges index the parsed buffer, and `consumed` bytes (framing included)
    /// belong to it. Check `message.messageType` and ignore unknown types.
    case message(HubMessage, consumed: Int)
    /// The bytes violate the protocol; the connection should be closed.
    case failure(HubProtocolError)
}

/// UTF-8 text for a message field (target, error), without a String: a literal or caller bytes.
/// String literals convert implicitly, so `target: "Send"` works.
public enum HubString: ExpressibleByStringLiteral {
    /// UTF-8 bytes owned by the caller, valid for the duration of the write call. Not validated.
    case utf8(UnsafeRawBufferPointer)
    case literal(StaticString)

    public init(stringLiteral value: StaticString) { self = .literal(value) }

    @inlinable
    public func withUTF8<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        switch self {
        case .utf8(let bytes): body(bytes)
        case .literal(let s): s.withUTF8Buffer { body(UnsafeRawBufferPointer($0)) }
        }
    }
}

/// An invocation id to write. Ids are strings on the wire; official clients use a per-connection
/// counter written in decimal ("0", "1", …), which `.number` produces without building a String.
/// Integer and string literals convert implicitly.
public enum HubInvocationID: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral {
    case number(UInt64)
    /// Id bytes owned by the caller (e.g. a server-chosen id being answered). Not validated.
    case utf8(UnsafeRawBufferPointer)
    case literal(StaticString)

    public init(integerLiteral value: UInt64) { self = .number(value) }
    public init(stringLiteral value: StaticString) { self = .literal(value) }

    /// Calls `body` with the id's UTF-8 bytes; decimal digits are rendered on the stack.
    @inlinable
    public func withUTF8<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        switch self {
        case .utf8(let bytes): return body(bytes)
        case .literal(let s): return s.withUTF8Buffer { body(UnsafeRawBufferPointer($0)) }
        case .number(let n):
            var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes ≥ 20 digits of UInt64.max
            return withUnsafeMutableBytes(of: &digits) { buf in
                let count = HubDecimal.write(n, into: buf)
                return body(UnsafeRawBufferPointer(rebasing: buf[0..<count]))
            }
        }
    }

    /// The number an id encodes when it is the canonical decimal form a counter produces
    /// ("0", "17"; no sign, no leading zeros, at most UInt64.max). Lets a client match a
    /// Completion's id range to its counter without decoding a string.
    public static func decimalValue(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        HubDecimal.parse(bytes)
    }
}

/// Writes one value into a message's arguments, item or result, in the connection's encoding.
/// Both protocols implement it, so a workload can fill arguments with one generic function:
/// `func fill<W: HubValueWriter>(_ w: inout W) { w.string("hi"); w.int(42) }`.
///
/// A write that does not fit the output is dropped and the whole message write returns nil,
/// so the calls need no error handling. Strings must be valid UTF-8 (not checked: hot path).
public protocol HubValueWriter {
    /// A string from UTF-8 bytes (JSON: escaped as needed).
    mutating func string(_ utf8: UnsafeRawBufferPointer)
    mutating func string(_ literal: StaticString)
    /// A string of `totalLength` bytes: `prefix` followed by `pad` bytes, written without
    /// building it (the load generator stamps timestamps into a padded text). If the prefix is
    /// longer than `totalLength` the string is just the prefix. `pad` should be ASCII.
    mutating func paddedString(prefix: UnsafeRawBufferPointer, totalLength: Int, pad: UInt8)
    /// An integer (MessagePack: its smallest encoding).
    mutating func int(_ value: Int64)
    mutating func uint(_ value: UInt64)
    /// A double (JSON: shortest round-trip text; NaN and infinities become null, as JSON has
    /// no text for them).
    mutating func double(_ value: Double)
    mutating func bool(_ value: Bool)
    mutating func null()
    /// A nested array whose elements `body` writes.
    mutating func array(_ body: (inout Self) -> Void)
    /// A nested object/map: inside `body`, call `key` before each value.
    mutating func object(_ body: (inout Self) -> Void)
    mutating func key(_ utf8: UnsafeRawBufferPointer)
    mutating func key(_ literal: StaticString)
    /// One value already encoded in this protocol's encoding (e.g. echoing a received item).
    mutating func raw(_ encoded: UnsafeRawBufferPointer)
}

/// The operations common to both hub protocols, so workload code can be generic over the
/// protocol and still get specialised, allocation-free code.
///
/// Writers fill `out` from its start and return the byte count of one complete framed message
/// (JSON record with its 0x1E, or MessagePack VarInt prefix plus body), or nil when it does not fit.
public protocol HubProtocolCodec {
    associatedtype ValueWriter: HubValueWriter
    /// The name sent in the handshake request (`"json"`, `"messagepack"`).
    static var protocolName: StaticString { get }

    /// Frames and decodes the first message of `buffer`; see `HubParseResult`.
    static func parse(_ buffer: UnsafeRawBufferPointer, maxMessageLength: Int) -> HubParseResult

    /// Invocation: with an id the peer answers with a Completion (`invoke`), without one it
    /// does not (`send`). `streamIds` lists upload streams; nil writes none.
    static func writeInvocation(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID?, target: HubString,
                                streamIds: UnsafeBufferPointer<UInt64>?, arguments: (inout ValueWriter) -> Void) -> Int?
    static func writeStreamInvocation(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID, target: HubString,
                                      streamIds: UnsafeBufferPointer<UInt64>?, arguments: (inout ValueWriter) -> Void) -> Int?
    /// `item` writes exactly one value (none writes null; values after the first are dropped).
    static func writeStreamItem(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID,
                                item: (inout ValueWriter) -> Void) -> Int?
    /// Void Completion (no result).
    static func writeCompletion(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID) -> Int?
    static func writeCompletion(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID, error: HubString) -> Int?
    /// `result` writes exactly one value, as for `writeStreamItem`.
    static func writeCompletion(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID,
                                result: (inout ValueWriter) -> Void) -> Int?
    static func writeCancelInvocation(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID) -> Int?
    static func writePing(into out: UnsafeMutableRawBufferPointer) -> Int?
    static func writeClose(into out: UnsafeMutableRawBufferPointer, error: HubString?, allowReconnect: Bool) -> Int?
    static func writeAck(into out: UnsafeMutableRawBufferPointer, sequenceId: UInt64) -> Int?
    static func writeSequence(into out: UnsafeMutableRawBufferPointer, sequenceId: UInt64) -> Int?

    /// Number of elements of an encoded array value (e.g. `HubMessage.arguments`), nil if not one.
    static func arrayCount(_ buffer: UnsafeRawBufferPointer, array: Range<Int>) -> Int?
    /// Range of element `index` of an encoded array value, nil if out of range or malformed.
    static func arrayElement(_ buffer: UnsafeRawBufferPointer, array: Range<Int>, at index: Int) -> Range<Int>?
    /// Contents range of an encoded string value (JSON: escapes left raw), nil if not a string.
    static func stringContents(_ buffer: UnsafeRawBufferPointer, value: Range<Int>) -> Range<Int>?
    /// An encoded integer value, nil if not an integer that fits Int64.
    static func int64(_ buffer: UnsafeRawBufferPointer, value: Range<Int>) -> Int64?
}

/// Decimal digits without String: used for ids, numbers and VarInt-free lengths.
@usableFromInline
enum HubDecimal {
    @usableFromInline
    static func digitCount(_ v: UInt64) -> Int {
        var n = 1
        var x = v
        while x >= 10 { x /= 10; n += 1 }
        return n
    }

    /// Writes `v` at the start of `buf` (which must hold 20 bytes) and returns the digit count.
    @usableFromInline
    static func write(_ v: UInt64, into buf: UnsafeMutableRawBufferPointer) -> Int {
        let count = digitCount(v)
        guard buf.count >= count else { return 0 }
        var x = v
        var i = count
        repeat {
            i -= 1
            buf[i] = UInt8(truncatingIfNeeded: x % 10) &+ 0x30
            x /= 10
        } while i > 0
        return count
    }

    static func parse(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        guard !bytes.isEmpty, bytes.count <= 20 else { return nil }
        if bytes.count > 1 && bytes[0] == 0x30 { return nil }
        var v: UInt64 = 0
        for b in bytes {
            guard b >= 0x30 && b <= 0x39 else { return nil }
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(UInt64(b - 0x30))
            if o1 || o2 { return nil }
            v = s
        }
        return v
    }
}
