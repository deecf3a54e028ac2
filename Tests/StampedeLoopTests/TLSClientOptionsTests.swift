import Foundation
import Testing
@testable import StampedeLoop
import StampedeTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The client options of the scenario's `tls:` block on the loop: session resumption with
/// tickets (per key), mutual TLS, the minimum version, ALPN, and the handshake's measurement.
@Suite(.serialized) struct TLSClientOptionsTests {
    static let localhost: UInt32 = 0x7F00_0001
    static let timeout: UInt64 = 10_000_000_000

    /// Connects, exchanges one line (so a TLS 1.3 ticket sent after the handshake is read), and
    /// closes; returns how the handshake went.
    static func roundTrip(_ client: TestLoop, port: UInt16, context: TLSContext, reuse: TLSSessionReuse) throws -> TLSHandshakeResult {
        let id = try client.sync { $0.connect(to: .ipv4(localhost, port: port), fromAddress: nil, timeoutNs: timeout, tls: context, tlsSession: reuse) }.get()
        client.handler.wait("handshake") { $0.connectError(id) != nil }
        #expect(client.handler.connectError(id) == 0)
        let result = try #require(client.sync { $0.tlsHandshake(of: id) })
        client.write(id, Array("ping\n".utf8))
        client.handler.wait("echo") { String(decoding: $0.received(on: id), as: UTF8.self).contains("echo:ping") }
        client.sync { $0.close(id) }
        return result
    }

    @Test func aClientResumesItsOwnKeptSessionOnlyWhenAskedTo() throws {
        let certs = try TestCertificates()
        defer { certs.remove() }
        let (server, _, port) = try TLSLoopTests.echoServer(try TLSContext(serverCertificateFile: certs.certificateFile, keyFile: certs.keyFile))
        defer { server.shutdown() }
        var configuration = TLSClientConfiguration()
        configuration.caFile = certs.caFile
        configuration.serverName = "localhost"
        configuration.sessionTickets = true
        let context = try TLSContext(client: configuration)
        let client = try TestLoop(name: "tls-client")
        defer { client.shutdown() }

        // Nothing kept yet: a full handshake, whose ticket is kept under key 3.
        let first = try Self.roundTrip(client, port: port, context: context, reuse: .resume(key: 3))
        #expect(!first.resumed)
        #expect(first.durationNs > 0)
        client.handler.wait("ticket kept") { _ in context.keptSessions == 1 }
        #expect(try Self.roundTrip(client, port: port, context: context, reuse: .resume(key: 3)).resumed)
        // Another key has nothing kept; `.keep` never offers the kept session.
        #expect(try !Self.roundTrip(client, port: port, context: context, reuse: .resume(key: 4)).resumed)
        #expect(try !Self.roundTrip(client, port: port, context: context, reuse: .keep(key: 3)).resumed)
        #expect(try !Self.roundTrip(client, port: port, context: context, reuse: .none).resumed)
        #expect(context.handshakeCounts.completed == 5)
        #expect(context.handshakeCounts.resumed == 1)
    }

    @Test func withoutTicketsNothingIsKeptOrResumed() throws {
        let certs = try TestCertificates()
        defer { certs.remove() }
        let (server, _, port) = try TLSLoopTests.echoServer(try TLSContext(serverCertificateFile: certs.certificateFile, keyFile: certs.keyFile))
        defer { server.shutdown() }
        let context = try TLSContext(clientCAFile: certs.caFile, serverName: "localhost")
        let client = try TestLoop(name: "tls-client")
        defer { client.shutdown() }
        #expect(try !Self.roundTrip(client, port: port, context: context, reuse: .resume(key: 1)).resumed)
        #expect(try !Self.roundTrip(client, port: port, context: context, reuse: .resume(key: 1)).resumed)
        #expect(context.keptSessions == 0)
    }

    @Test func mutualTLSPresentsTheClientCertificateTLS13MinimumAndALPN() throws {
        let certs = try TestCertificates()
        defer { certs.remove() }
        // s_server demands a client certificate signed by the CA, and speaks TLS 1.3 with ALPN.
        let s = try OpenSSLProcess(["s_server", "-accept", "127.0.0.1:0", "-cert", certs.certificateFile, "-key", certs.keyFile,
                                    "-Verify", "1", "-verify_return_error", "-CAfile", certs.caFile, "-alpn", "stampede/1,http/1.1",
                                    "-rev", "-naccept", "1"], in: certs.folder)
        defer { s.stop() }
        let banner = try #require(s.wait(for: "ACCEPT 127.0.0.1:"))
        let port = try #require(UInt16(banner.split(separator: ":").last!.prefix { $0.isNumber }))
        var configuration = TLSClientConfiguration()
        configuration.caFile = certs.caFile
        configuration.serverName = "localhost"
        configuration.certificateFile = certs.certificateFile
        configuration.keyFile = certs.keyFile
        configuration.minVersion = .tls13
        configuration.alpn = ["http/1.1"]
        let context = try TLSContext(client: configuration)
        let client = try TestLoop(name: "tls-client")
        defer { client.shutdown() }
        let id = try client.sync { $0.connect(to: .ipv4(Self.localhost, port: port), timeoutNs: Self.timeout, tls: context) }.get()
        client.handler.wait("handshake") { $0.connectError(id) != nil }
        #expect(client.handler.connectError(id) == 0)
        #expect(client.sync { $0.tlsALPNProtocol(of: id) } == "http/1.1")
        client.write(id, Array("hello\n".utf8))
        client.handler.wait("reversed line") { String(decoding: $0.received(on: id), as: UTF8.self).contains("olleh") }
        // s_server's log is collected in the background: wait for the line rather than read it once.
        let log = try #require(s.wait(for: "Protocol version: TLSv1.3"))
        #expect(log.contains("Stampede Test CA") || log.contains("CN = localhost") || log.contains("CN=localhost"))
    }

    @Test func unreadableClientFilesAndBadALPNAreSetupErrorsNamingTheFile() throws {
        var configuration = TLSClientConfiguration()
        configuration.certificateFile = "/nonexistent/client.pem"
        #expect(throws: TLSSetupError.self) { try TLSContext(client: configuration) }
        do { _ = try TLSContext(client: configuration) } catch { #expect(error.description.contains("/nonexistent/client.pem")) }
        configuration = TLSClientConfiguration()
        configuration.alpn = [""]
        #expect(throws: TLSSetupError.self) { try TLSContext(client: configuration) }
        configuration = TLSClientConfiguration()
        configuration.trustedCertificatePEM = "not a certificate"
        #expect(throws: TLSSetupError.self) { try TLSContext(client: configuration) }
    }
}
