import Foundation
import Testing
@testable import StampedeLoop

/// The in-process self-signed certificate: what OpenSSL's own tool reads in it, and a loop
/// client that trusts it reaching a loop server that serves it, by address and by name.
@Suite(.serialized) struct SelfSignedCertificateTests {
    static let timeout: UInt64 = 10_000_000_000

    /// A folder holding `certificate.pem` with the certificate's PEM.
    static func writeCertificate(_ certificate: SelfSignedCertificate) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stampede-selfsigned-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try certificate.certificatePEM.write(to: folder.appendingPathComponent("certificate.pem"), atomically: true, encoding: .utf8)
        return folder
    }

    @Test func opensslReadsTheNamesAddressesAndExtensions() throws {
        let certificate = try SelfSignedCertificate(commonName: "stampede.test", dnsNames: ["localhost", "stampede.test"],
                                                    ipAddresses: ["127.0.0.1", "::1"], validDays: 2)
        #expect(certificate.certificatePEM.hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(certificate.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let folder = try Self.writeCertificate(certificate)
        defer { try? FileManager.default.removeItem(at: folder) }
        let p = try OpenSSLProcess(["x509", "-noout", "-text", "-in", "certificate.pem"], in: folder)
        defer { p.stop() }
        let text = try #require(p.wait(for: "Signature Value"))
        #expect(text.contains("DNS:localhost, DNS:stampede.test, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1"))
        #expect(text.contains("Subject: CN = stampede.test"))
        #expect(text.contains("CA:FALSE"))
        #expect(text.contains("TLS Web Server Authentication"))
        #expect(text.contains("ecdsa-with-SHA256"))
        #expect(text.contains("prime256v1") || text.contains("P-256"))
        // Its own trust anchor, under the strict checks Python's default context turns on.
        let v = try OpenSSLProcess(["verify", "-x509_strict", "-purpose", "sslserver", "-CAfile", "certificate.pem", "certificate.pem"], in: folder)
        defer { v.stop() }
        #expect(v.wait(for: "certificate.pem: OK") != nil)
    }

    @Test func badNamesAddressesAndDurationsAreRefused() {
        #expect(throws: TLSSetupError.self) { try SelfSignedCertificate(dnsNames: ["a,IP:1.2.3.4"]) }
        #expect(throws: TLSSetupError.self) { try SelfSignedCertificate(ipAddresses: ["localhost"]) }
        #expect(throws: TLSSetupError.self) { try SelfSignedCertificate(validDays: 0) }
        #expect(throws: TLSSetupError.self) { try SelfSignedCertificate(dnsNames: [], ipAddresses: []) }
    }

    @Test func aKeyNotMatchingTheCertificateIsRefused() throws {
        let a = try SelfSignedCertificate()
        let b = try SelfSignedCertificate()
        #expect(throws: TLSSetupError.self) { try TLSContext(serverCertificatePEM: a.certificatePEM, privateKeyPEM: b.privateKeyPEM) }
        #expect(throws: TLSSetupError.self) { try TLSContext(serverCertificatePEM: "not a certificate", privateKeyPEM: a.privateKeyPEM) }
        #expect(throws: TLSSetupError.self) { try TLSContext(serverCertificatePEM: a.certificatePEM, privateKeyPEM: "") }
    }

    /// The error a loop client trusting `certificate` gets connecting to a loop server serving
    /// it, checking `serverName`.
    static func handshake(_ certificate: SelfSignedCertificate, caFile: String, serverName: String) throws -> (Int32?, TLSContext) {
        let serverContext = try TLSContext(serverCertificatePEM: certificate.certificatePEM, privateKeyPEM: certificate.privateKeyPEM)
        let server = try TestLoop(name: "selfsigned-server")
        defer { server.shutdown() }
        let (_, port) = try server.sync { $0.listen(on: loopback, tls: serverContext) }.get()
        let context = try TLSContext(clientCAFile: caFile, serverName: serverName)
        let client = try TestLoop(name: "selfsigned-client")
        defer { client.shutdown() }
        let id = try client.sync { $0.connect(to: .ipv4(0x7F00_0001, port: port), timeoutNs: Self.timeout, tls: context) }.get()
        client.handler.wait("handshake") { $0.connectError(id) != nil }
        return (client.handler.connectError(id), context)
    }

    @Test(arguments: ["127.0.0.1", "localhost"])
    func aLoopClientTrustingTheCertificateHandshakesWithALoopServerServingIt(serverName: String) throws {
        let certificate = try SelfSignedCertificate()
        let folder = try Self.writeCertificate(certificate)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (error, context) = try Self.handshake(certificate, caFile: folder.appendingPathComponent("certificate.pem").path, serverName: serverName)
        #expect(error == 0)
        #expect(context.handshakeCounts.completed == 1)
    }

    @Test func aNameNotInTheCertificateFailsVerification() throws {
        let certificate = try SelfSignedCertificate()
        let folder = try Self.writeCertificate(certificate)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (error, context) = try Self.handshake(certificate, caFile: folder.appendingPathComponent("certificate.pem").path, serverName: "other.example")
        #expect(error.flatMap(TLSFailure.init(connectError:)) == .verifyFailed)
        #expect(context.handshakeCounts.lastFailureReason.contains("mismatch"))
    }
}
