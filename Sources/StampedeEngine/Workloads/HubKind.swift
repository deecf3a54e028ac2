import StampedeLoop
import StampedeScenario
import StampedeServers
import StampedeWire
import StampedeWorkloads

/// The hub workload: SignalR clients against `HubServer`.
struct HubKind: WorkloadKind {
    /// Off WebSockets a client also holds a connection for its sends (SSE, long polling).
    func descriptorsPerClient(_ s: Scenario) -> Int { s.hub?.transports != [.webSockets] ? 2 : 1 }

    /// Broadcasts without groups reach everyone; groups and streams are not computed.
    func expectsFanout(_ s: Scenario) -> Bool {
        s.hub?.receiveMethod != nil && s.hub?.join == nil && s.hub?.operation != .stream
    }

    func startEmbeddedServer(on loop: EventLoop, _ scenario: Scenario, tls: TLSContext?) throws(RunSetupError) -> (any FaultTarget, ClientEndpoint) {
        let server: HubServer
        do { server = try HubServer(loop: loop, address: Scenario.embeddedListenAddress, path: "/hub", tls: tls) } catch { throw embeddedServerError(error) }
        return (server, embeddedEndpoint(scenario, address: .ipv4(0x7F00_0001, port: server.port), port: Int(server.port)))
    }

    /// The hub's broadcasts and groups stay within one server process (no backplane yet).
    func crossProcessProblem(_ s: Scenario) -> String? {
        s.hub?.receiveMethod != nil || s.hub?.join != nil
            ? "hub broadcasts and groups (hub.receive, hub.join) do not cross server processes" : nil
    }

    func serveArguments(_ scenario: Scenario) throws(RunSetupError) -> (arguments: [String], environment: [String: String]) { (["--hub"], [:]) }

    func embeddedEndpoint(_ scenario: Scenario, address: SocketAddress, port: Int) -> ClientEndpoint {
        .hub(addresses: [address], base: HubURL(host: "127.0.0.1", port: port, path: "/hub", query: ""))
    }

    func targetEndpoint(_ scenario: Scenario) throws(RunSetupError) -> ClientEndpoint {
        guard case .http(let url) = scenario.target else { throw RunSetupError("the hub workload cannot use target \(scenario.target)") }
        let parts = url.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return .hub(addresses: try scenario.addresses(host: url.host, port: url.port),
                    base: HubURL(host: url.host, port: url.port, path: String(parts[0]), query: parts.count > 1 ? String(parts[1]) : ""))
    }

    func makeClients(_ setup: LoopClientsSetup) throws(RunSetupError) -> any LoopWorkload {
        guard case .hub(let addresses, let base) = setup.endpoint else { throw RunSetupError("the hub workload needs a hub endpoint") }
        let s = setup.scenario
        let spec = s.hub ?? HubSpec()
        var plan = HubPlan(totalClients: s.clients, globalIndices: setup.clients, connectRate: s.connectRate,
                           loadModel: s.loadModel, totalRate: s.message.ratePerSecond,
                           thinkTimeNs: nanoseconds(s.thinkTimeSeconds), messageSize: s.message.size, spec: spec,
                           base: base, accessToken: setup.token, extraHeaderLines: setup.headerLines,
                           connectTimeoutNs: nanoseconds(s.connectTimeoutSeconds), maxMessageBytes: s.maxMessageBytes,
                           sourceAddresses: s.sourceAddressValues, runTag: s.name)
        plan.whileDisconnected = s.whileDisconnected
        plan.tls = setup.tls
        plan.addresses = setup.perClient(addresses)
        let address = addresses[0]
        plan.seed = s.seed
        switch spec.protocolKind {
        case .json: return HubClients<JSONHubProtocol>(loop: setup.loop, plan: plan, address: address, random: setup.random)
        case .messagePack: return HubClients<MessagePackHubProtocol>(loop: setup.loop, plan: plan, address: address, random: setup.random)
        }
    }
}
