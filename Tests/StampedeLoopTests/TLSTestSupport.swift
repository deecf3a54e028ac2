import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import StampedeLoop

/// Certificates made for one test with the `openssl` command in a temporary folder: a CA, a
/// leaf for localhost and 127.0.0.1 signed by it, and a second CA nobody signed with.
struct TestCertificates {
    let folder: URL
    var caFile: String { folder.appendingPathComponent("ca.pem").path }
    var otherCAFile: String { folder.appendingPathComponent("other-ca.pem").path }
    var certificateFile: String { folder.appendingPathComponent("leaf.pem").path }
    var keyFile: String { folder.appendingPathComponent("leaf.key").path }

    init() throws {
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

    func remove() { try? FileManager.default.removeItem(at: folder) }

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
            throw TLSSetupError(description: "openssl \(arguments.joined(separator: " ")) exited with \(p.terminationStatus)")
        }
    }
}

/// An `openssl s_server` or `s_client` run by a test, killed (SIGKILL: the test process may
/// hand its children a blocked SIGTERM) by `stop()`.
final class OpenSSLProcess: @unchecked Sendable {
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let collected = Mutex<[UInt8]>([])

    init(_ arguments: [String], in folder: URL) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = folder
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        output.fileHandleForReading.readabilityHandler = { [weak self] h in
            let d = h.availableData
            self?.collected.withLock { $0.append(contentsOf: d) }
        }
        try process.run()
    }

    var text: String { String(decoding: collected.withLock { $0 }, as: UTF8.self) }

    /// Waits (at most `waitLimit`) until the output holds `needle`; the output then.
    @discardableResult
    func wait(for needle: String, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        let deadline = Date().addingTimeInterval(waitLimit)
        while Date() < deadline {
            let t = text
            if t.contains(needle) { return t }
            Thread.sleep(forTimeInterval: 0.02)
        }
        Issue.record("openssl never printed \(needle.debugDescription); it printed: \(text)", sourceLocation: sourceLocation)
        return nil
    }

    func send(_ line: String) { input.fileHandleForWriting.write(Data(line.utf8)) }

    func stop() {
        try? input.fileHandleForWriting.close()
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        output.fileHandleForReading.readabilityHandler = nil
    }
}

extension RecordingHandler {
    /// The error the connect of `id` completed with, once it did.
    func connectError(_ id: ConnectionID) -> Int32? {
        for case .connected(let c, let e) in events where c == id { return e }
        return nil
    }
}

extension TLSContext {
    /// Failures of every class counted so far.
    var failureCount: Int { handshakeCounts.failed.values.reduce(0, +) }
}
