import StampedeWire

/// The close handshake of one WebSocket connection (RFC 6455 §5.5.1, §7.1) as a value type
/// beside `WebSocketReceiver`: it is told what happened (the peer's Close, our decision to
/// close, a failure) and answers what to send and what to do with TCP. It never does I/O and
/// never allocates. Both roles, every caller (the chat and hub clients and servers) use it, so
/// the close rules live here only:
///
/// - A Close is answered with a Close echoing its status code, or with an empty body when it had
///   none (§5.5.1); the peer's reason is not echoed.
/// - At most one Close is ever sent (§5.5.1: after sending one, the endpoint sends nothing more);
///   a second Close from the peer, or a failure after the handshake, is ignored.
/// - Failing the connection sends the failure's code (1002, 1007, 1009; §7.1.7, §7.4.1).
/// - Once both Close frames are exchanged (or after a failure) the server closes TCP first; the
///   client stops writing and waits for the server's FIN, bounded by a timer the caller owns
///   (§7.1.1). While our own Close is unanswered the caller keeps reading, also under its timer.
///
/// How a close counts (`outcome`), one rule for all: the peer's status code decides. 1000
/// (normal), 1001 (going away) and a Close without a code are clean; 1012 (service restart,
/// IANA registry) is a close the server chose, not an error; every other code is an error. A
/// failure we detected is its own outcome. A close we started that the peer ended without
/// answering is clean (we asked to leave, and left); no Close either way is abnormal (1006, §7.1.5).
public struct WebSocketCloseHandshake: Sendable, Equatable {
    public typealias Role = WebSocketReceiver.Role

    /// There is no lasting "close received" state: the answer is part of the same step (§5.5.1).
    public enum State: Sendable, Equatable {
        case open
        /// Our Close is sent; the peer's is due.
        case closeSent
        /// Both Close frames exchanged, or the connection failed: only TCP is left.
        case closed
    }

    /// What to do with TCP once `send` (if any) is written.
    public enum Transport: Sendable, Equatable {
        /// Nothing changes (an ignored event).
        case unchanged
        /// Keep reading until the peer's Close arrives; the caller bounds the wait.
        case awaitClose
        /// Close TCP once the output is flushed: the server closes first (§7.1.1).
        case close
        /// Stop writing once flushed and wait for the server's FIN (§7.1.1); the caller bounds
        /// the wait, then closes.
        case awaitFIN
    }

    public struct Step: Sendable, Equatable {
        /// A Close frame to send with this body, or nil to send none.
        public var send: WebSocketClosePayload?
        public var transport: Transport

        public static let ignore = Step(send: nil, transport: .unchanged)
    }

    /// How the connection ended, for metrics (see the type's rule).
    public enum Outcome: Sendable, Equatable {
        /// 1000, 1001, a Close without a code, or our own Close left unanswered.
        case clean(code: UInt16?)
        /// 1012: the server ended the session on purpose (a restart), not an error.
        case closedByServer(code: UInt16)
        /// The peer closed with any other code.
        case error(code: UInt16)
        /// We failed the connection (§7.1.7).
        case failed(WebSocketFailure)
        /// TCP ended with no Close sent or received (1006, §7.1.5).
        case abnormal
    }

    public let role: Role
    public private(set) var state: State = .open
    /// What we sent, once we sent a Close.
    public private(set) var sent: WebSocketClosePayload? = nil
    /// Whether the peer's Close arrived, and its code (nil: no body).
    public private(set) var closeReceived = false
    public private(set) var receivedCode: UInt16? = nil
    public private(set) var failure: WebSocketFailure? = nil
    /// The Close the peer started (not its answer to ours), with its reason: what the results
    /// count in `close_codes`. nil when the peer never started one.
    public var peerClose: WebSocketPeerClose? { peerReason.map { WebSocketPeerClose(code: receivedCode, reason: $0.text) } }
    /// The reason of a Close the peer started, behind one reference: every connection carries
    /// this record, and only a peer-started close needs the text (its code is `receivedCode`).
    private var peerReason: PeerCloseReason? = nil

    public init(role: Role) { self.role = role }

    /// The transport once the handshake is over: server closes, client waits for the FIN.
    var finished: Transport { role == .server ? .close : .awaitFIN }

    /// We close with `code` (and a static `reason`). Ignored once a Close was sent or the
    /// connection failed.
    public mutating func sending(code: UInt16, reason: StaticString = "") -> Step {
        guard state == .open else { return .ignore }
        let payload = WebSocketClosePayload(code: code, reason: reason)
        sent = payload
        state = .closeSent
        return Step(send: payload, transport: .awaitClose)
    }

    /// The peer's Close, as `WebSocketReceiver` reported it (`code` nil: empty body). `reason`
    /// is its reason text, when the caller wants it kept (a String: the one allocation, once
    /// per connection, and only when the peer starts the close).
    public mutating func received(code: UInt16?, reason: String = "") -> Step {
        switch state {
        case .closed:
            return .ignore
        case .closeSent:
            closeReceived = true
            receivedCode = code
            state = .closed
            return Step(send: nil, transport: finished)
        case .open:
            closeReceived = true
            receivedCode = code
            peerReason = PeerCloseReason(reason)
            state = .closed
            let echo = WebSocketClosePayload(code: code)
            sent = echo
            return Step(send: echo, transport: finished)
        }
    }

    /// The connection must be failed (§7.1.7): our Close carries the failure's code, unless
    /// one was sent already. Ignored after the handshake finished.
    public mutating func failed(_ failure: WebSocketFailure) -> Step {
        switch state {
        case .closed:
            return .ignore
        case .closeSent:
            self.failure = failure
            state = .closed
            return Step(send: nil, transport: finished)
        case .open:
            self.failure = failure
            state = .closed
            let payload = WebSocketClosePayload(code: failure.closeCode)
            sent = payload
            return Step(send: payload, transport: finished)
        }
    }

    /// How the connection counts once TCP is gone (or the caller's timer gave up on it).
    public var outcome: Outcome {
        if let failure { return .failed(failure) }
        if closeReceived {
            switch receivedCode {
            case nil, 1000?, 1001?: return .clean(code: receivedCode)
            case 1012?: return .closedByServer(code: 1012)
            case let code?: return .error(code: code)
            }
        }
        return sent == nil ? .abnormal : .clean(code: nil)
    }
}

/// The text of a peer-started Close's reason, boxed (see `WebSocketCloseHandshake.peerReason`).
final class PeerCloseReason: Sendable, Equatable {
    let text: String
    init(_ text: String) { self.text = text }
    static func == (a: PeerCloseReason, b: PeerCloseReason) -> Bool { a.text == b.text }
}

/// A Close the peer started: its status code and reason, as the results count it
/// (`MetricsShard.countClose`). The answer to our own Close is not one: it only echoes our code.
public struct WebSocketPeerClose: Sendable, Equatable {
    /// nil: the Close had no body (no status code, §5.5.1).
    public var code: UInt16?
    /// The reason after the code (valid UTF-8, at most 123 bytes: the receiver checked it).
    public var reason: String

    public init(code: UInt16?, reason: String = "") { self.code = code; self.reason = reason }
}
