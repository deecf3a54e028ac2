import StampedeLoop

extension RestServer {
    /// Releases responses held back by a `delay` fault.
    static let delayTimer = TimerToken(kind: 1)

    /// Writes a response through `body` (as `loop.write(_:reserving:_:)`), at once, or, under a
    /// `delay` fault, built now into a buffer of its own and written when the delay is over (if
    /// the connection is still there). The queue is FIFO, so pipelined answers keep their order.
    func emit(_ id: ConnectionID, reserving room: Int, _ body: (UnsafeMutableRawPointer) -> Int) {
        DelayLine.spin(delayLine.spinNs)
        guard delayLine.isActive else { return loop.write(id, reserving: room, body) }
        var bytes = [UInt8](repeating: 0, count: room)
        let n = bytes.withUnsafeMutableBytes { p in p.baseAddress.map { min(max(0, body($0)), room) } ?? 0 }
        bytes.removeLast(room - n)
        delayLine.submit(loop, token: Self.delayTimer) { [loop] in
            guard loop.isAlive(id) else { return }
            bytes.withUnsafeBytes { loop.write(id, $0) }
        }
    }

    /// Closes after what is queued, behind any held responses.
    func closeAfterResponses(_ id: ConnectionID) {
        guard delayLine.isActive else { return loop.closeAfterFlush(id) }
        delayLine.submit(loop, token: Self.delayTimer) { [loop] in
            if loop.isAlive(id) { loop.closeAfterFlush(id) }
        }
    }
}
