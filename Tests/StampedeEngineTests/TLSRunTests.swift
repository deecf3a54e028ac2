import Foundation
import StampedeEngine
import StampedeLoop
import StampedeReport
import StampedeScenario
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A certificate and key written for one test (made in-process), removed by `remove()`.
struct CertificateFiles {
    let folder: URL
    var certificate: String { folder.appendingPathComponent("cert.pem").path }
    var key: String { folder.appendingPathComponent("key.pem").path }

    init(_ name: String, dnsNames: [String] = ["localhost"], ipAddresses: [String] = ["127.0.0.1", "::1"],
         startingSecondsFromNow: Int = -3600, validDays: Int = 1) throws {
        folder = temporaryFolder("tls-\(name)")
        let c = try SelfSignedCertificate(dnsNames: dnsNames, ipAddresses: ipAddresses, validDays: validDays,
                                          startingSecondsFromNow: startingSecondsFromNow)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try c.certificatePEM.write(toFile: certificate, atomically: true, encoding: .utf8)
        try c.privateKeyPEM.write(toFile: key, atomically: true, encoding: .utf8)
    }

    func remove() { try? FileManager.default.removeItem(at: folder) }
}

/// Runs over TLS end to end: the embedded target for chat, hub (every transport) and REST with
/// exact accounting; session resumption in a reconnect storm; and every kind of bad TLS ending
/// as its counted class, never failing the run.
@Suite(.serialized)
struct TLSRunTests {
    static func tls(_ configure: (inout TLSSpec) -> Void = { _ in }) -> TLSSpec {
        var t = TLSSpec()
        configure(&t)
        return t
    }

    @Test func chatOverTLSToTheEmbeddedTargetAccountsForEveryMessage() throws {
        var s = chatScenario(name: "tls-chat", clients: 20, duration: 1.5, rate: 20)
        s.tls = Self.tls()
        let o = try run(s)
        #expect(o.exitCode == 0)
        expectExactAccounting(o, clients: 20)
        #expect(o.summary.counters["tls_handshakes"] == 20)
        #expect(o.summary.latencyMicros["tls_handshake"]?.count == 20)
        #expect(o.summary.tls == RunSummary.TLS(handshakes: 20, resumed: 0, failureReasons: [:]))
        #expect(o.summary.scenario.target == "embedded")
    }

    @Test(arguments: [HubTransport.webSockets, .serverSentEvents, .longPolling])
    func hubOverTLSToTheEmbeddedTargetAccountsForEveryCall(_ transport: HubTransport) throws {
        var s = hubScenario("tls-hub-\(transport.rawValue)", target: .embedded, transport: transport, protocolKind: .json, clients: 6,
                            duration: 1.5, rate: 20, operation: .invoke, method: "Echo", arguments: [.stamp])
        s.tls = Self.tls()
        let o = try run(s)
        #expect(o.exitCode == 0)
        expectHubAccounting(o, clients: 6)
        #expect(o.summary.errorsTotal == 0)
        // Negotiate and the transport (and long polling's or SSE's send connection) each shake hands.
        #expect(o.summary.counters["tls_handshakes", default: 0] >= 12)
    }

    @Test func restOverTLSToTheEmbeddedTargetAnswersEveryPoll() throws {
        var s = restScenario("tls-rest", target: .embedded, clients: 6, duration: 1.5, interval: 0.1)
        s.tls = Self.tls()
        let o = try run(s)
        #expect(o.exitCode == 0)
        #expect(o.summary.errorsTotal == 0)
        #expect(o.summary.messages.sent > 0 && o.summary.messages.delivered == o.summary.messages.sent && o.summary.messages.lost == 0)
        #expect(o.summary.counters["tls_handshakes", default: 0] >= 6)
    }

    /// `resume_ratio` 1: every reconnect after the storm resumes the client's session; 0: none does.
    @Test(arguments: [1.0, 0.0])
    func aStormOverTLSResumesSessionsAsTheRatioSays(_ ratio: Double) throws {
        var s = chatScenario(name: "tls-storm-\(Int(ratio))", clients: 12, duration: 2, rate: 20)
        s.tls = Self.tls { $0.sessionResumption = .tickets; $0.resumeRatio = ratio }
        s.reconnect = .delays([0, 0.2, 0.5])
        s.events = [ScenarioEvent(atSeconds: 0.6, kind: .storm(fraction: 1, mode: .reset))]
        let o = try run(s)
        #expect(o.exitCode == 0)
        let storm = try #require(o.summary.storms.first)
        #expect(storm.affected == 12 && storm.recovered == 12)
        #expect(o.summary.messages.accountingClosed)
        #expect(o.summary.counters["tls_handshakes"] == 24)
        #expect(o.summary.counters["tls_resumed"] == (ratio == 1 ? 12 : 0))
        #expect(o.summary.tls?.resumed == (ratio == 1 ? 12 : 0))
    }

    /// A remote host of our own over TLS: `stampede serve` (chat, hub, REST) in a network namespace
    /// with a certificate for the name stage.test only; the clients connect to its address and
    /// check the name with `server_name` (sent as SNI), as for a host not in DNS.
    @Test func chatHubAndRestOverTLSReachATestHostInItsOwnNetworkNamespaceByAddressWithServerName() throws {
        let ns = try TestNetworkNamespace.make(salt: 1)
        defer { ns.remove() }
        let certificate = try CertificateFiles("netns", dnsNames: ["stage.test"], ipAddresses: [])
        defer { certificate.remove() }
        let tlsFlags = ["--host", ns.address, "--tls-cert", certificate.certificate, "--tls-key", certificate.key]
        let (chatServe, chatPort) = try startServe(tlsFlags, via: ns.exec)
        defer { chatServe.stop() }
        let (hubServe, hubPort) = try startServe(tlsFlags + ["--hub"], via: ns.exec)
        defer { hubServe.stop() }
        let (restServe, restPort) = try startServe(tlsFlags + ["--rest"], via: ns.exec)
        defer { restServe.stop() }
        let spec = Self.tls { $0.caFile = certificate.certificate; $0.serverName = "stage.test" }

        var chat = chatScenario(name: "tls-netns-chat", target: .webSocket(url: WebSocketURL(host: ns.address, port: chatPort, path: "/chat", secure: true)),
                                clients: 8, duration: 1.5, rate: 16)
        chat.tls = spec
        let o = try run(chat)
        #expect(o.exitCode == 0)
        expectExactAccounting(o, clients: 8)
        #expect(o.summary.counters["tls_handshakes"] == 8)

        var hub = hubScenario("tls-netns-hub", target: .http(url: WebSocketURL(host: ns.address, port: hubPort, path: "/hub", secure: true)),
                              transport: .serverSentEvents, protocolKind: .json, clients: 4, duration: 1.5, rate: 12,
                              operation: .invoke, method: "Echo", arguments: [.stamp])
        hub.tls = spec
        let h = try run(hub)
        #expect(h.exitCode == 0)
        expectHubAccounting(h, clients: 4)
        #expect(h.summary.errorsTotal == 0)

        var rest = restScenario("tls-netns-rest", target: .http(url: WebSocketURL(host: ns.address, port: restPort, path: "/api", secure: true)),
                                clients: 4, duration: 1.5)
        rest.tls = spec
        let r = try run(rest)
        #expect(r.exitCode == 0)
        #expect(r.summary.errorsTotal == 0)
        #expect(r.summary.messages.sent > 0 && r.summary.messages.delivered == r.summary.messages.sent && r.summary.messages.lost == 0)

        // The address alone is not a name on the certificate: every client fails verification.
        chat.tls = Self.tls { $0.caFile = certificate.certificate }
        chat.name = "tls-netns-no-name"
        let bad = try run(chat)
        #expect(bad.summary.errors["tls_verify_failed"] == 8)
        #expect(bad.summary.tls?.failureReasons.keys.first == "IP address mismatch")
    }

    // MARK: Bad TLS, counted

    /// Runs 4 chat clients at `target` (a `stampede serve` of the test's) and returns the outcome.
    func badRun(_ name: String, _ target: String, tls: TLSSpec?, connectTimeout: Double = 5) throws -> RunOutcome {
        guard case .success(let t) = ScenarioLoader.parseTarget(target) else { throw PeerError("bad target \(target)") }
        var s = chatScenario(name: name, target: t, clients: 4, duration: 0.5, rate: 8)
        s.tls = tls
        s.connectTimeoutSeconds = connectTimeout
        s.drainSeconds = 0.5
        let o = try run(s)
        // Nothing connected, nothing sent: the run still ends with its results written.
        #expect(o.summary.connections.connected == 0)
        #expect(o.summary.connections.failed == 4)
        #expect(o.summary.messages.accountingClosed)
        #expect(o.resultsFolder != nil)
        return o
    }

    @Test func unknownCAWrongNameAndExpiryAreVerifyFailuresWithTheirReasons() throws {
        let good = try CertificateFiles("good"), other = try CertificateFiles("other")
        let expired = try CertificateFiles("expired", startingSecondsFromNow: -3 * 86_400, validDays: 1)
        defer { good.remove(); other.remove(); expired.remove() }
        let (serve, port) = try startServe(["--tls-cert", good.certificate, "--tls-key", good.key])
        defer { serve.stop() }
        let (expiredServe, expiredPort) = try startServe(["--tls-cert", expired.certificate, "--tls-key", expired.key])
        defer { expiredServe.stop() }
        let cases: [(String, Int, TLSSpec, String)] = [
            ("unknown-ca", port, Self.tls { $0.caFile = other.certificate }, "self-signed certificate"),
            ("wrong-name", port, Self.tls { $0.caFile = good.certificate; $0.serverName = "wrong.example" }, "hostname mismatch"),
            ("expired", expiredPort, Self.tls { $0.caFile = expired.certificate }, "certificate has expired"),
        ]
        for (name, p, spec, reason) in cases {
            let o = try badRun("tls-\(name)", "wss://127.0.0.1:\(p)/chat", tls: spec)
            #expect(o.summary.errors["tls_verify_failed"] == 4, "\(name)")
            #expect(o.summary.tls?.failureReasons == [reason: 4], "\(name)")
        }
        // verify: false accepts the expired certificate.
        var s = chatScenario(name: "tls-no-verify", target: .webSocket(url: WebSocketURL(host: "127.0.0.1", port: expiredPort, path: "/chat", secure: true)),
                             clients: 4, duration: 0.5, rate: 8)
        s.tls = Self.tls { $0.verify = false }
        expectExactAccounting(try run(s), clients: 4)
    }

    @Test func plainServerOnTheTLSPortIsAProtocolErrorAndTLSServerOnAPlainURLIsCounted() throws {
        // A plain HTTP server answers the ClientHello as a bad request, as nginx does.
        let plain = try SilentListener()
        let answering = Thread { plain.acceptAndAnswer(count: 4, seconds: 20, reply: Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)) }
        answering.start()
        let o = try badRun("tls-plain-server", "wss://127.0.0.1:\(plain.port)/chat", tls: Self.tls())
        #expect(o.summary.errors["tls_protocol_error"] == 4, "\(o.summary.errors.filter { $0.value > 0 }) \(String(describing: o.summary.tls))")

        let good = try CertificateFiles("tls-on-plain")
        defer { good.remove() }
        let (serve, port) = try startServe(["--tls-cert", good.certificate, "--tls-key", good.key])
        defer { serve.stop() }
        let p = try badRun("tls-server-plain-url", "ws://127.0.0.1:\(port)/chat", tls: nil)
        #expect(p.summary.errorsTotal == 4)
        #expect(p.summary.errors["upgrade_invalid", default: 0] + p.summary.errors["unexpected_eof", default: 0]
                + p.summary.errors["connection_reset", default: 0] == 4)
    }

    @Test func aStalledHandshakeTimesOutAndAResetMidHandshakeIsAHandshakeFailure() throws {
        // A listener that never accepts: the kernel completes TCP, nobody answers the ClientHello.
        let silent = try SilentListener()
        let o = try badRun("tls-stall", "wss://127.0.0.1:\(silent.port)/chat", tls: Self.tls(), connectTimeout: 0.5)
        #expect(o.summary.errors["connect_timeout"] == 4)

        // A server that reads the ClientHello and resets the connection.
        let resetting = try SilentListener()
        let thread = Thread { resetting.acceptAndAnswer(count: 4, seconds: 20, reply: nil) }
        thread.start()
        let r = try badRun("tls-reset", "wss://127.0.0.1:\(resetting.port)/chat", tls: Self.tls())
        #expect(r.summary.errors["tls_handshake_failed"] == 4)
        #expect(r.summary.tls?.failureReasons.keys.contains("reset during the handshake") == true)
    }
}

extension SilentListener {
    /// Accepts up to `count` connections (for at most `seconds`), reads what each sends, and
    /// writes `reply` and closes, or resets it (SO_LINGER 0) when `reply` is nil: a server that
    /// misbehaves on purpose.
    func acceptAndAnswer(count: Int, seconds: Double, reply: [UInt8]?) {
        let deadline = Date().addingTimeInterval(seconds)
        var done = 0
        while done < count && Date() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            let c = accept(fd, nil, nil)
            guard c >= 0 else { return }
            var buffer = [UInt8](repeating: 0, count: 4096)
            var q = pollfd(fd: c, events: Int16(POLLIN), revents: 0)
            if poll(&q, 1, 2000) > 0 { _ = read(c, &buffer, buffer.count) }
            if let reply {
                _ = reply.withUnsafeBytes { write(c, $0.baseAddress, $0.count) }
            } else {
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                _ = setsockopt(c, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            }
            Glibc.close(c)
            done += 1
        }
    }
}
