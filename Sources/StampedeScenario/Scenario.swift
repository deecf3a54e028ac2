/// A validated load scenario: what to connect to, how many clients, and what they do.
///
/// Built only by `ScenarioLoader`, which checks every field and reports problems with the
/// file, line and field name, so the engine can trust every value here.
public struct Scenario: Sendable, Equatable {
    /// Name used in the results folder (`results/<name>-<UTC timestamp>/`).
    public var name: String
    /// Path of the file it was loaded from ("" when built in code).
    public var file: String
    public var target: Target
    public var workload: Workload
    /// Number of simulated clients.
    public var clients: Int
    /// New connections opened per second during ramp-up.
    public var connectRate: Double
    /// Length of the message phase, after every client has connected (or failed to).
    public var durationSeconds: Double
    public var message: MessageSpec
    public var loadModel: LoadModel
    /// Closed model only: pause between receiving one's own echo and sending the next message.
    public var thinkTimeSeconds: Double
    /// Seed for everything random in the run (user names, masking keys, start offsets).
    public var seed: UInt64
    /// After the message phase: how long to wait for outstanding echoes and broadcasts.
    public var drainSeconds: Double
    public var connectTimeoutSeconds: Double
    /// Extra headers sent with the WebSocket upgrade request.
    public var headers: [Header]
    /// Optional `Sec-WebSocket-Protocol` to request.
    public var subprotocol: String?
    /// Largest WebSocket message accepted before the connection is failed with 1009.
    public var maxMessageBytes: Int
    /// Local source addresses (IPv4 or IPv6) to spread connections over (beyond ~28k per address).
    public var sourceAddresses: [String]
    /// Which of the target name's addresses the clients use (`resolve`).
    public var resolve: ResolvePolicy = .first
    /// Hub workloads only: transports, protocol and the calls each client makes.
    public var hub: HubSpec?
    /// Timed events during the message phase (connection storms), in time order.
    public var events: [ScenarioEvent] = []
    /// Chat clients: what a client does when its connection drops (hub clients: `hub.reconnect`).
    public var reconnect: ReconnectSpec = .none
    /// Chat clients: application heartbeats, WebSocket pings, and dead-server detection.
    public var heartbeat: Heartbeat? = nil
    /// Chat and hub clients (open model): what happens to messages that fall due while a client
    /// is reconnecting (hub clients: waiting for the reconnect delay, or restarting through
    /// negotiate, transport, handshake and join; a stateful resume keeps its calls in the replay
    /// buffer either way).
    public var whileDisconnected: DisconnectedSends = .drop
    /// REST workloads only: what each client polls and how it reads the answers.
    public var rest: RestSpec? = nil
    /// WebSocket flow workloads only: the declared message flow.
    public var websocket: WebSocketFlowSpec? = nil
    /// Workload `socketio`: the `socketio` section.
    public var socketio: SocketIOSpec? = nil
    /// TLS settings: set for every `wss://` and `https://` target (defaults when the scenario has
    /// no `tls:` block), and for `target: embedded` with a `tls:` block (the embedded server then
    /// serves TLS); nil means plain TCP.
    public var tls: TLSSpec? = nil
    /// Admin endpoint of a `stampede serve` target, for `server` events against it.
    public var targetAdmin: AdminEndpoint? = nil
    /// Pass/fail conditions on the run's measurements (`thresholds:`), in the file's order.
    public var thresholds: [ThresholdSpec] = []
    /// `populations:`: the run's client populations, each a scenario of its own; empty for a
    /// scenario of one population (every field above is then that population's). With
    /// populations, the fields above describe the run: its name, duration, drain and the
    /// thresholds on the whole run; `clients` is the sum.
    public var populations: [Population] = []
    /// The clients of the populations before this one (0 for a run of one population): added to
    /// each client's index where it names the client to others (message stamps, user names).
    public var clientIndexBase: Int = 0
    /// `clients: {start, stages}`: the connected clients over the message phase (nil: all
    /// `clients` connect in the ramp-up and stay). `clients` is then its peak.
    public var clientProfile: ClientProfile? = nil
    /// Latencies and counters the scenario names beyond the built-in ones (a WebSocket flow's
    /// replies and rules), set by the section that declares them, which the loader reads before
    /// `thresholds:` so that thresholds may name them.
    public var declaredMetrics = ThresholdNames()

    public struct Header: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) { self.name = name; self.value = value }
    }

    public init(
        name: String, file: String = "", target: Target, workload: Workload = .chat, clients: Int,
        connectRate: Double, durationSeconds: Double, message: MessageSpec, loadModel: LoadModel = .open,
        thinkTimeSeconds: Double = 0, seed: UInt64 = 1, drainSeconds: Double = 5, connectTimeoutSeconds: Double = 10,
        headers: [Header] = [], subprotocol: String? = nil, maxMessageBytes: Int = 1 << 20, sourceAddresses: [String] = [],
        hub: HubSpec? = nil
    ) {
        self.name = name; self.file = file; self.target = target; self.workload = workload
        self.clients = clients; self.connectRate = connectRate; self.durationSeconds = durationSeconds
        self.message = message; self.loadModel = loadModel; self.thinkTimeSeconds = thinkTimeSeconds
        self.seed = seed; self.drainSeconds = drainSeconds; self.connectTimeoutSeconds = connectTimeoutSeconds
        self.headers = headers; self.subprotocol = subprotocol; self.maxMessageBytes = maxMessageBytes
        self.sourceAddresses = sourceAddresses
        self.hub = hub
    }
}

/// Which of the addresses a target's host name resolves to the clients connect to; client `i`
/// uses address `i` modulo the chosen list.
public enum ResolvePolicy: String, Sendable, Equatable, CaseIterable {
    /// Only the first address the resolver returns.
    case first
    /// Every address, IPv4 and IPv6, in the resolver's order.
    case all
    /// Every IPv4 address.
    case ipv4
    /// Every IPv6 address.
    case ipv6
}

/// Where the load goes: the embedded server, or a host name, IPv4 or IPv6 literal the user names.
public enum Target: Sendable, Equatable, CustomStringConvertible {
    /// The reference server, started in the same process on its own event loop.
    case embedded
    /// `ws://host:port/path` or `wss://…` (`url.secure`).
    case webSocket(url: WebSocketURL)
    /// `http://host:port/path` or `https://…`: a SignalR hub's or a REST API's base URL.
    case http(url: WebSocketURL)

    /// A `wss://` or `https://` URL.
    public var isSecure: Bool {
        switch self {
        case .embedded: false
        case .webSocket(let url), .http(let url): url.secure
        }
    }

    /// "embedded" or the URL, as a user would write it.
    public var description: String {
        switch self {
        case .embedded: "embedded"
        case .webSocket(let url): url.description
        case .http(let url): (url.secure ? "https" : "http") + url.description.dropFirst(url.secure ? 3 : 2)
        }
    }
}

/// A parsed `ws://` (or `http://`) URL: a host name, an IPv4 literal or an IPv6 literal.
public struct WebSocketURL: Sendable, Equatable, CustomStringConvertible {
    /// Host as written (`127.0.0.1`, `localhost`, `[::1]` is stored as `::1`).
    public var host: String
    public var port: Int
    /// Path and query, starting with `/`.
    public var path: String
    /// `wss://` or `https://`: the connection speaks TLS (see `Scenario.tls`).
    public var secure: Bool
    public init(host: String, port: Int, path: String, secure: Bool = false) {
        self.host = host; self.port = port; self.path = path; self.secure = secure
    }
    /// As a WebSocket URL (`ws://` or `wss://`).
    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "\(secure ? "wss" : "ws")://\(h):\(port)\(path)"
    }
    /// The URL with the TLS scheme, for messages that suggest it.
    var secureSchemeHint: String {
        var u = self
        u.secure = true
        return u.description
    }
}

public enum Workload: String, Sendable, Equatable, CaseIterable {
    /// WebSocket chat clients: each sends JSON chat messages and receives every broadcast.
    case chat
    /// SignalR hub clients, modelled on the official clients; needs a `hub` section.
    case hub
    /// ETag-polling REST clients (the JSONSession model); needs a `rest` section.
    case rest
    /// WebSocket clients that speak the server's own protocol, declared as a flow in the
    /// `websocket` section (connect steps, messages, correlated replies).
    case websocket
    /// Socket.IO clients (protocol 5 over Engine.IO 4: long polling, WebSocket, the upgrade),
    /// described in the `socketio` section.
    case socketio
}

public enum LoadModel: String, Sendable, Equatable, CaseIterable {
    /// Messages at scheduled (intended) times; latency from the intended time.
    case open
    /// Each client sends its next message after its own echo plus the think time.
    case closed
}

public struct MessageSpec: Sendable, Equatable {
    /// Open model: messages per second across all clients; with `stages`, the rate the first stage starts from.
    public var ratePerSecond: Double
    /// Size in bytes of the `message` text (padded); at least `MessageSpec.minimumSize`.
    public var size: Int
    /// Open model: the arrival rate over the message phase (`message.stages`), each stage linear
    /// from the previous rate to its own; empty: `ratePerSecond` throughout. After the last stage
    /// the rate holds at the last stage's.
    public var stages: [RateStage] = []
    public init(ratePerSecond: Double, size: Int, stages: [RateStage] = []) {
        self.ratePerSecond = ratePerSecond; self.size = size; self.stages = stages
    }
    /// Room for the metadata the chat workload puts in the text (sender, sequence, timestamps).
    public static let minimumSize = 64
}

/// One stage of `message.stages`: over `durationSeconds` the arrival rate goes linearly from the
/// previous stage's rate (or `message.rate` for the first) to `ratePerSecond`.
public struct RateStage: Sendable, Equatable {
    public var durationSeconds: Double
    public var ratePerSecond: Double
    public init(durationSeconds: Double, ratePerSecond: Double) {
        self.durationSeconds = durationSeconds; self.ratePerSecond = ratePerSecond
    }
}

/// Something that happens at a fixed time in the message phase.
public struct ScenarioEvent: Sendable, Equatable {
    /// Seconds after the message phase starts.
    public var atSeconds: Double
    public var kind: Kind
    public init(atSeconds: Double, kind: Kind) { self.atSeconds = atSeconds; self.kind = kind }

    public enum Kind: Sendable, Equatable {
        /// `fraction` of the connected clients lose their connection at the same instant.
        /// `stallSeconds` applies to `.stall` only: how long the clients stop reading.
        case storm(fraction: Double, mode: StormMode, stallSeconds: Double = 0)
        /// The reference target's fault switch: the embedded target directly, or a `stampede
        /// serve` through its admin endpoint (`target_admin`).
        case server(ServerFault)
        /// A command run once, at this time (e.g. restarting the user's own server); its exit
        /// status and output are captured in the results.
        case command(ExternalCommand)
        /// For `durationSeconds`, `ratePerSecond` clients leave (a clean close) and as many new
        /// clients join (a fresh connect under a new identity) every second.
        case churn(ratePerSecond: Double, durationSeconds: Double)
    }

    /// Storm, server fault and command events: the ones whose recovery is measured
    /// (`storm-<n>.csv`). Churn is a steady process, measured by its own counters.
    public var measuresRecovery: Bool {
        if case .churn = kind { return false }
        // A delay drops nobody: it changes latency, which the latency metrics measure.
        if case .server(.delay) = kind { return false }
        return true
    }

    /// "storm", "server", "command" or "churn", as in summary.json.
    public var kindName: String {
        switch kind {
        case .storm: "storm"
        case .server: "server"
        case .command: "command"
        case .churn: "churn"
        }
    }

    /// What the event does, in a few words (summary.json `mode`, progress lines).
    public var detail: String {
        switch kind {
        case .storm(_, let mode, let stall): mode == .stall ? "stall \(stall)s" : mode.rawValue
        case .server(let f): f.description
        case .command(let c): c.command
        case .churn(let rate, let d): "\(rate)/s for \(d)s"
        }
    }
}

/// How clients lose their connection in a storm.
public enum StormMode: String, Sendable, Equatable, CaseIterable {
    /// An abrupt reset (RST), as when a load balancer or the network drops the connection.
    case reset
    /// A clean close by the client (WebSocket close, SignalR Close), as in a client-side restart.
    case close
    /// The client stops reading its socket for a while (a frozen app, a stalled network path);
    /// the connection is recovered when it reads again, or when it has reconnected if the
    /// server or the client's own heartbeat timeout dropped it meanwhile.
    case stall
}

/// A fault the reference target injects on itself.
public enum ServerFault: Sendable, Equatable, CustomStringConvertible {
    /// Every connection is dropped at once: reset (RST) or a clean close (WebSocket 1012, SignalR
    /// Close with allowReconnect).
    case drop(reset: Bool)
    /// New connections are answered 503 for `seconds`; existing ones go on.
    case reject(seconds: Double)
    /// The server neither accepts, reads nor writes for `seconds`, then carries on.
    case stall(seconds: Double)
    /// Every relayed message waits `microseconds` (a fixed added service time); 0 turns it off.
    case delay(microseconds: Int)

    public var description: String {
        switch self {
        case .drop(let reset): reset ? "drop reset" : "drop close"
        case .reject(let s): "reject \(s)s"
        case .stall(let s): "stall \(s)s"
        // Whole milliseconds read as before microseconds were taken.
        case .delay(let us): us % 1000 == 0 ? "delay \(us / 1000)ms" : "delay \(us)us"
        }
    }
}

/// A command an event runs: `/bin/sh -c <command>`, in the scenario file's folder.
public struct ExternalCommand: Sendable, Equatable {
    public var command: String
    /// Killed (and reported as timed out) after this long.
    public var timeoutSeconds: Double
    public init(command: String, timeoutSeconds: Double = 60) { self.command = command; self.timeoutSeconds = timeoutSeconds }
}

/// The admin endpoint of a `stampede serve --admin-port` target (loopback only).
public struct AdminEndpoint: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public init(host: String, port: Int) { self.host = host; self.port = port }
    public var description: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
}

/// Keep-alive behaviour of chat clients, as in a SocketRocket app: an application heartbeat,
/// WebSocket pings, and a timeout after which a silent server counts as dead.
public struct Heartbeat: Sendable, Equatable {
    /// An application message (`text`) every this many seconds; nil = none.
    public var intervalSeconds: Double?
    public var text: String
    /// A WebSocket ping every this many seconds (its pong's round trip is measured); nil = none.
    public var pingIntervalSeconds: Double?
    /// Nothing received for this long means the server is dead: the connection is dropped
    /// (and the reconnect policy applies); nil = never.
    public var timeoutSeconds: Double?
    public init(intervalSeconds: Double? = nil, text: String = "heart", pingIntervalSeconds: Double? = nil, timeoutSeconds: Double? = nil) {
        self.intervalSeconds = intervalSeconds; self.text = text; self.pingIntervalSeconds = pingIntervalSeconds
        self.timeoutSeconds = timeoutSeconds
    }
}

/// Messages that fall due while a client is reconnecting.
public enum DisconnectedSends: String, Sendable, Equatable, CaseIterable {
    /// Counted as sent and lost (`dropped_while_disconnected`), as an app that does not queue.
    case drop
    /// Kept and sent after the reconnect, with latency counted from their intended times
    /// (hub clients keep at most `HubPlan.maxQueuedWhileDisconnected` per client, 10,000; beyond
    /// that the oldest is dropped and counted as with `drop`).
    case queue
}
