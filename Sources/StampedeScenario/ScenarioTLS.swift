import Foundation
import Yams

/// The scenario's `tls:` block: how clients speak TLS to a `wss://` or `https://` target (or to
/// the embedded target, which then serves TLS with a throw-away self-signed certificate).
public struct TLSSpec: Sendable, Equatable {
    public enum SessionResumption: String, Sendable, CaseIterable { case off, tickets }
    public enum Version: String, Sendable, CaseIterable { case tls12 = "1.2", tls13 = "1.3" }
    /// Trusted CAs (a PEM file; a relative path is from the current folder); nil: the system
    /// store (the embedded target: its own certificate).
    public var caFile: String? = nil
    /// false: any certificate is accepted (no chain or name check).
    public var verify = true
    /// Sent as SNI and checked against the certificate; nil: the target URL's host.
    public var serverName: String? = nil
    /// Mutual TLS: the client certificate chain and its key (PEM files).
    public var clientCertificate: String? = nil
    public var clientKey: String? = nil
    public var minVersion: Version = .tls12
    /// ALPN protocols offered, in order of preference (none by default).
    public var alpn: [String] = []
    public var sessionResumption: SessionResumption = .off
    /// With tickets: the share of connections (after a client's first) that offer the client's
    /// last session; the rest make a full handshake, as new browsers would.
    public var resumeRatio = 1.0
    public init() {}
}

extension Reader {
    static let tlsKeys = ["ca_file", "verify", "server_name", "client_cert", "client_key", "min_version", "alpn",
                          "session_resumption", "resume_ratio"]

    /// Reads the `tls:` block; files are checked to be readable now, so a bad path stops the run
    /// before it starts.
    func tlsSpec(_ node: Node, target: Target) throws(ScenarioError) -> TLSSpec {
        switch target {
        case .webSocket(let url) where !url.secure, .http(let url) where !url.secure:
            throw error(at: node, field: "tls", "only for wss:// and https:// targets (or 'embedded'); the target is \(target): write \(url.secureSchemeHint)")
        default: break
        }
        var spec = TLSSpec()
        if isNull(node) { return spec }
        let m = try mappingNode(node, field: "tls", expecting: "a mapping like {ca_file: certs/ca.pem, session_resumption: tickets}")
        let f = try Fields(m, path: "tls", known: Self.tlsKeys, reader: self)
        if let n = f["verify"] { spec.verify = try boolean(n, field: "tls.verify") }
        if let n = f["ca_file"] {
            guard spec.verify else { throw error(at: n, field: "tls.ca_file", "not used with 'verify: false' (nothing is checked): remove one of them") }
            spec.caFile = try readableFile(n, field: "tls.ca_file", expecting: "a PEM file of trusted CA certificates")
        }
        if let n = f["server_name"] {
            let name = try string(n, field: "tls.server_name", expecting: "a host name")
            if !isIPv6Literal(name), let problem = hostNameProblem(name) {
                throw error(at: n, field: "tls.server_name", problem)
            }
            spec.serverName = name
        }
        if let n = f["client_cert"] {
            spec.clientCertificate = try readableFile(n, field: "tls.client_cert", expecting: "a PEM certificate (chain) file")
        }
        if let n = f["client_key"] {
            guard spec.clientCertificate != nil else {
                throw error(at: n, field: "tls.client_key", "needs 'client_cert' (the certificate this key belongs to)")
            }
            spec.clientKey = try readableFile(n, field: "tls.client_key", expecting: "a PEM private key file")
        }
        if let n = f["min_version"] {
            // `1.2` unquoted is a YAML number: its text is what counts.
            let text = try string(n, field: "tls.min_version", expecting: "\"1.2\" or \"1.3\"")
            guard let v = TLSSpec.Version(rawValue: text.hasPrefix("TLSv") ? String(text.dropFirst(4)) : text) else {
                throw error(at: n, field: "tls.min_version", "expected \"1.2\" or \"1.3\", got \(describe(n))")
            }
            spec.minVersion = v
        }
        if let n = f["alpn"] { spec.alpn = try alpnList(n) }
        if let n = f["session_resumption"] { spec.sessionResumption = try choice(n, field: "tls.session_resumption") }
        if let n = f["resume_ratio"] {
            guard spec.sessionResumption == .tickets else {
                throw error(at: n, field: "tls.resume_ratio", "only with 'session_resumption: tickets'")
            }
            spec.resumeRatio = try number(n, field: "tls.resume_ratio", atLeast: 0, maximum: 1)
        }
        return spec
    }

    private func alpnList(_ node: Node) throws(ScenarioError) -> [String] {
        let items: [Node]
        switch node {
        case .sequence(let s): items = Array(s)
        case .scalar: items = [node]
        default: throw error(at: node, field: "tls.alpn", "expected a list of protocol names like [h2, http/1.1], got \(describe(node))")
        }
        var names: [String] = []
        for (i, item) in items.enumerated() {
            let name = try string(item, field: "tls.alpn[\(i)]", expecting: "a protocol name like http/1.1")
            guard (1...255).contains(name.utf8.count), name.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
                throw error(at: item, field: "tls.alpn[\(i)]", "expected 1 to 255 printable ASCII characters, got \(describe(item))")
            }
            names.append(name)
        }
        return names
    }

    /// A file path as given (relative paths from the current folder, as for `access_token: {file:}`),
    /// checked to be a readable file.
    private func readableFile(_ node: Node, field: String, expecting: String) throws(ScenarioError) -> String {
        let path = try string(node, field: field, expecting: expecting)
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), !isFolder.boolValue else {
            throw error(at: node, field: field, "no such file: \(path)\(path.hasPrefix("/") ? "" : " (in \(FileManager.default.currentDirectoryPath))")")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw error(at: node, field: field, "cannot read \(path) (permission denied)")
        }
        return path
    }
}
