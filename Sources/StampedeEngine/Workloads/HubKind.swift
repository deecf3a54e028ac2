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

    /// Broadcasts and groups cross server processes (HubServer+Backplane.swift), but a
    /// negotiated connection id is known only to the process that answered the negotiate, so
    /// clients must skip it, as with ASP.NET Core SignalR behind a balancer without sticky sessions.
    func crossProcessProblem(_ s: Scenario) -> String? {
        let spec = s.hub ?? HubSpec()
        return spec.skipNegotiation && spec.transports == [.webSockets] ? nil
            : "a hub of several processes takes only WebSocket clients that skip negotiation (hub.transports: [websockets], hub.skip_negotiation: true): a negotiated connection id is known only to the process that answered the negotiate, as with ASP.NET Core SignalR without sticky sessions"
    }

    func serveArguments(_ scenario: Scenario) throws(RunSetupError) -> (arguments: [String], environment: [String: String]) { (["--hub"], [:]) }

    func embeddedEndpoint(_ scenario: Scenario, address: SocketAddress, port: Int) -> ClientEndpoint {
        .hub(addresses: [address], base: HubURL(host: "127.0.0.1", port: port, path: "/hub", query: ""))
    }

    func targetEndpoint(_ scenario: Scenario) throws(RunSetupError) -> ClientEndpoint {
        guard case .http(let url) = scenario.target else { throw RunSetupError("the hub workload cannot use target \(scenario.target)") }
        return .hub(addresses: try scenario.addresses(host: url.host, port: url.port), base: HubURL(url))
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
        plan.load.whileDisconnected = s.whileDisconnected
        plan.load.rateStages = s.message.stages
        plan.stampClockOffsetNs = setup.stampClockOffsetNs
        plan.tls = setup.tls
        plan.addresses = setup.perClient(addresses)
        plan.redirectResolver = setup.hubRedirects
        let address = addresses[0]
        plan.load.seed = s.seed
        plan.load.senderBase = s.clientIndexBase
        plan.load.initialClients = s.clientProfile?.start
        switch spec.protocolKind {
        case .json: return HubClients<JSONHubProtocol>(loop: setup.loop, plan: plan, address: address, random: setup.random)
        case .messagePack: return HubClients<MessagePackHubProtocol>(loop: setup.loop, plan: plan, address: address, random: setup.random)
        }
    }
}
