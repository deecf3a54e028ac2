import StampedeWire

// The server side of Socket.IO 5 over Engine.IO 4, one value per Engine.IO session (one `sid`),
// over bytes and a clock:
// - SocketIOServerSession.swift: the types, the transports (long polling, the WebSocket upgrade,
//   WebSocket), the server's ping and the client's silence;
// - SocketIOServerSession+Input.swift: Engine.IO and Socket.IO packets the client sent;
// - SocketIOServerSession+Output.swift: packets for the client, queued until its transport can
//   take them (a poll, the WebSocket), and the poll answers;
// - EngineIORequest.swift: what an HTTP request to the Engine.IO path asks for.
// What the events mean (rooms, broadcasts, the reference app) is the runtime's business.

/// The server side of one Engine.IO 4 session and the Socket.IO 5 namespaces on it. It never
/// does I/O, reads no clock and schedules nothing; the runtime (`SocketIOServer`) owns the
/// sockets, the HTTP and WebSocket framing, and the timer.
///
/// Intended use:
/// 1. A handshake request (`EngineIORequest.handshake`): create the session with a fresh `sid`;
///    answer the GET with `openPacket()` (polling) or send it as the first text frame (WebSocket).
/// 2. Polling: each GET calls `poll(now:)` (answer now with `takePollPayload`, hold it, or refuse);
///    each POST body is read record by record with `post(_:from:now:)`. A held poll is answered
///    as soon as `pollHeld && hasOutput` (after any command).
/// 3. The upgrade: a WebSocket with the `sid` calls `webSocketAttached()`, then every frame goes to
///    `webSocketMessage(_:binary:now:)` (`2probe` → `.sendProbeAnswer`, `5` → `.upgraded`).
/// 4. Packets for the client: `send…` answer `.writeNow` (WebSocket with nothing queued: write it
///    as one frame yourself), `.queued` (a poll or `drainWebSocket` takes it), or `.overflow`.
/// 5. The ping: arm a timer at `deadline` whenever it changes; call `timerFired(deadline:now:)`.
/// 6. Every way the session ends is one `.ended` answer, given once.
public struct SocketIOServerSession: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// The server pings this often (Engine.IO 4: the server pings, the client pongs).
        public var pingIntervalNs: UInt64
        /// A client that leaves a ping unanswered this long is closed.
        public var pingTimeoutNs: UInt64
        /// Largest Engine.IO message and polling body accepted (and announced in the open packet).
        public var maxPayload: Int
        /// Most bytes waiting for the client (no poll, an upgrade under way); past it the session ends.
        public var maxQueuedBytes: Int
        /// Most attachments one binary packet may announce.
        public var maxAttachments: Int

        public init(pingIntervalNs: UInt64 = 25_000_000_000, pingTimeoutNs: UInt64 = 20_000_000_000, maxPayload: Int = 1_000_000,
                    maxQueuedBytes: Int = 4 << 20, maxAttachments: Int = 64) {
            self.pingIntervalNs = max(1_000_000, pingIntervalNs)
            self.pingTimeoutNs = max(1_000_000, pingTimeoutNs)
            self.maxPayload = max(64, maxPayload)
            self.maxQueuedBytes = max(64 * 1024, maxQueuedBytes)
            self.maxAttachments = max(1, maxAttachments)
        }
    }

    public enum Transport: UInt8, Sendable {
        case polling
        case webSocket
    }

    /// A client that broke the protocol; the session ends with it.
    public enum ProtocolError: UInt8, Sendable, Equatable {
        /// Not an Engine.IO packet (empty, an unknown type digit, invalid base64).
        case badEnginePacket
        /// An Engine.IO packet a client does not send (open, noop, an upgrade outside one).
        case unexpectedEnginePacket
        /// A message that is no Socket.IO packet, or a type a client does not send (CONNECT_ERROR).
        case badSocketPacket
        /// A binary message no binary packet announced.
        case unexpectedBinary
        /// A binary packet announcing more attachments than allowed.
        case tooManyAttachments
        /// A second GET while one is held (engine.io: "overlap from client").
        case overlappingPoll
        /// On the upgrading WebSocket, something other than `2probe` and `5`.
        case badUpgrade
    }

    /// How the session ended.
    public enum End: Sendable, Equatable {
        /// The client's close packet (`1`).
        case clientClosed
        /// A ping went unanswered for `pingTimeoutNs`.
        case pingTimeout
        /// The transport carrying the session went away (the WebSocket, or a held poll's TCP).
        case transportClosed
        case protocolError(ProtocolError)
        /// A message or polling body over `maxPayload`.
        case payloadTooLarge
        /// More than `maxQueuedBytes` waiting for the client.
        case outputOverflow
        /// The server closed it (`close()`): a drop, a shutdown.
        case closedByServer
    }

    /// What the runtime does with what the client sent. Ranges index the buffer given, except
    /// for `.binaryPacket`, whose ranges index `binaryPacket`.
    public enum Action: Sendable, Equatable {
        case none
        /// CONNECT to a namespace (nil: "/"); `auth` is the JSON payload (possibly empty).
        /// Answer with `acceptConnect` or `refuseConnect`.
        case connectRequested(namespace: Range<Int>?, auth: Range<Int>)
        /// DISCONNECT from a connected namespace.
        case disconnected(namespace: Range<Int>?)
        /// EVENT or ACK on a connected namespace (ranges index the buffer given).
        case packet(SocketIOPacket)
        /// BINARY_EVENT or BINARY_ACK with all its attachments: ranges index `binaryPacket`, the
        /// attachments are `attachments`, both valid until the next input.
        case binaryPacket(SocketIOPacket)
        /// A packet for a namespace the client has not connected to (Socket.IO ignores it).
        case ignored
        /// `2probe` on the upgrading WebSocket: write the text frame `3probe` on it.
        case sendProbeAnswer
        /// `5`: the WebSocket carries the session from now on (drain what is queued onto it).
        case upgraded
        /// The upgrading WebSocket sent something else: close it; polling goes on.
        case upgradeFailed
        /// The session is over (given once): flush what is queued if the transport is there, then close it.
        case ended(End)
    }

    /// What a GET poll gets.
    public enum PollAnswer: Sendable, Equatable {
        /// Answer it now with `takePollPayload`.
        case answerNow
        /// Hold it until `hasOutput` (the next ping at the latest).
        case hold
        /// 400: the session is on its WebSocket now; the session goes on.
        case badRequest
        /// The poll ended the session (a second concurrent GET): 400 to it, and the held one
        /// answered with what is queued (the close packet).
        case ended(End)
    }

    /// What to do with a packet given to `send…`.
    public enum SendResult: Sendable, Equatable {
        /// Nothing was queued: write the packet as one WebSocket frame yourself, now.
        case writeNow
        /// Queued for the next poll (or `drainWebSocket`).
        case queued
        /// Past `maxQueuedBytes`: the session ended with `.outputOverflow`.
        case overflow
        /// The session has ended: nothing sent.
        case notSent
    }

    enum Upgrade: UInt8 {
        case none
        /// A WebSocket with our sid is open; `2probe` is due.
        case attached
        /// `3probe` went out; `5` is due.
        case probed
    }

    public let configuration: Configuration
    /// The Engine.IO session id (the runtime makes it).
    public let sid: [UInt8]
    public internal(set) var transport: Transport
    public internal(set) var isEnded = false
    /// A GET is held, waiting for something to send.
    public internal(set) var pollHeld = false
    /// The one deadline the session waits for: the next ping, or the pong that is due.
    public internal(set) var deadline: UInt64
    var pongDue = false
    var upgrade = Upgrade.none
    /// A noop for the held poll (the upgrade: it tells the polling client to stop).
    var noopDue = false
    /// Connected namespaces ("/" for the main one).
    var namespaces: [[UInt8]] = []
    /// Packets for the client, in order: a kind byte (0 text, 1 binary), a 4-byte length, the bytes.
    var outbox: [UInt8] = []
    var outboxPackets = 0
    /// The binary packet being reassembled and the attachments received so far.
    public internal(set) var binaryPacket: [UInt8] = []
    public internal(set) var attachments: [[UInt8]] = []
    var attachmentsDue = 0
    var attachmentBytes = 0
    /// Where poll answers and packets are built.
    var scratch: [UInt8] = []

    /// A session just opened over `transport` at `now` (the first ping is due a ping interval later).
    public init(sid: [UInt8], transport: Transport, configuration: Configuration = Configuration(), now: UInt64) {
        self.sid = sid
        self.transport = transport
        self.configuration = configuration
        deadline = now &+ configuration.pingIntervalNs
    }

    /// Something waits for the client.
    public var hasOutput: Bool { outboxPackets > 0 || noopDue }

    /// Whether `name` ("/" for the main namespace) is connected.
    public func isConnected(_ name: [UInt8]) -> Bool { namespaces.contains(name) }

    /// The open packet (`0{"sid":…}`): the answer to the handshake GET, or the first text frame
    /// of a WebSocket-only session. A WebSocket session offers no upgrades.
    public func openPacket() -> [UInt8] {
        let open = EngineIOOpen(sid: String(decoding: sid, as: UTF8.self), upgrades: transport == .polling ? ["websocket"] : [],
                                pingIntervalMs: Int(configuration.pingIntervalNs / 1_000_000),
                                pingTimeoutMs: Int(configuration.pingTimeoutNs / 1_000_000), maxPayload: configuration.maxPayload)
        var out = [UInt8](repeating: 0, count: 256 + sid.count)
        let n = out.withUnsafeMutableBytes { buf -> Int in
            buf[0] = UInt8(ascii: "0")
            return open.write(into: UnsafeMutableRawBufferPointer(rebasing: buf[1...])) ?? 0
        }
        return Array(out[0..<(1 + n)])
    }

    // MARK: Transports

    /// A GET poll arrived.
    public mutating func poll(now: UInt64) -> PollAnswer {
        guard !isEnded else { return .badRequest }
        guard transport == .polling else { return .badRequest }
        if pollHeld {
            pollHeld = false
            return .ended(end(.protocolError(.overlappingPoll)))
        }
        pollHeld = true
        // Between `3probe` and `5` every GET is answered at once (a noop if nothing else): the
        // client polls on until it has read `3probe`, then waits for its last poll to return
        // before it sends `5` (engine.io answers with a noop every 100 ms for the same reason).
        return hasOutput || upgrade == .probed ? .answerNow : .hold
    }

    /// The held poll's TCP connection went away: the transport is gone (engine.io closes the session).
    public mutating func pollLost() -> Action {
        guard pollHeld, !isEnded else { return .none }
        pollHeld = false
        return .ended(end(.transportClosed))
    }

    /// A WebSocket carrying this sid was accepted (the upgrade). False: refuse it (400), the
    /// session is on a WebSocket already or another upgrade is under way.
    public mutating func webSocketAttached() -> Bool {
        guard !isEnded, transport == .polling, upgrade == .none else { return false }
        upgrade = .attached
        return true
    }

    /// The WebSocket went away (closed, failed). Before `5` the upgrade is abandoned and polling
    /// goes on; after it the session is over.
    public mutating func webSocketLost() -> Action {
        guard !isEnded else { return .none }
        if transport == .polling {
            upgrade = .none
            return .none
        }
        return .ended(end(.transportClosed))
    }

    /// The timer armed at `deadline` fired; a deadline the session no longer waits for is ignored.
    /// A ping due is queued (`hasOutput`); an unanswered one ends the session.
    public mutating func timerFired(deadline fired: UInt64, now: UInt64) -> Action {
        guard !isEnded, fired == deadline else { return .none }
        if pongDue { return .ended(end(.pingTimeout)) }
        pongDue = true
        deadline = now &+ configuration.pingTimeoutNs
        if enqueueControl(.ping) == .overflow { return .ended(.outputOverflow) }
        return .none
    }

    /// The server closes the session: a close packet is queued for the transport (flush, then close it).
    public mutating func close() -> Action {
        guard !isEnded else { return .none }
        _ = enqueueControl(.close)
        return .ended(end(.closedByServer))
    }

    /// Ends the session with `why` (once); returns it.
    mutating func end(_ why: End) -> End {
        isEnded = true
        pongDue = false
        deadline = .max
        binaryPacket = []
        attachments = []
        attachmentsDue = 0
        return why
    }
}
