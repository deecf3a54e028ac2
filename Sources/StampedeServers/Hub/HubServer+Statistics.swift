import StampedeLoop

extension HubServer {
    /// Invocations received, by hub method.
    public struct MethodCounts: Sendable, Equatable {
        public var sendMessage = 0
        public var echo = 0
        public var joinGroup = 0
        public var leaveGroup = 0
        public var sendToGroup = 0
        public var counter = 0
        public var askClient = 0
        public var upload = 0
        public var unknown = 0
        public var total: Int { sendMessage + echo + joinGroup + leaveGroup + sendToGroup + counter + askClient + upload + unknown }
    }

    public struct Statistics: Sendable, Equatable {
        /// TCP connections accepted, and HTTP requests parsed on them.
        public var accepted = 0
        public var httpRequests = 0
        /// Requests answered with a 4xx/5xx status.
        public var httpErrors = 0
        public var negotiates = 0
        /// Negotiates refused for want of the `--token` bearer (401).
        public var negotiatesUnauthorized = 0
        public var negotiatesV0 = 0
        public var negotiatesV1 = 0
        public var statefulReconnectNegotiated = 0
        /// Negotiated ids no transport claimed in time.
        public var unclaimedDisposed = 0
        /// Negotiated ids disposed unclaimed to make room (`maxUnclaimedNegotiations`), and
        /// those waiting for a transport now.
        public var unclaimedEvicted = 0
        public var unclaimed = 0
        /// WebSocket connections opened without negotiate.
        public var skippedNegotiation = 0
        /// Connections by transport (when the transport claimed them) and by hub protocol
        /// (successful handshakes).
        public var connectionsWebSockets = 0
        public var connectionsServerSentEvents = 0
        public var connectionsLongPolling = 0
        public var handshakes = 0
        public var handshakesJSON = 0
        public var handshakesMessagePack = 0
        public var handshakeErrors = 0
        public var handshakeTimeouts = 0
        /// Connections currently between transport start and end.
        public var open = 0
        /// Hub messages received after handshakes.
        public var messagesReceived = 0
        public var invocations = MethodCounts()
        /// ReceiveMessage copies queued (SendMessage and SendToGroup fan-out).
        public var messagesBroadcast = 0
        /// `stampede serve --processes`: broadcasts other server processes received and this one
        /// passed to its clients (their copies are counted in `messagesBroadcast` too).
        public var remoteBroadcasts = 0
        public var completionsSent = 0
        public var streamItemsSent = 0
        public var streamsCanceled = 0
        /// Client results answered (Completion from the client), and those with an error.
        public var clientResults = 0
        public var clientResultErrors = 0
        public var uploadItemsReceived = 0
        public var uploadsCompleted = 0
        public var pingsSent = 0
        public var clientTimeouts = 0
        public var pollTimeouts = 0
        /// Long-polling connections dropped for not polling.
        public var pollAbandoned = 0
        /// Malformed hub messages, handshakes, frames and requests that ended a connection.
        public var protocolErrors = 0
        public var closeMessagesSent = 0
        /// Connections ended, for any reason.
        public var closes = 0
        /// Connections the limits closed: slow consumers (a socket's output or a long-polling
        /// queue over the limit), header and idle timeouts.
        public var limits = LimitStatistics()
        /// Stateful reconnect: WebSocket connections resumed on the same id, and messages replayed.
        public var reconnectsResumed = 0
        public var messagesReplayed = 0
        public var acksSent = 0
        /// Faults applied (`apply(_:)`), hub connections a drop fault ended, and requests a
        /// reject fault answered with 503.
        public var faultsApplied = 0
        public var connectionsDropped = 0
        public var requestsRejected = 0
        /// `--max-connections`: WebSocket upgrades (and negotiates) answered 503 because the
        /// limit was reached.
        public var connectionsRefused = 0
    }
}
