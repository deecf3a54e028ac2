import StampedeWire

/// The server side of one WebSocket connection (RFC 6455) after the server's own routing
/// accepted the upgrade and wrote the 101: frames (masked, §5.1), pings, the close handshake
/// and every way the connection can end. It never does I/O, reads no clock and never allocates
/// (except the reassembly buffer of fragmented messages, whose capacity is kept).
///
/// Intended use in a reference server (ChatServer, HubServer):
/// 1. After writing the 101, create `WebSocketServerSession(maxMessageBytes:closeTimeoutNs:)`
///    and keep it in the connection's record; feed it the bytes after the request head.
/// 2. On every read, call `next(_:now:)`, carry out the action, drop `consumed` bytes, and ask
///    again until `.needMore`:
///    - `.message` / `.assembledMessage`: the client's message (only while open);
///    - `.sendPong`: write an unmasked pong with that payload (only while open);
///    - `.closeTransport(send:end:)`: write the Close if any, then `closeAfterFlush` (the server
///      closes TCP first, §7.1.1); the session has ended with `end`.
/// 3. To close (a drop fault, the hub ending a connection): `close(code:reason:now:)` answers
///    `.closing(send:deadline:)`: write the Close, `shutdownWriteAfterFlush`, keep reading for
///    the client's answer, and call `timerFired(deadline:)` at `deadline` when one is given
///    (configured `closeTimeoutNs`; nil: the server bounds the wait its own way, e.g. one timer
///    for a whole drop). With `waitForAnswer: false` it answers `.closeTransport` at once.
/// 4. `transportClosed(_:)` when the loop reports TCP gone, `abort()` when the server drops it.
///
/// A failure found while our own Close is unanswered still ends as `.failed`; a server that
/// counts protocol errors only for clients it has not let go checks `state == .closing`
/// before calling `next`.
public struct WebSocketServerSession: Sendable {
    public enum State: UInt8, Sendable {
        case open
        /// Our Close is sent; the client's answer is due.
        case closing
        case ended
    }

    /// What the server does next. Ranges index the buffer given to `next`.
    public enum Action: Sendable, Equatable {
        /// Nothing (more) to act on in this input: drop `consumed` bytes and wait for a read.
        case needMore
        /// A whole message in one frame, unmasked in place (text already checked as UTF-8).
        case message(WebSocketOpcode, payload: Range<Int>)
        /// A fragmented message is complete: it is in `assembled`, until the next call.
        case assembledMessage(WebSocketOpcode)
        /// Answer a ping with a pong carrying this payload (§5.5.2).
        case sendPong(payload: Range<Int>)
        /// A pong arrived.
        case pong(payload: Range<Int>)
        /// Our Close: write it, stop writing once flushed, keep reading for the answer; report
        /// `timerFired(deadline:)` at `deadline` when one is given.
        case closing(send: WebSocketClosePayload, deadline: UInt64?)
        /// The handshake is over or the connection failed: write a Close with body `send` if
        /// any, then close TCP once flushed (§7.1.1). The session has ended with `end`.
        case closeTransport(send: WebSocketClosePayload?, end: End)
        /// The connection is over. `closeTransport`: close TCP now (otherwise it is gone already).
        case ended(End, closeTransport: Bool)
        /// The command changed nothing.
        case none
    }

    /// How the connection ended; every connection ends in exactly one of these.
    public enum End: Sendable, Equatable {
        /// The client's Close arrived (it closed first, or answered ours); its code, nil when
        /// the Close had no body.
        case peerClosed(code: UInt16?)
        /// Our Close went unanswered (the close timeout passed or TCP ended first), or we did
        /// not wait for the answer.
        case closedByUs(code: UInt16)
        /// We failed the connection (§7.1.7) with the failure's code (1002, 1007, 1009).
        case failed(WebSocketFailure)
        /// TCP ended with no Close either way (1006, §7.1.5).
        case lost(WebSocketTransportEnd)
        /// The server dropped TCP itself.
        case aborted
    }

    public private(set) var state: State = .open
    public private(set) var closeHandshake = WebSocketCloseHandshake(role: .server)
    /// Time the client gets to answer our Close; nil: the server bounds the wait itself.
    public let closeTimeoutNs: UInt64?
    /// The close deadline the session waits for; 0: none.
    public private(set) var deadline: UInt64 = 0
    @usableFromInline var receiver: WebSocketReceiver

    /// A session for a connection whose upgrade was just accepted.
    public init(maxMessageBytes: Int, closeTimeoutNs: UInt64? = nil) {
        receiver = WebSocketReceiver(role: .server, maxMessageBytes: maxMessageBytes)
        self.closeTimeoutNs = closeTimeoutNs
    }

    /// The reassembled fragmented message after `.assembledMessage`, valid until the next call.
    public var assembled: [UInt8] { receiver.assembled }

    // MARK: Commands

    /// We close with `code` (and a static `reason`). Ignored unless open.
    public mutating func close(code: UInt16, reason: StaticString = "", now: UInt64, waitForAnswer: Bool = true) -> Action {
        guard state == .open else { return .none }
        let s = closeHandshake.sending(code: code, reason: reason)
        guard let payload = s.send else { return .none }
        guard waitForAnswer else {
            end()
            return .closeTransport(send: payload, end: .closedByUs(code: code))
        }
        state = .closing
        var armed: UInt64? = nil
        if let closeTimeoutNs {
            deadline = now + closeTimeoutNs
            armed = deadline
        }
        return .closing(send: payload, deadline: armed)
    }

    /// TCP is gone (the loop saw it close).
    public mutating func transportClosed(_ how: WebSocketTransportEnd) -> Action {
        switch state {
        case .open:
            end()
            return .ended(.lost(how), closeTransport: false)
        case .closing:
            end()
            return .ended(handshakeEnd, closeTransport: false)
        case .ended:
            return .none
        }
    }

    /// The server dropped TCP itself (a reset fault, a limit).
    public mutating func abort() -> Action {
        guard state != .ended else { return .none }
        end()
        return .ended(.aborted, closeTransport: true)
    }

    /// The close timeout fired; one the session no longer waits for is ignored.
    public mutating func timerFired(deadline fired: UInt64) -> Action {
        guard state == .closing, deadline != 0, fired == deadline else { return .none }
        end()
        return .ended(handshakeEnd, closeTransport: true)
    }

    // MARK: Input

    /// The next action for the buffered input (see the type's use). Never allocates.
    public mutating func next(_ buffer: UnsafeMutableRawBufferPointer, now: UInt64) -> (action: Action, consumed: Int) {
        guard state != .ended else { return (.needMore, buffer.count) }
        switch receiver.nextStep(buffer, open: state == .open) {
        case .needMore(let consumed): return (.needMore, consumed)
        case .message(let opcode, let payload, let end): return (.message(opcode, payload: payload), end)
        case .assembledMessage(let opcode, let end): return (.assembledMessage(opcode), end)
        case .ping(let payload, let end): return (.sendPong(payload: payload), end)
        case .pong(let payload, let end): return (.pong(payload: payload), end)
        case .close(let code, _):
            // Echo (or our Close was the first): either way the handshake is over and the
            // server closes TCP first (§7.1.1).
            let s = closeHandshake.received(code: code)
            end()
            return (.closeTransport(send: s.send, end: .peerClosed(code: code)), buffer.count)
        case .fail(let failure):
            let s = closeHandshake.failed(failure)
            end()
            return (.closeTransport(send: s.send, end: .failed(failure)), buffer.count)
        }
    }

    // MARK: Ending

    /// How a connection that reached closing counts: the client's answer, a failure, or none.
    var handshakeEnd: End {
        if let failure = closeHandshake.failure { return .failed(failure) }
        if closeHandshake.closeReceived { return .peerClosed(code: closeHandshake.receivedCode) }
        return .closedByUs(code: closeHandshake.sent?.code ?? 1000)
    }

    mutating func end() {
        state = .ended
        deadline = 0
        receiver = WebSocketReceiver(role: .server, maxMessageBytes: 0)
    }
}
