import StampedeLoop
import StampedeScenario
import StampedeServers
import StampedeWire
import StampedeWorkloads

/// The declared-flow workload (`workload: websocket`): the chat client's runtime speaking the
/// scenario's own protocol. Its embedded target is the chat server (a flow that speaks the chat
/// protocol, as scenarios/websocket-chat-flow.yaml does, can be tried with nothing else running).
struct WebSocketFlowKind: WorkloadKind {
    let chat = ChatKind()

    /// Only a declared `fanout: all` says who should receive a broadcast; a server's own routing is unknown.
    func expectsFanout(_ scenario: Scenario) -> Bool { scenario.websocket?.fanout == .all }

    func startEmbeddedServer(on loop: EventLoop, _ scenario: Scenario, tls: TLSContext?) throws(RunSetupError) -> (any FaultTarget, ClientEndpoint) {
        let (server, _) = try chat.startEmbeddedServer(on: loop, scenario, tls: tls)
        guard let port = (server as? ChatServer)?.port else { throw RunSetupError("the embedded chat target did not start") }
        return (server, embeddedEndpoint(scenario, address: .ipv4(0x7F00_0001, port: port), port: Int(port)))
    }

    func serveArguments(_ scenario: Scenario) throws(RunSetupError) -> (arguments: [String], environment: [String: String]) { ([], [:]) }

    func embeddedEndpoint(_ scenario: Scenario, address: SocketAddress, port: Int) -> ClientEndpoint {
        withFlowHandshake(chat.embeddedEndpoint(scenario, address: address, port: port), scenario)
    }

    func targetEndpoint(_ scenario: Scenario) throws(RunSetupError) -> ClientEndpoint {
        guard case .webSocket = scenario.target else { throw RunSetupError("the websocket workload cannot use target \(scenario.target)") }
        return withFlowHandshake(try chat.targetEndpoint(scenario), scenario)
    }

    /// The flow's subprotocols and headers on the upgrade (header values with their secrets filled in at `makeClients`).
    func withFlowHandshake(_ endpoint: ClientEndpoint, _ scenario: Scenario) -> ClientEndpoint {
        guard case .webSocket(var ws) = endpoint, let flow = scenario.websocket else { return endpoint }
        if !flow.subprotocols.isEmpty { ws.subprotocol = flow.subprotocols.joined(separator: ", ") }
        return .webSocket(ws)
    }

    func makeClients(_ setup: LoopClientsSetup) throws(RunSetupError) -> any LoopWorkload {
        guard case .webSocket(var ws) = setup.endpoint, let flow = setup.scenario.websocket else {
            throw RunSetupError("the websocket workload needs a WebSocket endpoint and a 'websocket' section")
        }
        var secrets: [String: String] = [:]
        for secret in flow.secrets {
            do { secrets[secret.name] = try ScenarioLoader.resolveToken(secret.source, scenarioFile: setup.scenario.file, field: "websocket.secrets.\(secret.name)") }
            catch { throw RunSetupError("\(error)") }
        }
        ws.headers += flow.headers.map { ($0.name, Self.fillSecrets($0.value, secrets)) }
        var chatSetup = setup
        chatSetup.endpoint = .webSocket(ws)
        let workload = try chat.makeClients(chatSetup, flow: flow, secretValues: secrets)
        return workload
    }

    /// A header value with each `{name}` replaced by the secret's value (the loader allows
    /// nothing else in a header), through the one template parser.
    static func fillSecrets(_ text: String, _ secrets: [String: String]) -> String {
        guard let template = try? MessageTemplate(text: text) else { return text }
        var out: [UInt8] = []
        for segment in template.segments {
            switch segment {
            case .literal(let bytes): out += bytes
            case .placeholder(.named(let name)): out += Array((secrets[name] ?? "").utf8)
            case .placeholder: break
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
