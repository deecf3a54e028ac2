import Foundation
import StampedeEngine
import StampedeLoop
import StampedeScenario
import StampedeServers
import StampedeTestSupport
import Testing

/// A reference server (chat, hub or REST) on its own loop on 127.0.0.1, plain: nginx puts TLS
/// in front of it.
final class PlainReferenceServer: @unchecked Sendable {
    enum Kind { case chat, hub, rest }
    let loop: EventLoop
    let chat: ChatServer?
    let hub: HubServer?
    let rest: RestServer?
    let port: Int

    init(_ kind: Kind, rest configuration: RestServer.Configuration = RestServer.Configuration()) throws {
        loop = try EventLoop(index: 0)
        let at = SocketAddress.ipv4(0x7F00_0001, port: 0)
        switch kind {
        case .chat:
            let s = try ChatServer(loop: loop, address: at); chat = s; hub = nil; rest = nil; port = Int(s.port)
        case .hub:
            let s = try HubServer(loop: loop, address: at); hub = s; chat = nil; rest = nil; port = Int(s.port)
        case .rest:
            let s = try RestServer(loop: loop, address: at, configuration: configuration); rest = s; chat = nil; hub = nil; port = Int(s.port)
        }
        loop.start(name: "tls-interop-upstream")
    }

    func stop() {
        loop.stop()
        loop.join()
    }
}

/// The TLS test harness checked with third-party clients only (Python `websockets`, curl), so
/// a failure of the Stampede runs that use it points at Stampede, not at nginx's config or the
/// peers: nginx proxies WebSocket upgrades, conditional requests and SignalR negotiation to
/// the reference servers, and the Python chat server speaks wss:// with the test's CA.
@Suite(.serialized)
struct TLSHarnessTests {
    @Test func pythonWebsocketsClientsGetEveryBroadcastFromThePythonTLSChatServerAndThroughNginx() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let python = try peerPython("websockets")
        let script = repositoryRoot.appendingPathComponent("Tests/peers/chat_clients.py").path

        // Python server over TLS.
        let server = try BackgroundProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/chat_server.py").path,
                                                    "--port", "0", "--max-seconds", "60",
                                                    "--tls-cert", certificates.certificateFile, "--tls-key", certificates.keyFile])
        defer { server.stop() }
        let line = try server.waitForLine(prefix: "LISTENING ", timeout: 30)
        let direct = try runProcess(python, [script, "--url", "wss://127.0.0.1:\(line.dropFirst("LISTENING ".count))/chat",
                                             "--ca-file", certificates.caFile, "--clients", "8", "--messages", "4", "--timeout", "30"], timeout: 45)
        try expectEveryBroadcast(direct, clients: 8, messages: 4)

        // The reference chat server behind nginx.
        let upstream = try PlainReferenceServer(.chat)
        defer { upstream.stop() }
        let nginx = try NginxTLSProxy(upstreamPort: upstream.port, certificates: certificates)
        defer { nginx.stop() }
        let proxied = try runProcess(python, [script, "--url", nginx.url("wss", "/chat"), "--ca-file", certificates.caFile,
                                              "--clients", "8", "--messages", "4", "--timeout", "30"], timeout: 45)
        try expectEveryBroadcast(proxied, clients: 8, messages: 4)
        #expect(upstream.chat?.statisticsSnapshot().messagesReceived == 8 * 4)

        // A client that does not trust the CA is refused by the Python TLS stack.
        let untrusted = try runProcess(python, [script, "--url", nginx.url("wss", "/chat"), "--ca-file", certificates.otherCAFile,
                                                "--clients", "1", "--messages", "1", "--timeout", "10"], timeout: 20)
        #expect(untrusted.status == 1 && untrusted.stderr.contains("CERTIFICATE_VERIFY_FAILED"), "\(untrusted.stderr.suffix(500))")
    }

    @Test func curlThroughNginxGetsTheRestTargetsETagsAnd304sAndTheHubsNegotiation() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let rest = try PlainReferenceServer(.rest, rest: RestServer.Configuration(changeRate: 0))
        defer { rest.stop() }
        let nginx = try NginxTLSProxy(upstreamPort: rest.port, certificates: certificates)
        defer { nginx.stop() }
        let first = try curl(["-i", nginx.url("https", "/api/items")], ca: certificates.caFile)
        #expect(first.hasPrefix("HTTP/1.1 200"), "\(first.prefix(300))")
        let etag = try #require(first.split(separator: "\r\n").first { $0.lowercased().hasPrefix("etag:") }?.dropFirst(5)
            .trimmingCharacters(in: .whitespaces))
        let again = try curl(["-i", "-H", "If-None-Match: \(etag)", nginx.url("https", "/api/items")], ca: certificates.caFile)
        #expect(again.hasPrefix("HTTP/1.1 304"), "\(again.prefix(300))")
        let stats = try #require(rest.rest?.statisticsSnapshot())
        #expect(stats.ok == 1 && stats.notModified == 1)

        let hub = try PlainReferenceServer(.hub)
        defer { hub.stop() }
        let hubProxy = try NginxTLSProxy(upstreamPort: hub.port, certificates: certificates)
        defer { hubProxy.stop() }
        let negotiate = try curl(["-X", "POST", "-H", "Content-Length: 0", hubProxy.url("https", "/hub/negotiate?negotiateVersion=1")],
                                 ca: certificates.caFile)
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(negotiate.utf8)) as? [String: Any], "\(negotiate)")
        #expect(fields["connectionToken"] is String)
        let transports = (fields["availableTransports"] as? [[String: Any]] ?? []).compactMap { $0["transport"] as? String }
        #expect(Set(transports) == ["WebSockets", "ServerSentEvents", "LongPolling"])
    }

    /// curl with only the test's CA trusted; its output (fails the test on a curl error).
    func curl(_ arguments: [String], ca: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let r = try runProcess("/usr/bin/curl", ["-sS", "--max-time", "10", "--cacert", ca] + arguments, timeout: 20)
        #expect(r.status == 0, "curl \(arguments): \(r.stderr)", sourceLocation: sourceLocation)
        return r.stdout
    }

    func expectEveryBroadcast(_ r: ProcessResult, clients: Int, messages: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(r.status == 0, "chat_clients.py: \(r.stdout) \(r.stderr.suffix(1500))", sourceLocation: sourceLocation)
        let json = try #require(r.stdout.split(separator: "\n").last, sourceLocation: sourceLocation)
        let f = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], sourceLocation: sourceLocation)
        #expect(f["ok"] as? Bool == true && f["missing"] as? Int == 0 && f["duplicates"] as? Int == 0, sourceLocation: sourceLocation)
        #expect(f["received_total"] as? Int == clients * clients * messages, sourceLocation: sourceLocation)
    }
}

/// Stampede's own TLS clients (chat over wss://, hub and REST over https://) against
/// third-party TLS: Python's `ssl` in the websockets chat server, and nginx terminating TLS in
/// front of the reference servers and of aiosignalr. Every run trusts only the test's CA and
/// must account exactly: sent == delivered, nothing lost, no errors.
@Suite(.serialized)
struct TLSInteropTests {
    /// `s` over TLS, trusting only `ca`.
    static func overTLS(_ s: Scenario, ca: String, tickets: Bool = false) -> Scenario {
        var s = s
        var tls = TLSSpec()
        tls.caFile = ca
        if tickets { tls.sessionResumption = .tickets; tls.resumeRatio = 1 }
        s.tls = tls
        return s
    }

    /// Broadcasts through the hub (the case with fan-out), for half a second.
    static func hubBroadcast(_ target: Target, _ transport: HubTransport, _ protocolKind: HubProtocolKind, ca: String) -> Scenario {
        var s = HubCase.sendBroadcast.scenario(target: target, transport: transport, protocolKind: protocolKind)
        s.durationSeconds = 0.5
        return overTLS(s, ca: ca)
    }

    static func secure(_ port: Int, _ path: String) -> WebSocketURL {
        WebSocketURL(host: "127.0.0.1", port: port, path: path, secure: true)
    }

    /// Every connection made a verified handshake, timed, and none failed.
    static func expectHandshakes(_ o: RunOutcome, atLeast: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let handshakes = o.summary.counters["tls_handshakes"] ?? 0
        #expect(handshakes >= UInt64(atLeast), "tls_handshakes \(handshakes)", sourceLocation: sourceLocation)
        #expect(o.summary.latencyMicros["tls_handshake"]?.count == handshakes, sourceLocation: sourceLocation)
        #expect(o.summary.tls?.handshakes == handshakes, sourceLocation: sourceLocation)
        #expect(o.summary.tls?.failureReasons.isEmpty ?? false, "\(String(describing: o.summary.tls))", sourceLocation: sourceLocation)
        for key in ["tls_handshake_failed", "tls_verify_failed", "tls_protocol_error"] {
            #expect((o.summary.errors[key] ?? 0) == 0, "\(key)", sourceLocation: sourceLocation)
        }
    }

    @Test func chatClientsOverWssAgainstThePythonTLSServerAccountForEveryMessage() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let python = try peerPython("websockets")
        let server = try BackgroundProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/chat_server.py").path,
                                                    "--port", "0", "--max-seconds", "60",
                                                    "--tls-cert", certificates.certificateFile, "--tls-key", certificates.keyFile])
        defer { server.stop() }
        let line = try server.waitForLine(prefix: "LISTENING ", timeout: 30)
        let port = try #require(Int(line.dropFirst("LISTENING ".count)))
        let s = chatScenario(name: "tls-python-websockets", target: .webSocket(url: Self.secure(port, "/chat")), clients: 20, duration: 1, rate: 40)
        let o = try run(Self.overTLS(s, ca: certificates.caFile))
        #expect(o.exitCode == 0)
        expectExactAccounting(o, clients: 20)
        #expect(o.summary.messages.unparsed == 0)
        Self.expectHandshakes(o, atLeast: 20)
        #expect(o.summary.counters["tls_handshakes"] == 20)
    }

    @Test func chatClientsOverWssThroughNginxToTheReferenceServerAccountForEveryMessage() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let upstream = try PlainReferenceServer(.chat)
        defer { upstream.stop() }
        let nginx = try NginxTLSProxy(upstreamPort: upstream.port, certificates: certificates)
        defer { nginx.stop() }
        let s = chatScenario(name: "tls-nginx-chat", target: .webSocket(url: Self.secure(nginx.port, "/chat")), clients: 20, duration: 1, rate: 40)
        let o = try run(Self.overTLS(s, ca: certificates.caFile))
        #expect(o.exitCode == 0, "\(nginx.errorLog.suffix(1000))")
        expectExactAccounting(o, clients: 20)
        Self.expectHandshakes(o, atLeast: 20)
        #expect(upstream.chat?.statisticsSnapshot().messagesReceived == Int(o.summary.messages.sent))
    }

    /// The reference hub behind nginx, over each transport (SSE and long polling need nginx's
    /// `proxy_buffering off`), JSON and MessagePack where the transport allows it (MessagePack
    /// has no SSE: that transport carries text only).
    @Test func hubClientsOverHttpsThroughNginxToTheReferenceHubAccountForEveryCall() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let upstream = try PlainReferenceServer(.hub)
        defer { upstream.stop() }
        let nginx = try NginxTLSProxy(upstreamPort: upstream.port, certificates: certificates)
        defer { nginx.stop() }
        let target = Target.http(url: Self.secure(nginx.port, "/hub"))
        for (transport, protocolKind) in hubTransportMatrix {
            let o = try run(Self.hubBroadcast(target, transport, protocolKind, ca: certificates.caFile))
            HubCase.sendBroadcast.check(o, clients: 6)
            Self.expectHandshakes(o, atLeast: 6)
        }
        #expect(!nginx.errorLog.contains("[error]"), "\(nginx.errorLog.suffix(1000))")
    }

    /// The aiosignalr hub of Tests/peers, serving TLS itself with `tls`, and its port. The poll
    /// timeout and idle grace are HubClientInteropTests' (Tests/peers/README.md).
    static func startAiosignalr(tls: TestCertificates?) throws -> (BackgroundProcess, Int) {
        let python = try peerPython("aiosignalr")
        let tlsArguments = tls.map { ["--tls-cert", $0.certificateFile, "--tls-key", $0.keyFile] } ?? []
        let server = try BackgroundProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/signalr_hub_server.py").path,
                                                    "--port", "0", "--max-seconds", "120", "--long-polling-timeout", "1", "--lp-idle-grace", "15"]
                                                   + tlsArguments)
        let line: String
        do { line = try server.waitForLine(prefix: "LISTENING ", timeout: 30) } catch { server.stop(); throw error }
        guard let port = Int(line.dropFirst("LISTENING ".count)) else { server.stop(); throw PeerError("aiosignalr said '\(line)'") }
        return (server, port)
    }

    /// aiosignalr (a third-party SignalR server) behind nginx: both encodings, every transport
    /// it supports (MessagePack has no SSE: the protocol is text-only there).
    @Test func hubClientsOverHttpsThroughNginxToAiosignalrAccountForEveryCall() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let (server, port) = try Self.startAiosignalr(tls: nil)
        defer { server.stop() }
        let nginx = try NginxTLSProxy(upstreamPort: port, certificates: certificates)
        defer { nginx.stop() }
        let target = Target.http(url: Self.secure(nginx.port, "/hub"))
        for (transport, protocolKind) in hubTransportMatrix {
            let o = try run(Self.hubBroadcast(target, transport, protocolKind, ca: certificates.caFile))
            HubCase.sendBroadcast.check(o, clients: 6)
            Self.expectHandshakes(o, atLeast: 6)
        }
    }

    /// aiosignalr serving TLS itself (Python's ssl on aiohttp's listener): a TLS stack other
    /// than nginx's under every transport, JSON over WebSockets and SSE, MessagePack over long
    /// polling (the nginx test above covers every pair).
    @Test func hubClientsOverHttpsToAiosignalrsOwnTLSAccountForEveryCall() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let (server, port) = try Self.startAiosignalr(tls: certificates)
        defer { server.stop() }
        let target = Target.http(url: Self.secure(port, "/hub"))
        for (transport, protocolKind) in [(HubTransport.webSockets, HubProtocolKind.json), (.serverSentEvents, .json), (.longPolling, .messagePack)] {
            let o = try run(Self.hubBroadcast(target, transport, protocolKind, ca: certificates.caFile))
            HubCase.sendBroadcast.check(o, clients: 6)
            Self.expectHandshakes(o, atLeast: 6)
        }
    }

    /// The Python REST twin serving HTTPS itself, driven by a scenario file as a user writes it:
    /// a `ca_file`, and `server_name` naming the certificate's DNS name while the target is the
    /// IP address.
    @Test func restScenarioFileOverHttpsToThePythonRestServerCountsEvery200And304() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try BackgroundProcess("/usr/bin/python3", [repositoryRoot.appendingPathComponent("Tests/peers/rest_server.py").path,
                                                               "--port", "0", "--max-seconds", "60", "--change-rate", "4",
                                                               "--tls-cert", certificates.certificateFile, "--tls-key", certificates.keyFile])
        defer { server.stop() }
        let line = try server.waitForLine(prefix: "LISTENING ", timeout: 30)
        let file = certificates.folder.appendingPathComponent("rest-tls.yaml")
        try """
            name: tls-python-rest
            workload: rest
            target: https://127.0.0.1:\(line.dropFirst("LISTENING ".count))/api
            clients: 8
            connect_rate: 1000
            duration: 2s
            drain: 2s
            tls:
              ca_file: \(certificates.caFile)
              server_name: localhost
            rest:
              interval: 100ms
              staleness: {header: X-Changed-At}
              resources: [{path: /items}, {path: /users/7}]

            """.write(to: file, atomically: true, encoding: .utf8)
        let s = try ScenarioLoader.load(path: file.path)
        #expect(s.tls?.caFile == certificates.caFile && s.tls?.serverName == "localhost")
        let o = try run(s)
        try RestPollingTests().expectPollingFigures(o, clients: 8)
        Self.expectHandshakes(o, atLeast: 8)
        #expect(o.summary.counters["tls_handshakes"] == 8)
    }

    @Test func restClientsOverHttpsThroughNginxCountEvery200And304() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        var configuration = RestServer.Configuration()
        configuration.changeRate = 4
        let upstream = try PlainReferenceServer(.rest, rest: configuration)
        defer { upstream.stop() }
        let nginx = try NginxTLSProxy(upstreamPort: upstream.port, certificates: certificates)
        defer { nginx.stop() }
        let s = restScenario("tls-nginx-rest", target: .http(url: Self.secure(nginx.port, "/api")), paths: ["/items", "/users/7"])
        let o = try run(Self.overTLS(s, ca: certificates.caFile))
        try RestPollingTests().expectPollingFigures(o, clients: 8)
        // Keep-alive through nginx: one handshake per client.
        Self.expectHandshakes(o, atLeast: 8)
        #expect(o.summary.counters["tls_handshakes"] == 8)
        let stats = try #require(upstream.rest?.statisticsSnapshot())
        #expect(UInt64(stats.ok) == o.summary.rest?.byStatus["200"] && UInt64(stats.notModified) == o.summary.rest?.byStatus["304"])
    }

    /// Session tickets from nginx: after a storm every client reconnects offering its last
    /// session (resume_ratio 1), and nginx resumes them.
    @Test func reconnectsThroughNginxResumeTheirTLSSessionsWithTickets() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let upstream = try PlainReferenceServer(.chat)
        defer { upstream.stop() }
        let nginx = try NginxTLSProxy(upstreamPort: upstream.port, certificates: certificates)
        defer { nginx.stop() }
        var s = chatScenario(name: "tls-nginx-resume", target: .webSocket(url: Self.secure(nginx.port, "/chat")), clients: 10, duration: 2, rate: 20)
        s.reconnect = .delays([0, 0.2, 0.5])
        s.whileDisconnected = .queue
        s.drainSeconds = 2
        s.events = [ScenarioEvent(atSeconds: 0.5, kind: .storm(fraction: 1, mode: .close))]
        let o = try run(Self.overTLS(s, ca: certificates.caFile, tickets: true))
        #expect(o.exitCode == 0)
        #expect(o.summary.storms.first?.recovered == 10)
        #expect(o.summary.counters["reconnected"] == 10)
        // Messages due while a client reconnects wait for it; only one in flight at the close
        // can be lost (counted as such).
        let m = o.summary.messages
        #expect(m.accountingClosed && m.sent > 0 && m.failed == 0)
        #expect(m.delivered + (m.lostByReason["connection_closed"] ?? 0) == m.sent, "\(m)")
        #expect(o.summary.errorsTotal == 0, "\(o.summary.errors.filter { $0.value > 0 })")
        Self.expectHandshakes(o, atLeast: 20)
        #expect(o.summary.counters["tls_handshakes"] == 20)
        #expect(o.summary.counters["tls_resumed"] == 10, "\(String(describing: o.summary.tls))")
        #expect(o.summary.tls?.resumed == 10)
    }
}
