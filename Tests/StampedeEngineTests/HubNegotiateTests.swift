import Foundation
import StampedeEngine
import StampedeLoop
import StampedeScenario
import StampedeServers
import Testing

/// Negotiate redirects (url + accessToken) and bearer tokens, against a Python redirecting
/// negotiate endpoint in front of the reference hub.
@Suite(.serialized)
struct HubNegotiateTests {
    static let secret = "s3cr3t-token-never-in-results"

    /// negotiate_redirect.py, redirecting its second hop to `final`, and its port.
    static func startRedirector(final: String) throws -> (BackgroundProcess, Int) {
        try HubRedirectHostTests.startRedirector(["--final", final])
    }

    @Test func redirectsAreFollowedWithTheirAccessTokensAndTheTokenNeverReachesTheResults() throws {
        let hubLoop = try EventLoop(index: 0)
        let hub = try HubServer(loop: hubLoop, address: .ipv4(0x7F00_0001, port: 0))
        hubLoop.start()
        defer { hubLoop.stop(); hubLoop.join() }
        let (redirector, port) = try Self.startRedirector(final: "http://127.0.0.1:\(hub.port)/hub")
        defer { redirector.stop() }
        var s = hubScenario("redirect", target: .http(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/first")),
                            transport: .webSockets, protocolKind: .json, clients: 3, duration: 0.5, operation: .invoke,
                            method: "Echo", arguments: [.stamp])
        s.hub?.accessToken = .literal(Self.secret)
        let o = try run(s)
        #expect(o.exitCode == 0, "\(o.record.fatalError ?? "")")
        #expect(o.summary.connections.connected == 3)
        #expect(o.summary.messages.delivered == o.summary.messages.sent && o.summary.messages.sent > 0)

        redirector.stop()
        let report = try #require(redirector.lines.withLock { $0.last { $0.hasPrefix("{") } })
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any])
        let auth = try #require(seen["authorizations"] as? [String: [String]])
        #expect(auth["/first"] == Array(repeating: "Bearer \(Self.secret)", count: 3))
        #expect(auth["/second"] == Array(repeating: "Bearer token-two", count: 3))

        // Secrets never appear in results.
        let folder = try #require(o.resultsFolder)
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains(Self.secret), "\(file) contains the token")
            #expect(!text.contains("token-two") && !text.contains("token-three"), "\(file) contains a redirect token")
        }
    }

    @Test func endlessRedirectsStopAfterOneHundredAsNegotiateFailures() throws {
        let (redirector, port) = try Self.startRedirector(final: "http://127.0.0.1:1/hub")
        defer { redirector.stop() }
        let s = hubScenario("redirect-loop", target: .http(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/loop")),
                            transport: .webSockets, protocolKind: .json, clients: 1, duration: 0.5, operation: .none,
                            method: "Echo", arguments: [])
        let o = try run(s)
        #expect(o.exitCode == 1)
        #expect(o.summary.errors["negotiate_failed"] == 1)
        redirector.stop()
        let report = try #require(redirector.lines.withLock { $0.last { $0.hasPrefix("{") } })
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any])
        #expect(seen["loop_requests"] as? Int == 101)
    }

    /// A misbehaving server's redirect URL that the target parser refuses is a negotiate failure,
    /// not a connection attempt: each of these names a loopback port that nothing listens on, so
    /// following it would have been counted as a connect failure instead.
    @Test(arguments: ["http://127.0.0.1:99999/hub", "http://user@127.0.0.1:1/hub", "http://127.0.0.1:1/h ub",
                      "http://127.0.0.1:1/hub#top", "http://127.0.0.1:1:2/hub", "ws://127.0.0.1:1/hub"])
    func aRedirectURLTheTargetParserRefusesIsCountedAsNegotiateFailed(_ final: String) throws {
        let (redirector, port) = try Self.startRedirector(final: final)
        defer { redirector.stop() }
        let s = hubScenario("redirect-bad-url", target: .http(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/first")),
                            transport: .webSockets, protocolKind: .json, clients: 1, duration: 0.5, operation: .none,
                            method: "Echo", arguments: [])
        let o = try run(s)
        #expect(o.exitCode == 1)
        #expect(o.summary.errors["negotiate_failed"] == 1, "\(o.summary.errors)")
        #expect(o.summary.connections.connected == 0)
    }
}
