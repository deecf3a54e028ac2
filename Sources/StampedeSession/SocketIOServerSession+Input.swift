import StampedeWire

extension SocketIOServerSession {
    // MARK: Polling bodies

    /// Reads the record of a POST body that starts at `start` (records are separated by 0x1E;
    /// `"b"` + base64 is a binary message). Call with `start` 0, act on the answer, and call again
    /// from `next` until it is `body.count` or the session has ended. Ranges index `body`.
    public mutating func post(_ body: UnsafeRawBufferPointer, from start: Int, now: UInt64) -> (action: Action, next: Int) {
        guard !isEnded else { return (.none, body.count) }
        // An empty body is one empty record: an error, like any empty record.
        guard start < body.count || body.isEmpty else { return (.none, body.count) }
        forgetAssembledPacket()
        if start == 0 && body.count > configuration.maxPayload { return (.ended(end(.payloadTooLarge)), body.count) }
        var i = start
        while i < body.count && body[i] != 0x1E { i += 1 }
        // After a separator that ends the body comes an empty record: point at the separator,
        // so the next call reads it (and fails) as it would any empty record.
        let next = i >= body.count ? body.count : i + 1 < body.count ? i + 1 : i
        guard i > start else { return (.ended(end(.protocolError(.badEnginePacket))), body.count) }
        if body[start] == UInt8(ascii: "b") {
            let text = UnsafeRawBufferPointer(rebasing: body[(start + 1)..<i])
            let action = decodeBinary(text)
            return (action, isEnded ? body.count : next)
        }
        let action = enginePacket(body, start..<i, now: now, onWebSocket: false)
        return (action, isEnded ? body.count : next)
    }

    /// Base64 of a polling binary record, decoded into a new attachment.
    mutating func decodeBinary(_ text: UnsafeRawBufferPointer) -> Action {
        var bytes = [UInt8](repeating: 0, count: text.count / 4 * 3 + 3)
        let n = bytes.withUnsafeMutableBytes { Base64.decode(text, into: $0) }
        guard let n else { return .ended(end(.protocolError(.badEnginePacket))) }
        bytes.removeLast(bytes.count - n)
        return binaryMessage(bytes)
    }

    // MARK: WebSocket messages

    /// One WebSocket message (a text frame is one Engine.IO packet, a binary frame one binary
    /// message). Ranges index `message`.
    public mutating func webSocketMessage(_ message: UnsafeRawBufferPointer, binary: Bool, now: UInt64) -> Action {
        guard !isEnded else { return .none }
        forgetAssembledPacket()
        if message.count > configuration.maxPayload { return .ended(end(.payloadTooLarge)) }
        if transport == .polling {
            // The upgrading WebSocket: `2probe`, then `5`; anything else fails the upgrade only.
            guard !binary, upgrade != .none, let (type, data) = EngineIOPacket.parseText(message) else { return failUpgrade() }
            let isProbe = data.count == 5 && message[data].elementsEqual("probe".utf8)
            switch (upgrade, type) {
            case (.attached, .ping) where isProbe:
                upgrade = .probed
                // The held poll gets a noop: the polling client stops polling (engine.io's `check`).
                // So does every GET that arrives later, until `5` (`poll`): the client polls on
                // until it reads `3probe`, and a poll held then would hold the upgrade with it.
                noopDue = true
                return .sendProbeAnswer
            case (.probed, .upgrade) where data.isEmpty:
                upgrade = .none
                transport = .webSocket
                if pollHeld { noopDue = true }
                return .upgraded
            default:
                return failUpgrade()
            }
        }
        if binary { return binaryMessage(Array(message)) }
        return enginePacket(message, 0..<message.count, now: now, onWebSocket: true)
    }

    /// The upgrade failed: the runtime closes the WebSocket, polling goes on.
    mutating func failUpgrade() -> Action {
        upgrade = .none
        return .upgradeFailed
    }

    // MARK: Engine.IO and Socket.IO packets

    /// One Engine.IO text packet at `range` of `buffer`.
    mutating func enginePacket(_ buffer: UnsafeRawBufferPointer, _ range: Range<Int>, now: UInt64, onWebSocket: Bool) -> Action {
        let packet = UnsafeRawBufferPointer(rebasing: buffer[range])
        guard let (type, local) = EngineIOPacket.parseText(packet) else { return .ended(end(.protocolError(.badEnginePacket))) }
        let data = (range.lowerBound + local.lowerBound)..<(range.lowerBound + local.upperBound)
        switch type {
        case .message:
            return socketIOPacket(buffer, data)
        case .pong:
            if pongDue {
                pongDue = false
                deadline = now &+ configuration.pingIntervalNs
            }
            return .none
        case .ping:
            // Engine.IO 3 clients ping; answering costs nothing.
            let payload = UnsafeRawBufferPointer(rebasing: buffer[data])
            return enqueueEngineText(.pong, payload) == .overflow ? .ended(.outputOverflow) : .none
        case .close:
            return .ended(end(.clientClosed))
        case .noop:
            return .none
        case .open, .upgrade:
            return .ended(end(.protocolError(.unexpectedEnginePacket)))
        }
    }

    /// A Socket.IO packet (an Engine.IO message's data) at `data` of `buffer`.
    mutating func socketIOPacket(_ buffer: UnsafeRawBufferPointer, _ data: Range<Int>) -> Action {
        let raw = UnsafeRawBufferPointer(rebasing: buffer[data])
        // Plain text while attachments are due breaks the packet being rebuilt (socket.io-parser).
        guard attachmentsDue == 0, let local = SocketIOPacket.parse(raw) else { return .ended(end(.protocolError(.badSocketPacket))) }
        let packet = local.shifted(by: data.lowerBound)
        switch local.type {
        case .connect:
            return .connectRequested(namespace: packet.namespace, auth: packet.data)
        case .disconnect:
            guard let i = connectedIndex(local, raw) else { return .ignored }
            namespaces.remove(at: i)
            return .disconnected(namespace: packet.namespace)
        case .event, .ack:
            return connectedIndex(local, raw) == nil ? .ignored : .packet(packet)
        case .binaryEvent, .binaryAck:
            guard local.attachments <= configuration.maxAttachments else { return .ended(end(.protocolError(.tooManyAttachments))) }
            guard local.attachments > 0 else { return connectedIndex(local, raw) == nil ? .ignored : .packet(packet) }
            binaryPacket = Array(raw)
            attachments = []
            attachments.reserveCapacity(local.attachments)
            attachmentsDue = local.attachments
            attachmentBytes = raw.count
            return .none
        case .connectError:
            return .ended(end(.protocolError(.badSocketPacket)))
        }
    }

    /// One binary message: the next attachment of the binary packet being rebuilt.
    mutating func binaryMessage(_ bytes: [UInt8]) -> Action {
        guard attachmentsDue > 0 else { return .ended(end(.protocolError(.unexpectedBinary))) }
        attachmentBytes += bytes.count
        guard attachmentBytes <= configuration.maxPayload else { return .ended(end(.payloadTooLarge)) }
        attachments.append(bytes)
        attachmentsDue -= 1
        guard attachmentsDue == 0 else { return .none }
        let parsed = binaryPacket.withUnsafeBytes { raw in SocketIOPacket.parse(raw).map { ($0, connectedIndex($0, raw) != nil) } }
        guard let (packet, connected) = parsed else { return .ended(end(.protocolError(.badSocketPacket))) }
        return connected ? .binaryPacket(packet) : .ignored
    }

    /// The index in `namespaces` of the packet's namespace, nil when not connected.
    func connectedIndex(_ packet: SocketIOPacket, _ raw: UnsafeRawBufferPointer) -> Int? {
        namespaces.firstIndex { packet.namespaceIs($0, in: raw) }
    }

    /// A completed binary packet is valid until the next input: drop it now.
    mutating func forgetAssembledPacket() {
        if attachmentsDue == 0 && !binaryPacket.isEmpty {
            binaryPacket = []
            attachments = []
        }
    }
}

extension SocketIOPacket {
    /// The packet with its ranges moved `offset` further into a buffer.
    func shifted(by offset: Int) -> SocketIOPacket {
        var p = self
        p.namespace = namespace.map { ($0.lowerBound + offset)..<($0.upperBound + offset) }
        p.data = (data.lowerBound + offset)..<(data.upperBound + offset)
        return p
    }
}
