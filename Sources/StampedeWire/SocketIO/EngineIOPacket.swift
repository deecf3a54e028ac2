// Engine.IO 4 packets (docs/protocols.md §9): the transport layer under Socket.IO.
// A WebSocket text frame is one text packet (type digit + data); a binary frame is a binary
// message with no type byte. A long-polling body is records separated by 0x1E, a binary
// message among them written as "b" + base64.

/// Engine.IO 4 packet types; on the wire the ASCII digit "0"..."6".
public enum EngineIOPacketType: UInt8, Sendable {
    case open = 0, close, ping, pong, message, upgrade, noop

    /// The digit that stands for this type on the wire.
    public var digit: UInt8 { rawValue + 0x30 }
}

/// Text packets: a type digit followed by the data.
public enum EngineIOPacket {
    /// A text packet (a WebSocket text frame, or a polling record not starting with "b"):
    /// its type and its data's range in `packet`. nil: empty or not a known type digit.
    public static func parseText(_ packet: UnsafeRawBufferPointer) -> (type: EngineIOPacketType, data: Range<Int>)? {
        guard let first = packet.first, first >= 0x30, let type = EngineIOPacketType(rawValue: first &- 0x30) else { return nil }
        return (type, 1..<packet.count)
    }

    /// Writes the type digit and `data`; the count written, nil when `out` is too small.
    public static func writeText(_ type: EngineIOPacketType, data: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        guard data.count + 1 <= out.count else { return nil }
        out[0] = type.digit
        if !data.isEmpty { UnsafeMutableRawBufferPointer(rebasing: out[1...]).copyMemory(from: data) }
        return data.count + 1
    }
}

/// One record of a long-polling payload.
public enum EngineIOPollingRecord: Sendable, Equatable {
    /// A text packet: its type and data.
    case text(EngineIOPacketType, data: Range<Int>)
    /// "b" + base64: a binary message; the range is the base64 text.
    case binary(base64: Range<Int>)
    /// An empty record or an unknown type.
    case invalid(Range<Int>)
}

/// The records of a long-polling body, in order, without allocating. Ranges index the body.
public struct EngineIOPollingPayload: IteratorProtocol {
    /// The record separator (ASCII RS).
    public static let separator: UInt8 = 0x1E
    let body: UnsafeRawBufferPointer
    var position = 0
    var done = false

    public init(_ body: UnsafeRawBufferPointer) { self.body = body; done = body.isEmpty }

    public mutating func next() -> EngineIOPollingRecord? {
        guard !done else { return nil }
        var end = position
        while end < body.count, body[end] != Self.separator { end += 1 }
        let record = position..<end
        if end >= body.count { done = true } else { position = end + 1 }
        guard let first = record.first.map({ body[$0] }) else { return .invalid(record) }
        if first == 0x62 { return .binary(base64: record.lowerBound + 1..<record.upperBound) }  // "b"
        guard first >= 0x30, let type = EngineIOPacketType(rawValue: first &- 0x30) else { return .invalid(record) }
        return .text(type, data: record.lowerBound + 1..<record.upperBound)
    }
}

/// Builds a long-polling body one packet at a time.
public enum EngineIOPollingWriter {
    /// Appends one text packet to a payload being built in `out` at `at` (with the 0x1E
    /// separator first unless `at == 0`); the new end, nil when out of room.
    public static func appendText(_ type: EngineIOPacketType, data: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, at: Int) -> Int? {
        guard var p = separate(out, at), p + 1 + data.count <= out.count else { return nil }
        out[p] = type.digit; p += 1
        if !data.isEmpty { UnsafeMutableRawBufferPointer(rebasing: out[p...]).copyMemory(from: data) }
        return p + data.count
    }

    /// Appends a binary message as "b" + base64 (with the separator first unless `at == 0`).
    public static func appendBinary(_ data: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, at: Int) -> Int? {
        guard var p = separate(out, at), p < out.count else { return nil }
        out[p] = 0x62; p += 1
        guard let n = Base64.encode(data, into: UnsafeMutableRawBufferPointer(rebasing: out[p...])) else { return nil }
        return p + n
    }

    static func separate(_ out: UnsafeMutableRawBufferPointer, _ at: Int) -> Int? {
        guard at >= 0, at <= out.count else { return nil }
        if at == 0 { return 0 }
        guard at < out.count else { return nil }
        out[at] = EngineIOPollingPayload.separator
        return at + 1
    }
}
