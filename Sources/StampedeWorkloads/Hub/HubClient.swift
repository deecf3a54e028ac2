/// Where a hub client is in its connection's life.
enum HubClientPhase: UInt8 { case idle, negotiating, connecting, handshaking, joining, connected, waitingToReconnect, closing, ended }

/// One simulated hub client: its phase and restart epoch, and a record per concern (each mostly
/// touched by the file of that concern). Its hub protocol session is kept beside it, in
/// `HubClients.sessions`, because that one part depends on the codec.
struct HubClient {
    var phase: HubClientPhase = .idle
    /// Bumped at every start, end and close: the timers of an older epoch find nothing to do.
    var epoch: UInt32 = 0
    /// When the current phase (negotiate, connect, upgrade, handshake) began, for its timing.
    var phaseStartNs: UInt64 = 0
    /// Where to connect and over which transport (`+Connecting`).
    var endpoint: HubEndpoint
    /// The two TCP connections and what runs on them (`+Connecting`, `+Transports`).
    var connections = HubConnections()
    /// The send schedule and the calls in flight (`+Calls`, `+Replies`).
    var calls = HubCalls()
    /// Reconnects, storms and churn (`+Reconnect`).
    var reconnect = HubReconnectState()
    init(endpoint: HubEndpoint) { self.endpoint = endpoint }
}
