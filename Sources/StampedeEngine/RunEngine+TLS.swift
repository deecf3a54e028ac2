import Foundation
import StampedeLoop
import StampedeScenario
import StampedeWorkloads

// The run's TLS: one client context for every loop (the scenario's `tls:` block), made before
// the loops start so a bad certificate file stops the run before any traffic.
extension RunEngine {
    /// The clients' TLS, or nil for plain TCP. `embeddedCertificatePEM` is the embedded target's
    /// throw-away certificate, trusted in place of a CA file.
    func makeClientTLS(embeddedCertificatePEM: String?) throws(RunSetupError) -> ClientTLS? {
        guard let spec = scenario.tls else { return nil }
        var c = TLSClientConfiguration()
        c.verify = spec.verify
        c.caFile = spec.caFile
        if spec.caFile == nil { c.trustedCertificatePEM = embeddedCertificatePEM }
        c.serverName = spec.serverName ?? scenario.targetHost
        c.certificateFile = spec.clientCertificate
        c.keyFile = spec.clientKey
        c.minVersion = spec.minVersion == .tls13 ? .tls13 : .tls12
        c.alpn = spec.alpn
        c.sessionTickets = spec.sessionResumption == .tickets
        do {
            return ClientTLS(context: try TLSContext(client: c), sessionTickets: c.sessionTickets, resumeRatio: spec.resumeRatio)
        } catch {
            throw RunSetupError("tls: \(error.description)")
        }
    }
}

extension Scenario {
    /// The host the clients name (SNI and the certificate check): the URL's, or the embedded
    /// target's address.
    var targetHost: String {
        switch target {
        case .embedded: "127.0.0.1"
        case .webSocket(let url), .http(let url): url.host
        }
    }
}

// The embedded target over TLS (`target: embedded` with a `tls:` block): a throw-away
// certificate made at start, served in this process or handed to the child `stampede serve`
// as files in a private temporary folder, removed when the run ends.
extension RunEngine {
    /// The embedded target's certificate when the scenario asks for TLS (nil otherwise); the
    /// clients trust it (`embeddedCertificatePEM`).
    func makeEmbeddedCertificate() throws(RunSetupError) -> SelfSignedCertificate? {
        guard scenario.tls != nil else { return nil }
        do {
            let certificate = try SelfSignedCertificate()
            embeddedCertificatePEM = certificate.certificatePEM
            embeddedCertificate = certificate
            return certificate
        } catch {
            throw RunSetupError("cannot make the embedded target's TLS certificate: \(error)")
        }
    }

    /// The embedded certificate and key written for a child target (the key readable by this
    /// user only), or nil without TLS.
    func embeddedCertificateFiles() throws(RunSetupError) -> (certificate: String, key: String)? {
        guard let certificate = embeddedCertificate else { return nil }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stampede-tls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            let cert = folder.appendingPathComponent("embedded.pem"), key = folder.appendingPathComponent("embedded.key")
            try Data(certificate.certificatePEM.utf8).write(to: cert)
            guard FileManager.default.createFile(atPath: key.path, contents: Data(certificate.privateKeyPEM.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw RunSetupError("cannot write \(key.path)")
            }
            embeddedCertificateFolder = folder
            return (cert.path, key.path)
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw RunSetupError("cannot write the embedded target's TLS certificate: \(error)")
        }
    }
}
