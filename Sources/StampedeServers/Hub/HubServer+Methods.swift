import StampedeLoop
import StampedeWire

/// A string-or-null argument to relay: its encoded value, and its UTF-8 text (nil for null),
/// decoded only when a receiver needs the other encoding.
struct HubTextArgument {
    var encoded: Range<Int>
    var contents: Range<Int>?
}

extension HubServer {
    /// Server-to-client Invocations carry an empty stream-id list, as ASP.NET writes them: its
    /// MessagePack form then has all six items (signalrcore 1.0.2 fails on five); JSON omits it.
    static var noStreams: UnsafeBufferPointer<UInt64> { UnsafeBufferPointer(start: nil, count: 0) }

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
            shareBroadcast(p, buf, user: user, message: message, group: nil)
            let n = broadcastReceiveMessage(p, buf, user: user, message: message, to: members)
            statistics.messagesBroadcast += n
            if let id { completeVoid(p, c, id) }
        case .sendToGroup:
            guard let g = arg(0), let u = arg(1), let t = arg(2), let gc = P.stringContents(buf, value: g),
                  let user = textArgument(p, buf, u), let message = textArgument(p, buf, t) else { return bindingError() }
            let groupName = decoded(p, buf, gc, into: text)
            shareBroadcast(p, buf, user: user, message: message, group: groupName)
            if let gi = groups.find(groupName) {
                let recipients = groups.members(of: gi)
                let n = broadcastReceiveMessage(p, buf, user: user, message: message, to: recipients)
                statistics.messagesBroadcast += n
            }
            if let id { completeVoid(p, c, id) }
        case .joinGroup, .leaveGroup:
            guard let g = arg(0), let gc = P.stringContents(buf, value: g) else { return bindingError() }
            let groupName = decoded(p, buf, gc, into: text)
            if method == .joinGroup {
                guard c.groups.count < 1024 || groups.find(groupName) != nil else {
                    if let id { completeWithError(p, c, id, "Failed to invoke 'JoinGroup': too many groups on this connection.") }
                    return
                }
                groups.join(c, groupName)
            } else if let gi = groups.find(groupName) {
                groups.leave(c, gi)
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
}
