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
