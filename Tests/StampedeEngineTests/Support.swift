import Foundation
import Testing
import StampedeLoop
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The repository root (the folder holding Package.swift), found from this file's path.
let repositoryRoot: URL = {
    var url = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent()
    while url.path != "/" {
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        url = url.deletingLastPathComponent()
    }
    fatalError("Package.swift not found above \(#filePath)")
}()

/// The built `stampede` executable: it sits next to the test bundle in the build folder.
let stampedeBinary: URL = {
    let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    var dir = exe.deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = dir.appendingPathComponent("stampede")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        dir = dir.deletingLastPathComponent()
    }
    return repositoryRoot.appendingPathComponent(".build/debug/stampede")
}()

struct PeerError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Creates (once) the named Python venv of Tests/peers and returns its python.
func peerPython(_ name: String) throws -> String {
    let result = try runProcess("/bin/bash", [repositoryRoot.appendingPathComponent("Tests/peers/ensure-venv.sh").path, name], timeout: 600)
    guard result.status == 0, let last = result.stdout.split(separator: "\n").last else {
        throw PeerError("ensure-venv.sh \(name) failed (\(result.status)): \(result.stderr.suffix(2000))")
    }
    return String(last)
}

struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Children inherit the spawning thread's signal mask, and the test runner's threads may block
/// SIGTERM and SIGINT: unblock them so peers can shut down cleanly (and print their reports)
/// when stopped, instead of waiting for SIGKILL.
func unblockTerminationSignals() {
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGTERM)
    sigaddset(&set, SIGINT)
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
}

/// Runs `stampede ARGUMENTS` in a mount namespace of its own where `file` is bind-mounted over
/// `systemPath` (/etc/hosts, /etc/nsswitch.conf), so the names a test uses resolve only as it
/// says and never off the machine. Cancels the test, naming `what`, where this machine gives no
/// private mount namespace.
func runStampede(with file: URL, over systemPath: String, _ arguments: [String], what: String, timeout: Double = 60) throws -> ProcessResult {
    let script = "mount --bind \"$1\" \(systemPath) || exit 77; shift; exec \"$@\""
    let r = try runProcess("/usr/bin/unshare", ["--mount", "/bin/sh", "-c", script, "sh", file.path, stampedeBinary.path] + arguments,
                           timeout: timeout)
    if r.status == 77 || r.stderr.contains("unshare:") {
        print("\(what) skipped: no private mount namespace: \(r.stderr)")
        try Test.cancel(Comment(rawValue: "no private mount namespace: \(r.stderr)"))
    }
    return r
}

/// Runs a command to completion, killing it after `timeout` seconds.
func runProcess(_ executable: String, _ arguments: [String], timeout: Double, cwd: URL? = nil) throws -> ProcessResult {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = arguments
    if let cwd { p.currentDirectoryURL = cwd }
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    unblockTerminationSignals()
    try p.run()
    let collected = CollectedOutput()
    let readers = DispatchGroup()
    for (index, pipe) in [out, err].enumerated() {
        readers.enter()
        Thread.detachNewThread {
            let d = Data(PipeRead.toEnd(pipe.fileHandleForReading.fileDescriptor))
            collected.set(index, d)
            readers.leave()
        }
    }
    let deadline = Date().addingTimeInterval(timeout)
    while p.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
    if p.isRunning { p.terminate(); Thread.sleep(forTimeInterval: 0.5); if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
    p.waitUntilExit()
    readers.wait()
    return ProcessResult(status: p.terminationStatus,
                         stdout: String(decoding: collected.get(0), as: UTF8.self),
                         stderr: String(decoding: collected.get(1), as: UTF8.self))
}

final class CollectedOutput: Sendable {
    let data = Mutex<[Data]>([Data(), Data()])
    func set(_ i: Int, _ d: Data) { data.withLock { $0[i] = d } }
    func get(_ i: Int) -> Data { data.withLock { $0[i] } }
}

/// A long-running peer process (a Python server, a fuzzing server) that is always stopped.
final class BackgroundProcess: @unchecked Sendable {
    let process = Process()
    let lines = Mutex<[String]>([])
    let errors = Mutex<String>("")
    /// Signalled when stdout reaches end of file (every line has been collected).
    let stdoutDone = DispatchSemaphore(value: 0)

    init(_ executable: String, _ arguments: [String], cwd: URL? = nil) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let cwd { process.currentDirectoryURL = cwd }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        unblockTerminationSignals()
        try process.run()
        Thread.detachNewThread { [self] in
            var buffer: [UInt8] = []
            while true {
                let d = PipeRead.next(out.fileHandleForReading.fileDescriptor)
                if d.isEmpty { break }
                buffer.append(contentsOf: d)
                while let nl = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...nl)
                    lines.withLock { $0.append(line) }
                }
            }
            stdoutDone.signal()
        }
        Thread.detachNewThread { [self] in
            while true {
                let d = PipeRead.next(err.fileHandleForReading.fileDescriptor)
                if d.isEmpty { break }
                errors.withLock { $0 += String(decoding: d, as: UTF8.self); if $0.count > 20000 { $0 = String($0.suffix(10000)) } }
            }
        }
    }

    /// Waits for a stdout line starting with `prefix` and returns it.
    func waitForLine(prefix: String, timeout: Double) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let l = lines.withLock({ $0.first { $0.hasPrefix(prefix) } }) { return l }
            if !process.isRunning { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw PeerError("no '\(prefix)' line from \(process.executableURL?.lastPathComponent ?? "?"); stderr: \(errors.withLock { $0 }.suffix(2000))")
    }

    /// Waits for the process to exit by itself.
    func wait(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        return process.isRunning ? nil : process.terminationStatus
    }

    func stop() {
        if process.isRunning {
            // SIGTERM: kosoku ignores SIGINT; every peer here exits cleanly on SIGTERM.
            process.terminate()
            let deadline = Date().addingTimeInterval(3)
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        // Let the reader collect what the process printed last (its final report line).
        if !outputCollected { outputCollected = stdoutDone.wait(timeout: .now() + 3) == .success }
    }
    var outputCollected = false

    deinit { stop() }
}

/// A port nobody listens on (bound then released).
func unusedPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// A fresh temporary folder for one test's results, inside this test process's own folder.
func temporaryFolder(_ name: String) -> URL {
    let url = testProcessFolder.appendingPathComponent("\(name)-\(UUID().uuidString.prefix(8))")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// `/tmp/stampede-tests-pid<PID>`, made once per test process. Nothing can delete it when the
/// process ends (Swift Testing has no process-wide teardown), so each new process first removes
/// the folders of test processes that have ended: results never pile up beyond one run's.
let testProcessFolder: URL = {
    let tmp = FileManager.default.temporaryDirectory
    let prefix = "stampede-tests-pid"
    for name in (try? FileManager.default.contentsOfDirectory(atPath: tmp.path)) ?? [] where name.hasPrefix(prefix) {
        // kill(pid, 0) fails with ESRCH once the process is gone.
        guard let pid = Int32(name.dropFirst(prefix.count)), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
        try? FileManager.default.removeItem(at: tmp.appendingPathComponent(name))
    }
    let url = tmp.appendingPathComponent("\(prefix)\(getpid())")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}()

/// A blocking TCP socket connected to 127.0.0.1:`port`, with 100 ms receive (and optionally
/// send) timeouts so a test never blocks for long; `receiveBuffer` shrinks the kernel's buffer,
/// for a client that should fill up quickly. Nil when the connect fails.
func connectLoopback(port: UInt16, receiveBuffer: Int32? = nil, sendTimeout: Bool = false) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = port.bigEndian
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard r == 0 else { close(fd); return nil }
    var tv = timeval(tv_sec: 0, tv_usec: 100_000)
    if sendTimeout { setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size)) }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    return fd
}
