import Foundation
import StampedeMetrics
import StampedeScenario

/// Everything a finished (or interrupted) run hands to `ResultsWriter`.
public struct RunRecord: Sendable {
    public var scenario: Scenario
    /// Wall-clock start and end (only for naming and the record; latencies use the monotonic clock).
    public var startedAt: Date
    public var endedAt: Date
    /// True when the run ended early (Ctrl-C, SIGTERM, fatal error): what is here is what was gathered.
    public var partial: Bool
    public var partialReason: String?
    /// A run-level failure ("target unreachable: connection refused by 127.0.0.1:9"), if any.
    public var fatalError: String?
    /// Totals over the whole run, all loops merged.
    public var totals: MetricsShard
    /// timeseries.csv's rows, when they are not in `spooledIntervals`.
    public var intervals: [IntervalSample]
    public var environment: RunEnvironment
    /// Largest number of connections open at once.
    public var peakOpenConnections: Int
    /// Connections still open at the end of the run (before closing).
    public var openConnectionsAtEnd: Int
    /// Seconds spent connecting (ramp-up), in the message phase, and draining.
    public var phaseSeconds: PhaseSeconds
    /// Generator self-checks: process CPU, worst timer lag, and warnings (saturation).
    public var generator: GeneratorHealth
    /// Connection storms, in order, with what every loop saw of each.
    public var storms: [StormRecord] = []
    /// Connect-phase latencies before the first event (ramp-up and steady load): the baseline
    /// each event's window is compared with.
    public var baselineConnectPhase = EventWindow()
    /// TLS runs: the clients' handshake failures by OpenSSL's reason ("certificate has
    /// expired" …); nil when the clients spoke plain TCP.
    public var tlsFailureReasons: [String: Int]? = nil
    /// Each latency metric's interval histograms as .hlog lines (`HistogramLog.line`), one per
    /// interval with samples, and the files' StartTime (the wall clock when the run's clock
    /// started). A metric with samples but no lines (a record not made by the engine) gets one
    /// interval spanning the run.
    public var histogramLogLines: [LatencyMetric: [String]] = [:]
    public var histogramLogStartTime: Date? = nil
    /// As `histogramLogLines`, for the latencies a scenario names (`MetricsShard.named`), by key.
    public var namedHistogramLogLines: [String: [String]] = [:]
    /// The engine's interval files (each metric's .hlog lines, timeseries.csv's rows), written
    /// as the run went (`IntervalSpool`); `ResultsWriter.write` moves them into the results
    /// folder in place of rendering `histogramLogLines` and `intervals`. nil for a record made
    /// without them.
    public var spooledIntervals: SpooledIntervals? = nil
    /// How the scenario's thresholds fared (set by the engine at the end of the run); nil when it has none.
    public var thresholds: [RunSummary.Threshold]? = nil
    /// The worker processes of a run spread over several; nil for a run in one process.
    public var workers: [RunSummary.Worker]? = nil

    public init(scenario: Scenario, startedAt: Date, endedAt: Date, partial: Bool, partialReason: String?, fatalError: String?,
                totals: MetricsShard, intervals: [IntervalSample], environment: RunEnvironment, peakOpenConnections: Int,
                openConnectionsAtEnd: Int, phaseSeconds: PhaseSeconds, generator: GeneratorHealth, storms: [StormRecord] = []) {
        self.storms = storms
        self.scenario = scenario; self.startedAt = startedAt; self.endedAt = endedAt; self.partial = partial
        self.partialReason = partialReason; self.fatalError = fatalError; self.totals = totals; self.intervals = intervals
        self.environment = environment; self.peakOpenConnections = peakOpenConnections
        self.openConnectionsAtEnd = openConnectionsAtEnd; self.phaseSeconds = phaseSeconds; self.generator = generator
    }
}

/// One row of timeseries.csv: what happened in one interval (normally one second).
public struct IntervalSample: Sendable, Equatable {
    /// Seconds since the run started, at the end of this interval.
    public var elapsedSeconds: Double
    public var openConnections: Int
    /// Clients connecting (first attempt or a restart) and waiting to reconnect, at the end of the interval.
    public var connecting: Int = 0
    public var reconnecting: Int = 0
    public var messagesSent: UInt64
    /// Own echoes plus broadcasts of others received in this interval.
    public var messagesReceived: UInt64
    /// Errors of every class in this interval.
    public var errors: UInt64
    /// Errors in this interval by class, indexed by `ErrorClass.rawValue` (empty: none known).
    public var errorsByClass: [UInt64] = []
    /// Round-trip latency (corrected) percentiles of this interval, microseconds; 0 when nothing was recorded.
    public var p50Micros: UInt64
    public var p99Micros: UInt64
    /// Open model: messages per second the schedule intended over this interval (`message.rate`
    /// or `message.stages`, within the message phase); 0 without an arrival rate.
    public var targetRate: Double = 0
    public init(elapsedSeconds: Double, openConnections: Int, messagesSent: UInt64, messagesReceived: UInt64, errors: UInt64, p50Micros: UInt64, p99Micros: UInt64) {
        self.elapsedSeconds = elapsedSeconds; self.openConnections = openConnections; self.messagesSent = messagesSent
        self.messagesReceived = messagesReceived; self.errors = errors; self.p50Micros = p50Micros; self.p99Micros = p99Micros
    }
}

public struct RunEnvironment: Sendable, Equatable {
    public var stampedeVersion: String
    public var hostname: String
    public var cores: Int
    /// Client event loops used (one thread each).
    public var loops: Int
    public var os: String
    /// How timestamps in payloads are taken: "monotonic" (one host).
    public var clock: String
    public var commandLine: [String]
    public init(stampedeVersion: String, hostname: String, cores: Int, loops: Int, os: String, clock: String, commandLine: [String]) {
        self.stampedeVersion = stampedeVersion; self.hostname = hostname; self.cores = cores; self.loops = loops
        self.os = os; self.clock = clock; self.commandLine = commandLine
    }
}

public struct PhaseSeconds: Sendable, Equatable {
    public var rampUp: Double
    public var messages: Double
    public var drain: Double
    public init(rampUp: Double, messages: Double, drain: Double) { self.rampUp = rampUp; self.messages = messages; self.drain = drain }
}

public struct GeneratorHealth: Sendable, Equatable {
    /// CPU seconds used by the whole Stampede process (embedded target included when present).
    public var processCPUSeconds: Double
    /// CPU seconds used by the client loop threads only.
    public var clientLoopCPUSeconds: Double
    /// Worst lateness of a timer against its deadline, microseconds.
    public var maxTimerLagMicros: UInt64
    /// True when the generator itself was a bottleneck (timer lag or CPU over threshold): the
    /// latency figures then partly belong to the generator, not the server.
    public var saturated: Bool
    public var warnings: [String]
    /// Resident memory of the process before the first connect, once every client had connected
    /// (idle, before the message phase), and its peak; bytes, 0 when unknown.
    public var residentBytesBeforeConnect: UInt64
    public var residentBytesConnected: UInt64
    public var peakResidentBytes: UInt64
    /// Peak over one-second intervals of process CPU and client-loop CPU, percent of one core.
    public var peakProcessCPUPercent: Double = 0
    public var peakClientLoopCPUPercent: Double = 0
    public init(processCPUSeconds: Double, clientLoopCPUSeconds: Double, maxTimerLagMicros: UInt64, saturated: Bool, warnings: [String],
                residentBytesBeforeConnect: UInt64 = 0, residentBytesConnected: UInt64 = 0, peakResidentBytes: UInt64 = 0) {
        self.processCPUSeconds = processCPUSeconds; self.clientLoopCPUSeconds = clientLoopCPUSeconds
        self.maxTimerLagMicros = maxTimerLagMicros; self.saturated = saturated; self.warnings = warnings
        self.residentBytesBeforeConnect = residentBytesBeforeConnect; self.residentBytesConnected = residentBytesConnected
        self.peakResidentBytes = peakResidentBytes
    }
}

/// One event whose recovery is measured (a storm, a server fault, an external command) and
/// its merged measurements.
public struct StormRecord: Sendable {
    /// 1-based position among the scenario's events, as in `storm-<n>.csv`.
    public var number: Int
    /// Seconds after the message phase started.
    public var atSeconds: Double
    /// "storm", "server" or "command".
    public var kind: String
    /// What it did: the storm mode ("reset", "stall 20s"), the fault ("drop reset"), or the command.
    public var mode: String
    /// Storms only: the share of connected clients hit.
    public var fraction: Double?
    public var shard: StormShard
    /// Measured from the event until the next one (or the end of the run).
    public var window: EventWindow
    /// Command events: how the command went.
    public var command: CommandOutcome?
    /// Server events: why the fault could not be applied, if it could not.
    public var faultError: String?
    public init(number: Int, atSeconds: Double, kind: String, mode: String, fraction: Double?, shard: StormShard,
                window: EventWindow = EventWindow(), command: CommandOutcome? = nil, faultError: String? = nil) {
        self.number = number; self.atSeconds = atSeconds; self.kind = kind; self.mode = mode; self.fraction = fraction
        self.shard = shard; self.window = window; self.command = command; self.faultError = faultError
    }
}

/// What the generator measured in the interval windows from an event until the next: the
/// connect-phase latencies (to set against the steady state before any event), the messages
/// lost, and the generator's own peak CPU and memory.
public struct EventWindow: Sendable {
    /// TCP connect, upgrade, negotiate and handshake times of every connect in the window.
    public var connectPhase: [LatencyMetric: LatencyHistogram] = [:]
    public var messagesLost: UInt64 = 0
    /// Peak over one-second intervals: process CPU and client-loop CPU, percent of one core.
    public var peakProcessCPUPercent: Double = 0
    public var peakClientLoopCPUPercent: Double = 0
    public var peakResidentBytes: UInt64 = 0
    public init() {}

    /// The metrics that describe getting connected.
    public static let connectMetrics: [LatencyMetric] = [.tcpConnect, .upgrade, .negotiate, .handshake]

    public mutating func add(connectPhaseOf shard: MetricsShard) {
        for m in Self.connectMetrics {
            let h = shard.histograms[m.rawValue]
            guard h.totalCount > 0 else { continue }
            if connectPhase[m] == nil { connectPhase[m] = makeLatencyHistogram() }
            connectPhase[m]!.add(h)
        }
    }
}

/// How an event's external command went.
public struct CommandOutcome: Sendable, Equatable {
    public var number: Int
    public var command: String
    /// Exit status when it exited; nil when a signal ended it (`signal`) or it never started.
    public var exitStatus: Int32?
    public var signal: Int32?
    /// Killed at its timeout.
    public var timedOut: Bool
    public var durationSeconds: Double
    /// stdout and stderr together, up to 256 KiB (`outputTruncated` beyond).
    public var output: String
    public var outputTruncated: Bool
    /// The shell could not be started.
    public var launchError: String?
    public init(number: Int, command: String, exitStatus: Int32?, signal: Int32?, timedOut: Bool, durationSeconds: Double,
                output: String, outputTruncated: Bool, launchError: String?) {
        self.number = number; self.command = command; self.exitStatus = exitStatus; self.signal = signal; self.timedOut = timedOut
        self.durationSeconds = durationSeconds; self.output = output; self.outputTruncated = outputTruncated; self.launchError = launchError
    }
    /// True when it exited with status 0.
    public var succeeded: Bool { exitStatus == 0 && !timedOut }
}
