import Foundation
import StampedeEngine
import StampedeScenario
import Testing

/// A hub that sends malformed messages: each case ends the connection with a counted protocol
/// error; the run finishes, writes its results, and nothing crashes or hangs.
@Suite(.serialized)
struct HubRobustnessTests {
    static let modes: [(String, HubProtocolKind)] = [
        ("invalid-json", .json), ("result-and-error", .json), ("non-numeric-type", .json), ("empty-target", .json),
        ("mp-truncated-varint", .messagePack), ("mp-overlong-length", .messagePack), ("mp-non-map-headers", .messagePack), ("mp-empty-body", .messagePack),
    ]

    @Test func malformedHubMessagesEndTheConnectionWithACountedProtocolError() throws {
        let python = try peerPython("websockets")
        let server = try BackgroundProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/bad_hub.py").path, "--max-seconds", "120"])
        defer { server.stop() }
        let line = try server.waitForLine(prefix: "LISTENING ", timeout: 30)
        let port = try #require(Int(line.dropFirst("LISTENING ".count)))
        for (mode, protocolKind) in Self.modes {
            var s = hubScenario("bad-\(mode)", target: .http(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/hub?mode=\(mode)")),
                                transport: .webSockets, protocolKind: protocolKind, clients: 3, duration: 0.5, operation: .none,
                                method: "Echo", arguments: [])
            s.hub?.skipNegotiation = true
            let o = try run(s)
            #expect(o.summary.errors["protocol_error"] == 3, "\(mode): \(o.summary.errors.filter { $0.value > 0 })")
            #expect(o.resultsFolder != nil, "\(mode)")
        }
    }

    /// A hub that goes silent is detected by the client's server timeout (§5), and the client
    /// keeps pinging at its keep-alive interval meanwhile.
    @Test func silentHubIsDetectedByTheServerTimeout() throws {
        let python = try peerPython("websockets")
        let server = try BackgroundProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/bad_hub.py").path, "--max-seconds", "60"])
        defer { server.stop() }
        let line = try server.waitForLine(prefix: "LISTENING ", timeout: 30)
        let port = try #require(Int(line.dropFirst("LISTENING ".count)))
        var s = hubScenario("silent-hub", target: .http(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/hub?mode=silent")),
                            transport: .webSockets, protocolKind: .json, clients: 2, duration: 3.5, operation: .none, method: "Echo", arguments: [])
        s.hub?.skipNegotiation = true
        s.hub?.keepAliveSeconds = 1
        s.hub?.serverTimeoutSeconds = 2
        let o = try run(s)
        #expect(o.summary.errors["server_timeout"] == 2, "\(o.summary.errors.filter { $0.value > 0 })")
        #expect(o.summary.connections.disconnected == 2)
    }
}
