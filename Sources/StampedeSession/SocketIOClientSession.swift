import StampedeWire

// The client side of Socket.IO 5 over Engine.IO 4, as a value type (see Session.swift for the
// conventions): the Engine.IO open packet, long polling and the upgrade to WebSocket (probe,
// pause, upgrade), answering the server's pings and failing on its silence, one namespace's
// CONNECT / CONNECT_ERROR / DISCONNECT, events and acks, binary packets with their attachments.
// The transports' own framing (HTTP requests and responses, WebSocket frames) stays with
// `HTTPClientExchange` and `WebSocketClientSession`: this session sees Engine.IO packets, one
// at a time, and says what to write and on which transport.

/// The two Engine.IO transports.
public enum SocketIOTransport: UInt8, Sendable, Equatable { case polling, websocket }

/// Which transports a client uses, in the order the official client tries them.
public enum SocketIOTransportPlan: UInt8, Sendable, Equatable {
    /// Long polling first, then the upgrade to WebSocket when the server offers it (the default).
    case pollingThenWebSocket
    case websocketOnly
    case pollingOnly

    /// The transport the connection opens with.
    public var first: SocketIOTransport { self == .websocketOnly ? .websocket : .polling }
}

/// Why a Socket.IO client session ended. Ranges index the packet given to the `receive` call
/// that answered it.
public enum SocketIOSessionEnd: Sendable, Equatable {
    /// The first packet was not a well-formed Engine.IO open packet.
    case handshakeInvalid
    /// The server refused the namespace (CONNECT_ERROR): its message's contents, if any.
    case namespaceRefused(message: Range<Int>?)
    /// The server disconnected the namespace (DISCONNECT).
    case disconnectedByServer
    /// The server closed the Engine.IO session (a close packet).
    case closedByServer
    /// Nothing received for the ping interval plus the ping timeout.
    case serverTimeout
    /// A packet that breaks the protocol.
    case protocolError(SocketIOProtocolError)
    /// A binary packet's attachments exceed the size limit.
    case messageTooBig
}

/// What was wrong with a packet (each counted in its class by the runtime).
public enum SocketIOProtocolError: UInt8, Sendable, Equatable {
    /// Not an Engine.IO packet (empty, unknown type digit, bad base64).
    case invalidEngineIOPacket
    /// An Engine.IO message that is not a Socket.IO packet.
    case invalidSocketIOPacket
    /// A second open packet, or an Engine.IO packet the server does not send (upgrade, a probe
    /// answer out of turn).
    case unexpectedEngineIOPacket
    /// A Socket.IO packet the server does not send to a client (or not in this state).
    case unexpectedSocketIOPacket
    /// A binary attachment with no binary packet waiting for it.
    case unexpectedAttachment
    /// A text packet while attachments were awaited.
    case attachmentsMissing
}

/// One step of reading what the server sent.
public enum SocketIOClientAction: Sendable, Equatable {
    /// The Engine.IO open packet (in `open`). On polling: post the CONNECT and poll again; with
    /// `shouldProbe`, open the WebSocket for the upgrade too. On WebSocket: send the CONNECT.
    case opened
    /// Answer the server's ping: write `pong` on `transport`.
    case sendPong(SocketIOTransport)
    /// The WebSocket answered our probe: polling pauses. `upgradeNow`: no poll or post is in
    /// flight, so write `upgradePacket` on the WebSocket now; otherwise wait for
    /// `pollCompleted` / `postCompleted` to say so.
    case probeAnswered(upgradeNow: Bool)
    /// The probe failed (the WebSocket answered something else): close it; polling goes on.
    case probeFailed
    /// The namespace is connected (CONNECT answered with a sid).
    case namespaceConnected
    /// An EVENT for our namespace; the packet's ranges index the buffer given.
    case event(SocketIOPacket)
    /// An ACK for our namespace.
    case ack(SocketIOPacket)
    /// A BINARY_EVENT or BINARY_ACK with all its attachments: its head (and the ranges in
    /// `packet`) in `binaryHead`, the attachments in `attachments`, until the next call.
    case binary(SocketIOPacket)
    /// Nothing for the caller: a noop, a pong, another namespace's packet, one attachment.
    case skipped
    /// The session ended (given once); the caller closes the transports.
    case ended(SocketIOSessionEnd)
}

/// What to do once a poll (GET) or a post (POST) completed.
public enum SocketIOPollStep: Sendable, Equatable {
    /// Poll again (after a GET) / post what is queued, if anything (after a POST).
    case carryOn
    /// Polling is paused and drained: write `upgradePacket` on the WebSocket; the upgrade is done.
    case upgradeNow
    /// Nothing: polling is paused (waiting for the other request) or over.
    case stop
}

/// The client side of one Socket.IO connection over Engine.IO 4, for one namespace.
public struct SocketIOClientSession: Sendable {
    public struct Configuration: Sendable {
        /// The namespace, as written in packets ("/" is the main one).
        public var namespace: [UInt8]
        public var transports: SocketIOTransportPlan
        /// Most bytes of one binary packet's attachments together.
        public var maxAttachmentBytes: Int
        /// Most attachments one binary packet may announce.
        public var maxAttachments: Int

        public init(namespace: [UInt8] = Array("/".utf8), transports: SocketIOTransportPlan = .pollingThenWebSocket,
                    maxAttachmentBytes: Int = 1 << 20, maxAttachments: Int = 64) {
            self.namespace = namespace; self.transports = transports
            self.maxAttachmentBytes = maxAttachmentBytes; self.maxAttachments = maxAttachments
        }
    }

    /// Where the connection is.
    public enum Phase: UInt8, Sendable {
        /// Waiting for the Engine.IO open packet.
        case opening
        /// Open; the namespace CONNECT is due or sent.
        case open
        /// The namespace is connected.
        case connected
        case ended
    }

    /// Where the upgrade to WebSocket is (polling then WebSocket only).
    public enum Upgrade: UInt8, Sendable {
        /// None started (or none to do).
        case none
        /// The WebSocket is opening, or `2probe` was sent on it.
        case probing
        /// `3probe` came back: no new poll or post until both in flight are done.
        case pausing
        /// `5` was sent: the WebSocket carries everything.
        case upgraded
        /// The probe failed: polling carries on.
        case failed
    }

    public let configuration: Configuration
    public internal(set) var phase = Phase.opening
    public internal(set) var upgrade = Upgrade.none
    /// The open packet, once received.
    public internal(set) var open: EngineIOOpen? = nil
    /// When data was last received (any packet, on any transport), for the server timeout.
    public internal(set) var lastReceivedNs: UInt64 = 0
    /// Long polling: a GET / a POST is outstanding.
    public internal(set) var pollInFlight = false
    public internal(set) var postInFlight = false
    /// A binary packet waiting for its attachments, or just assembled (until the next call):
    /// storage made on use, so a session that never sees one carries one nil reference.
    var assembly: SocketIOBinaryAssembly? = nil
    /// The head of the binary packet of the last `.binary` answer (its ranges index it).
    public var binaryHead: [UInt8] { assembly?.head ?? [] }
    /// The attachments of the binary packet of the last `.binary` answer, in order.
    public var attachments: [[UInt8]] { assembly?.attachments ?? [] }

    /// A session whose first transport is about to open (`configuration.transports.first`).
    public init(_ configuration: Configuration, now: UInt64) {
        self.configuration = configuration
        lastReceivedNs = now
        if configuration.transports.first == .polling { pollInFlight = true }  // the handshake's GET
    }

    public var hasEnded: Bool { phase == .ended }
    public var isConnected: Bool { phase == .connected }

    /// Where client packets go now: the WebSocket once upgraded (or only), else polling; nil
    /// before the open packet and after the end.
    public var messageTransport: SocketIOTransport? {
        guard phase == .open || phase == .connected else { return nil }
        if configuration.transports == .websocketOnly || upgrade == .upgraded { return .websocket }
        return .polling
    }

    /// Long polling: whether a POST may start now (none in flight, polling not paused).
    public var canPost: Bool { messageTransport == .polling && !postInFlight && upgrade != .pausing }

    /// Whether the open packet offers the WebSocket upgrade and the client wants it.
    public var shouldProbe: Bool {
        configuration.transports == .pollingThenWebSocket && (open?.upgrades.contains("websocket") ?? false)
    }

    /// The server timeout: nothing received for the ping interval plus the ping timeout.
    public var serverTimeoutNs: UInt64? {
        guard let open else { return nil }
        // Each bounded (to about 24 days): a server's huge values must not overflow the sum.
        let limit = 1 << 31
        return UInt64(min(max(0, open.pingIntervalMs), limit) + min(max(0, open.pingTimeoutMs), limit)) * 1_000_000
    }

    /// When the server timeout passes if nothing more arrives; nil before the open packet or after the end.
    public var deadline: UInt64? {
        guard phase == .open || phase == .connected, let t = serverTimeoutNs else { return nil }
        return lastReceivedNs &+ t
    }

    /// The server's largest payload (a POST body must not exceed it); nil before the open packet.
    public var maxPayload: Int? { open?.maxPayload }

    // MARK: Commands

    /// Checks the server timeout at `now` (a timer at `deadline`, or a periodic sweep). True:
    /// the session ended with `.serverTimeout`; a check before the deadline finds nothing.
    public mutating func check(now: UInt64) -> Bool {
        guard let d = deadline, now >= d else { return false }
        endNow()
        return true
    }

    /// Data arrived on a transport, even a partial packet (or a stall ended): the server timeout starts again.
    public mutating func dataReceived(now: UInt64) { if now > lastReceivedNs { lastReceivedNs = now } }

    /// A poll (GET) was sent.
    public mutating func pollStarted() { pollInFlight = true }
    /// A post (POST) was sent.
    public mutating func postStarted() { postInFlight = true }

    /// The GET's response is complete (its packets were given to `receive` first).
    public mutating func pollCompleted() -> SocketIOPollStep {
        pollInFlight = false
        return afterRequest()
    }

    /// The POST's response is complete.
    public mutating func postCompleted() -> SocketIOPollStep {
        postInFlight = false
        return afterRequest()
    }

    mutating func afterRequest() -> SocketIOPollStep {
        guard phase == .open || phase == .connected else { return .stop }
        switch upgrade {
        case .pausing:
            guard !pollInFlight && !postInFlight else { return .stop }
            upgrade = .upgraded
            return .upgradeNow
        case .upgraded: return .stop
        case .none, .probing, .failed: return .carryOn
        }
    }

    /// The upgrade's WebSocket is being opened.
    public mutating func probeStarted() { if upgrade == .none { upgrade = .probing } }

    /// The upgrade's WebSocket failed before the probe was answered (connect, 101, closed): polling carries on.
    public mutating func probeFailed() { if upgrade == .probing { upgrade = .failed } }

    /// We end the session ourselves (a close, a transport lost): nothing more is read.
    public mutating func endNow() {
        phase = .ended
        assembly = nil
    }

    // MARK: Packets we write (Engine.IO packets: a type digit then data)

    /// The Engine.IO pong answering a ping.
    public static let pong: [UInt8] = [UInt8(ascii: "3")]
    /// The upgrade probe (on the WebSocket) and the upgrade itself.
    public static let probe: [UInt8] = Array("2probe".utf8)
    public static let upgradePacket: [UInt8] = [UInt8(ascii: "5")]
    /// The Engine.IO close a client sends when it leaves.
    public static let close: [UInt8] = [UInt8(ascii: "1")]

    /// Writes `4` then a Socket.IO packet head for our namespace (the caller renders the data
    /// after it, such as the CONNECT's auth object or an EVENT's array); the count written.
    public func writeHead(_ type: SocketIOPacketType, attachments: Int = 0, ackId: UInt64? = nil,
                          into out: UnsafeMutableRawBufferPointer) -> Int? {
        guard out.count >= 1 else { return nil }
        out[0] = UInt8(ascii: "4")
        guard let n = SocketIOPacketWriter.writeHead(type, attachments: attachments, namespace: configuration.namespace, ackId: ackId,
                                                     into: UnsafeMutableRawBufferPointer(rebasing: out[1...])) else { return nil }
        return 1 + n
    }

    /// Writes the DISCONNECT a client sends for its namespace when it leaves (an Engine.IO message).
    public func writeDisconnect(into out: UnsafeMutableRawBufferPointer) -> Int? { writeHead(.disconnect, into: out) }
}

/// A binary packet's head and its attachments as they arrive (a class so that a session without
/// one carries a nil reference; copied before a write when shared, for value semantics, so
/// no two sessions ever write the same one).
final class SocketIOBinaryAssembly: @unchecked Sendable {
    var head: [UInt8]
    var packet: SocketIOPacket
    var attachments: [[UInt8]] = []
    var due: Int
    var bytes = 0

    init(head: [UInt8], packet: SocketIOPacket) {
        self.head = head; self.packet = packet; due = packet.attachments
        attachments.reserveCapacity(packet.attachments)
    }

    init(copying o: SocketIOBinaryAssembly) {
        head = o.head; packet = o.packet; attachments = o.attachments; due = o.due; bytes = o.bytes
    }

    /// Every attachment arrived.
    var isComplete: Bool { due == 0 }
}
