import StampedeLoop
import StampedeWire

extension HubServer {
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
