import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import Testing

/// A `workload: websocket` scenario with the given `websocket:` section (lines indented by two).
func flowScenario(name: String = "flow", target: String, clients: Int, duration: Double = 2, rate: Double = 20,
                  extra: String = "", flow: String) throws -> Scenario {
    try sectionScenario(.websocket, name: name, target: target, clients: clients, duration: duration, rate: rate, extra: extra, section: flow)
}

/// `Tests/peers/pubsub_server.py` on a free loopback port, with `arguments`.
/// A Python peer of Tests/peers (`script`, in venv `venv`) on a free loopback port: it prints
/// `LISTENING <port>` once bound and stops by itself after two minutes.
func startListeningPeer(_ venv: String, _ script: String, _ arguments: [String] = []) throws -> (BackgroundProcess, Int) {
    let python = try peerPython(venv)
    let server = try BackgroundProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/\(script)").path,
                                                "--port", "0", "--max-seconds", "120"] + arguments)
    let line = try server.waitForLine(prefix: "LISTENING ", timeout: 60)
    return (server, try #require(Int(line.dropFirst("LISTENING ".count))))
}

func startPubSubServer(_ arguments: [String] = []) throws -> (BackgroundProcess, Int) {
    try startListeningPeer("websockets", "pubsub_server.py", ["--token", "secret-token"] + arguments)
}

/// The shipped pub/sub scenario pointed at `port`.
func pubsubScenario(port: Int, clients: Int = 12, duration: Double = 2) throws -> Scenario {
    var s = try shippedScenario("websocket-pubsub.yaml", clients: clients, duration: duration, drain: 3)
    s.target = .webSocket(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/ws"))
    s.message.ratePerSecond = 30
    return s
}

/// The chat workload and the shipped chat flow on the same schedule (40 messages/s for 2 s),
/// against the server on loopback `port`.
func chatAndChatFlow(name: String, port: Int, path: String, clients: Int) throws -> (chat: Scenario, flow: Scenario) {
    let target = Target.webSocket(url: WebSocketURL(host: "127.0.0.1", port: port, path: path))
    var flow = try shippedScenario("websocket-chat-flow.yaml", clients: clients, duration: 2)
    flow.thresholds = []  // a debug build on a busy machine would exit 98 (saturated)
    flow.target = target
    flow.message.ratePerSecond = 40
    return (chatScenario(name: name, target: target, clients: clients, duration: 2, rate: 40), flow)
}

@Suite(.serialized)
struct FlowRunTests {
    @Test func theChatProtocolAsAFlowAccountsForEveryMessageLikeTheChatWorkload() throws {
        var s = try shippedScenario("websocket-chat-flow.yaml", clients: 30, duration: 2)
        // Its thresholds would make a debug build on a busy machine exit 98 (saturated): accounting is the point here.
        s.thresholds = []
        let o = try run(s)
        #expect(o.exitCode == 0)
        expectExactAccounting(o, clients: 30)
        #expect(o.summary.latencyMicros["broadcast"]?.count == o.summary.messages.delivered)
        #expect(o.summary.latencyMicros["connect_flow"] == nil, "no connect steps, nothing to time")
    }

    @Test func theChatFlowAndTheChatWorkloadGiveTheSameFiguresAgainstPythonWebsockets() throws {
        let (server, port) = try startListeningPeer("websockets", "chat_server.py")
        defer { server.stop() }
        let (chat, flow) = try chatAndChatFlow(name: "python-chat", port: port, path: "/chat", clients: 20)
        let outcomes = [try run(chat), try run(flow)]
        for o in outcomes {
            expectExactAccounting(o, clients: 20)
            #expect(o.summary.messages.unparsed == 0)
            #expect(o.summary.latencyMicros["round_trip"]?.count == o.summary.messages.delivered)
        }
        // The same schedule: as many messages, as many broadcasts.
        #expect(outcomes[0].summary.messages.sent == outcomes[1].summary.messages.sent)
        #expect(outcomes[0].summary.messages.fanoutReceived == outcomes[1].summary.messages.fanoutReceived)
    }

    @Test func theChatFlowAndTheChatWorkloadGiveTheSameFiguresAgainstAPicowsEchoServer() throws {
        let (server, port) = try startListeningPeer("picows", "picows_echo_server.py")
        defer { server.stop() }
        var (chat, flow) = try chatAndChatFlow(name: "picows-chat", port: port, path: "/", clients: 10)
        flow.websocket?.fanout = .none  // an echo server sends each message back to its sender only
        let outcomes = [try run(chat), try run(flow)]
        for o in outcomes {
            let m = o.summary.messages
            #expect(o.summary.connections.connected == 10)
            #expect(m.sent > 0 && m.delivered == m.sent && m.lost == 0 && m.accountingClosed)
            #expect(o.summary.latencyMicros["round_trip"]?.count == m.delivered)
            #expect(o.summary.errorsTotal == 0)
        }
        #expect(outcomes[0].summary.messages.sent == outcomes[1].summary.messages.sent)
    }

    @Test func aPubSubServersOwnProtocolIsDrivenWithCorrelatedAcksAndStampedEvents() throws {
        let (server, port) = try startPubSubServer(["--ping-interval", "0.5", "--presence-interval", "0.3"])
        defer { server.stop() }
        let o = try run(try pubsubScenario(port: port))
        let m = o.summary.messages
        #expect(o.exitCode == 0, "\(o.summary.errors.filter { $0.value > 0 }) \(o.summary.closeCodes ?? [:])")
        #expect(o.summary.connections.connected == 12)
        #expect(m.sent > 0 && m.delivered == m.sent && m.lost == 0 && m.accountingClosed)
        // Every publish is acked (its own metric) and comes back as the sender's own event.
        #expect(o.summary.latencyMicros["ack"]?.count == m.sent)
        #expect(o.summary.latencyMicros["event"]?.count == m.sent)
        #expect(o.summary.latencyMicros["connect_flow"]?.count == 12)
        // Rooms of {client%10}: clients 0–1 … share a room, so each publish is due to its room's others.
        #expect(m.fanoutReceived == m.fanoutExpected)
        #expect(o.summary.counters["flow_responded", default: 0] > 0, "pings answered")
        #expect(o.summary.counters["flow_ignored", default: 0] > 0, "presence dropped")
        #expect(o.summary.counters["unrecognised_frames"] == 0)
        #expect(o.summary.errorsTotal == 0)
    }

    @Test func repliesOutOfOrderUnsolicitedFramesAndServerClosesKeepAccountingExact() throws {
        let (server, port) = try startPubSubServer(["--out-of-order", "--unsolicited", "--close-after", "5",
                                                    "--close-code", "4000", "--close-reason", "enough"])
        defer { server.stop() }
        var s = try pubsubScenario(port: port, clients: 10, duration: 3)
        s.message.ratePerSecond = 40
        let o = try run(s)
        let m = o.summary.messages
        #expect(m.accountingClosed, "sent \(m.sent) delivered \(m.delivered) lost \(m.lostByReason.filter { $0.value > 0 })")
        #expect(m.delivered > 0)
        // Each connection is closed after its fifth publish: the close is counted with its reason.
        #expect((o.summary.closeCodes?["4000 enough"] ?? 0) >= 10, "\(o.summary.closeCodes ?? [:])")
        #expect(o.summary.counters["unrecognised_frames", default: 0] > 0)
        #expect(o.summary.flow?.unrecognisedSamples.isEmpty == false)
        // No secret in a sample.
        #expect(o.summary.flow?.unrecognisedSamples.allSatisfy { !$0.contains("secret-token") } == true)
    }

    @Test func aServerThatClosesBeforeAuthIsCountedByCloseCodeAndReason() throws {
        let (server, port) = try startPubSubServer()
        defer { server.stop() }
        let s = try flowScenario(target: "ws://127.0.0.1:\(port)/ws", clients: 5, flow: """
              connect:
                - expect: {match: {$.type: welcome}}
                - send: '{"op":"publish","id":0}'
                - expect: {match: {$.op: auth_ok}, timeout: 3s}
              send: ['{"op":"publish","id":{sequence}}']
              replies: [{name: ack, match: {$.op: ack}, correlate: {sent: $.id, received: $.id}}]
            """)
        let o = try run(s)
        #expect(o.summary.closeCodes == ["4401 auth first": 5])
        #expect(o.summary.connections.failed == 5)
        #expect(o.summary.messages.accountingClosed)
    }

    @Test func anExpectStepThatNeverMatchesFailsTheConnectNamingTheStep() throws {
        let (server, port) = try startPubSubServer()
        defer { server.stop() }
        let s = try flowScenario(target: "ws://127.0.0.1:\(port)/ws", clients: 3, flow: """
              connect:
                - expect: {match: {$.type: never}, timeout: 500ms}
              send: ['{"op":"publish","id":{sequence}}']
              replies: [{name: ack, match: {$.op: ack}, correlate: {sent: $.id, received: $.id}}]
            """)
        let o = try run(s)
        #expect(o.summary.errors["expect_timeout"] == 3)
        #expect(o.summary.connections.failed == 3)
        #expect(o.summary.flow?.stepErrors.keys.contains { $0.contains("connect step 0") } == true, "\(String(describing: o.summary.flow))")
        #expect(o.exitCode == 1)
    }

    @Test func aStrictStepFailsAtTheFirstOtherFrame() throws {
        let (server, port) = try startPubSubServer()
        defer { server.stop() }
        let s = try flowScenario(target: "ws://127.0.0.1:\(port)/ws", clients: 2, flow: """
              connect:
                - expect: {match: {$.type: never}, timeout: 10s, strict: true}
              send: ['{"op":"publish","id":{sequence}}']
              replies: [{name: ack, match: {$.op: ack}, correlate: {sent: $.id, received: $.id}}]
            """)
        let o = try run(s)
        #expect(o.summary.errors["expect_mismatch"] == 2)
    }

    @Test func messagesWithoutAReplyAreLostAsNoReply() throws {
        let (server, port) = try startPubSubServer()
        defer { server.stop() }
        // Every ack is ignored, so no message is ever measured: each is lost after the reply timeout.
        let s = try flowScenario(target: "ws://127.0.0.1:\(port)/ws", clients: 2, duration: 2, rate: 4, flow: """
              secrets: {token: secret-token}
              connect:
                - expect: {match: {$.type: welcome}, capture: {session: $.session}}
                - send: '{"op":"auth","token":"{token}","session":"{session}"}'
                - expect: {match: {$.op: auth_ok}}
              send: ['{"op":"publish","channel":"nobody","id":{sequence},"data":{}}']
              replies: [{name: ack, match: {$.op: never}, correlate: {sent: $.id, received: $.id}}]
              respond: [{match: {$.type: ping}, send: '{"type":"pong"}'}]
              ignore: [{match: {$.op: ack}}, {match: {$.type: presence}}]
              reply_timeout: 500ms
            """)
        let o = try run(s)
        let m = o.summary.messages
        #expect(m.sent > 0)
        #expect(m.lostByReason["no_reply"] == m.sent)
        #expect(m.accountingClosed)
    }

    @Test func aStormReconnectsRunTheConnectStepsAgainWithCapturesOfTheNewConnection() throws {
        let (server, port) = try startPubSubServer()
        defer { server.stop() }
        var s = try pubsubScenario(port: port, clients: 10, duration: 3)
        s.reconnect = .delays([0.1, 0.5, 1])
        s.events = [ScenarioEvent(atSeconds: 1, kind: .storm(fraction: 1, mode: .reset))]
        let o = try run(s)
        let m = o.summary.messages
        // The server checks each auth against the session of its own welcome: a reconnect that
        // replayed the old capture would be closed with 4403 bad session.
        #expect(o.summary.closeCodes?["4403 bad session"] == nil, "\(o.summary.closeCodes ?? [:])")
        #expect(o.summary.counters["reconnected"] == 10)
        #expect(o.summary.latencyMicros["connect_flow"]?.count == 20)
        #expect(m.accountingClosed && m.delivered > 0)
        #expect(o.summary.storms.first?.recovered == 10)
    }

    @Test func aFlowRunsOverWorkerProcessesWithItsNamedMetricsMerged() throws {
        let folder = temporaryFolder("flow-workers")
        let file = folder.appendingPathComponent("flow.yaml")
        var text = try String(contentsOf: repositoryRoot.appendingPathComponent("scenarios/websocket-chat-flow.yaml"), encoding: .utf8)
        text = text.replacingOccurrences(of: "clients: 200", with: "clients: 40").replacingOccurrences(of: "duration: 10s", with: "duration: 2s")
        try text.write(to: file, atomically: true, encoding: .utf8)
        let r = try runProcess(stampedeBinary.path, ["run", file.path, "--processes", "2", "--plain",
                                                     "--results", folder.appendingPathComponent("results").path], timeout: 120)
        // 98: a busy machine's late timers withhold the verdict; the merge is the point here.
        #expect(r.status == 0 || r.status == 98, "\(r.stderr.suffix(3000))")
        let line = try #require(r.stdout.split(separator: "\n").last { $0.hasPrefix("results: ") })
        let summary = try RunSummary.decode(from: Data(contentsOf: URL(fileURLWithPath: String(line.dropFirst("results: ".count))).appendingPathComponent("summary.json")))
        #expect(summary.workers?.count == 2)
        #expect(summary.messages.accountingClosed && summary.messages.lost == 0 && summary.messages.fanoutMissing == 0)
        #expect(summary.latencyMicros["broadcast"]?.count == summary.messages.delivered)
        #expect(summary.latencyMicros["connect_flow"] == nil, "the chat flow has no connect steps")
    }
}
