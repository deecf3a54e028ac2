extension SocketIOServer {
    public struct Statistics: Sendable, Equatable {
        /// TCP connections accepted, and HTTP requests parsed on them.
        public var accepted = 0
        public var httpRequests = 0
        /// Requests answered with a 4xx/5xx status, and those refused with an Engine.IO error
        /// (unknown sid or transport, a bad method, a poll after the upgrade).
        public var httpErrors = 0
        public var requestsRefused = 0
        /// Engine.IO sessions opened, by the transport of their handshake.
        public var handshakesPolling = 0
        public var handshakesWebSocket = 0
        /// Upgrades: WebSockets attached to a polling session, completed (`5`), and failed.
        public var upgradesStarted = 0
        public var upgrades = 0
        public var upgradesFailed = 0
        public var polls = 0
        public var posts = 0
        /// Engine.IO sessions open now, and ended.
        public var open = 0
        public var closes = 0
        /// Namespace CONNECTs accepted, refused (CONNECT_ERROR), and DISCONNECTs.
        public var namespaceConnects = 0
        public var connectErrors = 0
        public var namespaceDisconnects = 0
        /// EVENTs received (`join`, `say` among them), ACKs received, ACKs sent.
        public var eventsReceived = 0
        public var joins = 0
        public var says = 0
        public var acksReceived = 0
        public var acksSent = 0
        /// Binary packets received whole (with every attachment).
        public var binaryPackets = 0
        /// Packets for namespaces the client had not connected to, and events without a name.
        public var packetsIgnored = 0
        /// `said` broadcasts made, and the copies sent (one per receiver).
        public var broadcasts = 0
        public var packetsBroadcast = 0
        /// `stampede serve --processes`: broadcasts other server processes made that this one sent
        /// to its clients (their copies are counted in `packetsBroadcast` too).
        public var remoteBroadcasts = 0
        /// Broadcasts too large for the link between processes (`--max-payload` over 1 MB), sent
        /// only to this process's clients.
        public var broadcastsNotShared = 0
        /// How sessions ended: the client's close packet, a ping unanswered, the transport gone,
        /// a protocol error (bad packets, frames, requests), a message over maxPayload, the server.
        public var clientCloses = 0
        public var pingTimeouts = 0
        public var transportCloses = 0
        public var protocolErrors = 0
        public var payloadsTooLarge = 0
        public var serverCloses = 0
        /// Connections the limits closed: slow consumers (a socket's output, or what waits for a
        /// poll, over the limit), header and idle timeouts.
        public var limits = LimitStatistics()
        /// Faults applied (`apply(_:)`), sessions a drop fault ended, and handshakes a reject
        /// fault answered with 503.
        public var faultsApplied = 0
        public var connectionsDropped = 0
        public var requestsRejected = 0
        /// `--max-connections`: handshakes answered 503 because the limit was reached.
        public var connectionsRefused = 0
    }
}
