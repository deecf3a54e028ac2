// Socket.IO 5 packets (docs/protocols.md §12, §14), carried in Engine.IO message packets:
// `<type>[<attachments>-][<namespace>,][<ack id>][<json data>]`. The namespace is written only
// when it is not the main one ("/"); binary types name how many binary messages (attachments)
// follow, each standing for a `{"_placeholder":true,"num":N}` in the data.

/// Socket.IO 5 packet types; on the wire the ASCII digit.
public enum SocketIOPacketType: UInt8, Sendable {
    case connect = 0, disconnect, event, ack, connectError, binaryEvent, binaryAck

    /// The digit that stands for this type on the wire.
    public var digit: UInt8 { rawValue + 0x30 }
    /// BINARY_EVENT and BINARY_ACK carry attachments.
    public var isBinary: Bool { self == .binaryEvent || self == .binaryAck }
}

/// A Socket.IO packet's head, read in place: ranges index the buffer parsed.
public struct SocketIOPacket: Sendable, Equatable {
    public var type: SocketIOPacketType
    /// Binary messages that follow (binary types only, else 0).
    public var attachments: Int
    /// The namespace as written ("/live"); nil: the main namespace "/".
    public var namespace: Range<Int>?
    public var ackId: UInt64?
    /// The JSON data, possibly empty.
    public var data: Range<Int>

    public init(type: SocketIOPacketType, attachments: Int = 0, namespace: Range<Int>? = nil, ackId: UInt64? = nil, data: Range<Int>) {
        self.type = type; self.attachments = attachments; self.namespace = namespace; self.ackId = ackId; self.data = data
    }

    /// Most attachments one packet may announce (socket.io-parser has no limit; a reader needs one).
    public static let maxAttachments = 1000

    /// Reads the head of `packet` (an Engine.IO message's data). nil when malformed: an unknown
    /// type, a binary type without "<n>-", too many attachments, an ack id over 18 digits, or
    /// data of the wrong shape for the type (EVENT and ACK need an array, an EVENT's first
    /// element a string; CONNECT an object or nothing; CONNECT_ERROR an object or a string;
    /// DISCONNECT nothing). The data's JSON is otherwise not validated here.
    public static func parse(_ packet: UnsafeRawBufferPointer) -> SocketIOPacket? {
        guard let first = packet.first, first >= 0x30, let type = SocketIOPacketType(rawValue: first &- 0x30) else { return nil }
        var p = 1
        let end = packet.count
        var attachments = 0
        if type.isBinary {
            let start = p
            while p < end, HubJSONScanner.isDigit(packet[p]), p - start < 5 { attachments = attachments * 10 + Int(packet[p] - 0x30); p += 1 }
            guard p > start, p < end, packet[p] == 0x2D, attachments <= maxAttachments else { return nil }  // "-"
            p += 1
        }
        var namespace: Range<Int>? = nil
        if p < end, packet[p] == 0x2F {  // "/"
            let start = p
            while p < end, packet[p] != 0x2C { p += 1 }
            namespace = start..<p
            if p < end { p += 1 }  // ","
        }
        var ackId: UInt64? = nil
        if p < end, HubJSONScanner.isDigit(packet[p]) {
            var id: UInt64 = 0
            let start = p
            while p < end, HubJSONScanner.isDigit(packet[p]) {
                guard p - start < 18 else { return nil }
                id = id * 10 + UInt64(packet[p] - 0x30); p += 1
            }
            ackId = id
        }
        let data = p..<end
        guard shapeFits(type, packet, data) else { return nil }
        return SocketIOPacket(type: type, attachments: attachments, namespace: namespace, ackId: ackId, data: data)
    }

    static func shapeFits(_ type: SocketIOPacketType, _ b: UnsafeRawBufferPointer, _ data: Range<Int>) -> Bool {
        let first: UInt8? = data.isEmpty ? nil : b[data.lowerBound]
        switch type {
        case .connect: return first == nil || first == 0x7B
        case .disconnect: return first == nil
        case .connectError: return first == 0x7B || first == 0x22
        case .event, .binaryEvent:
            guard first == 0x5B else { return false }
            var p = data.lowerBound + 1
            HubJSONScanner.skipWhitespace(b, &p, data.upperBound)
            return p < data.upperBound && b[p] == 0x22
        case .ack, .binaryAck: return first == 0x5B
        }
    }

    /// Whether the namespace is `name` ("/" matches a packet with no namespace).
    public func namespaceIs(_ name: [UInt8], in packet: UnsafeRawBufferPointer) -> Bool {
        guard let namespace else { return name == [0x2F] || name.isEmpty }
        guard namespace.count == name.count else { return name == [0x2F] && namespace.count == 1 }
        return name.withUnsafeBytes { n in zip(namespace, 0..<n.count).allSatisfy { packet[$0] == n[$1] } }
    }

    /// EVENT / BINARY_EVENT: the event name, the first element's string contents (escapes as
    /// written); nil for other types or when the string is not well formed.
    public func eventName(in packet: UnsafeRawBufferPointer) -> Range<Int>? {
        guard type == .event || type == .binaryEvent else { return nil }
        var p = data.lowerBound + 1
        HubJSONScanner.skipWhitespace(packet, &p, data.upperBound)
        let start = p
        var escaped = false
        guard p < data.upperBound, packet[p] == 0x22, HubJSONScanner.scanString(packet, &p, data.upperBound, hasEscape: &escaped) else { return nil }
        return start + 1..<p - 1
    }
}

/// Writes Socket.IO packets.
public enum SocketIOPacketWriter {
    /// Writes the head (type, attachments, namespace unless "/", ack id) then `data`; the count,
    /// nil when `out` is too small.
    public static func write(_ type: SocketIOPacketType, attachments: Int = 0, namespace: [UInt8], ackId: UInt64?,
                             data: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        guard let n = writeHead(type, attachments: attachments, namespace: namespace, ackId: ackId, into: out),
              n + data.count <= out.count else { return nil }
        if !data.isEmpty { UnsafeMutableRawBufferPointer(rebasing: out[n...]).copyMemory(from: data) }
        return n + data.count
    }

    /// Writes only the head; the caller writes the data after it (templates render in place).
    /// A namespace other than "/" is followed by "," only when an ack id or data may follow,
    /// which is always the case here (socket.io-parser writes it whenever the namespace is not "/").
    public static func writeHead(_ type: SocketIOPacketType, attachments: Int = 0, namespace: [UInt8], ackId: UInt64?,
                                 into out: UnsafeMutableRawBufferPointer) -> Int? {
        var p = 0
        func put(_ b: UInt8) -> Bool { guard p < out.count else { return false }; out[p] = b; p += 1; return true }
        func putNumber(_ v: UInt64) -> Bool {
            var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                         UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            var n = 0, x = v
            return withUnsafeMutableBytes(of: &digits) { d in
                repeat { d[n] = UInt8(x % 10) + 0x30; x /= 10; n += 1 } while x > 0
                while n > 0 { n -= 1; guard put(d[n]) else { return false } }
                return true
            }
        }
        guard put(type.digit) else { return nil }
        if type.isBinary { guard putNumber(UInt64(max(attachments, 0))), put(0x2D) else { return nil } }
        if !namespace.isEmpty, namespace != [0x2F] {
            for b in namespace { guard put(b) else { return nil } }
            guard put(0x2C) else { return nil }
        }
        if let ackId { guard putNumber(ackId) else { return nil } }
        return p
    }

    /// `{"_placeholder":true,"num":N}`: where attachment N stands in a binary packet's data.
    public static func writePlaceholder(_ num: Int, into out: UnsafeMutableRawBufferPointer) -> Int? {
        let bytes = Array("{\"_placeholder\":true,\"num\":\(max(num, 0))}".utf8)
        guard bytes.count <= out.count else { return nil }
        bytes.withUnsafeBytes { out.copyMemory(from: $0) }
        return bytes.count
    }
}
