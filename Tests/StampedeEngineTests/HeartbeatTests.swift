import Foundation
import StampedeEngine
import StampedeScenario
import Testing

@Suite(.serialized)
struct HeartbeatTests {
    /// Application heartbeats and pings go out on schedule, every ping's pong is timed, and the
    /// chat accounting is untouched (the server drops the heartbeat text as invalid JSON).
    @Test func heartbeatsAndPingsAreSentAndPongsTimed() throws {
        var s = chatScenario(name: "heartbeat", clients: 5, duration: 1.5, rate: 10)
        s.heartbeat = Heartbeat(intervalSeconds: 0.5, pingIntervalSeconds: 0.3, timeoutSeconds: 5)
        let o = try run(s)
        expectExactAccounting(o, clients: 5)
        let c = o.summary.counters
        let pings = try #require(c["pings_sent"])
        #expect(pings >= 5 * 3)
        #expect(c["heartbeats_sent"]! >= 5 * 2)
        #expect(c["pongs_received"] == pings)
        #expect(o.summary.latencyMicros["ping_round_trip"]?.count == pings)
    }

    /// A server that goes silent (no data, no pongs) is detected after the timeout; the client
    /// drops the connection and reconnects by its policy.
    @Test func aSilentServerIsDetectedAndTheClientReconnects() throws {
        let python = try peerPython("websockets")
        let server = try BackgroundProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/silent_ws.py").path, "--max-seconds", "60"])
        defer { server.stop() }
        let line = try server.waitForLine(prefix: "LISTENING ", timeout: 30)
        let port = try #require(Int(line.dropFirst("LISTENING ".count)))
        var s = chatScenario(name: "dead-server", target: .webSocket(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/chat")),
                             clients: 3, duration: 2.5, rate: 0)
        s.heartbeat = Heartbeat(pingIntervalSeconds: 0.2, timeoutSeconds: 0.8)
        s.reconnect = .delays([0.1])
        let o = try run(s)
        #expect(o.summary.errors["server_timeout"]! >= 3)
        #expect(o.summary.counters["reconnected"]! >= 3)  // the policy restarts after each successful reconnect
        #expect(o.summary.counters["pongs_received"] == 0)
    }
}
