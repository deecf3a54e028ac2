import StampedeLoop

/// A Close hub message to send before ending a connection.
struct HubCloseInfo {
    var error: String?
    var allowReconnect: Bool
}

/// One SignalR connection (a negotiated id), whatever transport carries it.
final class HubConnection {
    enum Transport { case webSockets, serverSentEvents, longPolling }
    enum Phase { case negotiated, handshaking, open, ended }
    enum Proto { case json, messagePack }

    let index: Int
    let generation: UInt32
    let connectionId: [UInt8]
    /// The `id` clients use afterwards: the connection token (v1) or the connection id (v0).
    let tokenBytes: [UInt8]
    let token: HubTokenKey
    let statefulNegotiated: Bool
    var disposed = false
    var transport: Transport? = nil
    var phase: Phase = .negotiated
    var proto: Proto = .json
    /// Counted in `statistics.open`.
    var counted = false
    /// Holds a `--max-connections` slot (a WebSocket transport), given back with `counted`.
    var holdsSlot = false
    /// The WebSocket or SSE socket.
    var socket: ConnectionID? = nil
    var sseChunked = true
    /// Long polling: the poll waiting for messages, and the messages waiting for a poll.
    var pollSocket: ConnectionID? = nil
    var lpQueue: ByteBuffer? = nil
    /// Received bytes of an incomplete hub message.
    var inbound: ByteBuffer? = nil
    /// POSTed before the transport started.
    var earlyInput: ByteBuffer? = nil
    var lastSent: UInt64 = 0
    var lastReceived: UInt64 = 0
    /// Deadlines (monotonic ns, .max = none).
    var disposeAt: UInt64 = .max
    var handshakeDeadline: UInt64 = .max
    var pollDeadline: UInt64 = .max
    var flushPending = false
    var overflowed = false
    /// Earliest wake-up timer outstanding.
    var nextWake: UInt64 = .max
    /// Position in `HubServer.members`.
    var memberIndex = -1
    var groups: [HubMembership] = []
    /// Counter streams running (indices into `HubServer.streams`).
    var streams: [Int] = []
    var uploads: [HubUpload] = []
    var clientResults: [HubClientResultWait] = []
    var nextServerInvocationId: UInt64 = 0
    var stateful: HubStatefulState? = nil

    init(index: Int, generation: UInt32, connectionId: [UInt8], tokenBytes: [UInt8], statefulNegotiated: Bool) {
        self.index = index
        self.generation = generation
        self.connectionId = connectionId
        self.tokenBytes = tokenBytes
        token = HubTokenKey(tokenBytes)!
        self.statefulNegotiated = statefulNegotiated
    }

    var isActive: Bool { !disposed && (phase == .handshaking || phase == .open) }
}

/// An Upload in progress (client-to-server stream).
struct HubUpload {
    var streamId: [UInt8]
    var callerId: [UInt8]?
    var items: Int64 = 0
}

/// An AskClient waiting for the client's answer.
struct HubClientResultWait {
    var serverId: UInt64
    var callerId: [UInt8]?
}
