import StampedeLoop
import StampedeScenario
import StampedeSession
import StampedeWire

/// Everything one loop's Socket.IO clients share: where the server is and what each client does.
public struct SocketIOPlan: Sendable {
    /// This process's clock − the run's (a worker on another host): stamps are in the run's clock.
    public var stampClockOffsetNs: Int64 = 0
    /// How many clients, how fast they connect and emit, and what becomes of emits due while a
    /// client reconnects.
    public var load: LoadPlan
    public var spec: SocketIOSpec
    /// The server's host as written in the target (the Host header) and its port.
    public var host: String
    public var port: Int
    /// Each secret's value, in `spec.namedSlots` order (templates' `{name}`; never logged).
    public var secretValues: [[UInt8]]
    /// Request headers (the scenario's and `socketio.headers`, secrets filled in), rendered
    /// `Name: value\r\n`, sent on every HTTP request and the WebSocket upgrade.
    public var extraHeaderLines: [UInt8]
    public var connectTimeoutNs: UInt64
    /// The Engine.IO open packet, the namespace's answer and the connect emits must all be done
    /// this long after a start (the official client's `timeout`, 20 s).
    public var handshakeTimeoutNs: UInt64 = 20_000_000_000
    /// `https://`: the run's TLS client context for every connection (nil: plain TCP).
    public var tls: ClientTLS? = nil
    /// Largest packet or HTTP response accepted from the server.
    public var maxMessageBytes: Int
    public var sourceAddresses: [SocketAddress]
    /// Every address of the target (client `k` connects to `addresses[k % count]`); empty means the clients' one address.
    public var addresses: [SocketAddress] = []
    public var runTag: String

    public init(totalClients: Int, globalIndices: [Int], connectRate: Double, loadModel: LoadModel, totalRate: Double,
                thinkTimeNs: UInt64, spec: SocketIOSpec, host: String, port: Int, secretValues: [[UInt8]],
                extraHeaderLines: [UInt8], connectTimeoutNs: UInt64, maxMessageBytes: Int, sourceAddresses: [SocketAddress], runTag: String) {
        load = LoadPlan(totalClients: totalClients, globalIndices: globalIndices, connectRate: connectRate, loadModel: loadModel,
                        totalRate: totalRate, thinkTimeNs: thinkTimeNs)
        self.spec = spec
        self.host = host; self.port = port; self.secretValues = secretValues; self.extraHeaderLines = extraHeaderLines
        self.connectTimeoutNs = connectTimeoutNs; self.maxMessageBytes = maxMessageBytes; self.sourceAddresses = sourceAddresses
        self.runTag = runTag
    }

    /// The plan for `scenario`'s clients `globalIndices`, its `socketio` section `spec`, the server
    /// at `host:port`; `secrets` by name (resolved by the caller), `extraHeaderLines` rendered,
    /// `sourceAddresses` the scenario's (as the engine resolves them).
    public init(scenario s: Scenario, spec: SocketIOSpec, globalIndices: [Int], host: String, port: Int,
                secrets: [String: String], extraHeaderLines: [UInt8], sourceAddresses: [SocketAddress]) {
        self.init(totalClients: s.clients, globalIndices: globalIndices, connectRate: s.connectRate, loadModel: s.loadModel,
                  totalRate: s.message.ratePerSecond, thinkTimeNs: nanoseconds(s.thinkTimeSeconds), spec: spec, host: host, port: port,
                  secretValues: spec.namedSlots.map { Array((secrets[$0] ?? "").utf8) }, extraHeaderLines: extraHeaderLines,
                  connectTimeoutNs: nanoseconds(s.connectTimeoutSeconds), maxMessageBytes: s.maxMessageBytes,
                  sourceAddresses: sourceAddresses, runTag: s.name)
        load.whileDisconnected = s.whileDisconnected
        load.seed = s.seed
        load.senderBase = s.clientIndexBase
        load.initialClients = s.clientProfile?.start
        load.rateStages = s.message.stages
    }

    /// The transports as the session takes them.
    var transportPlan: SocketIOTransportPlan {
        switch (spec.transports.first, spec.transports.contains(.websocket), spec.transports.contains(.polling)) {
        case (.websocket?, _, _): .websocketOnly
        case (_, true, true): .pollingThenWebSocket
        default: .pollingOnly
        }
    }

    /// The Engine.IO path's request target for `transport` (with `sid` once the server gave one).
    func target(_ transport: SocketIOTransport, sid: String?) -> String {
        var t = spec.path.hasSuffix("/") ? spec.path : spec.path + "/"
        t += "?EIO=4&transport=" + (transport == .polling ? "polling" : "websocket")
        if let sid { t += "&sid=" + sid }
        return t
    }
}
