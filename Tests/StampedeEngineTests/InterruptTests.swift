import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A loopback listener that never accepts: TCP connects complete in its backlog, and nothing
/// ever answers (an upgrade, a negotiate or a request waits for good).
final class SilentListener: @unchecked Sendable {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        try #require(bound == 0 && listen(fd, 64) == 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        self.fd = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    deinit { close(fd) }
}

/// Runs `s` in process and raises the interrupt `after` seconds; returns the outcome and how
/// long the run took to end once interrupted.
func runInterrupted(_ s: Scenario, after: Double) throws -> (RunOutcome, stopSeconds: Double) {
    let flag = InterruptFlag()
    let raisedAt = Mutex<Date?>(nil)
    Thread.detachNewThread {
        Thread.sleep(forTimeInterval: after)
        raisedAt.withLock { $0 = Date() }
        flag.raise()
    }
    let options = RunOptions(loops: 2, resultsRoot: temporaryFolder(s.name), progress: .silent, interrupt: flag)
    let o = try RunEngine(scenario: s, options: options).run()
    let raised = try #require(raisedAt.withLock { $0 }, "the run ended before the interrupt")
    return (o, Date().timeIntervalSince(raised))
}

/// An interrupt ends any run promptly, whatever its loops are doing, with partial results,
/// and attempts it cut off count as `interrupted`, not as timeouts.
@Suite(.serialized)
struct InterruptTests {
    func expectPartialAndClosed(_ o: RunOutcome, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(o.exitCode == 130, sourceLocation: sourceLocation)
        #expect(o.summary.partial, sourceLocation: sourceLocation)
        #expect(o.summary.messages.accountingClosed, "\(o.summary.messages)", sourceLocation: sourceLocation)
        let folder = try #require(o.resultsFolder, sourceLocation: sourceLocation)
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("summary.json").path), sourceLocation: sourceLocation)
    }

    /// Polls due every 0 ns re-schedule themselves into the past forever; the loops must
    /// still answer the engine, so the interrupt ends the run.
    @Test func restPollingAtAZeroIntervalStillStopsOnInterrupt() throws {
        var s = restScenario("rest-zero-interval", target: .embedded, clients: 4, duration: 60, interval: 1e-12)
        s.drainSeconds = 5
        let (o, stop) = try runInterrupted(s, after: 1.5)
        try expectPartialAndClosed(o)
        #expect(o.summary.messages.sent > 0)
        // Cut short by the interrupt, not run to its end 58 s later; how promptly is a
        // measurement (Benchmarks/stop-latency.sh), not a test.
        #expect(stop < 30, "stopped \(stop) s after the interrupt")
    }

    @Test(arguments: [Workload.chat, .hub, .rest, .websocket, .socketio])
    func attemptsCutOffByAnInterruptCountAsInterrupted(_ workload: Workload) throws {
        let silent = try SilentListener()
        var s: Scenario
        switch workload {
        case .chat:
            s = chatScenario(name: "silent-chat", target: .webSocket(url: WebSocketURL(host: "127.0.0.1", port: silent.port, path: "/chat")), clients: 4)
        case .hub:
            s = hubScenario("silent-hub", target: .http(url: WebSocketURL(host: "127.0.0.1", port: silent.port, path: "/hub")),
                            transport: .webSockets, protocolKind: .json, clients: 4, operation: .invoke, method: "Echo", arguments: [.stamp])
        case .rest:
            s = restScenario("silent-rest", target: .http(url: WebSocketURL(host: "127.0.0.1", port: silent.port, path: "/api")), clients: 4, duration: 30)
        case .websocket:
            s = try flowScenario(target: "ws://127.0.0.1:\(silent.port)/ws", clients: 4, flow: """
                  send: ['{"id":{sequence}}']
                  replies: [{name: ack, match: {$.ok: true}, correlate: {sent: $.id, received: $.id}}]
                """)
        case .socketio:
            s = try socketIOScenario(target: "http://127.0.0.1:\(silent.port)", clients: 4, section: """
                  emit: {event: echo, args: ["{stamp}"], ack: true}
                """)
        }
        s.connectTimeoutSeconds = 20
        let (o, stop) = try runInterrupted(s, after: 1)
        #expect(o.exitCode == 130)
        #expect(o.summary.messages.accountingClosed)
        #expect(o.summary.errors["interrupted"] == 4, "\(o.summary.errors.filter { $0.value > 0 })")
        for timeout in ["connect_timeout", "upgrade_timeout", "handshake_timeout", "response_timeout"] {
            #expect(o.summary.errors[timeout] == 0, "\(timeout)")
        }
        // Cut short by the interrupt, not by the 20 s connect timeout (how promptly is
        // Benchmarks/stop-latency.sh's measurement).
        #expect(stop < 15, "stopped \(stop) s after the interrupt")
    }
}

/// SIGTERM to the `stampede` executable: exit 130 soon after, results written and partial.
@Suite(.serialized)
struct SignalStopTests {
    func scenarioFile(clients: Int, connectRate: Int) throws -> URL {
        let url = temporaryFolder("sigterm").appendingPathComponent("sigterm.yaml")
        try """
            name: sigterm
            target: embedded
            clients: \(clients)
            connect_rate: \(connectRate)
            duration: 60s
            message:
              rate: 100
              size: 64
            """.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    /// Starts a run, waits for a progress line of `phase`, sends SIGTERM and checks what it left.
    func terminate(during phase: String, clients: Int, connectRate: Int) throws -> RunSummary {
        let results = temporaryFolder("sigterm-results")
        let p = try BackgroundProcess(stampedeBinary.path, ["run", try scenarioFile(clients: clients, connectRate: connectRate).path,
                                                            "--results", results.path, "--plain"])
        defer { p.stop() }
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && !p.errors.withLock({ $0.contains("] \(phase)") }) { Thread.sleep(forTimeInterval: 0.05) }
        let signalled = Date()
        kill(p.process.processIdentifier, SIGTERM)
        let status = p.wait(timeout: 30)
        let seconds = Date().timeIntervalSince(signalled)
        #expect(status == 130, "\(p.errors.withLock { $0 }.suffix(1000))")
        #expect(seconds < 5, "exited \(seconds) s after SIGTERM (generous bound; Benchmarks/stop-latency.sh measures it)")
        p.stop()
        let line = try #require(p.lines.withLock { $0.last { $0.hasPrefix("results: ") } })
        let summary = try RunSummary.decode(from: Data(contentsOf: URL(fileURLWithPath: String(line.dropFirst("results: ".count))).appendingPathComponent("summary.json")))
        #expect(summary.partial)
        #expect(summary.messages.accountingClosed)
        return summary
    }

    @Test func sigtermDuringRampUpExits130WithPartialResults() throws {
        let s = try terminate(during: "ramp-up", clients: 400, connectRate: 100)
        #expect(s.partialReason?.contains("ramp-up") == true)
        #expect(s.errors["connect_timeout"] == 0 && s.errors["upgrade_timeout"] == 0)
    }

    @Test func sigtermDuringTheMessagePhaseExits130WithPartialResults() throws {
        let s = try terminate(during: "messages", clients: 50, connectRate: 1000)
        #expect(s.partialReason?.contains("message phase") == true)
        #expect(s.messages.sent > 0)
    }
}
