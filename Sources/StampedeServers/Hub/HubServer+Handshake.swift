import Foundation
import StampedeLoop
import StampedeWire

struct HubHandshakeError: Error {
    var text: String
}

extension HubServer {
    // MARK: Input

    /// Bytes for a hub connection (a WebSocket message or a piece of a POST body). Messages may
    /// span pieces and one piece may hold several: incomplete tails wait in `inbound`.
    func feed(_ c: HubConnection, _ bytes: UnsafeRawBufferPointer) {
        guard c.isActive, !bytes.isEmpty else { return }
        c.lastReceived = EventLoop.now()
        if let inbound = c.inbound, !inbound.isEmpty {
            inbound.append(bytes)
            c.inbound = nil  // detached while its bytes are parsed
            let used = process(c, UnsafeRawBufferPointer(inbound.readable))
            guard c.isActive else { return }
            inbound.consume(used)
            inbound.shrinkIfIdle(limit: 64 * 1024)
            c.inbound = inbound
        } else {
            let used = process(c, bytes)
            guard c.isActive, used < bytes.count else { return }
            let inbound = c.inbound ?? ByteBuffer()
            c.inbound = inbound
            inbound.append(UnsafeRawBufferPointer(rebasing: bytes[used...]))
        }
    }

    /// Handles every complete message at the start of `buf`; returns the bytes used.
    func process(_ c: HubConnection, _ buf: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        if c.phase == .handshaking {
            guard let n = JSONHubProtocol.recordLength(buf) else {
                if buf.count > maxMessage {
                    statistics.protocolErrors += 1
                    handshakeFailed(c, "The maximum message size of \(maxMessage)B was exceeded. The message size can be configured in AddHubOptions.")
                    return buf.count
                }
                return 0
            }
            if n - 1 > maxMessage {
                statistics.protocolErrors += 1
                handshakeFailed(c, "The maximum message size of \(maxMessage)B was exceeded. The message size can be configured in AddHubOptions.")
                return buf.count
            }
            handshake(c, UnsafeRawBufferPointer(rebasing: buf[0..<(n - 1)]))
            guard c.isActive, c.phase == .open else { return buf.count }
            offset = n
        }
        switch c.proto {
        case .json: return processMessages(JSONHubProtocol.self, c, buf, from: offset)
        case .messagePack: return processMessages(MessagePackHubProtocol.self, c, buf, from: offset)
        }
    }

    func processMessages<P: HubProtocolCodec>(_ p: P.Type, _ c: HubConnection, _ buf: UnsafeRawBufferPointer, from start: Int) -> Int {
        var offset = start
        while offset < buf.count && c.isActive {
            let rest = UnsafeRawBufferPointer(rebasing: buf[offset...])
            switch P.parse(rest, maxMessageLength: maxMessage) {
            case .needMore:
                return offset
            case .failure(let e):
                protocolError(c, e)
                return buf.count
            case .message(let m, let consumed):
                offset += consumed
                statistics.messagesReceived += 1
                handle(p, c, rest, m)
            }
        }
        return c.isActive ? offset : buf.count
    }

    func protocolError(_ c: HubConnection, _ e: HubProtocolError) {
        statistics.protocolErrors += 1
        let text = e == .messageTooLarge
            ? "Connection closed with an error. InvalidDataException: The maximum message size of \(maxMessage)B was exceeded. The message size can be configured in AddHubOptions."
            : "Connection closed with an error. InvalidDataException: \(e.description)"
        endConnection(c, close: HubCloseInfo(error: text, allowReconnect: false))
    }

    // MARK: Handshake

    func handshake(_ c: HubConnection, _ record: UnsafeRawBufferPointer) {
        let request: (name: String, version: Int)
        switch Self.parseHandshakeRequest(record) {
        case .failure(let e):
            statistics.protocolErrors += 1
            handshakeFailed(c, e.text)
            return
        case .success(let r):
            request = r
        }
        let proto: HubConnection.Proto
        switch request.name {
        case "json": proto = .json
        case "messagepack": proto = .messagePack
        default:
            handshakeFailed(c, "The protocol '\(request.name)' is not supported.")
            return
        }
        guard request.version <= 2 else {
            handshakeFailed(c, "The server does not support version \(request.version) of the '\(request.name)' protocol.")
            return
        }
        if proto == .messagePack && c.transport == .serverSentEvents {
            handshakeFailed(c, "Cannot use the 'messagepack' protocol on the current transport. The transport does not support 'Binary' transfer format.")
            return
        }
        c.proto = proto
        if let m = out.write({ HubHandshake.writeResponse(into: $0) }) { send(c, m, numbered: false) }
        c.phase = .open
        c.handshakeDeadline = .max
        c.memberIndex = members.count
        members.append(c)
        statistics.handshakes += 1
        if proto == .json { statistics.handshakesJSON += 1 } else { statistics.handshakesMessagePack += 1 }
        if request.version >= 2 && c.statefulNegotiated && c.transport == .webSockets {
            c.stateful = HubStatefulState()
        }
        scheduleNext(c)
    }

    /// Answers `{"error":…}` and ends the connection.
    func handshakeFailed(_ c: HubConnection, _ text: String) {
        statistics.handshakeErrors += 1
        var t = text
        let m = t.withUTF8 { e in out.write { HubHandshake.writeResponse(into: $0, error: .utf8(UnsafeRawBufferPointer(e))) } }
        if let m { send(c, m, numbered: false) }
        endConnection(c, close: nil)
    }

    /// `{"protocol":"json","version":1}` (the 0x1E already cut off). Runs once per connection.
    static func parseHandshakeRequest(_ record: UnsafeRawBufferPointer) -> Result<(name: String, version: Int), HubHandshakeError> {
        let prefix = "An unexpected error occurred during connection handshake. InvalidDataException: "
        // Bound the nesting before handing the text to Foundation.
        var depth = 0, inString = false, escaped = false
        for b in record {
            if inString {
                if escaped { escaped = false } else if b == 0x5C { escaped = true } else if b == 0x22 { inString = false }
                continue
            }
            switch b {
            case 0x22: inString = true
            case 0x5B, 0x7B:
                depth += 1
                if depth > 32 { return .failure(HubHandshakeError(text: prefix + "Handshake request nests too deeply.")) }
            case 0x5D, 0x7D: depth -= 1
            default: break
            }
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(record), options: [])
        } catch {
            return .failure(HubHandshakeError(text: prefix + "Error reading JSON."))
        }
        guard let dict = object as? [String: Any] else { return .failure(HubHandshakeError(text: prefix + "Unexpected JSON Token Type. Expected a JSON Object.")) }
        guard let name = dict["protocol"] as? String else { return .failure(HubHandshakeError(text: prefix + "Missing required property 'protocol'.")) }
        // Booleans come back as NSNumber too; their Objective-C type is "c".
        guard let number = dict["version"] as? NSNumber, String(cString: number.objCType) != "c",
              let version = Int(exactly: number.doubleValue) else {
            return .failure(HubHandshakeError(text: prefix + "Missing required property 'version'."))
        }
        return .success((name, version))
    }
}
