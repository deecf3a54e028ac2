import StampedeLoop
import StampedeScenario
import StampedeWire

/// Everything one loop's hub clients share: where the hub is and what each client does.
public struct HubPlan: Sendable {
    /// This process's clock − the run's (a worker on another host): stamps are in the run's clock.
    public var stampClockOffsetNs: Int64 = 0
    /// How many clients, how fast they connect and call, and what becomes of calls due while a
    /// client reconnects (a stateful resume is not a disconnect for this: there, as in the
    /// official clients, the connection stays Connected and calls wait in the replay buffer).
    public var load: LoadPlan
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
    /// Resolves the host names negotiate redirects name, off the loops, once per run (shared by
    /// every loop); nil: a redirect to a name is refused as unresolvable.
    public var redirectResolver: HubRedirectResolver? = nil
    public var runTag: String

    public init(totalClients: Int, globalIndices: [Int], connectRate: Double, loadModel: LoadModel, totalRate: Double,
                thinkTimeNs: UInt64, messageSize: Int, spec: HubSpec, base: HubURL, accessToken: String?,
                extraHeaderLines: [UInt8], connectTimeoutNs: UInt64, maxMessageBytes: Int, sourceAddresses: [SocketAddress], runTag: String) {
        load = LoadPlan(totalClients: totalClients, globalIndices: globalIndices, connectRate: connectRate, loadModel: loadModel,
                        totalRate: totalRate, thinkTimeNs: thinkTimeNs)
        self.messageSize = messageSize
        self.spec = spec; self.base = base; self.accessToken = accessToken; self.extraHeaderLines = extraHeaderLines
        self.connectTimeoutNs = connectTimeoutNs; self.maxMessageBytes = maxMessageBytes; self.sourceAddresses = sourceAddresses
        self.runTag = runTag
    }
}
