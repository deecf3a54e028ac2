import StampedeWire

// Reading what the server sent, one Engine.IO packet at a time: the open packet, pings, the
// probe's answer, and the Socket.IO packets of our namespace (binary ones wait here for their
// attachments).

extension SocketIOClientSession {
    /// Reads one Engine.IO packet that arrived on `transport`: a text packet (a WebSocket text
    /// frame, or a polling record not starting with "b"), or, `binary`, a binary message's raw
    /// bytes (a WebSocket binary frame, or a polling record's decoded base64). Ranges in the
    /// answer index `packet`, except `.binary`'s, which index `binaryHead`.
    public mutating func receive(_ packet: UnsafeRawBufferPointer, binary: Bool, on transport: SocketIOTransport,
                                 now: UInt64) -> SocketIOClientAction {
        if assembly?.isComplete == true { assembly = nil }  // the last answer's storage
        guard phase != .ended else { return .skipped }
        dataReceived(now: now)
        if binary { return attachment(packet) }
        guard let (type, data) = EngineIOPacket.parseText(packet) else { return fail(.invalidEngineIOPacket) }
        if phase == .opening {
            guard type == .open, let o = EngineIOOpen.parse(UnsafeRawBufferPointer(rebasing: packet[data])) else { return end(.handshakeInvalid) }
            open = o
            phase = .open
            return .opened
        }
        switch type {
        case .open, .upgrade:
            return fail(.unexpectedEngineIOPacket)
        case .close:
            return end(.closedByServer)
        case .ping:
            // Engine.IO 4: the server pings, the client answers where its packets go now.
            return .sendPong(messageTransport ?? transport)
        case .pong:
            guard transport == .websocket, upgrade == .probing else { return .skipped }
            guard UnsafeRawBufferPointer(rebasing: packet[data]).elementsEqual("probe".utf8) else {
                upgrade = .failed
                return .probeFailed
            }
            upgrade = .pausing
            guard !pollInFlight && !postInFlight else { return .probeAnswered(upgradeNow: false) }
            upgrade = .upgraded
            return .probeAnswered(upgradeNow: true)
        case .noop:
            return .skipped
        case .message:
            return message(packet, data)
        }
    }

    /// A Socket.IO packet in an Engine.IO message.
    mutating func message(_ packet: UnsafeRawBufferPointer, _ data: Range<Int>) -> SocketIOClientAction {
        guard assembly == nil else { return fail(.attachmentsMissing) }
        let body = UnsafeRawBufferPointer(rebasing: packet[data])
        guard let p = SocketIOPacket.parse(body) else { return fail(.invalidSocketIOPacket) }
        guard p.namespaceIs(configuration.namespace, in: body) else { return .skipped }
        switch p.type {
        case .connect:
            guard phase == .open else { return fail(.unexpectedSocketIOPacket) }
            phase = .connected
            return .namespaceConnected
        case .connectError:
            guard phase == .open else { return fail(.unexpectedSocketIOPacket) }
            return end(.namespaceRefused(message: Self.errorMessage(body, p.data).map { $0.shifted(by: data.lowerBound) }))
        case .disconnect:
            return end(.disconnectedByServer)
        case .event, .ack:
            guard phase == .connected else { return fail(.unexpectedSocketIOPacket) }
            if p.type == .ack && p.ackId == nil { return fail(.invalidSocketIOPacket) }
            let shifted = p.shifted(by: data.lowerBound)
            return p.type == .event ? .event(shifted) : .ack(shifted)
        case .binaryEvent, .binaryAck:
            guard phase == .connected else { return fail(.unexpectedSocketIOPacket) }
            if p.type == .binaryAck && p.ackId == nil { return fail(.invalidSocketIOPacket) }
            guard p.attachments <= configuration.maxAttachments,
                  body.count <= configuration.maxAttachmentBytes else { return end(.messageTooBig) }
            assembly = SocketIOBinaryAssembly(head: Array(body), packet: p)
            return p.attachments == 0 ? .binary(p) : .skipped
        }
    }

    /// One binary attachment.
    mutating func attachment(_ bytes: UnsafeRawBufferPointer) -> SocketIOClientAction {
        if !isKnownUniquelyReferenced(&assembly) { assembly = assembly.map(SocketIOBinaryAssembly.init(copying:)) }
        guard phase == .connected, let b = assembly, !b.isComplete else { return fail(.unexpectedAttachment) }
        b.bytes += bytes.count
        guard b.bytes + b.head.count <= configuration.maxAttachmentBytes else { return end(.messageTooBig) }
        b.attachments.append(Array(bytes))
        b.due -= 1
        return b.isComplete ? .binary(b.packet) : .skipped
    }

    /// CONNECT_ERROR's message: `{"message":"…"}`'s string (Socket.IO 5), or a bare string (4.x
    /// servers of protocol 4); nil when neither.
    static func errorMessage(_ body: UnsafeRawBufferPointer, _ data: Range<Int>) -> Range<Int>? {
        guard !data.isEmpty else { return nil }
        let json = UnsafeRawBufferPointer(rebasing: body[data])
        if json[0] == UInt8(ascii: "\""), json.count >= 2, json[json.count - 1] == UInt8(ascii: "\"") {
            return (data.lowerBound + 1)..<(data.upperBound - 1)
        }
        guard json[0] == UInt8(ascii: "{"), let path = messagePath, let r = path.value(in: json) else { return nil }
        return r.shifted(by: data.lowerBound)
    }

    static let messagePath: JSONPath? = try? JSONPath(parsing: "$.message")

    mutating func fail(_ error: SocketIOProtocolError) -> SocketIOClientAction { end(.protocolError(error)) }

    mutating func end(_ how: SocketIOSessionEnd) -> SocketIOClientAction {
        endNow()
        return .ended(how)
    }
}

// `SocketIOPacket.shifted(by:)` is shared with the server session (SocketIOServerSession+Input.swift).
