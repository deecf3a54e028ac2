import Foundation
import StampedeLoop
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
