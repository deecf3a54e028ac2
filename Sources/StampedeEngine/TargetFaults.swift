import CStampedeLinux
import Foundation
import StampedeLoop
import StampedeScenario
import StampedeServers
import Synchronization

extension TargetFault {
    /// The scenario's `server` event as the reference target's fault.
    init(_ fault: ServerFault) {
        switch fault {
        case .drop(let reset): self = .drop(reset: reset)
        case .reject(let seconds): self = .reject(seconds: seconds)
        case .stall(let seconds): self = .stall(seconds: seconds)
        case .delay(let us): self = .delay(microseconds: us)
        }
    }
}

extension RunEngine {
    /// Applies a `server` event: on the embedded target directly, or through the admin endpoint
    /// of a `stampede serve` target. Returns why it could not be applied, or nil.
    func applyServerFault(_ fault: ServerFault) -> String? {
        if let admin = childAdmin { return AdminClient.post(admin, path: AdminClient.path(for: fault)) }
        if scenario.target != .embedded {
            guard let admin = scenario.targetAdmin else { return "no admin endpoint (target_admin) to send the fault to" }
            return AdminClient.post(admin, path: AdminClient.path(for: fault))
        }
        guard let loop = serverLoop ?? options.population?.sharedTarget?.serverLoop, let server = embeddedServer else { return "the embedded target is not running" }
        let f = TargetFault(fault)
        loop.execute { _ in server.apply(f) }
        return nil
    }
}

/// The few lines of HTTP/1.1 it takes to flip the fault switch of `stampede serve --admin-port`.
/// Blocking, with a short timeout: it runs once per event, on the engine's thread.
enum AdminClient {
    static func path(for fault: ServerFault) -> String {
        switch fault {
        case .drop(let reset): "/fault/drop?mode=\(reset ? "reset" : "close")"
        case .reject(let seconds): "/fault/reject?seconds=\(seconds)"
        case .stall(let seconds): "/fault/stall?seconds=\(seconds)"
        case .delay(let us): "/fault/delay?us=\(us)"
        }
    }

    /// POSTs to `path`; nil on a 2xx answer, else what went wrong.
    static func post(_ admin: AdminEndpoint, path: String, timeoutSeconds: Int = 3) -> String? {
        guard let address = SocketAddress(host: admin.host, port: admin.port), address.isLoopback else {
            return "admin endpoint \(admin) is not a loopback address"
        }
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return "socket: \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        // Blocking with timeouts: a stalled or hung target must not hang the run.
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let connected = address.connectBlocking(fd)
        guard connected == 0 else { return "cannot reach the admin endpoint \(admin): \(String(cString: strerror(errno)))" }
        let request = "POST \(path) HTTP/1.1\r\nHost: \(admin.host):\(admin.port)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        let sent = request.utf8CString.withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL)) }
        guard sent > 0 else { return "cannot send to the admin endpoint \(admin): \(String(cString: strerror(errno)))" }
        var response = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while response.count < 64 * 1024 {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            response.append(contentsOf: chunk[0..<n])
        }
        let text = String(decoding: response, as: UTF8.self)
        let statusLine = text.prefix { $0 != "\r" && $0 != "\n" }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else {
            return response.isEmpty ? "no answer from the admin endpoint \(admin)" : "unreadable answer from the admin endpoint: \(statusLine)"
        }
        if (200..<300).contains(status) { return nil }
        let body = text.components(separatedBy: "\r\n\r\n").dropFirst().joined().trimmingCharacters(in: .whitespacesAndNewlines)
        return "the admin endpoint answered \(status): \(body.prefix(200))"
    }
}

/// The reference target as `stampede serve` in a child process (when both ends of every
/// connection do not fit in this one).
final class ChildTarget: @unchecked Sendable {
    let process = Process()
    let lines = Mutex<[String]>([])
    let errors = Mutex<String>("")

    init(executable: String, arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        Thread.detachNewThread { [self] in
            var buffer: [UInt8] = []
            while true {
                let chunk = PipeRead.next(out.fileHandleForReading.fileDescriptor)
                if chunk.isEmpty { break }
                buffer.append(contentsOf: chunk)
                while let nl = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...nl)
                    self.lines.withLock { $0.append(line) }
                }
            }
        }
        Thread.detachNewThread { [self] in
            while true {
                let chunk = PipeRead.next(err.fileHandleForReading.fileDescriptor)
                if chunk.isEmpty { break }
                self.errors.withLock { $0 += String(decoding: chunk, as: UTF8.self); if $0.count > 8192 { $0 = String($0.suffix(4096)) } }
            }
        }
    }

    var pid: Int32 { process.processIdentifier }
    var errorOutput: String { errors.withLock { $0 } }

    /// The first line of the child's output that starts with `prefix`, waiting at most
    /// `seconds`; nil when it did not come, the child ended, or the run was interrupted.
    func waitForLine(prefix: String, seconds: Double, interrupt: InterruptFlag? = nil) -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline, interrupt?.isRaised != true {
            if let line = lines.withLock({ $0.first { $0.hasPrefix(prefix) } }) { return line }
            if !process.isRunning { return nil }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }

    /// SIGTERM, then SIGKILL after `graceSeconds` (short when the run was interrupted: the
    /// whole process must end soon after the signal).
    func stop(graceSeconds: Double = 3) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(graceSeconds)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
