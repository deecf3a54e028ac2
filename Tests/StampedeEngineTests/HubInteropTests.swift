import Foundation
import StampedeEngine
import StampedeScenario
import Testing

/// Builds a small hub scenario in code (the loader is tested separately).
func hubScenario(_ name: String, target: Target, transport: HubTransport, protocolKind: HubProtocolKind, clients: Int = 6,
                 duration: Double = 1, rate: Double = 30, operation: HubOperation, method: String, arguments: [ArgumentTemplate],
                 receive: String? = nil, join: HubCall? = nil, clientResults: [ClientResult] = []) -> Scenario {
    Scenario(name: name, target: target, workload: .hub, clients: clients, connectRate: 500, durationSeconds: duration,
             message: MessageSpec(ratePerSecond: rate, size: 96), seed: 3, drainSeconds: 5, connectTimeoutSeconds: 5,
             hub: HubSpec(transports: [transport], protocolKind: protocolKind, join: join, operation: operation,
                          call: HubCall(method: method, arguments: arguments), receiveMethod: receive, clientResults: clientResults))
}

/// The client model exercised end to end: every call accounted for, with the figures each kind
/// of call produces.
func expectHubAccounting(_ o: RunOutcome, clients: Int, sourceLocation: SourceLocation = #_sourceLocation) {
    let m = o.summary.messages
    #expect(o.exitCode == 0, "\(o.record.fatalError ?? "")", sourceLocation: sourceLocation)
    #expect(o.summary.connections.connected == UInt64(clients), sourceLocation: sourceLocation)
    #expect(m.sent > 0, sourceLocation: sourceLocation)
    #expect(m.delivered == m.sent, sourceLocation: sourceLocation)
    #expect(m.lost == 0 && m.failed == 0, sourceLocation: sourceLocation)
    #expect(m.accountingClosed, sourceLocation: sourceLocation)
    #expect(o.summary.errorsTotal == 0, "\(o.summary.errors.filter { $0.value > 0 })", sourceLocation: sourceLocation)
    let transport = o.record.scenario.hub!.transports[0]
    let key = transport == .webSockets ? "websockets" : transport == .serverSentEvents ? "server_sent_events" : "long_polling"
    #expect(o.summary.counters["connected_" + key] == UInt64(clients), sourceLocation: sourceLocation)
    #expect(o.summary.counters["sent_" + key] == m.sent, sourceLocation: sourceLocation)
}

/// The hub operations every transport and encoding must carry, as (name, operation, method,
/// arguments, receive, join, client results).
enum HubCase: String, CaseIterable, Sendable {
    case invokeEcho, sendBroadcast, stream, clientResult, groups, upload

    func scenario(target: Target, transport: HubTransport, protocolKind: HubProtocolKind) -> Scenario {
        let name = "\(rawValue)-\(transport.rawValue)-\(protocolKind.rawValue)"
        switch self {
        case .invokeEcho:
            var s = hubScenario(name, target: target, transport: transport, protocolKind: protocolKind, operation: .invoke,
                                method: "Echo", arguments: [.stamp])
            s.hub?.expectedResult = .echo
            return s
        case .sendBroadcast:
            return hubScenario(name, target: target, transport: transport, protocolKind: protocolKind, operation: .send,
                               method: "SendMessage", arguments: [.text([.user]), .stamp], receive: "ReceiveMessage")
        case .stream:
            return hubScenario(name, target: target, transport: transport, protocolKind: protocolKind, operation: .stream,
                               method: "Counter", arguments: [.integer(4), .integer(5)])
        case .clientResult:
            var s = hubScenario(name, target: target, transport: transport, protocolKind: protocolKind, operation: .invoke,
                                method: "AskClient", arguments: [.stamp], clientResults: [ClientResult(method: "GetClientResult", value: "fine")])
            // The hub returns what the client answered.
            s.hub?.expectedResult = .text("fine")
            return s
        case .upload:
            return hubScenario(name, target: target, transport: transport, protocolKind: protocolKind, operation: .upload,
                               method: "Upload", arguments: [])
        case .groups:
            return hubScenario(name, target: target, transport: transport, protocolKind: protocolKind, operation: .send,
                               method: "SendToGroup", arguments: [.text([.literal("room-"), .clientModulo(2)]), .text([.user]), .stamp],
                               receive: "ReceiveMessage", join: HubCall(method: "JoinGroup", arguments: [.text([.literal("room-"), .clientModulo(2)])]))
        }
    }

    func check(_ o: RunOutcome, clients: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        expectHubAccounting(o, clients: clients, sourceLocation: sourceLocation)
        let c = o.summary.counters
        let m = o.summary.messages
        switch self {
        case .upload:
            #expect(o.summary.latencyMicros["round_trip"]?.count == m.delivered, sourceLocation: sourceLocation)
        case .invokeEcho, .clientResult:
            #expect(o.summary.latencyMicros["round_trip"]?.count == m.delivered, sourceLocation: sourceLocation)
            if self == .clientResult { #expect(c["client_results"] == m.sent, sourceLocation: sourceLocation) }
        case .sendBroadcast:
            #expect(m.fanoutExpected == m.sent * UInt64(clients - 1), sourceLocation: sourceLocation)
            #expect(m.fanoutReceived == m.fanoutExpected, sourceLocation: sourceLocation)
        case .stream:
            #expect(c["stream_items"] == m.sent * 4, sourceLocation: sourceLocation)
            #expect(o.summary.latencyMicros["stream_item"]?.count == m.sent * 4, sourceLocation: sourceLocation)
        case .groups:
            // Two groups of clients/2: each message reaches the other members of the sender's group.
            #expect(m.fanoutReceived == m.sent * UInt64(clients / 2 - 1), sourceLocation: sourceLocation)
        }
    }
}

/// Transport × encoding pairs the protocol allows (MessagePack cannot use SSE).
let hubTransportMatrix: [(HubTransport, HubProtocolKind)] = [
    (.webSockets, .json), (.webSockets, .messagePack), (.serverSentEvents, .json), (.longPolling, .json), (.longPolling, .messagePack),
]

@Suite(.serialized)
struct HubClientInteropTests {
    /// Stampede's hub clients against an aiosignalr hub (a third-party SignalR server from PyPI).
    @Test(arguments: HubCase.allCases)
    func hubClientsAgainstAiosignalrAccountForEveryCall(_ hubCase: HubCase) throws {
        let python = try peerPython("aiosignalr")
        // aiosignalr holds even the first long poll open until data or its poll timeout (ASP.NET
        // answers it at once) and drops a connection after one idle poll: a 1 s poll timeout and
        // an idle grace keep long polling usable (Tests/peers/README.md).
        let server = try BackgroundProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/signalr_hub_server.py").path,
                                                    "--port", "0", "--max-seconds", "300", "--long-polling-timeout", "1", "--lp-idle-grace", "15"])
        defer { server.stop() }
        let line = try server.waitForLine(prefix: "LISTENING ", timeout: 30)
        let port = try #require(Int(line.dropFirst("LISTENING ".count)))
        let target = Target.http(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/hub"))
        for (transport, protocolKind) in hubTransportMatrix {
            let o = try run(hubCase.scenario(target: target, transport: transport, protocolKind: protocolKind))
            hubCase.check(o, clients: 6)
        }
    }
}

@Suite(.serialized)
struct EmbeddedHubTests {
    /// Every hub operation over every transport and encoding against Stampede's own reference hub.
    @Test(arguments: HubCase.allCases)
    func hubClientsAgainstTheEmbeddedHubAccountForEveryCall(_ hubCase: HubCase) throws {
        for (transport, protocolKind) in hubTransportMatrix {
            let o = try run(hubCase.scenario(target: .embedded, transport: transport, protocolKind: protocolKind))
            hubCase.check(o, clients: 6)
        }
    }

    /// Negotiate version 0 (no connectionToken: the connectionId is the id) works as well as 1.
    @Test func negotiateVersionZeroConnectsWithTheConnectionId() throws {
        var s = HubCase.invokeEcho.scenario(target: .embedded, transport: .longPolling, protocolKind: .json)
        s.hub?.negotiateVersion = 0
        HubCase.invokeEcho.check(try run(s), clients: 6)
    }

    /// A reply that is not the expected one fails the call (counted), it is not delivered.
    @Test func unexpectedRepliesFailTheCall() throws {
        var s = hubScenario("unexpected-reply", target: .embedded, transport: .webSockets, protocolKind: .json, clients: 3,
                            duration: 0.5, operation: .invoke, method: "Echo", arguments: [.text([.literal("not a stamp")])])
        s.hub?.expectedResult = .echo
        let o = try run(s)
        let m = o.summary.messages
        #expect(m.sent > 0 && m.failed == m.sent && m.accountingClosed)
        #expect(o.summary.errors["unexpected_reply"] == m.sent)
    }

    /// Streams cancelled after two of their ten items: the call completes at the cancel, the
    /// server stops, and nothing after the cancel is counted.
    @Test func streamsCancelledAfterSomeItemsCompleteAtTheCancel() throws {
        var s = hubScenario("stream-cancel", target: .embedded, transport: .webSockets, protocolKind: .messagePack, operation: .stream,
                            method: "Counter", arguments: [.integer(10), .integer(20)])
        s.hub?.cancelStreamAfterItems = 2
        let o = try run(s)
        expectHubAccounting(o, clients: 6)
        let m = o.summary.messages
        #expect(o.summary.counters["streams_cancelled"] == m.sent)
        #expect(o.summary.counters["stream_items"] == m.sent * 2)
    }

    /// The hub scenarios in scenarios/ run as shipped (shortened) against the embedded hub.
    @Test func everyHubScenarioFileRunsAgainstTheEmbeddedHub() throws {
        let dir = repositoryRoot.appendingPathComponent("scenarios")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("hub-") && $0.hasSuffix(".yaml") }.sorted()
        #expect(files.count >= 6)
        for file in files {
            var s = try ScenarioLoader.load(path: dir.appendingPathComponent(file).path)
            s.clients = min(s.clients, 10)
            s.durationSeconds = 0.5
            let o = try run(s)
            #expect(o.exitCode == 0, "\(file): \(o.record.fatalError ?? "")")
            #expect(o.summary.connections.connected == UInt64(s.clients), "\(file)")
            #expect(o.summary.messages.accountingClosed && o.summary.messages.lost == 0, "\(file)")
            #expect(o.summary.errorsTotal == 0, "\(file): \(o.summary.errors.filter { $0.value > 0 })")
        }
    }
}

/// Stateful reconnect (§6): every client's WebSocket is reset mid-run; each reopens the same
/// connection id, exchanges Sequence messages, replays what was not acknowledged, and no call
/// is lost.
func statefulReconnectScenario(_ name: String, target: Target, protocolKind: HubProtocolKind) -> Scenario {
    var s = hubScenario(name, target: target, transport: .webSockets, protocolKind: protocolKind, clients: 6, duration: 2,
                        rate: 60, operation: .invoke, method: "Echo", arguments: [.stamp])
    s.hub?.statefulReconnect = true
    return s
}

func runWithDrop(_ s: Scenario) throws -> RunOutcome {
    var options = RunOptions(loops: 2, resultsRoot: temporaryFolder(s.name), progress: .silent)
    options.connectionDrops = [(atSeconds: 0.7, fraction: 1.0)]
    return try RunEngine(scenario: s, options: options).run()
}

func expectResumedWithoutLoss(_ o: RunOutcome, sourceLocation: SourceLocation = #_sourceLocation) {
    let m = o.summary.messages
    #expect(o.exitCode == 0, sourceLocation: sourceLocation)
    #expect(m.sent > 0 && m.delivered == m.sent && m.lost == 0, "sent \(m.sent) delivered \(m.delivered) lost \(m.lost)", sourceLocation: sourceLocation)
    #expect(o.summary.counters["reconnected"] == 6, "\(o.summary.counters)", sourceLocation: sourceLocation)
    #expect(o.summary.connections.connected == 6, sourceLocation: sourceLocation)
    #expect(o.summary.errors["connection_reset"] == 6, sourceLocation: sourceLocation)
}

@Suite(.serialized)
struct StatefulReconnectTests {
    @Test(arguments: HubProtocolKind.allCases)
    func resetConnectionsResumeAgainstTheEmbeddedHubWithNothingLost(_ protocolKind: HubProtocolKind) throws {
        expectResumedWithoutLoss(try runWithDrop(statefulReconnectScenario("stateful-embedded", target: .embedded, protocolKind: protocolKind)))
    }

    @Test(arguments: HubProtocolKind.allCases)
    func resetConnectionsResumeAgainstAiosignalrWithNothingLost(_ protocolKind: HubProtocolKind) throws {
        let python = try peerPython("aiosignalr")
        let server = try BackgroundProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/signalr_hub_server.py").path,
                                                    "--port", "0", "--max-seconds", "120", "--stateful-reconnect"])
        defer { server.stop() }
        let line = try server.waitForLine(prefix: "LISTENING ", timeout: 30)
        let port = try #require(Int(line.dropFirst("LISTENING ".count)))
        let target = Target.http(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/hub"))
        expectResumedWithoutLoss(try runWithDrop(statefulReconnectScenario("stateful-aiosignalr", target: target, protocolKind: protocolKind)))
    }
}

@Suite struct HubErrorTests {
    /// A hub method that throws makes the call failed (not lost) and is counted by its message.
    @Test func hubErrorsFailTheCallAndAreCountedByMessage() throws {
        let o = try run(hubScenario("hub-error", target: .embedded, transport: .webSockets, protocolKind: .json, clients: 3,
                                    duration: 0.5, operation: .invoke, method: "NoSuchMethod", arguments: [.stamp]))
        let m = o.summary.messages
        #expect(m.sent > 0 && m.failed == m.sent && m.delivered == 0 && m.lost == 0)
        #expect(m.accountingClosed)
        #expect(o.summary.errors["hub_error"] == m.sent)
        #expect(o.summary.hubErrors.values.reduce(0, +) == m.sent)
        #expect(o.summary.hubErrors.keys.contains { $0.contains("NoSuchMethod") }, "\(o.summary.hubErrors)")
    }
}

@Suite struct AutomaticReconnectTests {
    /// Without stateful reconnect, a dropped client follows its reconnect policy: a full restart
    /// (negotiate, transport, handshake) as a new connection; calls in flight at the drop are
    /// counted lost, as are calls that fell due during the gap (`while_disconnected: drop`, the
    /// default), and the accounting still closes.
    @Test func droppedClientsReconnectByPolicyAndTheAccountingCloses() throws {
        var s = hubScenario("auto-reconnect", target: .embedded, transport: .webSockets, protocolKind: .json, clients: 6, duration: 2,
                            rate: 60, operation: .invoke, method: "Echo", arguments: [.stamp])
        s.hub?.reconnect = .delays([0.1, 0.5])
        let o = try runWithDrop(s)
        let m = o.summary.messages
        #expect(o.exitCode == 0)
        #expect(o.summary.counters["reconnected"] == 6)
        #expect(o.summary.counters["reconnect_attempts"] == 6)
        #expect(o.summary.counters["connected"] == 12)
        #expect(m.accountingClosed && m.sent == m.delivered + m.lost)
        #expect(m.lost == m.lostByReason["connection_closed"]! + m.lostByReason["dropped_while_disconnected"]!)
        #expect(o.record.openConnectionsAtEnd == 6)
    }
}

@Suite struct HubErrorTextTests {
    /// A `join` the hub answers with an error fails every connection as `hub_error`, and the
    /// server's text says why, once per connection, marked as the join's.
    @Test func joinAnsweredWithAnErrorKeepsTheHubsTextForEveryConnection() throws {
        let o = try run(hubScenario("hub-join-error", target: .embedded, transport: .webSockets, protocolKind: .json, clients: 3,
                                    duration: 0.5, operation: .invoke, method: "Echo", arguments: [.stamp],
                                    join: HubCall(method: "NoSuchJoinMethod", arguments: [])))
        #expect(o.summary.errors["hub_error"] == 3)
        #expect(o.summary.hubErrors.values.reduce(0, +) == 3, "\(o.summary.hubErrors)")
        #expect(o.summary.hubErrors.keys.allSatisfy { $0.hasPrefix("join: ") && $0.contains("NoSuchJoinMethod") }, "\(o.summary.hubErrors)")
    }
}
