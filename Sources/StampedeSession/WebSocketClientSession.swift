import StampedeWire

/// How the TCP connection under a WebSocket session ended, as the runtime reports it.
public enum WebSocketTransportEnd: Sendable, Equatable {
    /// The peer closed its side (a read returned 0).
    case endOfFile
    /// The peer reset the connection (ECONNRESET, EPIPE).
    case reset
    /// Any other socket error or limit (I/O error, slow consumer, a loop deadline).
    case error
}

/// The client side of one WebSocket connection (RFC 6455) as a value type: the upgrade, then
/// frames, pings, the close handshake and every way the connection can end. It never does I/O,
/// reads no clock and never allocates after the upgrade; the runtime (`WebSocketClients` in
/// StampedeWorkloads, the hub client) carries out its actions on the loop.
///
/// Use, for one connection:
/// 1. Create it when the TCP connect is issued (`state == .connecting`); report a failed
///    connect with `connectFailed(errno:)`.
/// 2. Once TCP is up, `connected(now:key:)` answers `.sendUpgradeRequest(deadline:)`: write
///    `upgradeRequest`, and call `timerFired(deadline:)` at that deadline (upgrade timeout).
/// 3. On every read, call `next(_:now:)` with the buffered input, carry out the action, drop
///    `consumed` bytes, and ask again until it answers `.needMore` (which may consume bytes too:
///    fragments, frames nothing comes of, input after the close handshake).
/// 4. `close(code:reason:now:)` starts our close; `transportClosed(_:)` reports TCP gone;
///    `abort()` reports that the runtime dropped TCP itself.
/// Each of these answers `.ended(_, closeTransport:)` exactly once over the connection's life.
///
/// Behaviour, as the chat client has always had it: messages are delivered only while open;
/// pings are answered only while open (§5.5.2); pongs are reported while open or closing. The
/// close rules are `WebSocketCloseHandshake`'s; once both Close frames are exchanged (or the
/// connection failed) further input is dropped unread (§5.5.1: nothing follows a Close), and the
/// client waits for the server's FIN, bounded by the close timeout (§7.1.1). The close timeout
/// is armed once, when closing starts, and is not extended by later steps.
public struct WebSocketClientSession: Sendable {
    /// What the client asks for and how long it waits; the same for every connection of a run
    /// except the path.
    public struct Configuration: Sendable {
        /// Host as written in the URL, for the Host header.
        public var host: String
        public var port: Int
        public var path: String
        public var subprotocol: String?
        public var headers: [(String, String)]
        /// More header lines already rendered (each `name: value` CRLF), sent after `headers`:
        /// a hub client's scenario headers, rendered once for all its HTTP requests.
        public var headerLines: [UInt8]
        /// Time allowed for the 101 once the request is written.
        public var upgradeTimeoutNs: UInt64
        /// Time allowed for the peer to finish a close handshake and drop TCP.
        public var closeTimeoutNs: UInt64
        /// Largest message accepted; larger fails the connection with 1009.
        public var maxMessageBytes: Int

        public init(host: String, port: Int, path: String, subprotocol: String? = nil, headers: [(String, String)] = [], headerLines: [UInt8] = [],
                    upgradeTimeoutNs: UInt64, closeTimeoutNs: UInt64, maxMessageBytes: Int) {
            self.host = host; self.port = port; self.path = path; self.subprotocol = subprotocol; self.headers = headers
            self.headerLines = headerLines
            self.upgradeTimeoutNs = upgradeTimeoutNs; self.closeTimeoutNs = closeTimeoutNs; self.maxMessageBytes = maxMessageBytes
        }
    }

    public enum State: UInt8, Sendable {
        /// TCP connect issued.
        case connecting
        /// Upgrade request written, the 101 is due.
        case upgrading
        case open
        /// A Close was sent or received: only the rest of the handshake and TCP are left.
        case closing
        case ended
    }

    /// What the runtime does next. Ranges index the buffer given to `next`.
    public enum Action: Sendable, Equatable {
        /// Nothing (more) to act on in this input: drop `consumed` bytes and wait for a read.
        case needMore
        /// TCP is up: write `upgradeRequest`, and report `timerFired(deadline:)` at `deadline`.
        case sendUpgradeRequest(deadline: UInt64)
        /// The 101 is accepted (`consumed` is the response head): the connection is open.
        case opened
        /// A whole message in one frame (text already checked as UTF-8).
        case message(WebSocketOpcode, payload: Range<Int>)
        /// A fragmented message is complete: it is in `assembled`, until the next call.
        case assembledMessage(WebSocketOpcode)
        /// Answer a ping with a pong carrying this payload (§5.5.2).
        case sendPong(payload: Range<Int>)
        /// A pong arrived (the answer to a ping of ours).
        case pong(payload: Range<Int>)
        /// A step of the close handshake: send a Close with body `send` (nil: none);
        /// `shutdownWrite`: then stop writing and wait for the server's FIN (§7.1.1); `deadline`:
        /// when given, report `timerFired(deadline:)` then (the close timeout, armed once).
        case closing(send: WebSocketClosePayload?, shutdownWrite: Bool, deadline: UInt64?)
        /// The connection is over. `closeTransport`: close TCP now (otherwise it is gone already).
        case ended(End, closeTransport: Bool)
        /// The command changed nothing (a stale timer, a close while closing, ...).
        case none
    }

    /// How the connection ended; every connection ends in exactly one of these.
    public enum End: Sendable, Equatable {
        // Never opened.
        /// The TCP connect failed with this errno.
        case connectFailed(errno: Int32)
        /// The server answered the upgrade with another status than 101.
        case upgradeRejected(status: Int)
        /// The answer was not HTTP, or a 101 that breaks §4.1's checks.
        case upgradeInvalid
        /// No answer within the upgrade timeout.
        case upgradeTimeout
        /// TCP ended before the answer arrived.
        case lostBeforeOpen(WebSocketTransportEnd)
        /// We stopped waiting before the connection opened (`close` while connecting or upgrading).
        case interrupted

        // Opened.
        /// Close handshake with 1000, 1001 or no code, or our own Close left unanswered.
        case closedCleanly(code: UInt16?)
        /// The server closed with 1012 (service restart): its choice, not an error.
        case closedByServer(code: UInt16)
        /// The server closed with another code.
        case closedWithError(code: UInt16)
        /// We failed the connection (§7.1.7) with the failure's close code.
        case failed(WebSocketFailure)
        /// TCP ended while open, with no Close either way (1006, §7.1.5).
        case lost(WebSocketTransportEnd)

        /// The runtime dropped TCP itself (`abort`), in any state.
        case aborted
    }

    /// The configuration; once the connection is open its per-connection `path` and `headers`
    /// are released (as are `upgradeRequest` and `key`): an idle open connection keeps none of
    /// the upgrade's scratch.
    public private(set) var configuration: Configuration
    public private(set) var state: State = .connecting
    /// The upgrade request, once `connected` built it (written once per connection); empty
    /// again once the connection is open.
    public private(set) var upgradeRequest: [UInt8] = []
    /// The Sec-WebSocket-Key sent (empty again once the connection is open).
    public private(set) var key = ""
    /// When the upgrade request was written (for the upgrade latency).
    public private(set) var upgradeStartedNs: UInt64 = 0
    /// The subprotocol the server chose, once open.
    public private(set) var subprotocol: String? = nil
    public private(set) var closeHandshake = WebSocketCloseHandshake(role: .client)
    /// The Close the server started, with its code and reason (nil when it started none):
    /// what `close_codes` counts, read once the session has ended.
    public var peerClose: WebSocketPeerClose? { closeHandshake.peerClose }
    /// The deadline the session waits for (upgrade or close timeout); 0: none.
    public private(set) var deadline: UInt64 = 0
    @usableFromInline var receiver: WebSocketReceiver

    /// A session for one connection to `configuration` (to `path` when given instead of the
    /// configuration's), TCP connect issued.
    public init(configuration: Configuration, path: String? = nil) {
        var c = configuration
        if let path { c.path = path }
        self.configuration = c
        receiver = WebSocketReceiver(role: .client, maxMessageBytes: c.maxMessageBytes)
    }

    /// The reassembled fragmented message after `.assembledMessage`, valid until the next call.
    public var assembled: [UInt8] { receiver.assembled }

    // MARK: Commands

    /// The TCP connect failed.
    public mutating func connectFailed(errno: Int32) -> Action {
        guard state == .connecting else { return .none }
        return end(.connectFailed(errno: errno), closeTransport: false)
    }

    /// TCP is up: builds the upgrade request with `key` (RFC 6455 §4.1) and asks for the
    /// upgrade timeout. A request that cannot be written safely (a CR or LF in a header value
    /// that came from a server, such as a negotiated access token) ends the attempt as
    /// `upgradeInvalid` instead of injecting lines.
    public mutating func connected(now: UInt64, key: String) -> Action {
        guard state == .connecting else { return .none }
        let c = configuration
        self.key = key
        guard let request = WebSocketHandshake.request(host: c.host, port: c.port, path: c.path, key: key,
                                                       subprotocol: c.subprotocol, headers: c.headers, headerLines: c.headerLines),
              request.validate() else { return end(.upgradeInvalid, closeTransport: true) }
        upgradeRequest = request.headBytes()
        state = .upgrading
        upgradeStartedNs = now
        deadline = now + c.upgradeTimeoutNs
        return .sendUpgradeRequest(deadline: deadline)
    }

    /// `connected(now:key:)` with a fresh key from `random`.
    public mutating func connected<R: RandomNumberGenerator>(now: UInt64, random: inout R) -> Action {
        connected(now: now, key: WebSocketHandshake.makeKey(using: &random))
    }

    /// We close with `code`: the close handshake while open; before that, the attempt is
    /// abandoned (`interrupted`). Ignored once closing or ended.
    public mutating func close(code: UInt16 = 1000, reason: StaticString = "", now: UInt64) -> Action {
        switch state {
        case .connecting, .upgrading: return end(.interrupted, closeTransport: true)
        case .open: return step(closeHandshake.sending(code: code, reason: reason), now: now)
        case .closing, .ended: return .none
        }
    }

    /// TCP is gone (the runtime saw it close).
    public mutating func transportClosed(_ how: WebSocketTransportEnd) -> Action {
        switch state {
        case .connecting, .upgrading: return end(.lostBeforeOpen(how), closeTransport: false)
        case .open: return end(.lost(how), closeTransport: false)
        case .closing: return end(handshakeEnd, closeTransport: false)
        case .ended: return .none
        }
    }

    /// The runtime dropped TCP itself (a reset, or it gave up on a silent server).
    public mutating func abort() -> Action {
        guard state != .ended else { return .none }
        return end(.aborted, closeTransport: true)
    }

    /// A timer the session asked for fired; one it no longer waits for is ignored.
    public mutating func timerFired(deadline fired: UInt64) -> Action {
        guard deadline != 0, fired == deadline else { return .none }
        switch state {
        case .upgrading: return end(.upgradeTimeout, closeTransport: true)
        case .closing: return end(handshakeEnd, closeTransport: true)
        case .connecting, .open, .ended: return .none
        }
    }

    // MARK: Input

    /// The next action for the buffered input (see the type's use). Never allocates once open.
    public mutating func next(_ buffer: UnsafeMutableRawBufferPointer, now: UInt64) -> (action: Action, consumed: Int) {
        switch state {
        case .upgrading:
            return upgradeResponse(buffer)
        case .open, .closing:
            // After the whole handshake (or a failure) nothing the peer sends matters (§5.5.1).
            if closeHandshake.state == .closed { return (.needMore, buffer.count) }
            return frames(buffer, now: now)
        case .connecting, .ended:
            return (.needMore, buffer.count)
        }
    }

    mutating func upgradeResponse(_ buffer: UnsafeMutableRawBufferPointer) -> (action: Action, consumed: Int) {
        switch WebSocketHandshake.parseResponse(UnsafeRawBufferPointer(buffer), key: key, requestedSubprotocol: configuration.subprotocol) {
        case .needMore(let consumed):
            return (.needMore, consumed)
        case .answer(.rejected(let status), _):
            return (end(.upgradeRejected(status: status), closeTransport: true), buffer.count)
        case .answer(.invalid, _):
            return (end(.upgradeInvalid, closeTransport: true), buffer.count)
        case .answer(.accepted(let chosen), let length):
            subprotocol = chosen
            state = .open
            deadline = 0
            releaseUpgradeScratch()
            return (.opened, length)
        }
    }

    /// Frees what only the upgrade needed (the request, the key, the per-connection path and
    /// extra headers, such as a hub client's Authorization).
    mutating func releaseUpgradeScratch() {
        upgradeRequest = []
        key = ""
        configuration.path = ""
        configuration.headers = []
        configuration.headerLines = []
    }

    /// Whether the upgrade's scratch is still held (false once open).
    public var holdsUpgradeScratch: Bool {
        upgradeRequest.capacity > 0 || !key.isEmpty || !configuration.path.isEmpty || !configuration.headers.isEmpty
            || !configuration.headerLines.isEmpty
    }

    /// Frames until one calls for an action (`WebSocketReceiver.nextStep`, shared with the server).
    @inline(__always)
    mutating func frames(_ buffer: UnsafeMutableRawBufferPointer, now: UInt64) -> (action: Action, consumed: Int) {
        switch receiver.nextStep(buffer, open: state == .open) {
        case .needMore(let consumed): return (.needMore, consumed)
        case .message(let opcode, let payload, let end): return (.message(opcode, payload: payload), end)
        case .assembledMessage(let opcode, let end): return (.assembledMessage(opcode), end)
        case .ping(let payload, let end): return (.sendPong(payload: payload), end)
        case .pong(let payload, let end): return (.pong(payload: payload), end)
        case .close(let code, let reason):
            // The reason is kept only when the peer starts the close (results count it); an
            // answer to our Close allocates nothing.
            let text = closeHandshake.state == .open && !reason.isEmpty
                ? String(decoding: UnsafeRawBufferPointer(rebasing: buffer[reason]), as: UTF8.self) : ""
            return (step(closeHandshake.received(code: code, reason: text), now: now), buffer.count)
        case .fail(let failure): return (step(closeHandshake.failed(failure), now: now), buffer.count)
        }
    }

    // MARK: Ending

    /// A close-handshake step as an action: the Close to send, whether writing stops, and the
    /// close timeout when closing starts.
    mutating func step(_ s: WebSocketCloseHandshake.Step, now: UInt64) -> Action {
        let shutdownWrite: Bool
        switch s.transport {
        case .unchanged: return .none
        case .awaitClose: shutdownWrite = false
        case .awaitFIN, .close: shutdownWrite = true  // a client never closes TCP first (`.close` is the server's)
        }
        var armed: UInt64? = nil
        if state == .open {
            state = .closing
            deadline = now + configuration.closeTimeoutNs
            armed = deadline
        }
        return .closing(send: s.send, shutdownWrite: shutdownWrite, deadline: armed)
    }

    /// How a connection that reached closing counts (`WebSocketCloseHandshake.outcome`).
    var handshakeEnd: End {
        switch closeHandshake.outcome {
        case .clean(let code): .closedCleanly(code: code)
        case .closedByServer(let code): .closedByServer(code: code)
        case .error(let code): .closedWithError(code: code)
        case .failed(let failure): .failed(failure)
        case .abnormal: .lost(.endOfFile)
        }
    }

    mutating func end(_ how: End, closeTransport: Bool) -> Action {
        state = .ended
        deadline = 0
        // Frees a reassembly buffer grown by a large fragmented message.
        receiver = WebSocketReceiver(role: .client, maxMessageBytes: 0)
        return .ended(how, closeTransport: closeTransport)
    }
}
