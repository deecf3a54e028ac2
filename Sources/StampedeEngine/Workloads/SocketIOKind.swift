import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeServers
import StampedeWorkloads

/// The Socket.IO workload: Socket.IO 5 clients over Engine.IO 4 against `SocketIOServer` or
/// the scenario's server.
struct SocketIOKind: WorkloadKind {
    /// Long polling holds a second connection for its POSTs (the official client's way).
    func descriptorsPerClient(_ s: Scenario) -> Int { s.socketio?.transports == [.websocket] ? 1 : 2 }

    /// Rooms and the server's own routing decide who receives an event: not computed.
    func expectsFanout(_ s: Scenario) -> Bool { false }

    func progressLatency(_ interval: MetricsShard) -> [LatencyMetric] {
        interval.histograms[LatencyMetric.ack.rawValue].totalCount > 0 ? [.ack] : [.roundTrip]
    }

    func startEmbeddedServer(on loop: EventLoop, _ scenario: Scenario, tls: TLSContext?) throws(RunSetupError) -> (any FaultTarget, ClientEndpoint) {
        let server: SocketIOServer
        do {
            server = try SocketIOServer(loop: loop, address: Scenario.embeddedListenAddress, path: (scenario.socketio ?? SocketIOSpec()).path, tls: tls)
        } catch { throw embeddedServerError(error) }
        return (server, embeddedEndpoint(scenario, address: .ipv4(0x7F00_0001, port: server.port), port: Int(server.port)))
    }

    func serveArguments(_ scenario: Scenario) throws(RunSetupError) -> (arguments: [String], environment: [String: String]) {
        (["--socketio", "--path", (scenario.socketio ?? SocketIOSpec()).path], [:])
    }

    func embeddedEndpoint(_ scenario: Scenario, address: SocketAddress, port: Int) -> ClientEndpoint {
        .socketIO(addresses: [address], host: "127.0.0.1", port: port)
    }

    func targetEndpoint(_ scenario: Scenario) throws(RunSetupError) -> ClientEndpoint {
        guard case .http(let url) = scenario.target else { throw RunSetupError("the socketio workload cannot use target \(scenario.target)") }
        return .socketIO(addresses: try scenario.addresses(host: url.host, port: url.port), host: url.host, port: url.port)
    }

    func makeClients(_ setup: LoopClientsSetup) throws(RunSetupError) -> any LoopWorkload {
        guard case .socketIO(let addresses, let host, let port) = setup.endpoint, let address = addresses.first else {
            throw RunSetupError("the socketio workload needs a Socket.IO endpoint")
        }
        let s = setup.scenario
        let spec = s.socketio ?? SocketIOSpec()
        var secrets: [String: String] = [:]
        for secret in spec.secrets {
            do { secrets[secret.name] = try ScenarioLoader.resolveToken(secret.source, scenarioFile: s.file, field: "socketio.secrets.\(secret.name)") }
            catch { throw RunSetupError("\(error)") }
        }
        var plan = SocketIOPlan(scenario: s, spec: spec, globalIndices: setup.clients, host: host, port: port, secrets: secrets,
                                extraHeaderLines: setup.headerLines, sourceAddresses: s.sourceAddressValues)
        plan.stampClockOffsetNs = setup.stampClockOffsetNs
        plan.tls = setup.tls
        plan.addresses = setup.perClient(addresses)
        return SocketIOClients(loop: setup.loop, plan: plan, address: address, random: setup.random)
    }

    /// Polling needs sticky sessions: an Engine.IO sid is known only to the process that opened it.
    func crossProcessProblem(_ s: Scenario) -> String? {
        s.socketio?.transports == [.websocket] ? nil
            : "a Socket.IO server of several processes takes only WebSocket clients (socketio.transports: [websocket]): an Engine.IO "
                + "session id is known only to the process that opened it, so long polling needs sticky sessions"
    }
}
