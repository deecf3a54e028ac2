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
    /// Merged histograms of the message phase only (the steady-state figures).
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
    /// Round-trip latency (corrected) percentiles of this interval, microseconds; 0 when nothing was recorded.
    public var p50Micros: UInt64
    public var p99Micros: UInt64
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
    public init(processCPUSeconds: Double, clientLoopCPUSeconds: Double, maxTimerLagMicros: UInt64, saturated: Bool, warnings: [String],
                residentBytesBeforeConnect: UInt64 = 0, residentBytesConnected: UInt64 = 0, peakResidentBytes: UInt64 = 0) {
        self.processCPUSeconds = processCPUSeconds; self.clientLoopCPUSeconds = clientLoopCPUSeconds
        self.maxTimerLagMicros = maxTimerLagMicros; self.saturated = saturated; self.warnings = warnings
        self.residentBytesBeforeConnect = residentBytesBeforeConnect; self.residentBytesConnected = residentBytesConnected
        self.peakResidentBytes = peakResidentBytes
    }
}

/// One storm event and its merged measurements.
public struct StormRecord: Sendable {
    /// 1-based, as in `storm-<n>.csv`.
    public var number: Int
    /// Seconds after the message phase started.
    public var atSeconds: Double
    public var fraction: Double
    public var mode: StormMode
    public var shard: StormShard
    public init(number: Int, atSeconds: Double, fraction: Double, mode: StormMode, shard: StormShard) {
        self.number = number; self.atSeconds = atSeconds; self.fraction = fraction; self.mode = mode; self.shard = shard
    }
}
