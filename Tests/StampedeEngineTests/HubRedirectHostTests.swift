import Foundation
import StampedeEngine
import StampedeLoop
import StampedeReport
import StampedeScenario
import StampedeServers
import StampedeWorkloads
import Synchronization
import Testing

/// Negotiate redirects to other hosts, as Azure SignalR Service sends them: by name, over TLS,
/// with an access token; only to hosts the scenario allows. Traffic goes only to loopback or to
/// a test host in a network namespace of the test's own.
@Suite(.serialized)
struct HubRedirectHostTests {
    static let appToken = "app-token-never-in-results"
    static let serviceToken = "azure-token-never-in-results"

    /// negotiate_redirect.py with `arguments`, and its port.
    static func startRedirector(_ arguments: [String]) throws -> (BackgroundProcess, Int) {
        let redirector = try BackgroundProcess(try peerPython("websockets"), [
            repositoryRoot.appendingPathComponent("Tests/peers/negotiate_redirect.py").path, "--max-seconds", "60"] + arguments)
        do {
            let line = try redirector.waitForLine(prefix: "LISTENING ", timeout: 30)
            return (redirector, try #require(Int(line.dropFirst("LISTENING ".count))))
        } catch {
            redirector.stop()
            throw error
        }
    }

    /// The redirector's report once stopped: the Authorization headers each negotiate path got.
    static func authorizations(_ redirector: BackgroundProcess) throws -> [String: [String]] {
        redirector.stop()
        let report = try #require(redirector.lines.withLock { $0.last { $0.hasPrefix("{") } })
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any])
        return try #require(seen["authorizations"] as? [String: [String]])
    }

    /// No file of `folder` holds any of `secrets`.
    static func expectNoSecrets(in folder: URL, _ secrets: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(!files.isEmpty, sourceLocation: sourceLocation)
        for file in files {
            let data = try Data(contentsOf: folder.appendingPathComponent(file))
            for secret in secrets {
                #expect(data.range(of: Data(secret.utf8)) == nil, "\(file) contains a token", sourceLocation: sourceLocation)
            }
        }
    }

    /// Two hops on loopback, then a redirect to a name the scenario does not allow: refused
    /// before any lookup or connection, counted as `redirect_refused` with the host named.
    @Test func aRedirectToAHostNotAllowedIsRefusedAndNamed() throws {
        let (redirector, port) = try Self.startRedirector(["--final", "http://elsewhere.test:1/hub"])
        defer { redirector.stop() }
        var s = hubScenario("redirect-refused", target: .http(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/first")),
                            transport: .webSockets, protocolKind: .json, clients: 3, duration: 0.5, operation: .none,
                            method: "Echo", arguments: [])
        s.hub?.redirectHosts = ["*.service.signalr.net", "elsewhere.example"]
        s.hub?.accessToken = .literal(Self.appToken)
        let o = try run(s)
        #expect(o.exitCode == 1)
        #expect(o.summary.errors["redirect_refused"] == 3, "\(o.summary.errors.filter { $0.value > 0 })")
        #expect(o.summary.errorsTotal == 3)
        #expect(o.summary.hubErrors == ["redirect refused: elsewhere.test": 3])
        #expect(o.summary.connections.connected == 0 && o.summary.counters["connect_failed"] == 3)
        let auth = try Self.authorizations(redirector)
        #expect(auth["/second"] == Array(repeating: "Bearer token-two", count: 3))
        try Self.expectNoSecrets(in: try #require(o.resultsFolder), [Self.appToken, "token-two", "token-three"])
    }

    /// `serve --hub --token`: a negotiate without the bearer is refused with 401, counted as
    /// `http_status`; with it, clients connect.
    @Test func aHubThatRequiresATokenRefusesANegotiateWithoutIt() throws {
        let hubLoop = try EventLoop(index: 0)
        var configuration = HubServer.Configuration()
        configuration.token = Self.serviceToken
        let hub = try HubServer(loop: hubLoop, address: .ipv4(0x7F00_0001, port: 0), configuration: configuration)
        hubLoop.start()
        defer { hubLoop.stop(); hubLoop.join() }
        var s = hubScenario("hub-token", target: .http(url: WebSocketURL(host: "127.0.0.1", port: Int(hub.port), path: "/hub")),
                            transport: .webSockets, protocolKind: .json, clients: 2, duration: 0.5, operation: .none,
                            method: "Echo", arguments: [])
        let refused = try run(s)
        #expect(refused.summary.errors["http_status"] == 2 && refused.summary.connections.connected == 0)
        #expect(hub.statisticsSnapshot().negotiatesUnauthorized == 2)
        s.hub?.accessToken = .literal(Self.serviceToken)
        let accepted = try run(s)
        #expect(accepted.summary.connections.connected == 2 && accepted.summary.errorsTotal == 0)
        #expect(hub.statisticsSnapshot().negotiatesUnauthorized == 2)
    }

    /// Every loop's clients ask for a name at once: getaddrinfo runs once, off the loops, and
    /// every asker hears the one answer (now or later).
    @Test func aRedirectHostNameIsResolvedOnceForTheRunHoweverManyAsk() throws {
        let resolver = HubRedirectResolver(policy: .ipv4)
        let answers = Mutex<[HubRedirectResolver.Answer]>([])
        let done = DispatchSemaphore(value: 0)
        let askers = 40
        DispatchQueue.concurrentPerform(iterations: askers) { _ in
            if let now = resolver.lookUp("localhost", deliver: { a in answers.withLock { $0.append(a) }; done.signal() }) {
                answers.withLock { $0.append(now) }
                done.signal()
            }
        }
        for _ in 0..<askers { #expect(done.wait(timeout: .now() + 30) == .success) }
        #expect(resolver.lookupCount == 1)
        let all = answers.withLock { $0 }
        #expect(all.count == askers)
        #expect(Set(all.map { "\($0)" }).count == 1)
        #expect(all.first == .addresses([.ipv4(0x7F00_0001, port: 0)]), "\(all.first.map { "\($0)" } ?? "none")")
    }

    /// Azure SignalR Service's answer, acted out: an https negotiate endpoint on loopback (its
    /// certificate names only `negotiate.test`, the scenario's `server_name`) answers
    /// `{"url": "https://hub.signalr.test:PORT/client?hub=chat", "accessToken": …}`; the name
    /// resolves (a private /etc/hosts in the run's own mount namespace) to a test host in a
    /// network namespace, where the reference hub serves https with a certificate for that name
    /// only, and requires the redirect's access token as the bearer of its negotiate. Every call
    /// is answered, each client makes exactly three TLS handshakes (negotiate
    /// at each host, then the WebSocket), and no token reaches the results.
    @Test func azureStyleRedirectByNameReachesAHubOnATestHostOverTLS() throws {
        let ns = try TestNetworkNamespace.make(salt: 5)
        defer { ns.remove() }
        let negotiateCertificate = try CertificateFiles("azure-negotiate", dnsNames: ["negotiate.test"], ipAddresses: [])
        defer { negotiateCertificate.remove() }
        let hubCertificate = try CertificateFiles("azure-hub", dnsNames: ["hub.signalr.test"], ipAddresses: [])
        defer { hubCertificate.remove() }
        let folder = temporaryFolder("azure-redirect")
        let caFile = folder.appendingPathComponent("ca.pem")
        try (String(contentsOfFile: negotiateCertificate.certificate, encoding: .utf8) + String(contentsOfFile: hubCertificate.certificate, encoding: .utf8))
            .write(to: caFile, atomically: true, encoding: .utf8)

        // The hub takes only the service's token: the one the redirect gave.
        let (hub, hubPort) = try startServe(["--hub", "--host", ns.address, "--path", "/client", "--token", Self.serviceToken,
                                             "--tls-cert", hubCertificate.certificate, "--tls-key", hubCertificate.key], via: ns.exec)
        defer { hub.stop() }
        let (redirector, port) = try Self.startRedirector([
            "--final", "http://127.0.0.1:1/unused", "--azure", "https://hub.signalr.test:\(hubPort)/client?hub=chat",
            "--cert", negotiateCertificate.certificate, "--key", negotiateCertificate.key])
        defer { redirector.stop() }

        let hosts = folder.appendingPathComponent("hosts"), scenario = folder.appendingPathComponent("azure.yaml")
        try "127.0.0.1 localhost\n\(ns.address) hub.signalr.test\n".write(to: hosts, atomically: true, encoding: .utf8)
        try """
            name: azure-redirect
            workload: hub
            target: https://127.0.0.1:\(port)/azure
            clients: 4
            connect_rate: 1000
            duration: 1s
            drain: 2s
            connect_timeout: 5s
            message: {rate: 20}
            tls:
              ca_file: \(caFile.path)
              server_name: negotiate.test
            hub:
              transports: [websockets]
              access_token: \(Self.appToken)
              redirect_hosts: ["*.signalr.test"]
              method: Echo
              arguments: ["{stamp}"]

            """.write(to: scenario, atomically: true, encoding: .utf8)
        let r = try runStampede(with: hosts, over: "/etc/hosts", ["run", scenario.path, "--results", folder.path, "--quiet"], what: "azure redirect test")
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(!r.stdout.contains(Self.serviceToken) && !r.stderr.contains(Self.serviceToken))
        let line = try #require(r.stdout.split(separator: "\n").last { $0.hasPrefix("results: ") }, "\(r.stdout)\(r.stderr)")
        let path = String(line.dropFirst("results: ".count))
        let results = path.hasPrefix("/") ? URL(fileURLWithPath: path) : repositoryRoot.appendingPathComponent(path)
        let summary = try RunSummary.decode(from: Data(contentsOf: results.appendingPathComponent("summary.json")))
        let m = summary.messages
        #expect(summary.connections.connected == 4)
        #expect(m.sent > 0 && m.delivered == m.sent && m.lost == 0 && m.failed == 0 && m.accountingClosed, "\(m)")
        #expect(summary.errorsTotal == 0, "\(summary.errors.filter { $0.value > 0 }) \(summary.hubErrors)")
        #expect(summary.counters["connected_websockets"] == 4)
        #expect(summary.counters["tls_handshakes"] == 12)
        #expect(summary.latencyMicros["negotiate"]?.count == 4)

        let auth = try Self.authorizations(redirector)
        #expect(auth["/azure"] == Array(repeating: "Bearer \(Self.appToken)", count: 4))
        try Self.expectNoSecrets(in: results, [Self.appToken, Self.serviceToken])
    }
}
