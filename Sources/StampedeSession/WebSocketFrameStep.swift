import StampedeWire

/// What the frames at the start of a buffer call for, the same for both ends of a connection:
/// the one walk over received frames that `WebSocketClientSession` and `WebSocketServerSession`
/// turn into their own actions. Ranges index the whole buffer; `end` is where the frame that
/// produced the step ends (the bytes to consume with it).
enum WebSocketFrameStep {
    /// No complete frame at `consumed` (fragments and ignored frames before it are used up).
    case needMore(consumed: Int)
    case message(WebSocketOpcode, payload: Range<Int>, end: Int)
    /// The final fragment arrived; the message is in the receiver's `assembled`.
    case assembledMessage(WebSocketOpcode, end: Int)
    case ping(payload: Range<Int>, end: Int)
    case pong(payload: Range<Int>, end: Int)
    /// The peer's Close (`code` nil: no body; `reason` its reason text, UTF-8 checked); the rest
    /// of the input is discarded with it.
    case close(code: UInt16?, reason: Range<Int>)
    /// The connection must be failed (§7.1.7); the rest of the input is discarded with it.
    case fail(WebSocketFailure)
}

extension WebSocketReceiver {
    /// Reads frames until one calls for an action. Data frames and pings are acted on only while
    /// `open`: once our Close is sent, the peer's data is read and dropped (§5.5.1: we may not
    /// answer a ping after our Close, and the application asked to leave). Pongs and the
    /// peer's Close always count.
    @inline(__always)
    mutating func nextStep(_ buffer: UnsafeMutableRawBufferPointer, open: Bool) -> WebSocketFrameStep {
        var offset = 0
        while offset < buffer.count {
            let (event, consumed) = next(UnsafeMutableRawBufferPointer(rebasing: buffer[offset...]))
            let end = offset + consumed
            switch event {
            case .needMore: return .needMore(consumed: offset)
            case .fragment: break
            case .message(let opcode, let payload): if open { return .message(opcode, payload: payload.shifted(by: offset), end: end) }
            case .assembledMessage(let opcode): if open { return .assembledMessage(opcode, end: end) }
            case .ping(let payload): if open { return .ping(payload: payload.shifted(by: offset), end: end) }
            case .pong(let payload): return .pong(payload: payload.shifted(by: offset), end: end)
            case .close(let code, let reason): return .close(code: code, reason: reason.shifted(by: offset))
            case .fail(let failure): return .fail(failure)
            }
            offset = end
        }
        return .needMore(consumed: offset)
    }
}

extension Range where Bound == Int {
    /// The range moved `offset` further into a buffer.
    @inline(__always)
    func shifted(by offset: Int) -> Range<Int> { (lowerBound + offset)..<(upperBound + offset) }
}
