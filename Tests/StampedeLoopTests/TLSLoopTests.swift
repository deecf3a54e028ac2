import Foundation
import Testing
@testable import StampedeLoop
import StampedeTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// TLS on the epoll loop against OpenSSL's own tools and against itself, and every bad case
/// ending as a classified failure (never a crash or a hang: every wait is bounded).
@Suite(.serialized) struct TLSLoopTests {
    static let localhost: UInt32 = 0x7F00_0001
    static let timeout: UInt64 = 10_000_000_000

    /// A loop serving TLS with `context`; its handler echoes input with an "echo:" prefix.
    static func echoServer(_ context: TLSContext) throws -> (TestLoop, ConnectionID, UInt16) {
        let server = try TestLoop({ h in
            h.onReceived = { id, bytes, loop in (Array("echo:".utf8) + bytes).withUnsafeBytes { loop.write(id, $0) } }
        }, name: "tls-server")
        let (listener, port) = try server.sync { $0.listen(on: loopback, tls: context) }.get()
        return (server, listener, port)
    }

    /// Connects `client` over TLS to the `s_server` that `server` runs (at the port its ACCEPT
    /// banner names) and waits until the handshake completed without error.
    static func connectHandshaken(_ client: TestLoop, to server: OpenSSLProcess, tls context: TLSContext) throws -> ConnectionID {
        let banner = try #require(server.wait(for: "ACCEPT 127.0.0.1:"))
        let port = try #require(UInt16(banner.split(separator: ":").last!.prefix { $0.isNumber }))
        let id = try client.sync { $0.connect(to: .ipv4(Self.localhost, port: port), timeoutNs: Self.timeout, tls: context) }.get()
        client.handler.wait("handshake") { $0.connectError(id) != nil }
        #expect(client.handler.connectError(id) == 0)
        return id
    }

    @Test func loopClientHandshakesWithOpenSSLServerAndExchangesData() throws {
        let certs = try TestCertificates()
        defer { certs.remove() }
        let s = try OpenSSLProcess(["s_server", "-accept", "127.0.0.1:0", "-cert", certs.certificateFile, "-key", certs.keyFile, "-rev", "-naccept", "1"], in: certs.folder)
        defer { s.stop() }
        let context = try TLSContext(clientCAFile: certs.caFile, serverName: "localhost")
        let client = try TestLoop(name: "tls-client")
        defer { client.shutdown() }
        let id = try Self.connectHandshaken(client, to: s, tls: context)
        client.write(id, Array("hello\n".utf8))
        // s_server -rev answers every line reversed.
        client.handler.wait("reversed line") { String(decoding: $0.received(on: id), as: UTF8.self).contains("olleh") }
        #expect(context.handshakeCounts.completed == 1)
    }

    /// A TLS 1.2 server renegotiates (s_server's `r` command sends HelloRequest) while the
    /// client writes: the client answers the renegotiation and every line still arrives, in
    /// order, with no EPROTO. Each line is written only after the server printed the one
    /// before, so the HelloRequest is read between two writes whatever the machine's load.
    @Test func aTLS12RenegotiationBetweenWritesCompletesAndLosesNoBytes() throws {
        let certs = try TestCertificates()
        defer { certs.remove() }
        let s = try OpenSSLProcess(["s_server", "-accept", "127.0.0.1:0", "-cert", certs.certificateFile, "-key", certs.keyFile,
                                    "-tls1_2", "-msg", "-naccept", "1"], in: certs.folder)
        defer { s.stop() }
        let context = try TLSContext(clientCAFile: certs.caFile, serverName: "localhost")
        let client = try TestLoop(name: "tls-client")
        defer { client.shutdown() }
        let id = try Self.connectHandshaken(client, to: s, tls: context)
        client.write(id, Array("line-0\n".utf8))
        s.wait(for: "line-0\n")
        s.send("r\n")
        s.wait(for: "SSL_do_handshake -> ")
        for n in 1...6 {
            client.write(id, Array("line-\(n)\n".utf8))
            s.wait(for: "line-\(n)\n")
        }
        // The renegotiation's ClientHello and both its Finished messages went by.
        func count(_ needle: String) -> Int { s.text.components(separatedBy: needle).count - 1 }
        let deadline = Date().addingTimeInterval(waitLimit)
        while count("ClientHello") < 2 || count("Finished") < 4, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        #expect(count("ClientHello") == 2 && count("Finished") == 4, "\(s.text)")
        #expect(!client.handler.events.contains { if case .closed(id, _) = $0 { true } else { false } })
        #expect(client.sync { $0.isAlive(id) })
    }

    @Test func loopServerHandshakesWithOpenSSLClient() throws {
        let certs = try TestCertificates()
        defer { certs.remove() }
        let context = try TLSContext(serverCertificateFile: certs.certificateFile, keyFile: certs.keyFile)
        let (server, _, port) = try Self.echoServer(context)
        defer { server.shutdown() }
        let c = try OpenSSLProcess(["s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", certs.caFile, "-verify_return_error",
                                    "-servername", "localhost", "-verify_hostname", "localhost", "-quiet"], in: certs.folder)
        defer { c.stop() }
        c.send("ping\n")
        #expect(c.wait(for: "echo:ping") != nil)
        #expect(context.handshakeCounts.completed == 1)
        #expect(context.failureCount == 0)
    }

    @Test func loopClientAndLoopServerExchangeLargeWritesBothWaysThroughBackpressure() throws {
        let certs = try TestCertificates()
        defer { certs.remove() }
        let serverContext = try TLSContext(serverCertificateFile: certs.certificateFile, keyFile: certs.keyFile)
        let clientContext = try TLSContext(clientCAFile: certs.caFile, serverName: "127.0.0.1")
        let server = try TestLoop(name: "tls-server")
        let client = try TestLoop(name: "tls-client")
        defer { client.shutdown(); server.shutdown() }
        let (listener, port) = try server.sync { $0.listen(on: loopback, tls: serverContext) }.get()
        let id = try client.sync { $0.connect(to: .ipv4(Self.localhost, port: port), timeoutNs: Self.timeout, tls: clientContext) }.get()
        client.handler.wait("handshake") { $0.connectError(id) != nil }
        #expect(client.handler.connectError(id) == 0)
        var accepted: ConnectionID? = nil
        server.handler.wait("accepted after the handshake") { h in
            for case .accepted(let a, let l) in h.events where l == listener { accepted = a; return true }
            return false
        }
        let serverID = try #require(accepted)

        let up = pattern(3 << 20, seed: 7), down = pattern(5 << 20, seed: 9)
        // Queued in one go, past the high-water mark: backed up until the TLS stream drains it.
        let backedUp = client.sync { loop in up.withUnsafeBytes { loop.write(id, $0) }; return loop.isBackedUp(id) }
        #expect(backedUp)
        server.write(serverID, down)
        server.handler.wait("upload") { $0.receivedCount(on: serverID) >= up.count }
        client.handler.wait("download") { $0.receivedCount(on: id) >= down.count }
        #expect(server.handler.received(on: serverID) == up)
        #expect(client.handler.received(on: id) == down)
        #expect(client.handler.events.contains(.writable(id)))

        // A clean close reaches the other side as the end of the stream (close_notify, then FIN).
        client.sync { $0.close(id) }
        server.handler.wait("end of stream") { $0.events.contains(.closed(serverID, .endOfFile)) }
        #expect(serverContext.failureCount == 0 && clientContext.failureCount == 0)
    }

    @Test func unknownCAIsAVerifyFailure() throws {
        let certs = try TestCertificates()
        defer { certs.remove() }
        let serverContext = try TLSContext(serverCertificateFile: certs.certificateFile, keyFile: certs.keyFile)
        let (server, _, port) = try Self.echoServer(serverContext)
        defer { server.shutdown() }
        let context = try TLSContext(clientCAFile: certs.otherCAFile, serverName: "localhost")
        let client = try TestLoop(name: "tls-client")
        defer { client.shutdown() }
        let id = try client.sync { $0.connect(to: .ipv4(Self.localhost, port: port), timeoutNs: Self.timeout, tls: context) }.get()
        client.handler.wait("handshake failure") { $0.connectError(id) != nil }
        #expect(client.handler.connectError(id).flatMap(TLSFailure.init(connectError:)) == .verifyFailed)
        #expect(context.handshakeCounts.failed[.verifyFailed] == 1)
        #expect(context.handshakeCounts.lastFailureReason.contains("local issuer"))
        // The server hears the client's alert and counts it; its handler never saw the connection.
        server.handler.wait("server counted") { _ in serverContext.failureCount == 1 }
        #expect(!server.handler.events.contains { if case .accepted = $0 { true } else { false } })
        #expect(client.sync { $0.liveSlots } == 0)
    }

    @Test func wrongHostNameIsAVerifyFailure() throws {
        let certs = try TestCertificates()
        defer { certs.remove() }
        let serverContext = try TLSContext(serverCertificateFile: certs.certificateFile, keyFile: certs.keyFile)
        let (server, _, port) = try Self.echoServer(serverContext)
        defer { server.shutdown() }
        let context = try TLSContext(clientCAFile: certs.caFile, serverName: "wrong.example")
        let client = try TestLoop(name: "tls-client")
        defer { client.shutdown() }
        let id = try client.sync { $0.connect(to: .ipv4(Self.localhost, port: port), timeoutNs: Self.timeout, tls: context) }.get()
        client.handler.wait("handshake failure") { $0.connectError(id) != nil }
        #expect(client.handler.connectError(id).flatMap(TLSFailure.init(connectError:)) == .verifyFailed)
        #expect(context.handshakeCounts.lastFailureReason.contains("mismatch"))
    }

    @Test func plainServerOnTheTLSPortIsAProtocolError() throws {
        // Answers anything with an HTTP error, as a plain web server would, then closes.
        let server = try TestLoop({ h in
            h.onReceived = { id, _, loop in
                Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8).withUnsafeBytes { loop.write(id, $0) }
                loop.closeAfterFlush(id)
            }
        }, name: "plain-server")
        defer { server.shutdown() }
        let (_, port) = try server.listen()
        let context = try TLSContext(verify: false)
        let client = try TestLoop(name: "tls-client")
        defer { client.shutdown() }
        let id = try client.sync { $0.connect(to: .ipv4(Self.localhost, port: port), timeoutNs: Self.timeout, tls: context) }.get()
        client.handler.wait("handshake failure") { $0.connectError(id) != nil }
        #expect(client.handler.connectError(id).flatMap(TLSFailure.init(connectError:)) == .protocolError)
        #expect(context.handshakeCounts.failed[.protocolError] == 1)
        // Counted, not fatal: the loop goes on connecting.
        let again = try client.sync { $0.connect(to: .ipv4(Self.localhost, port: port), timeoutNs: Self.timeout, tls: context) }.get()
        client.handler.wait("second failure") { $0.connectError(again) != nil }
        #expect(context.handshakeCounts.failed[.protocolError] == 2)
    }

    @Test func plainClientTalkingToATLSServerIsCountedOnTheServer() throws {
        let certs = try TestCertificates()
        defer { certs.remove() }
        let serverContext = try TLSContext(serverCertificateFile: certs.certificateFile, keyFile: certs.keyFile)
        let (server, _, port) = try Self.echoServer(serverContext)
        defer { server.shutdown() }
        let client = try TestLoop(name: "plain-client")
        defer { client.shutdown() }
        let id = try client.sync { $0.connect(to: .ipv4(Self.localhost, port: port), timeoutNs: Self.timeout) }.get()
        client.handler.wait("plain connect") { $0.connectError(id) != nil }
        client.write(id, Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        client.handler.wait("closed by the server") { h in h.events.contains { if case .closed(id, _) = $0 { true } else { false } } }
        server.handler.wait("server counted") { _ in serverContext.handshakeCounts.failed[.protocolError] == 1 }
        #expect(!server.handler.events.contains { if case .accepted = $0 { true } else { false } })
    }

    @Test func serverResettingMidHandshakeIsClosedDuringHandshake() throws {
        // Reads the ClientHello, then resets the connection.
        let server = try TestLoop({ h in h.onReceived = { id, _, loop in loop.close(id, reset: true) } }, name: "resetting-server")
        defer { server.shutdown() }
        let (_, port) = try server.listen()
        let context = try TLSContext(verify: false)
        let client = try TestLoop(name: "tls-client")
        defer { client.shutdown() }
        let id = try client.sync { $0.connect(to: .ipv4(Self.localhost, port: port), timeoutNs: Self.timeout, tls: context) }.get()
        client.handler.wait("handshake failure") { $0.connectError(id) != nil }
        #expect(client.handler.connectError(id).flatMap(TLSFailure.init(connectError:)) == .closedDuringHandshake)
        #expect(context.handshakeCounts.failed[.closedDuringHandshake] == 1)
        #expect(client.sync { $0.liveSlots } == 0)
    }

    @Test func stalledHandshakeTimesOut() throws {
        // A plain server that never answers: the handshake waits for its first flight in vain.
        let server = try TestLoop(name: "silent-server")
        defer { server.shutdown() }
        let (_, port) = try server.listen()
        let context = try TLSContext(verify: false)
        let client = try TestLoop(name: "tls-client")
        defer { client.shutdown() }
        let id = try client.sync { $0.connect(to: .ipv4(Self.localhost, port: port), timeoutNs: 300_000_000, tls: context) }.get()
        client.handler.wait("handshake timeout") { $0.connectError(id) != nil }
        #expect(client.handler.connectError(id) == ETIMEDOUT)
        #expect(context.handshakeCounts.timeouts == 1)
        #expect(client.sync { $0.liveSlots } == 0)
    }
}
