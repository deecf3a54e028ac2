import StampedeLoop
import StampedeSession
import StampedeWire

extension SocketIOServer {
    static let tokenPath = try? JSONPath(parsing: "$.token")
    static let joinRoomPath = try? JSONPath(parsing: "$[1]")
    static let sayRoomPath = try? JSONPath(parsing: "$[1].room")
    static let mainNamespace: [UInt8] = [UInt8(ascii: "/")]

    static func namespaceName(_ range: Range<Int>?, _ buffer: UnsafeRawBufferPointer) -> [UInt8] {
        range.map { Array(buffer[$0]) } ?? mainNamespace
    }

    // MARK: Namespaces

    /// A CONNECT: accepted (and the namespace joined) unless a token is configured and the auth
    /// lacks it.
    func connect(_ c: SocketIOClient, namespace: Range<Int>?, auth: Range<Int>, _ buffer: UnsafeRawBufferPointer) {
        let name = Self.namespaceName(namespace, buffer)
        if let tokenBytes {
            let authBytes = UnsafeRawBufferPointer(rebasing: buffer[auth])
            let given = Self.tokenPath?.value(in: authBytes)
            guard let given, authBytes[given].elementsEqual(tokenBytes) else {
                statistics.connectErrors += 1
                sent(c, c.session.refuseConnect(namespace: name, message: Array("not authorized".utf8)))
                return
            }
        }
        statistics.namespaceConnects += 1
        _ = rooms.join(SocketIORooms.namespaceKey(name), c)
        sent(c, c.session.acceptConnect(namespace: name, socketID: randomID()))
    }

    /// A packet queued by the session itself: only an overflow needs acting on.
    func sent(_ c: SocketIOClient, _ result: SocketIOServerSession.SendResult) {
        if result == .overflow { endClient(c, .outputOverflow) }
    }

    // MARK: Events

    /// An EVENT or ACK (binary ones with their attachments) on a connected namespace.
    func received(_ c: SocketIOClient, _ packet: SocketIOPacket, _ buffer: UnsafeRawBufferPointer, attachments: [[UInt8]]) {
        if !attachments.isEmpty { statistics.binaryPackets += 1 }
        guard packet.type == .event || packet.type == .binaryEvent else {
            statistics.acksReceived += 1
            return
        }
        statistics.eventsReceived += 1
        guard let nameRange = packet.eventName(in: buffer) else {
            statistics.packetsIgnored += 1
            return
        }
        let name = Self.namespaceName(packet.namespace, buffer)
        let data = UnsafeRawBufferPointer(rebasing: buffer[packet.data])
        // The arguments after the event name: `,a,b]` or `]` (past the name's closing quote).
        let afterName = min(nameRange.upperBound + 1, packet.data.upperBound)
        let rest = UnsafeRawBufferPointer(rebasing: buffer[afterName..<packet.data.upperBound])
        let event = UnsafeRawBufferPointer(rebasing: buffer[nameRange])
        if event.elementsEqual("join".utf8) {
            statistics.joins += 1
            if let r = Self.joinRoomPath?.value(in: data) {
                _ = rooms.join(SocketIORooms.roomKey(name, UnsafeRawBufferPointer(rebasing: data[r])), c)
            }
            if let id = packet.ackId { ackTrue(c, name, id) }
        } else if event.elementsEqual("say".utf8) {
            statistics.says += 1
            let room = Self.sayRoomPath?.value(in: data).map { UnsafeRawBufferPointer(rebasing: data[$0]) }
            broadcastSaid(namespace: name, room: room, arguments: rest, attachments: attachments, share: true)
            if let id = packet.ackId, !c.ended { ackTrue(c, name, id) }
        } else if let id = packet.ackId {
            echo(c, name, id, arguments: rest, attachments: attachments)
        }
    }

    func ackTrue(_ c: SocketIOClient, _ namespace: [UInt8], _ id: UInt64) {
        let data: StaticString = "[true]"
        sent(c, c.session.queueSocketIO(.ack, namespace: namespace, ackId: id,
                                         data: UnsafeRawBufferPointer(start: data.utf8Start, count: data.utf8CodeUnitCount)))
        statistics.acksSent += 1
    }

    /// Acks with the event's own arguments (and attachments).
    func echo(_ c: SocketIOClient, _ namespace: [UInt8], _ id: UInt64, arguments rest: UnsafeRawBufferPointer, attachments: [[UInt8]]) {
        var i = 0
        while i < rest.count, rest[i] == 0x20 || rest[i] == 0x09 || rest[i] == 0x0A || rest[i] == 0x0D { i += 1 }
        if i < rest.count, rest[i] == UInt8(ascii: ",") { i += 1 }
        let array = [UInt8(ascii: "[")] + Array(rest[i...])
        let result = array.withUnsafeBytes {
            c.session.queueSocketIO(attachments.isEmpty ? .ack : .binaryAck, attachments: attachments.count, namespace: namespace, ackId: id, data: $0)
        }
        guard result != .overflow else { return endClient(c, .outputOverflow) }
        for a in attachments { guard deliver(c, a, binary: true) else { return } }
        statistics.acksSent += 1
    }

    // MARK: Broadcasts

    /// `said` with the arguments of a `say` (`rest`: `,args…]`) to the room's members, or the
    /// namespace's; each receiver's copy is the same bytes, built once. `share`: hand it to the
    /// other server processes too.
    func broadcastSaid(namespace: [UInt8], room: UnsafeRawBufferPointer?, arguments rest: UnsafeRawBufferPointer,
                       attachments: [[UInt8]], share: Bool) {
        var packet = scratch
        scratch = []
        defer { scratch = packet.capacity <= 64 * 1024 ? packet : [] }
        packet.removeAll(keepingCapacity: true)
        packet.append(contentsOf: repeatElement(0, count: 32 + namespace.count))
        let n = packet.withUnsafeMutableBytes { out -> Int? in
            out[0] = UInt8(ascii: "4")
            return SocketIOPacketWriter.writeHead(attachments.isEmpty ? .event : .binaryEvent, attachments: attachments.count, namespace: namespace,
                                                  ackId: nil, into: UnsafeMutableRawBufferPointer(rebasing: out[1...]))
        }
        guard let n else { return }
        packet.removeLast(packet.count - 1 - n)
        packet.append(contentsOf: #"["said""#.utf8)
        packet.append(contentsOf: rest)
        let key = room.map { SocketIORooms.roomKey(namespace, $0) } ?? SocketIORooms.namespaceKey(namespace)
        packet.withUnsafeBytes { text in
            if share, let remoteBroadcast {
                var record: [UInt8] = []
                SocketIOBackplane.record(namespace: namespace, room: room, text: text, attachments: attachments, into: &record)
                // A record past the link's limit would break the link: such a broadcast (only
                // possible with --max-payload over 1 MB) stays in this process, and is counted.
                if record.count <= LinkRecord.maxPayload {
                    record.withUnsafeBytes { remoteBroadcast($0) }
                } else {
                    statistics.broadcastsNotShared += 1
                }
            }
            deliverBroadcast(key, text: text, attachments: attachments)
        }
        statistics.broadcasts += 1
    }

    /// Sends a built broadcast to every member of `key` here.
    func deliverBroadcast(_ key: [UInt8], text: UnsafeRawBufferPointer, attachments: [[UInt8]]) {
        guard let members = rooms.members[key] else { return }
        for slot in members {
            guard slot < clients.count, let c = clients[slot], !c.ended, deliver(c, text, binary: false) else { continue }
            var ok = true
            for a in attachments where ok { ok = a.withUnsafeBytes { deliver(c, $0, binary: true) } }
            if ok {
                statistics.packetsBroadcast += 1
                flush(c)
            }
        }
    }

    /// One packet for `c`: a frame now, or queued (its poll or WebSocket takes it). False when
    /// the session ended (an overflow) or had.
    @discardableResult
    func deliver(_ c: SocketIOClient, _ bytes: UnsafeRawBufferPointer, binary: Bool) -> Bool {
        switch binary ? c.session.sendBinary(bytes) : c.session.sendText(bytes) {
        case .writeNow:
            if let ws = c.webSocket { writeFrame(ws, binary ? .binary : .text, bytes) }
            return true
        case .queued:
            return true
        case .overflow:
            endClient(c, .outputOverflow)
            return false
        case .notSent:
            return false
        }
    }

    func deliver(_ c: SocketIOClient, _ bytes: [UInt8], binary: Bool) -> Bool {
        bytes.withUnsafeBytes { deliver(c, $0, binary: binary) }
    }
}
