import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeServers
import StampedeWorkloads

/// What the engine needs to know about one workload, in one place: the file descriptors a
/// client holds, its reference server, where its clients connect, how its clients are made for
/// one loop, the fan-out rule, the progress line's latency and its summary warnings. The engine
/// itself never branches on the workload: adding one means its folder in StampedeWorkloads, a
/// type here, and one line in `WorkloadKinds.kind(of:)`.
protocol WorkloadKind: Sendable {
    /// Descriptors one client holds open (for the open-files budget in `RunPlan`).
    func descriptorsPerClient(_ scenario: Scenario) -> Int
    /// Whether every message should reach every other connected client, so the engine expects
    /// `sent × (connected − 1)` fan-out deliveries (not computed for rooms or groups).
    func expectsFanout(_ scenario: Scenario) -> Bool
    /// The latency histograms the progress line's percentiles merge, given an interval's measurements.
    func progressLatency(_ interval: MetricsShard) -> [LatencyMetric]
    /// Starts the embedded reference server on `loop` (not yet running), over TLS with `tls`;
    /// returns it and where the clients connect.
    func startEmbeddedServer(on loop: EventLoop, _ scenario: Scenario, tls: TLSContext?) throws(RunSetupError) -> (any FaultTarget, ClientEndpoint)
    /// `stampede serve` arguments (and environment) for the embedded server in a child process.
    func serveArguments(_ scenario: Scenario) throws(RunSetupError) -> (arguments: [String], environment: [String: String])
    /// Where clients connect to the embedded server listening at `address` (port `port`).
    func embeddedEndpoint(_ scenario: Scenario, address: SocketAddress, port: Int) -> ClientEndpoint
    /// Where clients connect for the scenario's own target, or why they cannot.
    func targetEndpoint(_ scenario: Scenario) throws(RunSetupError) -> ClientEndpoint
    /// One loop's clients.
    func makeClients(_ setup: LoopClientsSetup) throws(RunSetupError) -> any LoopWorkload
    /// Warnings the summary should carry, from the run's totals.
    func warnings(_ scenario: Scenario, totals: MetricsShard) -> [String]
    /// Why the scenario cannot run against a reference target of several server processes
    /// (`stampede serve --processes`), or nil when it can.
    func crossProcessProblem(_ scenario: Scenario) -> String?
}

extension WorkloadKind {
    func descriptorsPerClient(_ scenario: Scenario) -> Int { 1 }
    func progressLatency(_ interval: MetricsShard) -> [LatencyMetric] { [.roundTrip] }
    func warnings(_ scenario: Scenario, totals: MetricsShard) -> [String] { [] }
    func crossProcessProblem(_ scenario: Scenario) -> String? { nil }
}

/// The registration: which type describes each workload.
enum WorkloadKinds {
    static func kind(of workload: Workload) -> any WorkloadKind {
        switch workload {
        case .chat: ChatKind()
        case .hub: HubKind()
        case .rest: RestKind()
        case .websocket: WebSocketFlowKind()
        case .socketio: SocketIOKind()
        }
    }
}

/// Where the clients connect, in the form their workload takes it.
enum ClientEndpoint {
    case webSocket(WebSocketEndpoint)
    case hub(addresses: [SocketAddress], base: HubURL)
    /// A REST API: where to connect, the Host header's host and port, and the base path.
    case rest(addresses: [SocketAddress], host: String, port: Int, basePath: String)
    /// A Socket.IO server: where to connect, and the Host header's host and port (the
    /// Engine.IO path and the namespace are the scenario's).
    case socketIO(addresses: [SocketAddress], host: String, port: Int)
}

/// What every workload's clients of one loop are made from.
struct LoopClientsSetup {
    var scenario: Scenario
    var loop: EventLoop
    var endpoint: ClientEndpoint
    /// The global indices of the clients this loop owns.
    var clients: [Int]
    var random: FastRandom
    /// The scenario's token (`hub.access_token` or `rest.token`), resolved.
    var token: String?
    /// The scenario's extra headers as request lines.
    var headerLines: [UInt8]
    /// The run's TLS client context (nil: plain TCP).
    var tls: ClientTLS?
    /// This process's clock − the coordinator's (a worker on another host), for message stamps.
    var stampClockOffsetNs: Int64 = 0
    /// Hub clients: the run's resolver of the names negotiate redirects give (shared by every loop).
    var hubRedirects: HubRedirectResolver? = nil

    /// The target address of each of this loop's clients when the target has several: global
    /// client `i` gets `addresses[i % count]`, whichever loop it runs on (the workloads index
    /// their list by local client). One address stays a list of one.
    func perClient(_ addresses: [SocketAddress]) -> [SocketAddress] {
        addresses.count <= 1 ? addresses : clients.map { addresses[$0 % addresses.count] }
    }
}

extension Scenario {
    /// Source addresses to spread connections over (`source_addresses`, IPv4 or IPv6).
    var sourceAddressValues: [SocketAddress] { sourceAddresses.compactMap { SocketAddress(host: $0, port: 0) } }
    /// The target's addresses, resolved once (names through getaddrinfo) and chosen by `resolve`;
    /// client `i` connects to address `i` modulo the list. A setup error names a host that does not resolve.
    func addresses(host: String, port: Int) throws(RunSetupError) -> [SocketAddress] {
        try TargetResolver.addresses(host: host, port: port, policy: resolve)
    }
    /// The embedded server on loopback, port chosen by the kernel.
    static var embeddedListenAddress: SocketAddress { .ipv4(0x7F00_0001, port: 0) }
}

/// A setup error for an embedded server that would not start.
func embeddedServerError(_ error: any Error) -> RunSetupError {
    if let e = error as? RunSetupError { return e }
    return RunSetupError("cannot start the embedded target: \(error)")
}
