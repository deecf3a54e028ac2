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
        try Self.makeClientTLS(scenario, embeddedCertificatePEM: embeddedCertificatePEM)
    }

    /// As above, for any scenario (a worker process makes its own from the coordinator's).
    static func makeClientTLS(_ scenario: Scenario, embeddedCertificatePEM: String?) throws(RunSetupError) -> ClientTLS? {
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
// certificate made at start, by this process for the target on its own loop, or by the child
// `stampede serve --tls-self-signed`, which names the file holding it; the clients trust it.
extension RunEngine {
    /// The in-process target's TLS context when the scenario asks for TLS (nil otherwise).
    func makeEmbeddedServerTLS() throws(RunSetupError) -> TLSContext? {
        guard scenario.tls != nil else { return nil }
        do {
            let certificate = try SelfSignedCertificate()
            embeddedCertificatePEM = certificate.certificatePEM
            return try TLSContext(serverCertificatePEM: certificate.certificatePEM, privateKeyPEM: certificate.privateKeyPEM)
        } catch {
            throw RunSetupError("cannot start the embedded target over TLS: \(error)")
        }
    }

    /// Reads the certificate a child `serve --tls-self-signed` printed the path of.
    func trustChildCertificate(_ child: ChildTarget) throws(RunSetupError) {
        let marker = "clients trust it with "
        guard let line = child.waitForLine(prefix: "TLS: self-signed certificate", seconds: 5, interrupt: options.interrupt),
              let range = line.range(of: marker),
              let pem = try? String(contentsOfFile: String(line[range.upperBound...]), encoding: .utf8) else {
            throw RunSetupError("the target process did not say where its TLS certificate is: \(child.errorOutput.suffix(500))")
        }
        embeddedCertificatePEM = pem
    }
}
