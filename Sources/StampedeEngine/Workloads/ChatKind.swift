import StampedeLoop
import StampedeScenario
import StampedeServers
import StampedeWorkloads

/// The chat workload: WebSocket clients in one room against `ChatServer`.
struct ChatKind: WorkloadKind {
    func expectsFanout(_ scenario: Scenario) -> Bool { true }

    func startEmbeddedServer(on loop: EventLoop, _ scenario: Scenario, tls: TLSContext?) throws(RunSetupError) -> (any FaultTarget, ClientEndpoint) {
        let server: ChatServer
        do { server = try ChatServer(loop: loop, address: Scenario.embeddedListenAddress, tls: tls) } catch { throw embeddedServerError(error) }
        return (server, embeddedEndpoint(scenario, address: .ipv4(0x7F00_0001, port: server.port), port: Int(server.port)))
    }

    func serveArguments(_ scenario: Scenario) throws(RunSetupError) -> (arguments: [String], environment: [String: String]) { ([], [:]) }

    func embeddedEndpoint(_ scenario: Scenario, address: SocketAddress, port: Int) -> ClientEndpoint {
        endpoint(scenario, addresses: [address], host: "127.0.0.1", path: "/chat")
    }

    func targetEndpoint(_ scenario: Scenario) throws(RunSetupError) -> ClientEndpoint {
        guard case .webSocket(let url) = scenario.target else { throw RunSetupError("the chat workload cannot use target \(scenario.target)") }
        return endpoint(scenario, addresses: try scenario.addresses(host: url.host, port: url.port), host: url.host, path: url.path)
    }

    func endpoint(_ s: Scenario, addresses: [SocketAddress], host: String, path: String) -> ClientEndpoint {
        let connectNs = nanoseconds(s.connectTimeoutSeconds)
        var endpoint = WebSocketEndpoint(address: addresses[0], host: host, path: path, subprotocol: s.subprotocol,
                                            headers: s.headers.map { ($0.name, $0.value) },
                                            connectTimeoutNs: connectNs, upgradeTimeoutNs: connectNs,
                                            maxMessageBytes: s.maxMessageBytes, sourceAddresses: s.sourceAddressValues)
        endpoint.addresses = addresses
        return .webSocket(endpoint)
    }

    func makeClients(_ setup: LoopClientsSetup) throws(RunSetupError) -> any LoopWorkload {
        try makeClients(setup, flow: nil, secretValues: [:])
    }

    /// The chat clients of one loop, or (`flow`) the clients of a declared flow on the same runtime.
    func makeClients(_ setup: LoopClientsSetup, flow: WebSocketFlowSpec?, secretValues: [String: String]) throws(RunSetupError) -> any LoopWorkload {
        guard case .webSocket(var ws) = setup.endpoint else { throw RunSetupError("the chat workload needs a WebSocket endpoint") }
        ws.addresses = setup.perClient(ws.addresses)
        ws.tls = setup.tls
        let s = setup.scenario
        let clients = WebSocketClients(loop: setup.loop, endpoint: ws, clientCount: setup.clients.count, random: setup.random)
        var load = LoadPlan(totalClients: s.clients, globalIndices: setup.clients, connectRate: s.connectRate,
                            loadModel: s.loadModel, totalRate: s.message.ratePerSecond, thinkTimeNs: nanoseconds(s.thinkTimeSeconds))
        load.whileDisconnected = s.whileDisconnected
        load.seed = s.seed
        load.senderBase = s.clientIndexBase
        load.initialClients = s.clientProfile?.start
        load.rateStages = s.message.stages
        var plan = ChatWorkload.Plan(load: load, messageSize: s.message.size, runTag: s.name)
        plan.reconnect = s.reconnect
        plan.heartbeat = s.heartbeat
        plan.stampClockOffsetNs = setup.stampClockOffsetNs
        plan.flow = flow
        plan.secretValues = secretValues
        return ChatWorkload(ws: clients, plan: plan)
    }
}
