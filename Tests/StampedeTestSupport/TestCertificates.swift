import Foundation

/// Certificates made for one test with the `openssl` command in a temporary folder: a CA, a
/// leaf for localhost and 127.0.0.1 signed by it (server and client use: mutual TLS too), and a
/// second CA nobody signed with. Shared by the loop's TLS tests and the interop tests (nginx,
/// Python servers), so one recipe exists.
public struct TestCertificates: Sendable {
    public let folder: URL
    /// The CA that signed the leaf (PEM): what a client trusts.
    public var caFile: String { folder.appendingPathComponent("ca.pem").path }
    /// A CA that signed nothing here: trusting it alone must fail verification.
    public var otherCAFile: String { folder.appendingPathComponent("other-ca.pem").path }
    /// The leaf for DNS:localhost and IP:127.0.0.1 (PEM): what a server presents (or a client, for mutual TLS).
    public var certificateFile: String { folder.appendingPathComponent("leaf.pem").path }
    public var keyFile: String { folder.appendingPathComponent("leaf.key").path }

    public init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("stampede-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\n"
            .write(to: folder.appendingPathComponent("leaf.ext"), atomically: true, encoding: .utf8)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let ca = ["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]
        try run(["req", "-x509"] + ec + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Stampede Test CA"] + ca)
        try run(["req", "-x509"] + ec + ["-keyout", "other-ca.key", "-out", "other-ca.pem", "-days", "2", "-subj", "/CN=Unrelated CA"] + ca)
        try run(["req"] + ec + ["-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=localhost"])
        try run(["x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", "leaf.pem", "-days", "2", "-extfile", "leaf.ext"])
    }

    public func remove() { try? FileManager.default.removeItem(at: folder) }

    private func run(_ arguments: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        p.arguments = ["20", "openssl"] + arguments
        p.currentDirectoryURL = folder
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw CertificateError(description: "openssl \(arguments.joined(separator: " ")) exited with \(p.terminationStatus)")
        }
    }
}

/// An `openssl` step that failed while making test certificates.
public struct CertificateError: Error, CustomStringConvertible {
    public var description: String
}
