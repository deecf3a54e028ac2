import Foundation
import StampedeLoop
import StampedeWire

/// The methods of the test hub (matched ignoring ASCII case).
enum HubMethod {
    case sendMessage, echo, joinGroup, leaveGroup, sendToGroup, counter, askClient, upload

    init?(_ name: UnsafeRawBufferPointer) {
        switch name.count {
        case 4 where HubBytes.equalsIgnoringCase(name, "echo"): self = .echo
        case 6 where HubBytes.equalsIgnoringCase(name, "upload"): self = .upload
        case 7 where HubBytes.equalsIgnoringCase(name, "counter"): self = .counter
        case 9 where HubBytes.equalsIgnoringCase(name, "joingroup"): self = .joinGroup
        case 9 where HubBytes.equalsIgnoringCase(name, "askclient"): self = .askClient
        case 10 where HubBytes.equalsIgnoringCase(name, "leavegroup"): self = .leaveGroup
        case 11 where HubBytes.equalsIgnoringCase(name, "sendmessage"): self = .sendMessage
        case 11 where HubBytes.equalsIgnoringCase(name, "sendtogroup"): self = .sendToGroup
        default: return nil
        }
    }

    var name: String {
        switch self {
        case .sendMessage: "SendMessage"
        case .echo: "Echo"
        case .joinGroup: "JoinGroup"
        case .leaveGroup: "LeaveGroup"
        case .sendToGroup: "SendToGroup"
        case .counter: "Counter"
        case .askClient: "AskClient"
        case .upload: "Upload"
        }
    }

    var isStreaming: Bool { self == .counter }
}

struct HubHandshakeError: Error {
    var text: String
}

/// A string-or-null argument to relay: its encoded value, and its UTF-8 text (nil for null),
/// decoded only when a receiver needs the other encoding.
struct HubTextArgument {
    var encoded: Range<Int>
    var contents: Range<Int>?
}

/// One broadcast, encoded at most once per wire format and copied to every receiver.
final class HubBroadcast {
    let json = ByteBuffer()
    let messagePack = ByteBuffer()
    let webSocketText = ByteBuffer()
    let webSocketBinary = ByteBuffer()
    let sse = ByteBuffer()
    var hasJSON = false, hasMessagePack = false, hasWebSocketText = false, hasWebSocketBinary = false, hasSSE = false
    var sseChunkHeader = 0
    var failed = false

    func reset() {
        json.clear()
        messagePack.clear()
        webSocketText.clear()
        webSocketBinary.clear()
        sse.clear()
        hasJSON = false; hasMessagePack = false; hasWebSocketText = false; hasWebSocketBinary = false; hasSSE = false
        failed = false
    }
}

extension HubServer {
    /// Server-to-client Invocations carry an empty stream-id list, as ASP.NET writes them: its
    /// MessagePack form then has all six items (signalrcore 1.0.2 fails on five); JSON omits it.
    static var noStreams: UnsafeBufferPointer<UInt64> { UnsafeBufferPointer(start: nil, count: 0) }

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

    // MARK: Messages

    func handle<P: HubProtocolCodec>(_ p: P.Type, _ c: HubConnection, _ buf: UnsafeRawBufferPointer, _ m: HubMessage) {
        if let st = c.stateful, let t = m.messageType {
            switch t {
            case .ack:
                st.ack(m.sequenceId)
                return
            case .sequence:
                receivedSequence(c, st, m.sequenceId)
                return
            case .invocation, .streamItem, .completion, .streamInvocation, .cancelInvocation:
                guard acceptNumbered(c, st) else { return }
            case .ping, .close:
                break
            }
        }
        switch m.messageType {
        case .invocation?: invoke(p, c, buf, m, streaming: false)
        case .streamInvocation?: invoke(p, c, buf, m, streaming: true)
        case .streamItem?: uploadItem(p, c, buf, m)
        case .completion?: completionFromClient(p, c, buf, m)
        case .cancelInvocation?: cancelStream(p, c, buf, m)
        case .close?: endConnection(c, close: nil)
        case .ping?, .ack?, .sequence?, nil: break
        }
    }

    /// String contents as UTF-8: MessagePack payloads as they are, JSON contents unescaped
    /// into `scratch` at `offset` when they hold an escape.
    func decoded<P: HubProtocolCodec>(_ p: P.Type, _ buf: UnsafeRawBufferPointer, _ contents: Range<Int>,
                                      into scratch: HubScratch, at offset: Int = 0) -> UnsafeRawBufferPointer {
        let raw = UnsafeRawBufferPointer(rebasing: buf[contents])
        guard P.self == JSONHubProtocol.self, HubBytes.hasBackslash(raw) else { return raw }
        scratch.ensure(offset + raw.count)
        let room = UnsafeMutableRawBufferPointer(rebasing: scratch.buffer[offset..<(offset + raw.count)])
        guard let n = JSONHubProtocol.unescapeString(raw, into: room) else { return raw }
        return UnsafeRawBufferPointer(rebasing: room[0..<n])
    }

    func invoke<P: HubProtocolCodec>(_ p: P.Type, _ c: HubConnection, _ buf: UnsafeRawBufferPointer, _ m: HubMessage, streaming: Bool) {
        guard let targetRange = m.target, let args = m.arguments else { return }
        let id: UnsafeRawBufferPointer? = m.invocationId.map { decoded(p, buf, $0, into: idScratch) }
        let name = decoded(p, buf, targetRange, into: text)
        guard let method = HubMethod(name) else {
            statistics.invocations.unknown += 1
            if let id { completeWithError(p, c, id, "Unknown hub method '\(String(decoding: name, as: UTF8.self))'") }
            return
        }
        switch method {
        case .sendMessage: statistics.invocations.sendMessage += 1
        case .echo: statistics.invocations.echo += 1
        case .joinGroup: statistics.invocations.joinGroup += 1
        case .leaveGroup: statistics.invocations.leaveGroup += 1
        case .sendToGroup: statistics.invocations.sendToGroup += 1
        case .counter: statistics.invocations.counter += 1
        case .askClient: statistics.invocations.askClient += 1
        case .upload: statistics.invocations.upload += 1
        }
        if method.isStreaming != streaming {
            if let id {
                completeWithError(p, c, id, method.isStreaming
                    ? "The client attempted to invoke the streaming '\(method.name)' method with a non-streaming invocation."
                    : "The client attempted to invoke the non-streaming '\(method.name)' method with a streaming invocation.")
            }
            return
        }
        let argc = P.arrayCount(buf, array: args) ?? -1
        let streamCount = m.streamIds.map { P.arrayCount(buf, array: $0) ?? 0 } ?? 0
        let expectedStreams = method == .upload ? 1 : 0
        if streamCount != expectedStreams {
            if let id {
                completeWithError(p, c, id, "Failed to invoke '\(method.name)' due to an error on the server. HubException: Client sent \(streamCount) stream(s), Hub method expects \(expectedStreams).")
            }
            return
        }
        let expectedArgs: Int
        switch method {
        case .sendMessage, .counter: expectedArgs = 2
        case .sendToGroup: expectedArgs = 3
        case .upload: expectedArgs = 0
        case .echo, .joinGroup, .leaveGroup, .askClient: expectedArgs = 1
        }
        guard argc == expectedArgs else {
            if let id {
                completeWithError(p, c, id, "Failed to invoke '\(method.name)' due to an error on the server. InvalidDataException: Invocation provides \(max(argc, 0)) argument(s) but target expects \(expectedArgs).")
            }
            return
        }
        func arg(_ k: Int) -> Range<Int>? { P.arrayElement(buf, array: args, at: k) }
        func bindingError() {
            if let id {
                completeWithError(p, c, id, "Failed to invoke '\(method.name)' due to an error on the server. InvalidDataException: Error binding arguments. Make sure that the types of the provided values match the types of the hub method being invoked.")
            }
        }
        switch method {
        case .echo:
            guard let a = arg(0) else { return bindingError() }
            if let id { completeWithResult(p, c, id, UnsafeRawBufferPointer(rebasing: buf[a])) }
        case .sendMessage:
            guard let u = arg(0), let t = arg(1), let user = textArgument(p, buf, u), let message = textArgument(p, buf, t) else { return bindingError() }
            let n = broadcastReceiveMessage(p, buf, user: user, message: message, to: members)
            statistics.messagesBroadcast += n
            if let id { completeVoid(p, c, id) }
        case .sendToGroup:
            guard let g = arg(0), let u = arg(1), let t = arg(2), let gc = P.stringContents(buf, value: g),
                  let user = textArgument(p, buf, u), let message = textArgument(p, buf, t) else { return bindingError() }
            let groupName = decoded(p, buf, gc, into: text)
            if let gi = findGroup(groupName) {
                let recipients = groups[gi]!.members
                let n = broadcastReceiveMessage(p, buf, user: user, message: message, to: recipients)
                statistics.messagesBroadcast += n
            }
            if let id { completeVoid(p, c, id) }
        case .joinGroup, .leaveGroup:
            guard let g = arg(0), let gc = P.stringContents(buf, value: g) else { return bindingError() }
            let groupName = decoded(p, buf, gc, into: text)
            if method == .joinGroup {
                guard c.groups.count < 1024 || findGroup(groupName) != nil else {
                    if let id { completeWithError(p, c, id, "Failed to invoke 'JoinGroup': too many groups on this connection.") }
                    return
                }
                joinGroup(c, groupName)
            } else if let gi = findGroup(groupName) {
                leaveGroup(c, gi)
            }
            if let id { completeVoid(p, c, id) }
        case .counter:
            guard let id, let a = arg(0), let b = arg(1), let count = P.int64(buf, value: a), let delay = P.int64(buf, value: b) else {
                return bindingError()
            }
            startCounter(c, id: id, count: count, delayMs: delay)
        case .askClient:
            guard let a = arg(0) else { return bindingError() }
            guard c.clientResults.count < 1024 else {
                if let id { completeWithError(p, c, id, "Failed to invoke 'AskClient': too many client results pending.") }
                return
            }
            let serverId = c.nextServerInvocationId
            c.nextServerInvocationId += 1
            c.clientResults.append(HubClientResultWait(serverId: serverId, callerId: id.map { Array($0) }))
            let question = UnsafeRawBufferPointer(rebasing: buf[a])
            if let msg = out.write({ P.writeInvocation(into: $0, invocationId: .number(serverId), target: "GetClientResult", streamIds: Self.noStreams) { $0.raw(question) } }) {
                send(c, msg)
            }
        case .upload:
            guard let ids = m.streamIds, let s = P.arrayElement(buf, array: ids, at: 0), let sc = P.stringContents(buf, value: s) else {
                return bindingError()
            }
            let streamId = decoded(p, buf, sc, into: text)
            guard c.uploads.count < 1024, !c.uploads.contains(where: { HubBytes.equals(streamId, $0.streamId) }) else {
                if let id { completeWithError(p, c, id, "Failed to invoke 'Upload': stream id already in use or too many streams.") }
                return
            }
            c.uploads.append(HubUpload(streamId: Array(streamId), callerId: id.map { Array($0) }))
        }
    }

    /// A string or null argument; nil for anything else (a binding error). MessagePack text is
    /// checked for UTF-8, since a JSON receiver may get it.
    func textArgument<P: HubProtocolCodec>(_ p: P.Type, _ buf: UnsafeRawBufferPointer, _ value: Range<Int>) -> HubTextArgument? {
        if let contents = P.stringContents(buf, value: value) {
            if P.self == MessagePackHubProtocol.self && !UTF8Validator.isValid(UnsafeRawBufferPointer(rebasing: buf[contents])) { return nil }
            return HubTextArgument(encoded: value, contents: contents)
        }
        let isNull = P.self == JSONHubProtocol.self
            ? value.count == 4 && buf[value.lowerBound] == 0x6E  // "null" (the codec validated the JSON)
            : value.count == 1 && buf[value.lowerBound] == 0xC0
        return isNull ? HubTextArgument(encoded: value, contents: nil) : nil
    }

    // MARK: Completions

    func completeVoid<P: HubProtocolCodec>(_ p: P.Type, _ c: HubConnection, _ id: UnsafeRawBufferPointer) {
        guard let m = out.write({ P.writeCompletion(into: $0, invocationId: .utf8(id)) }) else { return }
        statistics.completionsSent += 1
        send(c, m)
    }

    func completeWithResult<P: HubProtocolCodec>(_ p: P.Type, _ c: HubConnection, _ id: UnsafeRawBufferPointer, _ raw: UnsafeRawBufferPointer) {
        guard let m = out.write({ P.writeCompletion(into: $0, invocationId: .utf8(id)) { $0.raw(raw) } }) else { return }
        statistics.completionsSent += 1
        send(c, m)
    }

    func completeWithError<P: HubProtocolCodec>(_ p: P.Type, _ c: HubConnection, _ id: UnsafeRawBufferPointer, _ error: UnsafeRawBufferPointer) {
        guard let m = out.write({ P.writeCompletion(into: $0, invocationId: .utf8(id), error: .utf8(error)) }) else { return }
        statistics.completionsSent += 1
        send(c, m)
    }

    func completeWithError<P: HubProtocolCodec>(_ p: P.Type, _ c: HubConnection, _ id: UnsafeRawBufferPointer, _ error: String) {
        var e = error
        e.withUTF8 { completeWithError(p, c, id, UnsafeRawBufferPointer($0)) }
    }

    /// Completions and stream items for things the client started (uploads) or answered
    /// (client results).
    func completionFromClient<P: HubProtocolCodec>(_ p: P.Type, _ c: HubConnection, _ buf: UnsafeRawBufferPointer, _ m: HubMessage) {
        guard let idRange = m.invocationId else { return }
        let id = decoded(p, buf, idRange, into: idScratch)
        if let k = c.uploads.firstIndex(where: { HubBytes.equals(id, $0.streamId) }) {
            let upload = c.uploads.remove(at: k)
            statistics.uploadsCompleted += 1
            guard let caller = upload.callerId else { return }
            caller.withUnsafeBytes { callerId in
                if let e = m.error {
                    let reason = "Stream errored by client: '" + String(decoding: decoded(p, buf, e, into: text), as: UTF8.self) + "'"
                    completeWithError(p, c, callerId, reason)
                } else {
                    let items = upload.items
                    guard let msg = out.write({ P.writeCompletion(into: $0, invocationId: .utf8(callerId)) { $0.int(items) } }) else { return }
                    statistics.completionsSent += 1
                    send(c, msg)
                }
            }
            return
        }
        guard let serverId = HubInvocationID.decimalValue(id),
              let k = c.clientResults.firstIndex(where: { $0.serverId == serverId }) else { return }  // unknown id: ignored
        let wait = c.clientResults.remove(at: k)
        statistics.clientResults += 1
        if m.error != nil { statistics.clientResultErrors += 1 }
        guard let caller = wait.callerId else { return }
        caller.withUnsafeBytes { callerId in
            if let e = m.error {
                completeWithError(p, c, callerId, decoded(p, buf, e, into: text))
            } else if let r = m.result {
                completeWithResult(p, c, callerId, UnsafeRawBufferPointer(rebasing: buf[r]))
            } else {
                completeVoid(p, c, callerId)
            }
        }
    }

    func uploadItem<P: HubProtocolCodec>(_ p: P.Type, _ c: HubConnection, _ buf: UnsafeRawBufferPointer, _ m: HubMessage) {
        guard let idRange = m.invocationId else { return }
        let id = decoded(p, buf, idRange, into: idScratch)
        guard let k = c.uploads.firstIndex(where: { HubBytes.equals(id, $0.streamId) }) else { return }
        c.uploads[k].items += 1
        statistics.uploadItemsReceived += 1
    }

    // MARK: Counter streams

    func startCounter(_ c: HubConnection, id: UnsafeRawBufferPointer, count: Int64, delayMs: Int64) {
        let index: Int
        if let free = freeStreams.popLast() {
            index = free
        } else {
            index = streams.count
            streams.append(HubOutStream())
        }
        streams[index].active = true
        streams[index].connection = c
        streams[index].invocationId = Array(id)
        streams[index].next = 0
        streams[index].count = max(0, count)
        streams[index].delayNs = UInt64(max(0, min(delayMs, 86_400_000))) * 1_000_000
        c.streams.append(index)
        streamTick(index, generation: streams[index].generation, deadline: EventLoop.now())
    }

    func freeStream(_ index: Int) {
        guard streams[index].active else { return }
        streams[index].active = false
        streams[index].connection = nil
        streams[index].invocationId = []
        streams[index].generation &+= 1
        freeStreams.append(index)
    }

    func streamTick(_ index: Int, generation: UInt32, deadline: UInt64) {
        guard index < streams.count, streams[index].active, streams[index].generation == generation,
              let c = streams[index].connection, c.isActive else { return }
        var budget = streams[index].delayNs == 0 ? 256 : 1
        while budget > 0 && streams[index].next < streams[index].count {
            let value = streams[index].next
            streams[index].next += 1
            budget -= 1
            let invocationId = streams[index].invocationId
            invocationId.withUnsafeBytes { id in
                let m: UnsafeRawBufferPointer?
                switch c.proto {
                case .json: m = out.write { JSONHubProtocol.writeStreamItem(into: $0, invocationId: .utf8(id)) { $0.int(value) } }
                case .messagePack: m = out.write { MessagePackHubProtocol.writeStreamItem(into: $0, invocationId: .utf8(id)) { $0.int(value) } }
                }
                if let m {
                    statistics.streamItemsSent += 1
                    send(c, m)
                }
            }
        }
        if streams[index].next >= streams[index].count {
            let id = streams[index].invocationId
            finishStream(c, index)
            id.withUnsafeBytes { id in
                switch c.proto {
                case .json: completeVoid(JSONHubProtocol.self, c, id)
                case .messagePack: completeVoid(MessagePackHubProtocol.self, c, id)
                }
            }
            return
        }
        let next = streams[index].delayNs == 0 ? EventLoop.now() : deadline + streams[index].delayNs
        loop.schedule(at: next, token: TimerToken(HubTimer.stream, slot: index, epoch: generation))
    }

    func finishStream(_ c: HubConnection, _ index: Int) {
        if let k = c.streams.firstIndex(of: index) { c.streams.remove(at: k) }
        freeStream(index)
    }

    /// CancelInvocation: stops a Counter; like ASP.NET, a Completion (without error) follows.
    func cancelStream<P: HubProtocolCodec>(_ p: P.Type, _ c: HubConnection, _ buf: UnsafeRawBufferPointer, _ m: HubMessage) {
        guard let idRange = m.invocationId else { return }
        let id = decoded(p, buf, idRange, into: idScratch)
        guard let index = c.streams.first(where: { HubBytes.equals(id, streams[$0].invocationId) }) else { return }
        statistics.streamsCanceled += 1
        finishStream(c, index)
        completeVoid(p, c, id)
    }

    // MARK: Groups

    func findGroup(_ name: UnsafeRawBufferPointer) -> Int? {
        guard var g = groupsByHash[HubBytes.hash(name)] else { return nil }
        while g >= 0 {
            if HubBytes.equals(name, groups[g]!.name) { return g }
            g = groups[g]!.nextSameHash
        }
        return nil
    }

    func joinGroup(_ c: HubConnection, _ name: UnsafeRawBufferPointer) {
        let g: Int
        if let existing = findGroup(name) {
            g = existing
            if c.groups.contains(where: { $0.group == g }) { return }
        } else {
            let h = HubBytes.hash(name)
            var group = HubGroup(name: Array(name), hash: h)
            group.nextSameHash = groupsByHash[h] ?? -1
            if let free = freeGroups.popLast() {
                g = free
                groups[g] = group
            } else {
                g = groups.count
                groups.append(group)
            }
            groupsByHash[h] = g
        }
        groups[g]!.members.append(c)
        c.groups.append(HubMembership(group: g, position: groups[g]!.members.count - 1))
    }

    func leaveGroup(_ c: HubConnection, _ g: Int) {
        guard let k = c.groups.firstIndex(where: { $0.group == g }) else { return }
        let position = c.groups[k].position
        c.groups[k] = c.groups[c.groups.count - 1]
        c.groups.removeLast()
        let last = groups[g]!.members.removeLast()
        if position < groups[g]!.members.count {
            groups[g]!.members[position] = last
            if let j = last.groups.firstIndex(where: { $0.group == g }) { last.groups[j].position = position }
        }
        if groups[g]!.members.isEmpty { deleteGroup(g) }
    }

    func deleteGroup(_ g: Int) {
        let h = groups[g]!.hash
        let next = groups[g]!.nextSameHash
        if groupsByHash[h] == g {
            if next >= 0 { groupsByHash[h] = next } else { groupsByHash[h] = nil }
        } else if var p = groupsByHash[h] {
            while p >= 0 {
                if groups[p]!.nextSameHash == g {
                    groups[p]!.nextSameHash = next
                    break
                }
                p = groups[p]!.nextSameHash
            }
        }
        groups[g] = nil
        freeGroups.append(g)
    }

    // MARK: Broadcast

    /// Queues ReceiveMessage(user, message) on every active receiver; returns how many.
    func broadcastReceiveMessage<P: HubProtocolCodec>(_ p: P.Type, _ buf: UnsafeRawBufferPointer, user: HubTextArgument,
                                                      message: HubTextArgument, to recipients: [HubConnection]) -> Int {
        let b = broadcast
        b.reset()
        let sourceIsJSON = P.self == JSONHubProtocol.self
        var texts: (user: UnsafeRawBufferPointer?, message: UnsafeRawBufferPointer?)? = nil
        /// The UTF-8 of both arguments, for the other encoding (decoded once).
        func decodedTexts() -> (user: UnsafeRawBufferPointer?, message: UnsafeRawBufferPointer?) {
            if let texts { return texts }
            text.ensure(user.encoded.count + message.encoded.count)
            let u = user.contents.map { decoded(p, buf, $0, into: text, at: 0) }
            let m = message.contents.map { decoded(p, buf, $0, into: text, at: user.encoded.count) }
            texts = (u, m)
            return (u, m)
        }
        func build<Q: HubProtocolCodec>(_ q: Q.Type, into target: ByteBuffer) -> Bool {
            let same = (Q.self == JSONHubProtocol.self) == sourceIsJSON
            let estimate = 64 + (user.encoded.count + message.encoded.count) * (same ? 1 : 6)
            if same {
                let ur = UnsafeRawBufferPointer(rebasing: buf[user.encoded]), mr = UnsafeRawBufferPointer(rebasing: buf[message.encoded])
                return target.appendWriting(estimate: estimate) {
                    Q.writeInvocation(into: $0, invocationId: nil, target: "ReceiveMessage", streamIds: Self.noStreams) { w in w.raw(ur); w.raw(mr) }
                }
            }
            let t = decodedTexts()
            return target.appendWriting(estimate: estimate) {
                Q.writeInvocation(into: $0, invocationId: nil, target: "ReceiveMessage", streamIds: Self.noStreams) { w in
                    if let u = t.user { w.string(u) } else { w.null() }
                    if let m = t.message { w.string(m) } else { w.null() }
                }
            }
        }
        func jsonMessage() -> UnsafeRawBufferPointer? {
            if !b.hasJSON { b.hasJSON = build(JSONHubProtocol.self, into: b.json) }
            return b.hasJSON ? UnsafeRawBufferPointer(b.json.readable) : nil
        }
        func messagePackMessage() -> UnsafeRawBufferPointer? {
            if !b.hasMessagePack { b.hasMessagePack = build(MessagePackHubProtocol.self, into: b.messagePack) }
            return b.hasMessagePack ? UnsafeRawBufferPointer(b.messagePack.readable) : nil
        }
        func frame(_ payload: UnsafeRawBufferPointer, _ opcode: WebSocketOpcode, into target: ByteBuffer) {
            let h = WebSocketFrameCodec.headerLength(payloadLength: payload.count, masked: false)
            let out = target.reserve(h + payload.count)
            let n = WebSocketFrameCodec.writeHeader(into: out, fin: true, opcode: opcode, payloadLength: payload.count, maskKey: nil)
            if let base = payload.baseAddress { (out + n).copyMemory(from: base, byteCount: payload.count) }
            target.commit(n + payload.count)
        }
        let now = EventLoop.now()
        var delivered = 0
        for r in recipients {
            guard r.phase == .open, !r.disposed else { continue }
            guard let raw = r.proto == .json ? jsonMessage() : messagePackMessage() else { continue }
            if let st = r.stateful { recordStateful(r, st, raw) }
            switch r.transport {
            case .webSockets?:
                if let s = r.socket {
                    if r.proto == .json {
                        if !b.hasWebSocketText { frame(raw, .text, into: b.webSocketText); b.hasWebSocketText = true }
                        loop.write(s, UnsafeRawBufferPointer(b.webSocketText.readable))
                    } else {
                        if !b.hasWebSocketBinary { frame(raw, .binary, into: b.webSocketBinary); b.hasWebSocketBinary = true }
                        loop.write(s, UnsafeRawBufferPointer(b.webSocketBinary.readable))
                    }
                }
            case .serverSentEvents?:
                if let s = r.socket {
                    if !b.hasSSE {
                        // Chunk header, event, CRLF: close-delimited responses take the middle.
                        let event = SSEWriter.encodedCount(raw)
                        let total = HTTPResponseWriter.chunkLength(payloadCount: event)
                        let p = b.sse.reserve(total)
                        var w = HTTPByteWriter(UnsafeMutableRawBufferPointer(start: p, count: total))
                        w.appendHex(event)
                        w.append("\r\n")
                        b.sseChunkHeader = w.count
                        let e = SSEWriter.write(raw, into: UnsafeMutableRawBufferPointer(start: p + w.count, count: total - w.count)) ?? 0
                        (p + w.count + e).storeBytes(of: 0x0D, as: UInt8.self)
                        (p + w.count + e + 1).storeBytes(of: 0x0A, as: UInt8.self)
                        b.sse.commit(w.count + e + 2)
                        b.hasSSE = true
                    }
                    let all = UnsafeRawBufferPointer(b.sse.readable)
                    loop.write(s, r.sseChunked ? all : UnsafeRawBufferPointer(rebasing: all[b.sseChunkHeader..<(all.count - 2)]))
                }
            case .longPolling?:
                queueForPoll(r, raw)
            case nil:
                continue
            }
            r.lastSent = now
            delivered += 1
        }
        return delivered
    }
}
