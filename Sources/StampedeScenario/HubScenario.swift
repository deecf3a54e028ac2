/// What simulated SignalR hub clients do (workload `hub`): how they connect and which hub
/// calls they make. Wire details: docs/protocols.md.
public struct HubSpec: Sendable, Equatable {
    /// Transports in the order they are tried (the official clients' fallback order by default).
    public var transports: [HubTransport]
    public var protocolKind: HubProtocolKind
    /// Negotiate version to ask for (0 or 1).
    public var negotiateVersion: Int
    /// Connect the WebSocket directly without negotiating (only when WebSockets is the only transport).
    public var skipNegotiation: Bool
    /// Bearer token source; resolved when the run starts and never logged or written to results.
    public var accessToken: TokenSource?
    /// Browser behaviour: send the token as `access_token=` on WebSocket/SSE URLs instead of a header.
    public var tokenInQuery: Bool
    public var keepAliveSeconds: Double
    public var serverTimeoutSeconds: Double
    public var handshakeTimeoutSeconds: Double
    /// A call made once right after connecting (e.g. `JoinGroup`), awaited before the message phase.
    public var join: HubCall?
    /// The call each client makes at the scenario's message rate.
    public var operation: HubOperation
    public var call: HubCall?
    /// Client method whose arguments carry a stamp (sent by some client's call): delivery latency.
    public var receiveMethod: String?
    /// Client methods the server may invoke expecting a result, and the value to answer with.
    public var clientResults: [ClientResult]
    public var reconnect: ReconnectSpec
    public var statefulReconnect: Bool
    /// `upload` only: items sent on the client-to-server stream per call.
    public var uploadItems: Int = 3
    /// `stream` only: cancel each stream (CancelInvocation) after this many items; nil = read to the end.
    public var cancelStreamAfterItems: Int? = nil
    /// What an `invoke`'s Completion must carry to count as delivered.
    public var expectedResult: ExpectedResult = .any
    /// Hosts besides the target's that a negotiate redirect may send clients to (Azure SignalR
    /// Service: `*.service.signalr.net`): exact names or addresses, or `*.` and a name suffix,
    /// lower-cased. A redirect anywhere else is refused (`redirect_refused`).
    public var redirectHosts: [String] = []

    public init(transports: [HubTransport] = HubTransport.allCases, protocolKind: HubProtocolKind = .json, negotiateVersion: Int = 1,
                skipNegotiation: Bool = false, accessToken: TokenSource? = nil, tokenInQuery: Bool = false,
                keepAliveSeconds: Double = 15, serverTimeoutSeconds: Double = 30, handshakeTimeoutSeconds: Double = 15,
                join: HubCall? = nil, operation: HubOperation = .invoke, call: HubCall? = nil, receiveMethod: String? = nil,
                clientResults: [ClientResult] = [], reconnect: ReconnectSpec = .none, statefulReconnect: Bool = false) {
        self.transports = transports; self.protocolKind = protocolKind; self.negotiateVersion = negotiateVersion
        self.skipNegotiation = skipNegotiation; self.accessToken = accessToken; self.tokenInQuery = tokenInQuery
        self.keepAliveSeconds = keepAliveSeconds; self.serverTimeoutSeconds = serverTimeoutSeconds
        self.handshakeTimeoutSeconds = handshakeTimeoutSeconds; self.join = join; self.operation = operation; self.call = call
        self.receiveMethod = receiveMethod; self.clientResults = clientResults; self.reconnect = reconnect
        self.statefulReconnect = statefulReconnect
    }
}

extension HubSpec {
    /// Whether a negotiate redirect may send a client to `host`: the target's own host
    /// (`targetHost`), a loopback address (this machine), or a host `redirectHosts` names.
    /// Names compare without regard to ASCII case; `*.example.net` matches any name that ends
    /// in `.example.net` (not `example.net` itself).
    public func allowsRedirect(to host: String, targetHost: String) -> Bool {
        let h = host.lowercased()
        if h == targetHost.lowercased() || parseIPv4(h)?.first == 127 || h == "::1" { return true }
        for pattern in redirectHosts {
            if pattern.hasPrefix("*.") {
                if h.hasSuffix(pattern.dropFirst()) && h.count > pattern.count - 1 { return true }
            } else if h == pattern {
                return true
            }
        }
        return false
    }
}

public enum HubTransport: String, Sendable, Equatable, CaseIterable {
    case webSockets = "websockets"
    case serverSentEvents = "server_sent_events"
    case longPolling = "long_polling"
}

public enum HubProtocolKind: String, Sendable, Equatable, CaseIterable {
    case json
    case messagePack = "messagepack"
}

/// How each client's scheduled call is made.
public enum HubOperation: String, Sendable, Equatable, CaseIterable {
    /// Invocation with an id; the Completion is the reply (invocation latency).
    case invoke
    /// Invocation without an id; nothing comes back (delivery is measured through `receive`).
    case send
    /// StreamInvocation; every StreamItem and the final Completion are counted (per-item latency).
    case stream
    /// Invocation with a client-to-server stream: `uploadItems` StreamItems (each the stamp) then
    /// the stream's Completion; the hub method's Completion is the reply.
    case upload
    /// Connect (and join) only: hold connections, no calls.
    case none
}

/// A hub method call with argument templates.
public struct HubCall: Sendable, Equatable {
    public var method: String
    public var arguments: [ArgumentTemplate]
    public init(method: String, arguments: [ArgumentTemplate]) { self.method = method; self.arguments = arguments }
}

/// One argument of a hub call, built per call without parsing at run time.
public enum ArgumentTemplate: Sendable, Equatable {
    /// `"{stamp}"`: the latency stamp (sender, sequence, intended and actual time) padded to `message.size`.
    case stamp
    /// A string made of literal text and placeholders, e.g. `"room-{client%10}"`.
    case text([TemplatePart])
    case integer(Int64)
    case number(Double)
    case boolean(Bool)
    case null
}

public enum TemplatePart: Sendable, Equatable {
    case literal(String)
    /// `{client}`: the client's global index.
    case client
    /// `{client%N}`: the client's index modulo N (to spread clients over N groups).
    case clientModulo(Int)
    /// `{user}`: the client's user name.
    case user
    /// `{sequence}`: the call's sequence number for this client.
    case sequence
}

public struct ClientResult: Sendable, Equatable {
    public var method: String
    public var value: String
    public init(method: String, value: String) { self.method = method; self.value = value }
}

/// Where a secret comes from. The value itself is read at run time only.
public enum TokenSource: Sendable, Equatable {
    case literal(String)
    case environment(String)
    case file(String)
}

public enum ReconnectSpec: Sendable, Equatable {
    case none
    /// SignalR's default: 0, 2, 10, 30 seconds, then give up.
    case signalRDefault
    /// The official Socket.IO client's: 1 s doubling to 5 s, each delay randomised ±50 %
    /// (randomizationFactor 0.5), attempts unlimited (docs/protocols.md §15).
    case socketIODefault
    case delays([Double])
    /// Doubling from `initial` up to `max`, at most `attempts` attempts, with jitter.
    case exponential(initialSeconds: Double, maxSeconds: Double, attempts: Int, jitter: Jitter)
}

/// The reply an invocation expects.
public enum ExpectedResult: Sendable, Equatable {
    /// Any Completion without an error.
    case any
    /// A string result starting with the call's stamp (an echo of the `{stamp}` argument).
    case echo
    /// This exact string result.
    case text(String)
}

/// Randomising reconnect delays so clients dropped together do not return together.
public enum Jitter: String, Sendable, Equatable, CaseIterable {
    /// The computed delay exactly.
    case none
    /// Uniform in [0, delay] (AWS "full jitter").
    case full
    /// delay/2 plus uniform in [0, delay/2] (AWS "equal jitter").
    case equal
}
