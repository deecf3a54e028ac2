import StampedeLoop
import StampedeScenario
import StampedeWire

/// Everything one loop's hub clients share: where the hub is and what each client does.
public struct HubPlan: Sendable {
    /// This process's clock − the run's (a worker on another host): stamps are in the run's clock.
    public var stampClockOffsetNs: Int64 = 0
    public var totalClients: Int
    /// Global indices of the clients on this loop.
    public var globalIndices: [Int]
    public var connectRate: Double
    public var loadModel: LoadModel
    /// Open model: calls per second over all clients (with stages, where the first starts).
    public var totalRate: Double
    /// Open model: `message.stages`, the rate over the phase (empty: `totalRate` throughout).
    public var rateStages: [RateStage] = []
    public var thinkTimeNs: UInt64
    /// Size of the `{stamp}` argument text.
    public var messageSize: Int
    public var spec: HubSpec
    /// The hub's base URL (negotiate is appended to its path).
    public var base: HubURL
    /// The bearer token, already resolved (never logged).
    public var accessToken: String?
    /// Extra request headers, rendered `Name: value\r\n`.
    public var extraHeaderLines: [UInt8]
    public var connectTimeoutNs: UInt64
    /// `https://`: the run's TLS client context for every connection (negotiate and transports; nil: plain TCP).
    public var tls: ClientTLS? = nil
    public var maxMessageBytes: Int
    public var sourceAddresses: [SocketAddress]
    /// Every address of the target (client `k` connects to `addresses[k % count]`); empty means the clients' one address.
    public var addresses: [SocketAddress] = []
    public var runTag: String
    /// Open model: what happens to calls that fall due while a client is reconnecting (waiting
    /// for its reconnect delay, or restarting: negotiate, transport, handshake, join). A stateful
    /// resume is not a disconnect for this purpose: there, as in the official clients, the
    /// connection stays Connected and calls wait in the replay buffer.
    public var whileDisconnected: DisconnectedSends = .drop
    /// Seeds the open model's permutation of send slots (the scenario's seed).
    public var seed: UInt64 = 0
    /// `queue`: the most calls one client keeps while it reconnects. The queue is only a count
    /// (sequence numbers; each call is written when it is sent), so this bounds the burst a
    /// client sends when it is back, not memory; when it is full the oldest call is dropped and
    /// counted (`dropped_while_disconnected`), as an app's bounded send queue would.
    public var maxQueuedWhileDisconnected: UInt32 = 10_000

    public init(totalClients: Int, globalIndices: [Int], connectRate: Double, loadModel: LoadModel, totalRate: Double,
                thinkTimeNs: UInt64, messageSize: Int, spec: HubSpec, base: HubURL, accessToken: String?,
                extraHeaderLines: [UInt8], connectTimeoutNs: UInt64, maxMessageBytes: Int, sourceAddresses: [SocketAddress], runTag: String) {
        self.totalClients = totalClients; self.globalIndices = globalIndices; self.connectRate = connectRate
        self.loadModel = loadModel; self.totalRate = totalRate; self.thinkTimeNs = thinkTimeNs; self.messageSize = messageSize
        self.spec = spec; self.base = base; self.accessToken = accessToken; self.extraHeaderLines = extraHeaderLines
        self.connectTimeoutNs = connectTimeoutNs; self.maxMessageBytes = maxMessageBytes; self.sourceAddresses = sourceAddresses
        self.runTag = runTag
    }
}
