import CStampedeLinux
import Foundation
import StampedeLoop
import StampedeMetrics
import StampedeReport
import StampedeScenario
import StampedeServers
import StampedeWire
import StampedeWorkloads
import Synchronization

/// Set from a signal handler (Ctrl-C, SIGTERM); the engine checks it at every tick and ends the
/// run early, still writing what it gathered, marked partial.
public final class InterruptFlag: Sendable {
    let raised = Atomic<Bool>(false)
    public init() {}
    public func raise() { raised.store(true, ordering: .relaxed) }
    public var isRaised: Bool { raised.load(ordering: .relaxed) }
}

/// Options that belong to the invocation rather than to the scenario.
public struct RunOptions: Sendable {
    /// Client event loops (threads); default one per core.
    public var loops: Int
    public var resultsRoot: URL
    /// Progress output: a rewritten line on a terminal, plain log lines otherwise, or nothing.
    public var progress: ProgressStyle
    public var interrupt: InterruptFlag
    public var commandLine: [String]
    /// Fault injection: at each offset (seconds into the message phase), abruptly reset the
    /// connections of the given fraction of connected clients.
    public var connectionDrops: [(atSeconds: Double, fraction: Double)] = []
    /// The `stampede` executable, when this is the command line: with it, an embedded target
    /// too large to share this process's file descriptors runs as `stampede serve` in a child
    /// process instead.
    public var stampedeExecutable: String? = nil

    public enum ProgressStyle: Sendable { case terminal, lines, silent }

    public init(loops: Int = max(1, ProcessInfo.processInfo.activeProcessorCount), resultsRoot: URL = URL(fileURLWithPath: "results"),
                progress: ProgressStyle = .silent, interrupt: InterruptFlag = InterruptFlag(), commandLine: [String] = CommandLine.arguments) {
        self.loops = loops; self.resultsRoot = resultsRoot; self.progress = progress; self.interrupt = interrupt; self.commandLine = commandLine
    }
}

/// What a run produced.
public struct RunOutcome: Sendable {
    public var record: RunRecord
    public var summary: RunSummary
    /// Nil if the results could not be written (the error is in `writeError`).
    public var resultsFolder: URL?
    public var writeError: String?
    /// 0 ok, 1 the run failed (target unreachable, nothing connected), 130 interrupted.
    public var exitCode: Int32
}

/// A run that could not start (bad environment, not a bad scenario: the loader checks those).
public struct RunSetupError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ d: String) { description = d }
}

/// Runs a scenario: starts the loops (and the embedded target), ramps clients up, runs the
/// message phase, drains, closes, and writes the results. Loops own their clients; the engine
/// only sends them phase changes and merges their measurements once per interval.
public final class RunEngine {
    public static let version = "0.1.0"

    let scenario: Scenario
    let options: RunOptions
    var loops: [EventLoop] = []
    var workloads: [any LoopWorkload] = []
    var serverLoop: EventLoop?
    var chatServer: ChatServer?
    var hubServer: HubServer?
    var restServer: RestServer?
    var totals = MetricsShard()
    var intervals: [IntervalSample] = []
    var warnings: [String] = []
    var peakOpen = 0
    var maxTimerLagNs: UInt64 = 0
    var clientLoopCPUNs: UInt64 = 0
    var runStartNs: UInt64 = 0
    var lastIntervalNs: UInt64 = 0
    var lastOpen = 0
    var phase = "ramp-up"
    let progress: ProgressPrinter

    public init(scenario: Scenario, options: RunOptions) {
        self.scenario = scenario
        self.options = options
        progress = ProgressPrinter(style: options.progress)
    }

    /// Runs to completion (or interruption) and writes `results/<name>-<timestamp>/`.
    public func run() throws(RunSetupError) -> RunOutcome {
        let startedAt = Date()
        let cpuAtStart = cs_process_cpu_ns()
        let limit = cs_raise_open_files_limit()
        let plan = RunPlan(scenario: scenario, loops: options.loops, openFilesLimit: Int(limit), canSpawnTarget: options.stampedeExecutable != nil)
        if let problem = plan.problem { throw RunSetupError(problem) }
        targetInChildProcess = plan.targetInChildProcess
        // Before the target starts: a setup that fails half-way still stops what it started.
        defer { shutdown(interrupted: options.interrupt.isRaised) }
        let endpoint = try startTarget()
        let loopCount = plan.loopCount
        try startLoops(count: loopCount, endpoint: endpoint)

        runStartNs = EventLoop.now()
        lastIntervalNs = runStartNs
        let rssBeforeConnect = residentBytes()
        var partialReason: String? = nil
        var fatal: String? = nil

        // Phase 1: ramp-up.
        let rampStart = EventLoop.now() + 20_000_000
        for (i, w) in workloads.enumerated() { loops[i].execute { _ in w.beginRampUp(startNs: rampStart) } }
        // Every client's attempt ends by itself (connect, upgrade and handshake timeouts); the budget is only a backstop.
        let rampBudgetNs = plan.rampBudgetNs
        while true {
            let s = tick()
            if s.notYetStarted == 0 && s.inFlight == 0 { break }
            if options.interrupt.isRaised { partialReason = "interrupted during ramp-up"; break }
            if EventLoop.now() - rampStart > rampBudgetNs { warnings.append("ramp-up did not finish in time"); break }
        }
        let rampSeconds = seconds(EventLoop.now() - runStartNs)
        let openAtStart = currentOpen()
        let rssConnected = residentBytes()
        peakRSS = max(peakRSS, rssConnected)
        var messageSeconds = 0.0, drainSeconds = 0.0
        var lossReason = LossReason.timedOut

        if openAtStart == 0 && partialReason == nil {
            _ = collectInterval(final: true)  // bring the connect errors into the totals for the message
            fatal = "no client could connect to \(targetDescription(endpoint)): " + describeConnectErrors()
        } else if partialReason == nil {
            // Phase 2: messages.
            phase = "messages"
            let t0 = EventLoop.now() + 50_000_000
            let t1 = t0 + plan.durationNs
            for (i, w) in workloads.enumerated() { loops[i].execute { _ in w.beginMessages(startNs: t0, endNs: t1) } }
            var drops = options.connectionDrops.sorted { $0.atSeconds < $1.atSeconds }
            var events = Array(scenario.events.enumerated())
            messageStartNs = t0
            while EventLoop.now() < t1 {
                _ = tick()
                if let next = drops.first, EventLoop.now() >= t0 + nanoseconds(next.atSeconds) {
                    drops.removeFirst()
                    for (i, w) in workloads.enumerated() { loops[i].execute { _ in w.dropConnections(fraction: next.fraction) } }
                }
                while let (index, event) = events.first, EventLoop.now() >= t0 + nanoseconds(event.atSeconds) {
                    events.removeFirst()
                    start(event, index: index, atNs: t0 + nanoseconds(event.atSeconds))
                }
                runChurn(until: t1)
                if options.interrupt.isRaised { partialReason = "interrupted during the message phase"; break }
            }
            messageSeconds = seconds(min(EventLoop.now(), t1) - t0)

            // Phase 3: drain.
            phase = "drain"
            for (i, w) in workloads.enumerated() { loops[i].execute { _ in w.beginDrain() } }
            let drainStart = EventLoop.now()
            let drainEnd = drainStart + plan.drainNs
            while partialReason == nil {
                let s = tick()
                let expected = expectsFanout ? (totals[.messagesSent] + s.sentSinceInterval) * UInt64(max(0, openAtStart - 1)) : 0
                let fanoutDone = totals[.fanoutReceived] + s.fanoutSinceInterval >= expected
                if s.outstanding == 0 && fanoutDone { break }
                if options.interrupt.isRaised { partialReason = "interrupted while draining"; break }
                if EventLoop.now() >= drainEnd { break }
            }
            drainSeconds = seconds(EventLoop.now() - drainStart)
        }
        if partialReason != nil { lossReason = .interrupted }

        // Phase 4: close every connection cleanly; whatever is still outstanding is counted lost.
        phase = "closing"
        let openAtEnd = currentOpen()
        let reason = lossReason
        for (i, w) in workloads.enumerated() { loops[i].execute { _ in w.closeAll(lostReason: reason) } }
        // Interrupted, the whole process must be gone within 2 s of the signal: the close
        // handshakes get a moment, then the loops drop what is left (the counts are final already).
        let interrupted = partialReason != nil
        let closeDeadline = EventLoop.now() + (interrupted ? 300_000_000 : 4_000_000_000)
        while EventLoop.now() < closeDeadline {
            let live = loops.indices.reduce(0) { n, i in n + loops[i].submitAndWait { [w = workloads[i]] _ in w.liveClients } }
            if live == 0 { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        _ = collectInterval(final: true)
        progress.finish()
        let storms = collectStorms()
        // A command still running is waited for briefly; its outcome says whether it finished.
        for run in commandRuns.values where run.finished == nil { _ = run.wait(seconds: interrupted ? 0.1 : 2) }

        totals.counters[Counter.fanoutExpected.rawValue] = expectsFanout ? totals[.messagesSent] * UInt64(max(0, openAtStart - 1)) : 0
        let processCPU = Double(cs_process_cpu_ns() - cpuAtStart) / 1e9
        let clientCPU = Double(clientLoopCPUNs) / 1e9
        if scenario.workload == .rest, totals[.clientsStopped] > 0 {
            let refused = totals.responseStatuses.filter { $0.key == 401 || $0.key == 403 }.values.reduce(0, +)
            warnings.append("\(totals[.clientsStopped]) of \(scenario.clients) clients stopped polling" + (refused > 0 ? " (\(refused) answers 401/403: check the token)" : ""))
        }
        let saturated = warnings.contains { $0.hasPrefix("generator") }
        var record = RunRecord(
            scenario: scenario, startedAt: startedAt, endedAt: Date(), partial: partialReason != nil || fatal != nil,
            partialReason: partialReason ?? (fatal != nil ? "the run failed" : nil), fatalError: fatal, totals: totals, intervals: intervals,
            environment: environment(loops: loopCount), peakOpenConnections: peakOpen, openConnectionsAtEnd: openAtEnd,
            phaseSeconds: PhaseSeconds(rampUp: rampSeconds, messages: messageSeconds, drain: drainSeconds),
            generator: GeneratorHealth(processCPUSeconds: processCPU, clientLoopCPUSeconds: clientCPU,
                                       maxTimerLagMicros: maxTimerLagNs / 1000, saturated: saturated, warnings: warnings,
                                       residentBytesBeforeConnect: rssBeforeConnect, residentBytesConnected: rssConnected,
                                       peakResidentBytes: peakRSS), storms: storms)
        record.generator.peakProcessCPUPercent = peakProcessCPUPercent
        record.generator.peakClientLoopCPUPercent = peakLoopCPUPercent
        record.baselineConnectPhase = baselineWindow
        var outcome = RunOutcome(record: record, summary: ResultsWriter.summary(of: record), resultsFolder: nil, writeError: nil,
                                 exitCode: fatal != nil ? 1 : partialReason != nil ? 130 : 0)
        do {
            outcome.resultsFolder = try ResultsWriter.write(record, resultsRoot: options.resultsRoot)
        } catch {
            outcome.writeError = "\(error)"
            if outcome.exitCode == 0 { outcome.exitCode = 1 }
        }
        return outcome
    }

    // MARK: Setup

    /// Where the clients connect: a WebSocket endpoint (chat) or a hub base URL (hub).
    enum Endpoint {
        case webSocket(WebSocketEndpoint)
        case hub(address: SocketAddress, base: HubURL)
        /// A REST API: where to connect, the Host header's host and port, and the base path.
        case rest(address: SocketAddress, host: String, port: Int, basePath: String)
    }

    func startTarget() throws(RunSetupError) -> Endpoint {
        let connectNs = nanoseconds(scenario.connectTimeoutSeconds)
        let headers = scenario.headers.map { ($0.name, $0.value) }
        let sources = scenario.sourceAddresses.compactMap(parseIPv4)
        func webSocket(_ address: SocketAddress, host: String, path: String) -> Endpoint {
            .webSocket(WebSocketEndpoint(address: address, host: host, path: path, subprotocol: scenario.subprotocol, headers: headers,
                                         connectTimeoutNs: connectNs, upgradeTimeoutNs: connectNs,
                                         maxMessageBytes: scenario.maxMessageBytes, sourceAddresses: sources))
        }
        switch (scenario.target, scenario.workload) {
        case (.embedded, _) where targetInChildProcess:
            let (address, port) = try startChildTarget()
            switch scenario.workload {
            case .chat: return webSocket(address, host: "127.0.0.1", path: "/chat")
            case .hub: return .hub(address: address, base: HubURL(host: "127.0.0.1", port: port, path: "/hub", query: ""))
            case .rest: return .rest(address: address, host: "127.0.0.1", port: port, basePath: "/api")
            }
        case (.embedded, .chat):
            let loop = try startTargetLoop()
            do { chatServer = try ChatServer(loop: loop, address: .ipv4(0x7F00_0001, port: 0)) } catch {
                throw RunSetupError("cannot start the embedded target: \(error)")
            }
            loop.start(name: "stampede-target")
            return webSocket(.ipv4(0x7F00_0001, port: chatServer!.port), host: "127.0.0.1", path: "/chat")
        case (.embedded, .rest):
            let loop = try startTargetLoop()
            do {
                restServer = try RestServer(loop: loop, address: .ipv4(0x7F00_0001, port: 0), configuration: try embeddedRestConfiguration())
            } catch let e as RunSetupError {
                throw e
            } catch {
                throw RunSetupError("cannot start the embedded target: \(error)")
            }
            loop.start(name: "stampede-target")
            return .rest(address: .ipv4(0x7F00_0001, port: restServer!.port), host: "127.0.0.1", port: Int(restServer!.port), basePath: "/api")
        case (.embedded, .hub):
            let loop = try startTargetLoop()
            do { hubServer = try HubServer(loop: loop, address: .ipv4(0x7F00_0001, port: 0), path: "/hub") } catch {
                throw RunSetupError("cannot start the embedded target: \(error)")
            }
            loop.start(name: "stampede-target")
            return .hub(address: .ipv4(0x7F00_0001, port: hubServer!.port), base: HubURL(host: "127.0.0.1", port: Int(hubServer!.port), path: "/hub", query: ""))
        case (.webSocket(let url), .chat):
            guard let address = SocketAddress(host: url.host, port: url.port) else { throw RunSetupError("cannot use target address \(url)") }
            return webSocket(address, host: url.host, path: url.path)
        case (.http(let url), .rest):
            guard let address = SocketAddress(host: url.host, port: url.port) else { throw RunSetupError("cannot use target address \(scenario.target)") }
            // The resources' paths follow the target's path ("http://127.0.0.1:8080/api" + "/items").
            let base = url.path == "/" ? "" : String(url.path.hasSuffix("/") ? url.path.dropLast() : Substring(url.path))
            return .rest(address: address, host: url.host, port: url.port, basePath: base)
        case (.http(let url), .hub):
            guard let address = SocketAddress(host: url.host, port: url.port) else { throw RunSetupError("cannot use target address \(scenario.target)") }
            let parts = url.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            return .hub(address: address, base: HubURL(host: url.host, port: url.port, path: String(parts[0]), query: parts.count > 1 ? String(parts[1]) : ""))
        default:
            throw RunSetupError("the \(scenario.workload.rawValue) workload cannot use target \(scenario.target)")
        }
    }

    /// The embedded REST target's settings: `rest.embedded`, accepting the clients' own token
    /// unless it names another.
    func embeddedRestConfiguration() throws(RunSetupError) -> RestServer.Configuration {
        let e = scenario.rest?.embedded ?? EmbeddedRestTarget()
        var token: String? = nil
        if let source = e.token ?? scenario.rest?.token {
            do { token = try ScenarioLoader.resolveToken(source, scenarioFile: scenario.file, field: e.token != nil ? "rest.embedded.token" : "rest.token") }
            catch { throw RunSetupError("\(error)") }
        }
        return RestServer.Configuration(path: "/api", changeRate: e.changeRate, token: token, rateLimit: e.rateLimit, bodySize: e.bodySize, chunked: e.chunked)
    }

    func startTargetLoop() throws(RunSetupError) -> EventLoop {
        do {
            let loop = try EventLoop(index: 1000)
            serverLoop = loop
            return loop
        } catch { throw RunSetupError("cannot start the embedded target: \(error)") }
    }

    func startLoops(count: Int, endpoint: Endpoint) throws(RunSetupError) {
        let runTag = scenario.name
        var token: String? = nil
        if let source = scenario.hub?.accessToken {
            do { token = try ScenarioLoader.resolveToken(source, scenarioFile: scenario.file) } catch { throw RunSetupError("\(error)") }
        }
        if let source = scenario.rest?.token {
            do { token = try ScenarioLoader.resolveToken(source, scenarioFile: scenario.file, field: "rest.token") } catch { throw RunSetupError("\(error)") }
        }
        let headerLines = Array(scenario.headers.map { "\($0.name): \($0.value)\r\n" }.joined().utf8)
        for i in 0..<count {
            let loop: EventLoop
            do { loop = try EventLoop(index: i) } catch { throw RunSetupError("cannot start event loop \(i): \(error)") }
            let mine = Array(stride(from: i, to: scenario.clients, by: count))
            let random = FastRandom(seed: scenario.seed &+ UInt64(i) &* 0x1000_0001)
            switch endpoint {
            case .webSocket(let ws):
                let clients = WebSocketClients(loop: loop, endpoint: ws, clientCount: mine.count, random: random)
                var plan = ChatWorkload.Plan(totalClients: scenario.clients, globalIndices: mine, connectRate: scenario.connectRate,
                                             loadModel: scenario.loadModel, totalRate: scenario.message.ratePerSecond,
                                             thinkTimeNs: nanoseconds(scenario.thinkTimeSeconds), messageSize: scenario.message.size, runTag: runTag)
                plan.reconnect = scenario.reconnect
                plan.heartbeat = scenario.heartbeat
                plan.whileDisconnected = scenario.whileDisconnected
                plan.seed = scenario.seed
                workloads.append(ChatWorkload(ws: clients, plan: plan))
            case .rest(let address, let host, let port, let basePath):
                var plan = RestPlan(totalClients: scenario.clients, globalIndices: mine, connectRate: scenario.connectRate,
                                    spec: scenario.rest ?? RestSpec(), address: address, host: host, port: port, basePath: basePath,
                                    token: token, extraHeaderLines: headerLines, connectTimeoutNs: nanoseconds(scenario.connectTimeoutSeconds),
                                    sourceAddresses: scenario.sourceAddresses.compactMap(parseIPv4))
                plan.loadModel = scenario.loadModel
                plan.thinkTimeNs = nanoseconds(scenario.thinkTimeSeconds)
                workloads.append(RestClients(loop: loop, plan: plan, random: random))
            case .hub(let address, let base):
                let spec = scenario.hub ?? HubSpec()
                var plan = HubPlan(totalClients: scenario.clients, globalIndices: mine, connectRate: scenario.connectRate,
                                   loadModel: scenario.loadModel, totalRate: scenario.message.ratePerSecond,
                                   thinkTimeNs: nanoseconds(scenario.thinkTimeSeconds), messageSize: scenario.message.size, spec: spec,
                                   base: base, accessToken: token, extraHeaderLines: headerLines,
                                   connectTimeoutNs: nanoseconds(scenario.connectTimeoutSeconds), maxMessageBytes: scenario.maxMessageBytes,
                                   sourceAddresses: scenario.sourceAddresses.compactMap(parseIPv4), runTag: runTag)
                plan.whileDisconnected = scenario.whileDisconnected
                plan.seed = scenario.seed
                switch spec.protocolKind {
                case .json: workloads.append(HubClients<JSONHubProtocol>(loop: loop, plan: plan, address: address, random: random))
                case .messagePack: workloads.append(HubClients<MessagePackHubProtocol>(loop: loop, plan: plan, address: address, random: random))
                }
            }
            loops.append(loop)
            loop.start(name: "stampede-loop-\(i)")
        }
    }

    func shutdown(interrupted: Bool) {
        for l in loops { l.stop() }
        for l in loops { l.join() }
        serverLoop?.stop()
        serverLoop?.join()
        childTarget?.stop(graceSeconds: interrupted ? 0.3 : 3)
    }

    /// Starts `stampede serve --admin-port 0` and reads where it listens.
    func startChildTarget() throws(RunSetupError) -> (SocketAddress, Int) {
        guard let executable = options.stampedeExecutable else { throw RunSetupError("no stampede executable to run the target in") }
        var arguments = ["serve", "--port", "0", "--admin-port", "0",
                         "--max-seconds", String(Int(scenario.durationSeconds + scenario.drainSeconds
                                                     + Double(scenario.clients) / scenario.connectRate + scenario.connectTimeoutSeconds * 4 + 120))]
        if scenario.workload == .hub { arguments.append("--hub") }
        var environment: [String: String] = [:]
        if scenario.workload == .rest {
            let c = try embeddedRestConfiguration()
            arguments += ["--rest", "--change-rate", String(c.changeRate), "--body-size", String(c.bodySize)]
            if let limit = c.rateLimit { arguments += ["--rate-limit", String(limit)] }
            if c.chunked { arguments.append("--chunked") }
            if let token = c.token {
                // Through the environment: a command line is visible to every user of the machine.
                arguments += ["--token-env", "STAMPEDE_EMBEDDED_TOKEN"]
                environment["STAMPEDE_EMBEDDED_TOKEN"] = token
            }
        }
        let child: ChildTarget
        do { child = try ChildTarget(executable: executable, arguments: arguments, environment: environment) } catch {
            throw RunSetupError("cannot start the target process: \(error)")
        }
        childTarget = child
        guard let listening = child.waitForLine(prefix: "listening on ", seconds: 30, interrupt: options.interrupt),
              let admin = child.waitForLine(prefix: "admin on http://127.0.0.1:", seconds: 5, interrupt: options.interrupt),
              let port = Int(listening.split(separator: ":").last?.split(separator: "/").first ?? ""),
              let adminPort = Int(admin.split(separator: ":").last ?? "") else {
            if options.interrupt.isRaised { throw RunSetupError("interrupted while the target process started") }
            throw RunSetupError("the target process did not start: \(child.errorOutput.suffix(500))")
        }
        childAdmin = AdminEndpoint(host: "127.0.0.1", port: adminPort)
        progress.note("the embedded target runs in a child process (pid \(child.pid)): both ends of \(scenario.clients) connections do not fit in one process's file descriptors")
        return (.ipv4(0x7F00_0001, port: UInt16(port)), port)
    }

    // MARK: Ticks and intervals

    struct LoopState: Sendable {
        var open = 0, inFlight = 0, notYetStarted = 0, outstanding: UInt64 = 0, sent: UInt64 = 0, fanout: UInt64 = 0
    }

    struct TickState {
        var open = 0, inFlight = 0, notYetStarted = 0, outstanding: UInt64 = 0
        /// Counts since the last interval boundary (not yet in `totals`).
        var sentSinceInterval: UInt64 = 0, fanoutSinceInterval: UInt64 = 0
    }

    /// Sleeps 100 ms, then reads every loop's gauges; on a second boundary merges their measurements.
    func tick() -> TickState {
        Thread.sleep(forTimeInterval: 0.1)
        if EventLoop.now() - lastIntervalNs >= 1_000_000_000 { _ = collectInterval(final: false) }
        var t = TickState()
        for (i, w) in workloads.enumerated() {
            let s = loops[i].submitAndWait { _ in
                LoopState(open: w.openCount, inFlight: w.inFlightConnects, notYetStarted: w.notYetStarted,
                          outstanding: w.totalOutstanding, sent: w.metrics[.messagesSent], fanout: w.metrics[.fanoutReceived])
            }
            t.open += s.open; t.inFlight += s.inFlight; t.notYetStarted += s.notYetStarted; t.outstanding += s.outstanding
            t.sentSinceInterval += s.sent; t.fanoutSinceInterval += s.fanout
        }
        peakOpen = max(peakOpen, t.open)
        lastOpen = t.open
        return t
    }

    struct IntervalData: Sendable {
        var metrics: MetricsShard
        var open: Int
        var connecting: Int
        var reconnecting: Int
        var timerLagNs: UInt64
        var cpuNs: UInt64
    }

    /// Takes each loop's measurements since the last boundary (resetting them there), merges them,
    /// adds them to the totals, and appends a time-series row.
    func collectInterval(final: Bool) -> MetricsShard {
        let now = EventLoop.now()
        var merged = MetricsShard()
        var open = 0, connecting = 0, reconnecting = 0
        var lag: UInt64 = 0
        for (i, w) in workloads.enumerated() {
            let d = loops[i].submitAndWait { loop in
                let cpu = cs_thread_cpu_ns()
                let data = IntervalData(metrics: w.metrics, open: w.openCount, connecting: w.inFlightConnects, reconnecting: w.reconnectingCount,
                                        timerLagNs: loop.takeMaxTimerLag(), cpuNs: cpu)
                w.metrics.reset()
                return data
            }
            merged.add(d.metrics)
            open += d.open
            connecting += d.connecting
            reconnecting += d.reconnecting
            lag = max(lag, d.timerLagNs)
            cpuSeen[i] = d.cpuNs
        }
        let loopCPUNs = cpuSeen.values.reduce(0, +)
        let processCPUNs = cs_process_cpu_ns()
        let wall = Double(now - lastIntervalNs)
        var processPercent = 0.0, loopPercent = 0.0
        if wall >= 0.5e9 && lastProcessCPUNs > 0 {
            processPercent = Double(processCPUNs &- lastProcessCPUNs) / wall * 100
            loopPercent = Double(loopCPUNs &- clientLoopCPUNs) / wall * 100
            peakProcessCPUPercent = max(peakProcessCPUPercent, processPercent)
            peakLoopCPUPercent = max(peakLoopCPUPercent, loopPercent)
        }
        lastProcessCPUNs = processCPUNs
        clientLoopCPUNs = loopCPUNs
        totals.add(merged)
        let rssNow = residentBytes()
        // The interval belongs to the window of the latest event before it (or to the baseline).
        if let current = currentWindow {
            windows[current, default: EventWindow()].add(connectPhaseOf: merged)
            windows[current]!.messagesLost += merged[.messagesLost]
            windows[current]!.peakProcessCPUPercent = max(windows[current]!.peakProcessCPUPercent, processPercent)
            windows[current]!.peakClientLoopCPUPercent = max(windows[current]!.peakClientLoopCPUPercent, loopPercent)
            windows[current]!.peakResidentBytes = max(windows[current]!.peakResidentBytes, rssNow)
        } else {
            baselineWindow.add(connectPhaseOf: merged)
        }
        peakOpen = max(peakOpen, open)
        peakRSS = max(peakRSS, rssNow)
        let elapsed = seconds(now - runStartNs)
        if phase == "messages" || phase == "drain" {
            maxTimerLagNs = max(maxTimerLagNs, lag)
            // Timers more than 10 ms late mean the generator, not the server, is adding latency.
            if lag > 10_000_000 {
                warnings.append(String(format: "generator: timers ran %.1f ms late at %.0f s; latency figures include generator delay", Double(lag) / 1e6, elapsed))
            }
        }
        var rtt = merged.histograms[LatencyMetric.roundTrip.rawValue]
        if rtt.totalCount == 0 && scenario.workload == .rest {
            // REST clients: the progress line's latency is the poll's, 2xx and 304 alike.
            rtt = merged.histograms[LatencyMetric.http2xx.rawValue]
            if merged.histograms[LatencyMetric.http3xx.rawValue].totalCount > 0 { rtt.add(merged.histograms[LatencyMetric.http3xx.rawValue]) }
        }
        let fan = merged.histograms[LatencyMetric.fanout.rawValue]
        var sample = IntervalSample(
            elapsedSeconds: elapsed, openConnections: open, messagesSent: merged[.messagesSent],
            messagesReceived: merged[.messagesDelivered] + merged[.fanoutReceived],
            errors: merged.errors.reduce(0, +),
            p50Micros: rtt.totalCount > 0 ? rtt.valueAtPercentile(50) : 0,
            p99Micros: rtt.totalCount > 0 ? rtt.valueAtPercentile(99) : 0)
        sample.connecting = connecting
        sample.reconnecting = reconnecting
        if !final || sample.messagesSent + sample.messagesReceived + sample.errors > 0 { intervals.append(sample) }
        let dt = max(seconds(now - lastIntervalNs), 0.001)
        lastIntervalNs = now
        progress.show(ProgressLine(elapsed: elapsed, phase: phase, open: open, clients: scenario.clients,
                                   sentPerSecond: Double(sample.messagesSent) / dt, receivedPerSecond: Double(sample.messagesReceived) / dt,
                                   p50Micros: sample.p50Micros, p99Micros: sample.p99Micros, fanoutP99Micros: fan.totalCount > 0 ? fan.valueAtPercentile(99) : 0,
                                   errors: totals.errors.reduce(0, +)))
        return merged
    }
    var cpuSeen: [Int: UInt64] = [:]
    var peakRSS: UInt64 = 0
    var lastProcessCPUNs: UInt64 = 0
    var peakProcessCPUPercent = 0.0
    var peakLoopCPUPercent = 0.0
    /// Measurements per event window (by event index) and before any event.
    var windows: [Int: EventWindow] = [:]
    var baselineWindow = EventWindow()
    var currentWindow: Int? = nil
    var messageStartNs: UInt64 = 0
    var commandRuns: [Int: ExternalCommandRun] = [:]
    var faultErrors: [Int: String] = [:]
    var activeChurns: [ChurnState] = []
    var targetInChildProcess = false
    var childTarget: ChildTarget?
    var childAdmin: AdminEndpoint?

    /// This process's resident memory (/proc/self/statm), bytes; 0 if unreadable.
    func residentBytes() -> UInt64 {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = UInt64(fields[1]) else { return 0 }
        return pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Merges every loop's view of each storm (read once, at the end).
    func collectStorms() -> [StormRecord] {
        var merged: [StormShard] = []
        for (i, w) in workloads.enumerated() {
            let shards = loops[i].submitAndWait { _ in w.storms }
            for (n, shard) in shards.enumerated() {
                if n >= merged.count { merged.append(StormShard()) }
                merged[n].add(shard)
            }
        }
        return scenario.events.enumerated().compactMap { index, event in
            guard event.measuresRecovery else { return nil }
            var fraction: Double? = nil
            if case .storm(let f, _, _) = event.kind { fraction = f }
            return StormRecord(number: index + 1, atSeconds: event.atSeconds, kind: event.kindName, mode: event.detail, fraction: fraction,
                               shard: index < merged.count ? merged[index] : StormShard(), window: windows[index] ?? EventWindow(),
                               command: commandRuns[index]?.finished, faultError: faultErrors[index])
        }
    }

    // MARK: Events

    /// Starts event `index` at its own instant `atNs` on every loop, so recovery times share one origin.
    func start(_ event: ScenarioEvent, index: Int, atNs: UInt64) {
        if event.measuresRecovery {
            _ = collectInterval(final: false)  // what came before belongs to the previous window
            currentWindow = index
        }
        switch event.kind {
        case .storm(let fraction, let mode, let stall):
            let stallNs = nanoseconds(stall)
            for (i, w) in workloads.enumerated() {
                loops[i].execute { _ in w.storm(index: index, atNs: atNs, fraction: fraction, mode: mode, stallNs: stallNs) }
            }
        case .server(let fault):
            for (i, w) in workloads.enumerated() { loops[i].execute { _ in w.watch(index: index, atNs: atNs) } }
            if let problem = applyServerFault(fault) {
                faultErrors[index] = problem
                warnings.append("event \(index + 1) (server \(fault)): \(problem)")
            }
        case .command(let command):
            for (i, w) in workloads.enumerated() { loops[i].execute { _ in w.watch(index: index, atNs: atNs) } }
            let folder = scenario.file.isEmpty ? "" : URL(fileURLWithPath: scenario.file).deletingLastPathComponent().path
            commandRuns[index] = ExternalCommandRun(number: index + 1, command: command, workingDirectory: folder)
        case .churn(let rate, let length):
            activeChurns.append(ChurnState(ratePerSecond: rate, endNs: atNs + nanoseconds(length), lastNs: atNs))
        }
    }

    /// A churn event under way: clients due to leave and rejoin are handed out to the loops once
    /// per tick, the fraction carried over.
    struct ChurnState {
        var ratePerSecond: Double
        var endNs: UInt64
        var lastNs: UInt64
        var carry = 0.0
        var rotation = 0
    }

    func runChurn(until phaseEndNs: UInt64) {
        guard !activeChurns.isEmpty else { return }
        let now = EventLoop.now()
        for c in activeChurns.indices {
            let until = min(now, activeChurns[c].endNs, phaseEndNs)
            guard until > activeChurns[c].lastNs else { continue }
            activeChurns[c].carry += activeChurns[c].ratePerSecond * Double(until - activeChurns[c].lastNs) / 1e9
            activeChurns[c].lastNs = until
            let due = Int(activeChurns[c].carry)
            guard due > 0 else { continue }
            activeChurns[c].carry -= Double(due)
            let n = workloads.count
            for j in 0..<n {
                let i = (j + activeChurns[c].rotation) % n
                let share = due / n + (j < due % n ? 1 : 0)
                guard share > 0 else { continue }
                loops[i].execute { [w = workloads[i]] _ in w.churn(count: share) }
            }
            activeChurns[c].rotation += 1
        }
        activeChurns.removeAll { $0.lastNs >= $0.endNs }
    }

    func currentOpen() -> Int {
        loops.indices.reduce(0) { n, i in n + loops[i].submitAndWait { [w = workloads[i]] _ in w.openCount } }
    }

    func seconds(_ ns: UInt64) -> Double { Double(ns) / 1e9 }

    /// Whether every message should reach every other connected client: the chat room, or hub
    /// clients that receive broadcasts without groups. (With groups the expectation is not computed.)
    var expectsFanout: Bool {
        switch scenario.workload {
        case .chat: true
        case .hub: scenario.hub?.receiveMethod != nil && scenario.hub?.join == nil && scenario.hub?.operation != .stream
        case .rest: false
        }
    }

    func targetDescription(_ e: Endpoint) -> String {
        scenario.target == .embedded ? "the embedded target" : scenario.target.description
    }

    func describeConnectErrors() -> String {
        let parts = ErrorClass.allCases.compactMap { e -> String? in
            let n = totals.errorCount(e)
            return n > 0 ? "\(e.key) × \(n)" : nil
        }
        var text = parts.isEmpty ? "no connection completed" : parts.joined(separator: ", ")
        if !totals.upgradeStatuses.isEmpty {
            text += " (HTTP " + totals.upgradeStatuses.sorted { $0.key < $1.key }.map { "\($0.key) × \($0.value)" }.joined(separator: ", ") + ")"
        }
        return text
    }

    func environment(loops: Int) -> RunEnvironment {
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, 255)
        var u = utsname()
        uname(&u)
        let sys = withUnsafeBytes(of: &u.sysname) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let rel = withUnsafeBytes(of: &u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return RunEnvironment(stampedeVersion: Self.version, hostname: String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), cores: ProcessInfo.processInfo.activeProcessorCount,
                              loops: loops, os: "\(sys) \(rel)", clock: "monotonic", commandLine: options.commandLine)
    }
}
