import StampedeLoop
import StampedeScenario

/// Everything one loop's REST clients share: where the API is and what each client polls.
public struct RestPlan: Sendable {
    public var totalClients: Int
    /// Global indices of the clients on this loop.
    public var globalIndices: [Int]
    public var connectRate: Double
    public var spec: RestSpec
    public var address: SocketAddress
    /// The Host header value.
    public var host: String
    public var port: Int
    /// The target URL's path, prefixed to every resource path ("" for none).
    public var basePath: String
    /// Resolved bearer token (never logged).
    public var token: String?
    /// Extra request headers, rendered `Name: value\r\n`.
    public var extraHeaderLines: [UInt8]
    public var connectTimeoutNs: UInt64
    /// `https://`: the run's TLS client context (nil: plain TCP).
    public var tls: ClientTLS? = nil
    public var sourceAddresses: [SocketAddress]
    /// Every address of the target (client `k` connects to `addresses[k % count]`); empty means `address` alone.
    public var addresses: [SocketAddress] = []
    /// Closed model: each resource's next poll goes `thinkTimeNs` after its answer, not on the
    /// interval (as wrk does, with no think time).
    public var loadModel: LoadModel = .open
    public var thinkTimeNs: UInt64 = 0

    public init(totalClients: Int, globalIndices: [Int], connectRate: Double, spec: RestSpec, address: SocketAddress, host: String,
                port: Int, basePath: String, token: String?, extraHeaderLines: [UInt8], connectTimeoutNs: UInt64, sourceAddresses: [SocketAddress]) {
        self.totalClients = totalClients; self.globalIndices = globalIndices; self.connectRate = connectRate; self.spec = spec
        self.address = address; self.host = host; self.port = port; self.basePath = basePath; self.token = token
        self.extraHeaderLines = extraHeaderLines; self.connectTimeoutNs = connectTimeoutNs; self.sourceAddresses = sourceAddresses
    }
}
