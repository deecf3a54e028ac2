import StampedeLoop
import StampedeSession
import StampedeWire

extension EventLoop {
    /// Queues one client WebSocket frame on `id`, built in place and masked with `key`
    /// (RFC 6455 §5.3: every client frame is masked). `fill` writes exactly `length` payload
    /// bytes. Returns the bytes queued.
    @inline(__always) @discardableResult
    func writeMaskedFrame(_ id: ConnectionID, opcode: WebSocketOpcode, fin: Bool = true, length: Int, key: UInt32,
                          fill: (UnsafeMutableRawPointer) -> Void) -> Int {
        let total = WebSocketFrameCodec.headerLength(payloadLength: length, masked: true) + length
        write(id, reserving: total) { out in
            let h = WebSocketFrameCodec.writeHeader(into: out, fin: fin, opcode: opcode, payloadLength: length, maskKey: key)
            fill(out + h)
            WebSocketFrameCodec.applyMask(UnsafeMutableRawBufferPointer(start: out + h, count: length), maskKey: key)
            return h + length
        }
        return total
    }

    /// Queues a masked client frame carrying a copy of `payload`.
    @inline(__always) @discardableResult
    func writeMaskedFrame(_ id: ConnectionID, opcode: WebSocketOpcode, fin: Bool = true, payload: UnsafeRawBufferPointer, key: UInt32) -> Int {
        writeMaskedFrame(id, opcode: opcode, fin: fin, length: payload.count, key: key) { out in
            if let base = payload.baseAddress { out.copyMemory(from: base, byteCount: payload.count) }
        }
    }
}

extension EventLoop {
    /// Queues the Close frame a close-handshake step calls for on `id`, if it has one, masked
    /// with `key`. Returns the bytes queued (0 when the step sends nothing).
    @discardableResult
    func writeMaskedClose(_ id: ConnectionID, _ step: WebSocketCloseHandshake.Step, key: UInt32) -> Int {
        guard let payload = step.send else { return 0 }
        return writeMaskedFrame(id, opcode: .close, length: payload.count, key: key) { payload.write(into: $0) }
    }
}
