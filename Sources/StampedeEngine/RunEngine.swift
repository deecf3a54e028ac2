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
    /// Called on the engine's thread at the end of every interval (`IntervalReport`); it must
    /// return quickly (copy what it needs), because the next tick waits for it.
    public var intervalObserver: (@Sendable (IntervalReport) -> Void)? = nil

    /// A run whose load is changed as it goes (`stampede capacity` on held connections): its
    /// commands are applied at every tick of the message phase, and the phase lasts until it
    /// says `endMessages` (or the scenario's duration, a backstop). Nil for a run as written.
    public var steering: RunSteering? = nil

    /// The results folder's name instead of `<scenario name>-<timestamp>` (inside `resultsRoot`).
    public var resultsFolderName: String? = nil

    /// Where the clients run: nil for this process (or local worker processes when its
    /// descriptors do not hold them and `scenarioSource` is given), else the workers asked for.
    public var fleet: FleetSpec? = nil
    /// The scenario's text and overrides, which worker processes parse as this process did;
    /// without it the run cannot use workers.
    public var scenarioSource: ScenarioSource? = nil

    /// One population of a run with several (`PopulationRun`): the embedded target it shares
    /// with the others (started once, not by this engine), and the clock that gives every
    /// population the same message phase. Nil for a run of one population.
    public var population: PopulationRole? = nil

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
    /// `RunExitStatus`: 0 passed, 1 the run failed (target unreachable, nothing connected), 99 a
    /// threshold failed, 98 the generator was saturated (with thresholds), 130 interrupted.
    public var exitCode: Int32
    /// CPU of the run's worker processes (0 in one process), seconds; `generator.process_cpu_s`
    /// counts it with this process's.
    public var workerCPUSeconds: Double = 0
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
    /// Timers later than this (10 ms) mean the generator, not the server, is adding latency; kept up
    /// (`GeneratorDelay.sustainedIntervals`), the run is marked saturated.
    public static let saturationTimerLagNs: UInt64 = GeneratorDelay.lateTimerNs

    let scenario: Scenario
    let options: RunOptions
    /// The clients: this process's loops, or one group per worker process.
    var groups: [any ClientGroup] = []
    /// What the engine knows of the scenario's workload.
    let kind: any WorkloadKind
    var serverLoop: EventLoop?
    /// The embedded reference server, when it runs in this process.
    var embeddedServer: (any FaultTarget)?
    var totals = MetricsShard()
    var warnings: [String] = []
    var runStartNs: UInt64 = 0
    /// The wall clock at `runStartNs`: the .hlog files' StartTime.
    var runStartDate = Date()
    /// Each interval's .hlog lines and timeseries.csv row, appended to files as the run goes
    /// (nothing of them is kept in memory); set when the run starts.
    var spool: IntervalSpool?
    var lastIntervalNs: UInt64 = 0
    /// Where the loops' counts of the last interval ended (`GroupInterval.boundaryNs`).
    var lastBoundaryNs: UInt64 = 0
    var lastOpen = 0
    var phase = RunPhase.rampUp
    let progress: ProgressPrinter
    var messageStartNs: UInt64 = 0
    /// Where the message phase ends (`duration` after its start, or the run's end for a
    /// population that joined late).
    var messageEndNs: UInt64 = 0
    /// `clients.stages`: the clients the engine has asked to be connected (joins less leaves),
    /// and the fan-out due so far, interval by interval (RunEngine+ClientProfile.swift).
    var profileClients = 0
    /// Seconds into the message phase of the profile's last tick (-1: none yet).
    var profileSeconds = -1.0
    var profileFanoutDue: UInt64 = 0
    var openAtLastInterval = 0
    /// `RunOptions.steering`: the clients it wants connected (nil until it says), and the rate
    /// the schedule follows (changed by it), for timeseries.csv's target rate.
    var steeredClients: Int?
    lazy var rateProfile = RateProfile(scenario.message)
    /// The generator's own health, as the intervals saw it.
    var gauges = GeneratorGauges()
    /// What the scenario's events did, window by window.
    var eventBook = EventBook()
    var targetInChildProcess = false
    /// Set when a worker process was lost: the run stops, marked partial, and fails.
    var fleetFailure: String?
    /// Server processes of the child target (`RunPlan.targetProcesses`).
    var targetProcesses = 1
    var childTarget: ChildTarget?
    var childAdmin: AdminEndpoint?
    /// The clients' TLS (`tls:`), nil for plain TCP.
    var clientTLS: ClientTLS?
    /// The embedded target's throw-away certificate (PEM), when it serves TLS.
    var embeddedCertificatePEM: String?
    /// The scenario's thresholds as the run goes (RunEngine+Thresholds.swift).
    lazy var thresholdBook = ThresholdEvaluator(scenario.thresholds)
    /// Where the last interval ended, in seconds of the message phase (ends an `after`-only window).
    var lastThresholdMessageSeconds = 0.0

    public init(scenario: Scenario, options: RunOptions) {
        self.scenario = scenario
        self.options = options
        kind = WorkloadKinds.kind(of: scenario.workload)
        progress = ProgressPrinter(style: options.progress)
    }

    /// Runs to completion (or interruption) and writes `results/<name>-<timestamp>/`.
    public func run() throws(RunSetupError) -> RunOutcome {
        let startedAt = Date()
        let cpuAtStart = cs_process_cpu_ns()  // the workers' CPU counts from their start
        // One population of several: the run (PopulationRun) has checked the descriptors of them all.
        let limit = options.population == nil ? cs_raise_open_files_limit() : 0
        let plan = RunPlan(scenario: scenario, loops: options.loops, openFilesLimit: Int(limit), canSpawnTarget: options.stampedeExecutable != nil,
                           fleet: options.fleet, canSpawnWorkers: options.stampedeExecutable != nil && options.scenarioSource != nil)
        if let problem = plan.problem { throw RunSetupError(problem) }
        targetInChildProcess = plan.targetInChildProcess
        targetProcesses = plan.targetProcesses
        // Before the target starts: a setup that fails half-way still stops what it started.
        defer { shutdown(interrupted: options.interrupt.isRaised) }
        let spool: IntervalSpool
        do { spool = try IntervalSpool.spool(in: options.resultsRoot) } catch {
            throw RunSetupError("cannot write results in \(options.resultsRoot.path): \(error)")
        }
        self.spool = spool
        // A run that ends without a record to write (a setup error) leaves no spool behind.
        var spoolHandedOver = false
        defer { if !spoolHandedOver { spool.finish().discard() } }
        let endpoint = try startTarget()
        clientTLS = try makeClientTLS(embeddedCertificatePEM: embeddedCertificatePEM)
        try startClients(plan: plan, endpoint: endpoint)
        let loopCount = groups.reduce(0) { $0 + $1.loopCount }

        runStartNs = EventLoop.now()
        runStartDate = Date()
        spool.startTime = runStartDate
        lastIntervalNs = runStartNs
        lastBoundaryNs = runStartNs
        let rssBeforeConnect = generatorResidentBytes()
        var partialReason: String? = nil
        var fatal: String? = nil

        // Phase 1: ramp-up (after the population's start, when it joins a run under way).
        let clock = options.population?.clock
        // Every path out of the run tells the other populations this one no longer sends.
        var toldClock = (connected: false, drained: false)
        defer {
            if !toldClock.connected, options.population?.startsLater == false { clock?.giveUp() }
            if !toldClock.drained { clock?.drained() }
        }
        let rampStart = EventLoop.now() + 20_000_000
        for g in groups { g.beginRampUp(startNs: rampStart) }
        // Every client's attempt ends by itself (connect, upgrade and handshake timeouts); the budget is only a backstop.
        let rampBudgetNs = plan.rampBudgetNs
        while true {
            let s = tick()
            if s.notYetStarted == 0 && s.inFlight == 0 { break }
            if options.interrupt.isRaised { partialReason = "interrupted during ramp-up"; break }
            if let reason = thresholdBook.abortReason ?? fleetFailure { partialReason = reason; break }
            if EventLoop.now() - rampStart > rampBudgetNs { warnings.append("ramp-up did not finish in time"); break }
        }
        let rampSeconds = seconds(EventLoop.now() - runStartNs)
        let openAtStart = currentOpen()
        let rssConnected = generatorResidentBytes()
        gauges.peakRSS = max(gauges.peakRSS, rssConnected)
        var messageSeconds = 0.0, drainSeconds = 0.0
        var lossReason = LossReason.timedOut

        // `clients: {start: 0, stages: …}`: nobody is meant to be connected yet.
        let nobodyDue = scenario.clientProfile?.start == 0
        if openAtStart == 0 && partialReason == nil && !nobodyDue {
            _ = collectInterval(final: true)  // bring the connect errors into the totals for the message
            fatal = "no client could connect to \(targetDescription(endpoint)): " + describeConnectErrors()
        } else if partialReason == nil {
            // Phase 2: messages.
            phase = .messages
            var t0 = EventLoop.now() + 50_000_000
            var t1 = t0 + plan.durationNs
            if let role = options.population {
                toldClock.connected = true
                let shared = role.startsLater ? role.clock.join() : role.clock.arrive(interrupt: options.interrupt)
                if let shared { (t0, t1) = shared } else { t1 = t0 }
            }
            for g in groups { g.beginMessages(startNs: t0, endNs: t1) }
            var drops = options.connectionDrops.sorted { $0.atSeconds < $1.atSeconds }
            var events = Array(scenario.events.enumerated())
            messageStartNs = t0
            messageEndNs = t1
            profileClients = min(scenario.clientProfile?.start ?? 0, scenario.clients)
            while EventLoop.now() < t1 {
                let state = tick()
                if let next = drops.first, EventLoop.now() >= t0 + nanoseconds(next.atSeconds) {
                    drops.removeFirst()
                    for g in groups { g.dropConnections(fraction: next.fraction) }
                }
                while let (index, event) = events.first, EventLoop.now() >= t0 + nanoseconds(event.atSeconds) {
                    events.removeFirst()
                    start(event, index: index, atNs: t0 + nanoseconds(event.atSeconds))
                }
                runChurn(until: t1)
                followClientProfile(phaseStartNs: t0)
                if let steering = options.steering, steer(steering, state: state) {
                    t1 = EventLoop.now()
                    messageEndNs = t1
                }
                if options.interrupt.isRaised { partialReason = "interrupted during the message phase"; break }
                if let reason = thresholdBook.abortReason ?? fleetFailure { partialReason = reason; break }
            }
            messageSeconds = seconds(min(EventLoop.now(), t1) - t0)

            // Phase 3: drain.
            phase = .drain
            for g in groups { g.beginDrain() }
            let drainStart = EventLoop.now()
            let drainEnd = drainStart + plan.drainNs
            var fanoutAtLastTick: UInt64 = .max
            while partialReason == nil {
                let s = tick()
                // Without the every-client rule, what the clients counted as due (a flow's declared groups; else 0).
                let expected = !expectsFanout ? totals[.fanoutExpected]
                    : scenario.clientProfile != nil ? profileFanoutDue + s.sentSinceInterval * UInt64(max(0, s.open - 1))
                    : (totals[.messagesSent] + s.sentSinceInterval) * UInt64(max(0, openAtStart - 1))
                let fanoutDone = totals[.fanoutReceived] + s.fanoutSinceInterval >= expected
                let received = totals[.fanoutReceived] + s.fanoutSinceInterval
                if s.outstanding == 0 && fanoutDone {
                    // With populations: stay until every population is done sending and no
                    // broadcast has arrived for a tick, so that this one's clients receive the
                    // others' last messages.
                    guard let clock else { break }
                    if !toldClock.drained { clock.drained(); toldClock.drained = true }
                    if clock.everyoneDrained && received == fanoutAtLastTick { break }
                }
                fanoutAtLastTick = received
                if options.interrupt.isRaised { partialReason = "interrupted while draining"; break }
                if let reason = thresholdBook.abortReason ?? fleetFailure { partialReason = reason; break }
                if EventLoop.now() >= drainEnd { break }
            }
            drainSeconds = seconds(EventLoop.now() - drainStart)
        }
        if partialReason != nil { lossReason = .interrupted }

        // Phase 4: close every connection cleanly; whatever is still outstanding is counted lost.
        phase = .closing
        let openAtEnd = currentOpen()
        let reason = lossReason
        for g in groups { g.closeAll(lostReason: reason) }
        // Interrupted, the whole process must be gone within 2 s of the signal: the close
        // handshakes get a moment, then the loops drop what is left (the counts are final already).
        let interrupted = partialReason != nil
        let closeDeadline = EventLoop.now() + (interrupted ? 300_000_000 : 4_000_000_000)
        while EventLoop.now() < closeDeadline {
            let live = groups.reduce(0) { $0 + $1.liveClients() }
            if live == 0 { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        _ = collectInterval(final: true)
        progress.finish()
        let storms = collectStorms()
        // A command still running is waited for briefly; its outcome says whether it finished.
        for run in eventBook.commandRuns.values where run.finished == nil { _ = run.wait(seconds: interrupted ? 0.1 : 2) }

        if expectsFanout {
            totals.counters[Counter.fanoutExpected.rawValue] = scenario.clientProfile != nil ? profileFanoutDue
                : totals[.messagesSent] * UInt64(max(0, openAtStart - 1))
        }
        let processCPU = Double(generatorCPUNs() - cpuAtStart) / 1e9
        let clientCPU = Double(gauges.clientLoopCPUNs) / 1e9
        warnings += kind.warnings(scenario, totals: totals)
        let saturated = gauges.saturation.saturated
        var record = RunRecord(
            scenario: scenario, startedAt: startedAt, endedAt: Date(), partial: partialReason != nil || fatal != nil,
            partialReason: partialReason ?? (fatal != nil ? "the run failed" : nil), fatalError: fatal, totals: totals, intervals: [],
            environment: environment(loops: loopCount), peakOpenConnections: gauges.peakOpen, openConnectionsAtEnd: openAtEnd,
            phaseSeconds: PhaseSeconds(rampUp: rampSeconds, messages: messageSeconds, drain: drainSeconds),
            generator: GeneratorHealth(processCPUSeconds: processCPU, clientLoopCPUSeconds: clientCPU,
                                       maxTimerLagMicros: gauges.maxTimerLagNs / 1000, saturated: saturated, warnings: warnings,
                                       residentBytesBeforeConnect: rssBeforeConnect, residentBytesConnected: rssConnected,
                                       peakResidentBytes: gauges.peakRSS), storms: storms)
        record.generator.peakProcessCPUPercent = gauges.peakProcessCPUPercent
        record.generator.peakClientLoopCPUPercent = gauges.peakLoopCPUPercent
        record.baselineConnectPhase = eventBook.baselineWindow
        record.tlsFailureReasons = clientTLS?.context.handshakeCounts.reasons
        record.histogramLogStartTime = runStartDate
        record.spooledIntervals = spool.finish()
        spoolHandedOver = true
        record.thresholds = GeneratorDelay.judge(thresholdResults(storms: ResultsWriter.summary(of: record).storms),
                                                 lagMicros: gauges.maxTimerLagNs / 1000, saturated: saturated)
        record.workers = workerRecords()
        let stoppedByThreshold = partialReason != nil && partialReason == thresholdBook.abortReason
        let workerCPUSeconds = Double(gauges.workerProcessCPUNs.values.reduce(0, +)) / 1e9
        var outcome = RunOutcome(record: record, summary: ResultsWriter.summary(of: record), resultsFolder: nil, writeError: nil,
                                 exitCode: Self.exitCode(failed: fatal != nil || fleetFailure != nil, interrupted: partialReason != nil && !stoppedByThreshold,
                                                         thresholds: record.thresholds))
        outcome.workerCPUSeconds = workerCPUSeconds
        // One population of several: the run (PopulationRun) writes it, once it knows the fan-out it was due.
        guard options.population == nil else { return outcome }
        do {
            outcome.resultsFolder = try ResultsWriter.write(record, resultsRoot: options.resultsRoot, folderName: options.resultsFolderName)
        } catch {
            outcome.writeError = "\(error)"
            if outcome.exitCode == 0 { outcome.exitCode = 1 }
        }
        return outcome
    }

    func currentOpen() -> Int {
        groups.reduce(0) { $0 + $1.state().open }
    }

    func seconds(_ ns: UInt64) -> Double { Double(ns) / 1e9 }

    /// Whether every message should reach every other connected client (`WorkloadKind.expectsFanout`).
    var expectsFanout: Bool { kind.expectsFanout(scenario) }

    func targetDescription(_ e: ClientEndpoint) -> String {
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
        var u = utsname()
        uname(&u)
        let sys = withUnsafeBytes(of: &u.sysname) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let rel = withUnsafeBytes(of: &u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return RunEnvironment(stampedeVersion: Self.version, hostname: FleetSockets.hostname, cores: ProcessInfo.processInfo.activeProcessorCount,
                              loops: loops, os: "\(sys) \(rel)", clock: "monotonic", commandLine: options.commandLine)
    }
}

/// The generator's own health over a run, updated at every interval boundary.
struct GeneratorGauges {
    var peakOpen = 0
    var maxTimerLagNs: UInt64 = 0
    /// Whether the generator was saturated: late timers or busy loops, sustained.
    var saturation = SaturationWatch()
    /// CPU of the client loops so far, and per loop at the last boundary.
    var clientLoopCPUNs: UInt64 = 0
    var cpuSeen: [Int: UInt64] = [:]
    var peakRSS: UInt64 = 0
    var lastProcessCPUNs: UInt64 = 0
    var peakProcessCPUPercent = 0.0
    var peakLoopCPUPercent = 0.0
    /// Worker processes' own CPU and memory at their last interval, by group.
    var workerProcessCPUNs: [Int: UInt64] = [:]
    var workerResidentBytes: [Int: UInt64] = [:]
}

/// The scenario's events as the run goes: measurements per event window (by event index) and
/// before any event, commands started, faults that could not be applied, churns under way.
struct EventBook {
    var windows: [Int: EventWindow] = [:]
    var baselineWindow = EventWindow()
    var currentWindow: Int? = nil
    var commandRuns: [Int: ExternalCommandRun] = [:]
    var faultErrors: [Int: String] = [:]
    var activeChurns: [RunEngine.ChurnState] = []
}
