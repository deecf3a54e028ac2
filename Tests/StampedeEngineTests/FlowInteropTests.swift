import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import Testing

/// The shipped flow scenarios against servers we did not write, each started by the test on
/// loopback: STOMP 1.2 (RabbitMQ's web-stomp), GraphQL subscriptions (strawberry-graphql,
/// graphql-transport-ws) and MQTT 3.1.1 over WebSocket (amqtt, binary frames).
@Suite(.serialized)
struct FlowInteropTests {
    /// A shipped scenario pointed at `url`, small enough for the suite.
    func shipped(_ file: String, url: String, clients: Int) throws -> Scenario {
        var s = try shippedScenario(file, clients: clients, duration: 2, drain: 3)
        guard case .success(let target) = ScenarioLoader.parseTarget(url) else { throw PeerError("bad url \(url)") }
        s.target = target
        s.message.ratePerSecond = 30
        return s
    }

    /// Nothing lost, every message measured by both reply rules, every connect flow done.
    func expectMeasured(_ o: RunOutcome, clients: Int, correlated: String, stamped: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let m = o.summary.messages
        #expect(o.exitCode == 0, "\(o.summary.errors.filter { $0.value > 0 }) \(o.summary.closeCodes ?? [:])", sourceLocation: sourceLocation)
        #expect(o.summary.connections.connected == UInt64(clients), sourceLocation: sourceLocation)
        #expect(m.sent > 0 && m.delivered == m.sent && m.lost == 0 && m.accountingClosed, sourceLocation: sourceLocation)
        #expect(o.summary.latencyMicros[correlated]?.count == m.sent, sourceLocation: sourceLocation)
        #expect(o.summary.latencyMicros[stamped]?.count == m.sent, sourceLocation: sourceLocation)
        #expect(o.summary.latencyMicros["connect_flow"]?.count == UInt64(clients), sourceLocation: sourceLocation)
        #expect(m.fanoutReceived == m.fanoutExpected, sourceLocation: sourceLocation)
        #expect(o.summary.errorsTotal == 0, sourceLocation: sourceLocation)
    }

    @Test func stompOverWebSocketAgainstRabbitMQCorrelatesReceiptsAndFansOutMessages() throws {
        let folder = temporaryFolder("rabbitmq")
        let script = repositoryRoot.appendingPathComponent("Tests/peers/rabbitmq_stomp.sh").path
        let broker = try BackgroundProcess("/bin/bash", [script, "start", folder.path])
        defer {
            _ = try? runProcess("/bin/bash", [script, "stop", folder.path], timeout: 60)
            broker.stop()
        }
        let line = try broker.waitForLine(prefix: "WEB_STOMP ", timeout: 120)
        _ = try broker.waitForLine(prefix: "STARTED", timeout: 120)
        let port = try #require(Int(line.dropFirst("WEB_STOMP ".count)))
        let o = try run(try shipped("websocket-stomp.yaml", url: "ws://127.0.0.1:\(port)/ws", clients: 20))
        expectMeasured(o, clients: 20, correlated: "receipt", stamped: "message")
        #expect(o.summary.messages.fanoutExpected == o.summary.messages.sent, "rooms of two: one other subscriber each")
    }

    @Test func graphqlSubscriptionsAgainstStrawberryCorrelateMutationsAndAnswerPings() throws {
        let (server, port) = try startListeningPeer("strawberry", "graphql_server.py", ["--ping-interval", "0.5"])
        defer { server.stop() }
        let o = try run(try shipped("websocket-graphql.yaml", url: "ws://127.0.0.1:\(port)/graphql", clients: 20))
        expectMeasured(o, clients: 20, correlated: "result", stamped: "event")
        #expect(o.summary.counters["flow_responded", default: 0] > 0, "server pings answered")
        #expect(o.summary.counters["unrecognised_frames"] == 0)
    }

    @Test func mqttOverWebSocketAgainstAmqttCorrelatesPubacksByPacketIdInBinaryFrames() throws {
        let (broker, port) = try startListeningPeer("amqtt", "amqtt_broker.py")
        defer { broker.stop() }
        let o = try run(try shipped("websocket-mqtt.yaml", url: "ws://127.0.0.1:\(port)/mqtt", clients: 10))
        expectMeasured(o, clients: 10, correlated: "puback", stamped: "delivery")
        #expect(o.summary.messages.fanoutExpected == o.summary.messages.sent * 9)
    }
}
