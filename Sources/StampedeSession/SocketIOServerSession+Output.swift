import StampedeWire

extension SocketIOServerSession {
    static let textRecord: UInt8 = 0
    static let binaryRecord: UInt8 = 1

    // MARK: Sending

    /// A whole Engine.IO text packet (`4…` for a Socket.IO packet) built by the runtime, e.g. a
    /// broadcast built once for every receiver.
    public mutating func sendText(_ enginePacket: UnsafeRawBufferPointer) -> SendResult {
        guard !isEnded else { return .notSent }
        if transport == .webSocket && outboxPackets == 0 { return .writeNow }
        return enqueue(Self.textRecord, enginePacket)
    }

    /// A binary message (an attachment): a binary frame, or `b` + base64 in a poll answer.
    public mutating func sendBinary(_ bytes: UnsafeRawBufferPointer) -> SendResult {
        guard !isEnded else { return .notSent }
        if transport == .webSocket && outboxPackets == 0 { return .writeNow }
        return enqueue(Self.binaryRecord, bytes)
    }

    /// Queues a Socket.IO packet: its head (type, attachments, namespace unless "/", ack id)
    /// then `data` (JSON). Attachments follow with `sendBinary`, queued after it.
    public mutating func queueSocketIO(_ type: SocketIOPacketType, attachments: Int = 0, namespace: [UInt8], ackId: UInt64?,
                                       data: UnsafeRawBufferPointer) -> SendResult {
        guard !isEnded else { return .notSent }
        let room = 1 + 24 + namespace.count + 24 + data.count
        var packet = takeScratch()
        defer { giveBack(packet) }
        packet.append(contentsOf: repeatElement(0, count: room))
        let n = packet.withUnsafeMutableBytes { out -> Int? in
            out[0] = UInt8(ascii: "4")
            return SocketIOPacketWriter.write(type, attachments: attachments, namespace: namespace, ackId: ackId, data: data,
                                              into: UnsafeMutableRawBufferPointer(rebasing: out[1...]))
        }
        guard let n else { return .notSent }
        return packet.withUnsafeBytes { enqueue(Self.textRecord, UnsafeRawBufferPointer(rebasing: $0[0..<(1 + n)])) }
    }

    /// Accepts the CONNECT to `namespace` ("/" for the main one): `0[/nsp,]{"sid":"<socketID>"}`.
    public mutating func acceptConnect(namespace: [UInt8], socketID: [UInt8]) -> SendResult {
        guard !isEnded else { return .notSent }
        if !namespaces.contains(namespace) { namespaces.append(namespace) }
        let json = Array(#"{"sid":""#.utf8) + socketID + Array(#""}"#.utf8)
        return json.withUnsafeBytes { queueSocketIO(.connect, namespace: namespace, ackId: nil, data: $0) }
    }

    /// Refuses the CONNECT to `namespace`: CONNECT_ERROR `{"message":"<message>"}`. `message` is
    /// the server's own text, JSON-safe (no quotes, backslashes or control characters).
    public mutating func refuseConnect(namespace: [UInt8], message: [UInt8]) -> SendResult {
        guard !isEnded else { return .notSent }
        let json = Array(#"{"message":""#.utf8) + message + Array(#""}"#.utf8)
        return json.withUnsafeBytes { queueSocketIO(.connectError, namespace: namespace, ackId: nil, data: $0) }
    }

    /// An Engine.IO control packet of the session's own (ping, close, pong).
    mutating func enqueueControl(_ type: EngineIOPacketType) -> SendResult {
        enqueueEngineText(type, UnsafeRawBufferPointer(start: nil, count: 0))
    }

    mutating func enqueueEngineText(_ type: EngineIOPacketType, _ data: UnsafeRawBufferPointer) -> SendResult {
        var packet = takeScratch()
        defer { giveBack(packet) }
        packet.append(UInt8(ascii: "0") + type.rawValue)
        packet.append(contentsOf: data)
        return packet.withUnsafeBytes { enqueue(Self.textRecord, $0) }
    }

    mutating func enqueue(_ kind: UInt8, _ bytes: UnsafeRawBufferPointer) -> SendResult {
        guard outbox.count + bytes.count + 5 <= configuration.maxQueuedBytes else {
            if !isEnded { _ = end(.outputOverflow) }
            return .overflow
        }
        let n = UInt32(truncatingIfNeeded: bytes.count)
        outbox.append(contentsOf: [kind, UInt8(n >> 24), UInt8((n >> 16) & 255), UInt8((n >> 8) & 255), UInt8(n & 255)])
        outbox.append(contentsOf: bytes)
        outboxPackets += 1
        return .queued
    }

    // MARK: Delivering

    /// A held poll should be answered now (`takePollPayload`).
    public var pollAnswerDue: Bool { pollHeld && (noopDue || upgrade == .probed || (transport == .polling && outboxPackets > 0)) }

    /// Packets wait for the WebSocket (`drainWebSocket`).
    public var webSocketOutputDue: Bool { transport == .webSocket && outboxPackets > 0 }

    /// Answers the held poll (or a GET answered at once): the queued packets as one polling payload
    /// (a noop if there is nothing else), handed to `write` (valid during the call).
    public mutating func takePollPayload(_ write: (UnsafeRawBufferPointer) -> Void) {
        pollHeld = false
        var payload = takeScratch()
        defer { giveBack(payload) }
        if transport == .polling {
            Self.forEach(in: outbox) { kind, bytes in
                if !payload.isEmpty { payload.append(0x1E) }
                if kind == Self.textRecord {
                    payload.append(contentsOf: bytes)
                } else {
                    payload.append(UInt8(ascii: "b"))
                    let at = payload.count
                    payload.append(contentsOf: repeatElement(0, count: Base64.encodedCount(bytes.count)))
                    let n = payload.withUnsafeMutableBytes { Base64.encode(bytes, into: UnsafeMutableRawBufferPointer(rebasing: $0[at...])) }
                    payload.removeLast(payload.count - at - (n ?? 0))
                }
            }
            clearOutbox()
        }
        if noopDue || payload.isEmpty {
            noopDue = false
            if !payload.isEmpty { payload.append(0x1E) }
            payload.append(UInt8(ascii: "6"))
        }
        payload.withUnsafeBytes { write($0) }
    }

    /// Hands every queued packet to `each` (binary?, bytes), in order, for the WebSocket: a text
    /// frame or a binary frame each. Only once the session is on its WebSocket.
    public mutating func drainWebSocket(_ each: (_ binary: Bool, _ bytes: UnsafeRawBufferPointer) -> Void) {
        guard transport == .webSocket else { return }
        Self.forEach(in: outbox) { kind, bytes in each(kind == Self.binaryRecord, bytes) }
        clearOutbox()
    }

    /// Calls `each` for every packet queued in `outbox`.
    static func forEach(in outbox: [UInt8], _ each: (UInt8, UnsafeRawBufferPointer) -> Void) {
        outbox.withUnsafeBytes { all in
            var i = 0
            while i + 5 <= all.count {
                let n = Int(all[i + 1]) << 24 | Int(all[i + 2]) << 16 | Int(all[i + 3]) << 8 | Int(all[i + 4])
                guard i + 5 + n <= all.count else { break }
                each(all[i], UnsafeRawBufferPointer(rebasing: all[(i + 5)..<(i + 5 + n)]))
                i += 5 + n
            }
        }
    }

    mutating func clearOutbox() {
        outboxPackets = 0
        // A burst's capacity is given back; a small one is kept for the next.
        if outbox.capacity > 4096 { outbox = [] } else { outbox.removeAll(keepingCapacity: true) }
    }

    /// The scratch buffer, emptied, taken out of `self` (so building in it while queueing is no
    /// overlapping access); `giveBack` it after.
    mutating func takeScratch() -> [UInt8] {
        var s: [UInt8] = []
        swap(&s, &scratch)
        s.removeAll(keepingCapacity: true)
        return s
    }

    /// Keeps a small scratch for next time; a burst's capacity is given back.
    mutating func giveBack(_ s: [UInt8]) {
        if s.capacity <= 4096 { scratch = s }
    }
}
