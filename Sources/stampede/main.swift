import ArgumentParser
import Foundation
import StampedeEngine
import StampedeLoop
import StampedeReport
import StampedeScenario
import StampedeServers
#if canImport(Glibc)
import Glibc
#endif

/// Raised by SIGINT/SIGTERM; created before the handlers are installed so the handler only stores to it.
let interrupt = InterruptFlag()

@main
struct Stampede: ParsableCommand {
    /// ArgumentParser's own entry point, except that a bad flag or value exits with 2, the code
    /// for every kind of bad input (ArgumentParser would use 64).
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            if exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(ExitStatus.badInput)
            }
            exit(withError: error)
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "stampede",
        abstract: "Load generator and latency profiler for real-time (WebSocket) servers.",
        discussion: """
            Examples:
              stampede run scenarios/chat-broadcast.yaml
              stampede run scenarios/chat-local-server.yaml --target ws://127.0.0.1:8765/chat
              stampede validate scenarios/*.yaml
              stampede serve --port 8765
            """,
        version: RunEngine.version,
        subcommands: [Run.self, Serve.self, Validate.self, Compare.self, Autobahn.self]
    )
}

/// Exit codes: 0 ok, 1 the run failed, 2 bad input (scenario or arguments), 130 interrupted.
enum ExitStatus {
    static let runFailed: Int32 = 1
    static let badInput: Int32 = 2
    static let gateTripped: Int32 = 97  // `stampede compare --fail-on …` tripped
    static let interrupted: Int32 = 130
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a scenario and write its results under results/.",
        discussion: """
            Prints a progress line every second (to stderr), a summary at the end, and, as the
            last line on stdout, the results folder. Ctrl-C ends the run early and still writes
            what was gathered, marked partial.

            Examples:
              stampede run scenarios/chat-broadcast.yaml
              stampede run scenarios/chat-broadcast.yaml --clients 200 --duration 5
              stampede run scenarios/chat-local-server.yaml --target ws://127.0.0.1:8765/chat
            """)

    @Argument(help: "Scenario file (YAML).")
    var scenario: String

    @Option(help: "Client event loops (threads), 1 to 256. Default: one per core.")
    var loops: Int?

    @Option(help: "Folder to write results into (created if needed; checked before the run starts).")
    var results: String = "results"

    @Option(help: "Override the scenario's target ('embedded', or a ws:// URL for chat, http:// for hub and REST).")
    var target: String?

    @Option(help: "Override the number of clients (1 to 1,000,000).")
    var clients: String?

    @Option(help: "Override the message phase duration: seconds, or with a unit (500ms, 90s, 2m, 1h; at most 168h).")
    var duration: String?

    @Flag(help: "Plain log lines instead of a live progress line.")
    var plain = false

    @Flag(help: "No progress output.")
    var quiet = false

    func validate() throws {
        if let l = loops, !(1...256).contains(l) { throw ValidationError("--loops must be from 1 to 256, got \(l)") }
    }

    /// The flags that replace scenario fields, checked by the loader exactly as those fields are.
    var overrides: [ScenarioLoader.Override] {
        [("--target", target), ("--clients", clients), ("--duration", duration)].compactMap { flag, value in
            value.flatMap { ScenarioLoader.Override(flag: flag, value: $0) }
        }
    }

    func run() throws {
        let s: Scenario
        do { s = try ScenarioLoader.load(path: scenario, overrides: overrides) } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(ExitStatus.badInput)
        }
        do { try ResultsWriter.checkWritable(resultsRoot: URL(fileURLWithPath: results)) } catch {
            FileHandle.standardError.write(Data("error: --results: \(error)\n".utf8))
            throw ExitCode(ExitStatus.badInput)
        }
        installSignalHandlers()
        let style: RunOptions.ProgressStyle = quiet ? .silent : (plain || isatty(STDERR_FILENO) == 0) ? .lines : .terminal
        var options = RunOptions(resultsRoot: URL(fileURLWithPath: results), progress: style, interrupt: interrupt)
        options.stampedeExecutable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        if let l = loops { options.loops = l }
        let targetText = s.target == .embedded ? "embedded target" : s.target.description
        FileHandle.standardError.write(Data("stampede \(RunEngine.version): \(s.name): \(s.clients) clients → \(targetText), \(options.loops) loop(s)\n".utf8))
        let outcome: RunOutcome
        do { outcome = try RunEngine(scenario: s, options: options).run() } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(interrupt.isRaised ? ExitStatus.interrupted : ExitStatus.runFailed)
        }
        print(SummaryText.render(outcome.summary))
        if let fatal = outcome.record.fatalError { FileHandle.standardError.write(Data("error: \(fatal)\n".utf8)) }
        if let e = outcome.writeError { FileHandle.standardError.write(Data("error: could not write results: \(e)\n".utf8)) }
        if let folder = outcome.resultsFolder { print("results: \(relativePath(folder))") }
        if outcome.exitCode != 0 { throw ExitCode(outcome.exitCode) }
    }
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a reference server (on 127.0.0.1, or the local address --host names): the chat server (/chat), a SignalR hub (--hub) or a REST target (--rest).",
        discussion: """
            A WebSocket endpoint that broadcasts every {"message","user","userID"} it receives to
            every connected client, with the server's "date" and "id" added.

            With --rest, an HTTP/1.1 JSON API for ETag polling: every path under --path (/api)
            is a resource whose version changes --change-rate times a second; answers 304 to a
            matching If-None-Match, 401 without the --token, 429 past --rate-limit 200s a second.

            With --tls-cert and --tls-key (PEM files), or --tls-self-signed (a throw-away
            certificate for localhost, 127.0.0.1, ::1 and --host, written where the output says),
            every connection speaks TLS: wss:// for chat, https:// (and wss://) for the hub and REST.

            With --admin-port, a fault switch listens on 127.0.0.1 only:
              POST /fault/drop?mode=reset|close  drop every connection (RST or clean)
              POST /fault/reject?seconds=S       answer new connections 503 for S s
              POST /fault/stall?seconds=S        hang the server for S s (S <= 3600)
              POST /fault/delay?ms=N             hold every broadcast/response N ms (0: off; N <= 10000; not --hub)
              GET  /status                       statistics as JSON

            Example:
              stampede serve --port 8765          # then target ws://127.0.0.1:8765/chat
              stampede serve --hub --port 5000    # then target http://127.0.0.1:5000/hub
              stampede serve --rest --port 8080 --change-rate 0.5 --token-env API_TOKEN --rate-limit 100
              stampede serve --port 8443 --tls-cert cert.pem --tls-key key.pem   # then wss://localhost:8443/chat
              stampede serve --hub --port 5001 --tls-self-signed --tls-cert-out /tmp/hub.pem
              stampede serve --port 8765 --admin-port 9100 &
              curl -X POST 'http://127.0.0.1:9100/fault/drop?mode=reset'
            """)

    @Option(help: "Local IPv4 or IPv6 address to listen on (127.0.0.1, ::1, or an address of this machine).")
    var host: String = "127.0.0.1"

    @Option(help: "Port (0 picks a free one).")
    var port: Int = 8765

    @Option(help: "Path (default /chat, /hub with --hub, /api with --rest).")
    var path: String?

    @Flag(help: "Serve the reference SignalR hub instead of the chat server.")
    var hub = false

    @Flag(help: "Serve the reference REST target for ETag polling instead of the chat server.")
    var rest = false

    @Option(help: "REST: version changes per second per resource (0 = never; default 1).")
    var changeRate: Double?

    @Option(help: "REST: require 'Authorization: Bearer <token>'.")
    var token: String?

    @Option(help: "REST: read the required bearer token from this environment variable.")
    var tokenEnv: String?

    @Option(help: "REST: at most this many 200 responses per second (304s do not count); 429 beyond.")
    var rateLimit: Int?

    @Option(help: "REST: about how large a 200's JSON body is, in bytes (0...16777216; default 256).")
    var bodySize: Int?

    @Flag(help: "REST: frame 200 bodies with Transfer-Encoding: chunked.")
    var chunked = false

    @Option(help: "Stop by itself after this many seconds (0 = until Ctrl-C).")
    var maxSeconds: Double = 0

    @Option(help: "Hold every chat broadcast (REST: response) this long, like 2ms (0 to 10s): a known regression for `stampede compare`.")
    var delay: String?

    @Option(help: "Port of the fault switch on 127.0.0.1 (0 picks a free one; default: none).")
    var adminPort: Int?

    @Option(help: "Most output queued for one connection before it is dropped as a slow consumer, in bytes (65536...1073741824; default 4194304).")
    var maxOutputBytes: Int?

    @Option(help: "Seconds a connection may accept none of its waiting output before it is dropped as a slow consumer (default 10).")
    var sendTimeout: Double?

    @Option(help: "Seconds a started request or upgrade head has to complete (default 10).")
    var headerTimeout: Double?

    @Option(help: "Seconds a connection with no request under way may stay silent (default 60).")
    var idleTimeout: Double?

    @OptionGroup(title: "TLS")
    var tls: ServeTLSOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535, got \(port)") }
        guard maxSeconds.isFinite, (0...7 * 24 * 3600).contains(maxSeconds) else {
            throw ValidationError("--max-seconds must be from 0 (until Ctrl-C) to 604800 (168h), got \(maxSeconds)")
        }
        if let delay {
            guard TargetFault.delayMilliseconds(delay) != nil else { throw ValidationError("--delay must be whole milliseconds from 0 to 10000, like 2ms or 0.5s, got '\(delay)'") }
            guard !hub else { throw ValidationError("--delay is acted out by the chat and REST servers only, not yet by --hub") }
        }
    }

    func run() throws {
        // Any local address: binding tells whether it is one (the error names the address).
        guard let listenAddress = SocketAddress(host: host, port: 0), host != "localhost" else {
            throw ValidationError("--host must be an IPv4 or IPv6 address of this machine (like 127.0.0.1, ::1 or 10.0.0.5), got '\(host)'")
        }
        let bindError = listenAddress.localBindError
        guard bindError == 0 else {
            throw ValidationError("--host \(host) is not an address of this machine (\(String(cString: strerror(bindError))))")
        }
        let at = listenAddress.with(port: UInt16(clamping: port))
        let shownHost = listenAddress.isIPv6 ? "[\(listenAddress.hostText)]" : listenAddress.hostText
        if let p = adminPort, !(0...65535).contains(p) { throw ValidationError("--admin-port must be from 0 to 65535") }
        var restSettings = try restConfiguration()
        let limits = try serverLimits()
        restSettings?.limits = limits
        let tlsMade = try tls.make(host: listenAddress.hostText)
        defer { if tlsMade.removeAtExit, let f = tlsMade.trustFile { try? FileManager.default.removeItem(at: f.deletingLastPathComponent()) } }
        installSignalHandlers()
        let path = self.path ?? (hub ? "/hub" : rest ? "/api" : "/chat")
        let loop: EventLoop
        var chatServer: ChatServer?
        var hubServer: HubServer?
        var restServer: RestServer?
        do {
            loop = try EventLoop(index: 0)
            if var configuration = restSettings {
                configuration.path = path
                restServer = try RestServer(loop: loop, address: at, configuration: configuration, tls: tlsMade.context)
            } else if hub {
                var configuration = HubServer.Configuration()
                configuration.limits = limits
                hubServer = try HubServer(loop: loop, address: at, path: path, configuration: configuration, tls: tlsMade.context)
            } else {
                chatServer = try ChatServer(loop: loop, address: at, path: path, limits: limits, tls: tlsMade.context)
                if let ms = delay.flatMap(TargetFault.delayMilliseconds) { chatServer?.apply(.delay(milliseconds: ms)) }
            }
        } catch {
            FileHandle.standardError.write(Data("error: cannot listen on \(at): \(error)\n".utf8))
            throw ExitCode(ExitStatus.runFailed)
        }
        var admin: TargetAdmin?
        if let adminPort {
            let target: any FaultTarget
            if let restServer { target = restServer } else if let hubServer { target = hubServer } else { target = chatServer! }
            do {
                admin = try TargetAdmin(target: target, address: .ipv4(0x7F00_0001, port: UInt16(adminPort)))
            } catch {
                FileHandle.standardError.write(Data("error: cannot start the admin endpoint on 127.0.0.1:\(adminPort): \(error)\n".utf8))
                throw ExitCode(ExitStatus.runFailed)
            }
        }
        loop.start(name: "stampede-serve")
        let s = tlsMade.context == nil ? "" : "s"
        if let restServer {
            print("listening on http\(s)://\(shownHost):\(restServer.port)\(path) (REST)")
        } else if let hubServer {
            print("listening on http\(s)://\(shownHost):\(hubServer.port)\(path) (SignalR hub)")
        } else if let chatServer {
            print("listening on ws\(s)://\(shownHost):\(chatServer.port)\(path)")
        }
        if let f = tlsMade.trustFile {
            print("TLS: self-signed certificate for \(tlsMade.names.joined(separator: ", ")); clients trust it with \(f.path)")
        }
        if let admin { print("admin on http://127.0.0.1:\(admin.port)") }
        fflush(nil)
        let start = Date()
        while !interrupt.isRaised && (maxSeconds <= 0 || Date().timeIntervalSince(start) < maxSeconds) {
            Thread.sleep(forTimeInterval: 0.1)
        }
        admin?.stop()
        if let stats = chatServer?.statisticsSnapshot() {
            print("served: \(stats.upgraded) connections, \(stats.messagesReceived) messages received, \(stats.framesBroadcast) frames broadcast, \(stats.invalidMessages) invalid, "
                + "\(stats.limits.slowConsumersDropped) slow consumers dropped")
        }
        if let hubServer {
            // Tell every client to reconnect (Close with allowReconnect), as ASP.NET Core does on shutdown.
            hubServer.loop.execute { _ in hubServer.shutdown() }
            Thread.sleep(forTimeInterval: 0.2)
        }
        if let stats = hubServer?.statisticsSnapshot() {
            print("served: \(stats.handshakes) hub connections, \(stats.invocations.total) invocations, \(stats.protocolErrors) protocol errors")
        }
        if let stats = restServer?.statisticsSnapshot() {
            print("served: \(stats.requests) requests: \(stats.ok) ok, \(stats.notModified) not modified, \(stats.unauthorized) unauthorized, "
                + "\(stats.rateLimited) rate limited, \(stats.notFound) not found")
        }
        loop.stop()
        loop.join()
    }

    /// Prints `message` as an error and returns exit code 2 (bad input) to throw.
    /// The output limit and timeouts from the flags (see `ServerLimits`); a value out of range
    /// names the flag (exit code 2, as every bad flag).
    func serverLimits() throws -> ServerLimits {
        var limits = ServerLimits()
        if let n = maxOutputBytes {
            guard (65536...(1 << 30)).contains(n) else { throw ValidationError("--max-output-bytes must be from 65536 to 1073741824") }
            limits.maxOutputBytes = n
        }
        func seconds(_ value: Double?, _ flag: String) throws -> Double? {
            guard let value else { return nil }
            guard value.isFinite, value >= 0.001, value <= ServerLimits.maxTimeout else {
                throw ValidationError("\(flag) must be a number of seconds from 0.001 to 3600")
            }
            return value
        }
        if let s = try seconds(sendTimeout, "--send-timeout") { limits.sendTimeout = s }
        if let s = try seconds(headerTimeout, "--header-timeout") { limits.headerTimeout = s }
        if let s = try seconds(idleTimeout, "--idle-timeout") { limits.idleTimeout = s }
        return limits
    }

    /// The REST target's configuration from the flags (nil without --rest); the path is set later.
    func restConfiguration() throws -> RestServer.Configuration? {
        guard rest else {
            var given: [String] = []
            if changeRate != nil { given.append("--change-rate") }
            if token != nil { given.append("--token") }
            if tokenEnv != nil { given.append("--token-env") }
            if rateLimit != nil { given.append("--rate-limit") }
            if bodySize != nil { given.append("--body-size") }
            if chunked { given.append("--chunked") }
            if !given.isEmpty { throw ValidationError("\(given.joined(separator: ", ")): REST flags, they need --rest") }
            return nil
        }
        if hub { throw ValidationError("--rest and --hub are exclusive") }
        var configuration = RestServer.Configuration()
        if let r = changeRate {
            guard r.isFinite, r >= 0 else { throw ValidationError("--change-rate must be a number >= 0") }
            configuration.changeRate = r
        }
        if token != nil && tokenEnv != nil { throw ValidationError("--token and --token-env are exclusive") }
        if let t = token {
            guard !t.isEmpty else { throw ValidationError("--token must not be empty") }
            configuration.token = t
        }
        if let name = tokenEnv {
            // The token itself is never printed, not even in errors.
            guard let t = ProcessInfo.processInfo.environment[name], !t.isEmpty else {
                throw ValidationError("--token-env: the environment variable \(name) is not set or empty")
            }
            configuration.token = t
        }
        if let t = configuration.token, t.utf8.contains(where: { $0 < 0x21 || $0 == 0x7F }) {
            throw ValidationError("the token must not contain spaces or control characters")
        }
        if let n = rateLimit {
            guard n >= 1 else { throw ValidationError("--rate-limit must be >= 1") }
            configuration.rateLimit = n
        }
        if let b = bodySize {
            guard (0...RestServer.maxBodySize).contains(b) else { throw ValidationError("--body-size must be from 0 to \(RestServer.maxBodySize)") }
            configuration.bodySize = b
        }
        configuration.chunked = chunked
        return configuration
    }
}

/// `stampede serve`'s TLS flags: a certificate and key from files, or a throw-away self-signed
/// certificate made at start. Every bad combination or file is a `ValidationError` naming the
/// flag (exit code 2).
struct ServeTLSOptions: ParsableArguments {
    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("Serve TLS (wss://, https://) with this PEM certificate (its chain may follow it); needs --tls-key.", valueName: "file"))
    var certificate: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "file"))
    var key: String?

    @Flag(name: .customLong("tls-self-signed"), help: "Serve TLS with a throw-away self-signed certificate made at start (for localhost, 127.0.0.1, ::1 and --host); prints where the certificate is, for clients to trust.")
    var selfSigned = false

    @Option(name: .customLong("tls-cert-out"), help: ArgumentHelp("With --tls-self-signed: write the certificate (PEM) to this file instead of a temporary folder.", valueName: "file"))
    var certificateOut: String?

    /// Days a --tls-self-signed certificate stays valid (a server may run for a while).
    static let selfSignedDays = 30

    var isEnabled: Bool { certificate != nil || key != nil || selfSigned }

    func validate() throws {
        if selfSigned && (certificate != nil || key != nil) {
            throw ValidationError("--tls-self-signed and --tls-cert/--tls-key are exclusive")
        }
        if (certificate == nil) != (key == nil) {
            throw ValidationError(certificate == nil ? "--tls-key needs --tls-cert (give both)" : "--tls-cert needs --tls-key (give both)")
        }
        if certificateOut != nil && !selfSigned { throw ValidationError("--tls-cert-out needs --tls-self-signed") }
    }

    /// What the flags ask for, made: the server context (nil without TLS) and, for a self-signed
    /// certificate, the file a client trusts plus whether it is ours to remove at exit.
    struct Made {
        var context: TLSContext?
        var trustFile: URL?
        var removeAtExit = false
        /// The names and addresses a self-signed certificate is for.
        var names: [String] = []
    }

    /// Reads the files or makes the certificate. `host` is the --host address (added to a
    /// self-signed certificate's names).
    func make(host: String) throws -> Made {
        if let certificate, let key {
            let certificateText = try Self.read(certificate, flag: "--tls-cert")
            let keyText = try Self.read(key, flag: "--tls-key")
            do {
                return Made(context: try TLSContext(serverCertificatePEM: certificateText, privateKeyPEM: keyText))
            } catch {
                // TLSContext names the part that failed first: "certificate…" or "key…".
                if error.description.hasPrefix("key") {
                    throw ValidationError("--tls-key \(key): not a PEM private key, or not the key of --tls-cert \(certificate) (\(error.description))")
                }
                throw ValidationError("--tls-cert \(certificate): not a usable PEM certificate (\(error.description))")
            }
        }
        guard selfSigned else { return Made() }
        var addresses = ["127.0.0.1", "::1"]
        // An unspecified address (listen on all) is not one a client connects to.
        if !addresses.contains(host) && host != "0.0.0.0" && host != "::" { addresses.append(host) }
        let made: SelfSignedCertificate
        let context: TLSContext
        do {
            made = try SelfSignedCertificate(commonName: "localhost", dnsNames: ["localhost"], ipAddresses: addresses, validDays: Self.selfSignedDays)
            context = try TLSContext(serverCertificatePEM: made.certificatePEM, privateKeyPEM: made.privateKeyPEM)
        } catch {
            throw ValidationError("--tls-self-signed: \(error.description)")
        }
        let file: URL
        var removeAtExit = false
        if let certificateOut {
            file = URL(fileURLWithPath: certificateOut)
        } else {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stampede-serve-\(UUID().uuidString)")
            do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) } catch {
                throw ValidationError("--tls-self-signed: cannot make a temporary folder \(folder.path): \(error.localizedDescription)")
            }
            file = folder.appendingPathComponent("certificate.pem")
            removeAtExit = true
        }
        do { try made.certificatePEM.write(to: file, atomically: true, encoding: .utf8) } catch {
            throw ValidationError("\(certificateOut != nil ? "--tls-cert-out" : "--tls-self-signed"): cannot write \(file.path): \(error.localizedDescription)")
        }
        return Made(context: context, trustFile: file, removeAtExit: removeAtExit, names: ["localhost"] + addresses)
    }

    /// The file's text; an error naming the flag and the file otherwise.
    static func read(_ path: String, flag: String) throws -> String {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { throw ValidationError("\(flag) \(path): no such file") }
        guard !isFolder.boolValue else { throw ValidationError("\(flag) \(path): is a folder, not a file") }
        // A PEM file is small; a huge one is a wrong file, not worth reading whole.
        let attributes = (try? FileManager.default.attributesOfItem(atPath: URL(fileURLWithPath: path).resolvingSymlinksInPath().path)) ?? [:]
        // A device or pipe (/dev/zero, a FIFO) could be read forever.
        guard attributes[.type] as? FileAttributeType == .typeRegular else { throw ValidationError("\(flag) \(path): not a regular file") }
        let size = attributes[.size] as? Int ?? 0
        guard size <= 1 << 20 else { throw ValidationError("\(flag) \(path): larger than 1 MiB, not a PEM file") }
        guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("\(flag) \(path): cannot read it (permissions?)") }
        return String(decoding: data, as: UTF8.self)
    }
}

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check scenario files without running them (exit 2 on the first bad file).",
        discussion: "Example:\n  stampede validate scenarios/*.yaml")

    @Argument(help: "Scenario files.")
    var files: [String]

    func run() throws {
        var failed = false
        for f in files {
            do {
                let s = try ScenarioLoader.load(path: f)
                print("\(f): ok (\(s.workload.rawValue), \(s.clients) clients, \(s.target))")
            } catch {
                FileHandle.standardError.write(Data("\(error)\n".utf8))
                failed = true
            }
        }
        if failed { throw ExitCode(ExitStatus.badInput) }
    }
}

struct Compare: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Compare two results folders: percentiles with their noise, effect sizes, a verdict per metric.", discussion: CompareCommandLine.help)
    @Argument(help: "The baseline results folder.") var baseline: String
    @Argument(help: "The current results folder.") var current: String
    @Option(help: "table, markdown, json or junit.") var format = "table"
    @Option(help: "Exit 97 when a gated metric is slower (or faster, spread-changed; comma-separated).") var failOn: String?
    @Option(help: "Smallest shift of p50 and p90 called a change, like 5%.") var tolerance = "25%"
    @Option(help: "The gated metrics, comma-separated (default round_trip,fanout).") var metrics: String?
    @Option(help: "Bootstrap resamples (seed fixed).") var resamples = 1000

    func run() throws {
        let o: CompareCommandLine.Options
        do { o = try CompareCommandLine.options(format: format, failOn: failOn, tolerance: tolerance, metrics: metrics, resamples: resamples) } catch { throw ValidationError(error.description) }
        do {
            let report = try CompareReport.make(baseline: URL(fileURLWithPath: baseline), current: URL(fileURLWithPath: current), settings: o.settings, failOn: o.failOn)
            print(report.rendered(o.format), terminator: "")
            if report.gateTripped { throw ExitCode(ExitStatus.gateTripped) }
        } catch let e as CompareError {
            FileHandle.standardError.write(Data("error: \(e)\n".utf8))
            throw ExitCode(ExitStatus.runFailed)
        }
    }
}

struct Autobahn: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run Stampede's WebSocket client against an Autobahn fuzzing server (conformance).",
        discussion: """
            Follows the Autobahn client protocol: getCaseCount, runCase for every case (echoing
            each message), updateReports. The server writes the report.

            Example (kosoku from PyPI serves the cases):
              kosoku -m fuzzingserver -i '1.*' -o reports 127.0.0.1:9001 &
              stampede autobahn --port 9001 --agent stampede
            """)

    @Option(help: "Loopback address of the fuzzing server.")
    var host: String = "127.0.0.1"

    @Option(help: "Port of the fuzzing server.")
    var port: Int = 9001

    @Option(help: "Agent name the report lists the results under.")
    var agent: String = "stampede"

    func validate() throws {
        guard (1...65535).contains(port) else { throw ValidationError("--port must be from 1 to 65535, got \(port)") }
    }

    func run() throws {
        guard host == "localhost" || host == "::1" || (parseIPv4(host).map { $0 >> 24 == 127 } ?? false) else {
            throw ValidationError("--host must be a loopback address")
        }
        let outcome = try AutobahnClient.run(host: host, port: port, agent: agent)
        print("autobahn: \(outcome.casesRun) of \(outcome.caseCount) cases run, \(outcome.casesTimedOut) timed out; reports updated for agent \(agent)")
    }
}

func installSignalHandlers() {
    _ = interrupt.isRaised
    let handler: @convention(c) (Int32) -> Void = { _ in
        if interrupt.isRaised { _exit(130) }  // a second Ctrl-C does not wait
        interrupt.raise()
    }
    signal(SIGINT, handler)
    signal(SIGTERM, handler)
    // A parent may have blocked these (test runners, some supervisors); the mask survives exec.
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGINT)
    sigaddset(&set, SIGTERM)
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
    signal(SIGPIPE, SIG_IGN)
}

func relativePath(_ url: URL) -> String {
    let cwd = FileManager.default.currentDirectoryPath
    let p = url.standardizedFileURL.path
    return p.hasPrefix(cwd + "/") ? String(p.dropFirst(cwd.count + 1)) : p
}
