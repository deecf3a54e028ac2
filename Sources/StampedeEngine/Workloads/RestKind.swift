import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeServers
import StampedeWorkloads

/// The REST workload: ETag-polling clients against `RestServer`.
struct RestKind: WorkloadKind {
    /// One descriptor per pooled connection.
    func descriptorsPerClient(_ s: Scenario) -> Int { s.rest?.poolSize ?? 1 }

    func expectsFanout(_ scenario: Scenario) -> Bool { false }

    /// The poll's latency, 2xx and 304 alike, when there is no round trip to show.
    func progressLatency(_ interval: MetricsShard) -> [LatencyMetric] {
        interval.histograms[LatencyMetric.roundTrip.rawValue].totalCount > 0 ? [.roundTrip] : [.http2xx, .http3xx]
    }

    func startEmbeddedServer(on loop: EventLoop, _ scenario: Scenario, tls: TLSContext?) throws(RunSetupError) -> (any FaultTarget, ClientEndpoint) {
        let configuration = try embeddedConfiguration(scenario)
        let server: RestServer
        do { server = try RestServer(loop: loop, address: Scenario.embeddedListenAddress, configuration: configuration, tls: tls) } catch {
            throw embeddedServerError(error)
        }
        return (server, embeddedEndpoint(scenario, address: .ipv4(0x7F00_0001, port: server.port), port: Int(server.port)))
    }

    func serveArguments(_ scenario: Scenario) throws(RunSetupError) -> (arguments: [String], environment: [String: String]) {
        let c = try embeddedConfiguration(scenario)
        var arguments = ["--rest", "--change-rate", String(c.changeRate), "--body-size", String(c.bodySize)]
        var environment: [String: String] = [:]
        if let limit = c.rateLimit { arguments += ["--rate-limit", String(limit)] }
        if c.chunked { arguments.append("--chunked") }
        if let token = c.token {
            // Through the environment: a command line is visible to every user of the machine.
            arguments += ["--token-env", "STAMPEDE_EMBEDDED_TOKEN"]
            environment["STAMPEDE_EMBEDDED_TOKEN"] = token
        }
        return (arguments, environment)
    }

    func embeddedEndpoint(_ scenario: Scenario, address: SocketAddress, port: Int) -> ClientEndpoint {
        .rest(addresses: [address], host: "127.0.0.1", port: port, basePath: "/api")
    }

    func targetEndpoint(_ scenario: Scenario) throws(RunSetupError) -> ClientEndpoint {
        guard case .http(let url) = scenario.target else { throw RunSetupError("the rest workload cannot use target \(scenario.target)") }
        // The resources' paths follow the target's path ("http://127.0.0.1:8080/api" + "/items").
        let base = url.path == "/" ? "" : String(url.path.hasSuffix("/") ? url.path.dropLast() : Substring(url.path))
        return .rest(addresses: try scenario.addresses(host: url.host, port: url.port), host: url.host, port: url.port, basePath: base)
    }

    func makeClients(_ setup: LoopClientsSetup) throws(RunSetupError) -> any LoopWorkload {
        guard case .rest(let addresses, let host, let port, let basePath) = setup.endpoint else {
            throw RunSetupError("the rest workload needs a REST endpoint")
        }
        let s = setup.scenario
        var plan = RestPlan(totalClients: s.clients, globalIndices: setup.clients, connectRate: s.connectRate,
                            spec: s.rest ?? RestSpec(), address: addresses[0], host: host, port: port, basePath: basePath,
                            token: setup.token, extraHeaderLines: setup.headerLines, connectTimeoutNs: nanoseconds(s.connectTimeoutSeconds),
                            sourceAddresses: s.sourceAddressValues)
        plan.addresses = setup.perClient(addresses)
        plan.tls = setup.tls
        plan.loadModel = s.loadModel
        plan.thinkTimeNs = nanoseconds(s.thinkTimeSeconds)
        return RestClients(loop: setup.loop, plan: plan, random: setup.random)
    }

    /// Clients refused for good (401/403) stop polling: the summary says so.
    func warnings(_ scenario: Scenario, totals: MetricsShard) -> [String] {
        guard totals[.clientsStopped] > 0 else { return [] }
        let refused = totals.responseStatuses.filter { $0.key == 401 || $0.key == 403 }.values.reduce(0, +)
        return ["\(totals[.clientsStopped]) of \(scenario.clients) clients stopped polling" + (refused > 0 ? " (\(refused) answers 401/403: check the token)" : "")]
    }

    /// The embedded REST target's settings: `rest.embedded`, accepting the clients' own token
    /// unless it names another.
    func embeddedConfiguration(_ scenario: Scenario) throws(RunSetupError) -> RestServer.Configuration {
        let e = scenario.rest?.embedded ?? EmbeddedRestTarget()
        var token: String? = nil
        if let source = e.token ?? scenario.rest?.token {
            do { token = try ScenarioLoader.resolveToken(source, scenarioFile: scenario.file, field: e.token != nil ? "rest.embedded.token" : "rest.token") }
            catch { throw RunSetupError("\(error)") }
        }
        return RestServer.Configuration(path: "/api", changeRate: e.changeRate, token: token, rateLimit: e.rateLimit, bodySize: e.bodySize, chunked: e.chunked)
    }
}
