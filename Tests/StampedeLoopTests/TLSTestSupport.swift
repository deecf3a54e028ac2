import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import StampedeLoop
import StampedeTestSupport

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
        try process.run()
        // The thread holds the pipe, so its descriptor stays open until end of file.
        Thread.detachNewThread { [weak self, output] in
            while true {
                let d = PipeRead.next(output.fileHandleForReading.fileDescriptor)
                if d.isEmpty { return }
                self?.collected.withLock { $0.append(contentsOf: d) }
            }
        }
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
