import Foundation

/// The contents of `summary.json`, schema `stampede.summary/1`.
///
/// Every field is documented for users in `docs/results.md`. Keys are snake_case; latencies are
/// microseconds, durations seconds. Optional fields are written as JSON `null`, never left out,
/// so readers can rely on every key being present.
public struct RunSummary: Codable, Sendable, Equatable {
    /// The value of `schema` for this layout. Bumped when a field changes meaning or goes away.
    public static let schemaIdentifier = "stampede.summary/1"

    /// Always `schemaIdentifier` when written by this version.
    public var schema: String
    /// True when the run ended early; the figures are what was gathered until then.
    public var partial: Bool
    public var partialReason: String?
    public var fatalError: String?
    public var scenario: ScenarioInfo
    public var environment: EnvironmentInfo
    public var phasesSeconds: Phases
    public var connections: Connections
    public var messages: Messages
    public var bytes: Bytes
    /// One entry per `LatencyMetric.key` that has samples (others are left out).
    public var latencyMicros: [String: Latency]
    /// Which of `latencyMicros` are coordinated-omission corrected, which are not, and how far apart the twins are.
    public var latencyCorrection: LatencyCorrection
    /// Every `ErrorClass.key`, zeros included.
    public var errors: [String: UInt64]
    public var errorsTotal: UInt64
    /// HTTP status (as a string, e.g. "503") → number of upgrades rejected with it.
    public var upgradeStatuses: [String: UInt64]
    public var generator: Generator
    /// Names of the other files in the results folder (summary.json itself is not listed).
    public var files: [String]
    /// Every raw counter by its key (`Counter.key`), zeros included: the figures above and the
    /// workload-specific ones (stream items, client results, reconnects).
    public var counters: [String: UInt64]
    /// Hub clients: Completion errors by their text (the hub method's exception message).
    public var hubErrors: [String: UInt64]
    /// Connection storms: how fast the affected clients were connected again.
    public var storms: [Storm]
    /// REST workloads: answers by status, the 304 ratio, staleness and rate limits; nil otherwise.
    public var rest: Rest? = nil
    /// TLS runs: handshakes, resumptions and failure reasons; nil when the clients spoke plain TCP.
    public var tls: TLS? = nil
    /// The scenario's thresholds, one entry per condition (null: none); the worker processes (null: one process).
    public var thresholds: [Threshold]? = nil
    public var workers: [Worker]? = nil
    /// Closes the server started by "code reason" ("4401 auth first"; nil: written before it).
    public var closeCodes: [String: UInt64]? = nil
    /// Socket.IO runs: CONNECT_ERROR messages by text (nil: none, or not a Socket.IO run).
    public var connectErrors: [String: UInt64]? = nil
    /// WebSocket flows: named counters, step errors, unrecognised frames (`RunSummary+Flow`).
    public var flow: Flow? = nil
    /// A run of several populations: each one's results folder and headline figures (absent,
    /// not null, for a run of one population). The rest of this summary is their exact merge.
    public var populations: [PopulationEntry]? = nil

    /// One population of the run (its whole results are in `folder`, relative to this one).
    public struct PopulationEntry: Codable, Sendable, Equatable {
        public var name: String
        public var workload: String
        public var clients: Int
        public var startSeconds: Double
        /// "populations/NAME".
        public var folder: String
        public var partial: Bool
        public var messagesSent: UInt64
        public var messagesDelivered: UInt64
        public var messagesLost: UInt64
        public var fanoutExpected: UInt64
        public var fanoutReceived: UInt64
        public var errorsTotal: UInt64
        /// The population's own run's exit status (0 passed, 99 a threshold of its failed, …).
        public var exitCode: Int32

        enum CodingKeys: String, CodingKey {
            case name, workload, clients, folder, partial
            case startSeconds = "start_s"
            case messagesSent = "messages_sent"
            case messagesDelivered = "messages_delivered"
            case messagesLost = "messages_lost"
            case fanoutExpected = "fanout_expected"
            case fanoutReceived = "fanout_received"
            case errorsTotal = "errors_total"
            case exitCode = "exit_code"
        }

        public init(name: String, workload: String, clients: Int, startSeconds: Double, folder: String, summary s: RunSummary, exitCode: Int32) {
            self.name = name; self.workload = workload; self.clients = clients; self.startSeconds = startSeconds; self.folder = folder
            partial = s.partial; messagesSent = s.messages.sent; messagesDelivered = s.messages.delivered; messagesLost = s.messages.lost
            fanoutExpected = s.messages.fanoutExpected; fanoutReceived = s.messages.fanoutReceived; errorsTotal = s.errorsTotal
            self.exitCode = exitCode
        }
    }

    /// An event whose recovery is measured: a client storm, a server fault or an external command.
    public struct Storm: Codable, Sendable, Equatable {
        public var number: Int
        public var atSeconds: Double
        /// "storm", "server" or "command".
        public var kind: String?
        /// Storms: the share of connected clients hit; nil for other events.
        public var fraction: Double?
        /// What the event did: "reset", "close", "stall 20s", "drop reset", "reject 5s", or the command.
        public var mode: String
        /// Clients that lost their connection to the event (hit by the storm, or dropped by the
        /// server between this event and the next).
        public var affected: UInt64
        public var recovered: UInt64
        public var gaveUp: UInt64
        /// Time from the event until 50 %, 95 %, 99 % and 100 % of the affected clients were
        /// connected again, milliseconds; nil when that share never recovered.
        public var recoveryMs: [String: Double?]
        /// Reconnect attempts per recovered client.
        public var attempts: [String: UInt64]
        /// Connect-phase latencies (tcp_connect, ws_upgrade, negotiate, handshake) in the window
        /// from this event to the next, against the baseline before the first event.
        public var connectPhaseMicros: [String: ConnectPhase]?
        /// Messages counted lost in the window.
        public var messagesLost: UInt64?
        /// The generator in the window: peak CPU over one-second intervals (percent of one core,
        /// whole process and client loops) and peak resident memory.
        public var generatorPeakCPUPercent: Double?
        public var generatorPeakClientLoopCPUPercent: Double?
        public var generatorPeakRSSBytes: UInt64?
        /// Command events: how the command went (its output is in `command.output_file`).
        public var command: Command?
        /// Server events: why the fault could not be applied; nil when it was.
        public var faultError: String?
        /// The thundering-herd curve, per 100 ms after the event (see storm-<n>.csv).
        public var file: String
        enum CodingKeys: String, CodingKey {
            case number
            case atSeconds = "at_s"
            case kind, fraction, mode, affected, recovered
            case gaveUp = "gave_up"
            case recoveryMs = "recovery_ms"
            case attempts
            case connectPhaseMicros = "connect_phase_us"
            case messagesLost = "messages_lost"
            case generatorPeakCPUPercent = "generator_peak_cpu_percent"
            case generatorPeakClientLoopCPUPercent = "generator_peak_client_loop_cpu_percent"
            case generatorPeakRSSBytes = "generator_peak_rss_bytes"
            case command
            case faultError = "fault_error"
            case file
        }
        public init(number: Int, atSeconds: Double, kind: String?, fraction: Double?, mode: String, affected: UInt64, recovered: UInt64,
                    gaveUp: UInt64, recoveryMs: [String: Double?], attempts: [String: UInt64], file: String) {
            self.number = number; self.atSeconds = atSeconds; self.kind = kind; self.fraction = fraction; self.mode = mode
            self.affected = affected; self.recovered = recovered; self.gaveUp = gaveUp; self.recoveryMs = recoveryMs
            self.attempts = attempts; self.file = file
        }
        // By hand so that nil optionals are written as null.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(number, forKey: .number); try c.encode(atSeconds, forKey: .atSeconds)
            try c.encode(kind, forKey: .kind); try c.encode(fraction, forKey: .fraction); try c.encode(mode, forKey: .mode)
            try c.encode(affected, forKey: .affected); try c.encode(recovered, forKey: .recovered); try c.encode(gaveUp, forKey: .gaveUp)
            try c.encode(recoveryMs, forKey: .recoveryMs); try c.encode(attempts, forKey: .attempts)
            try c.encode(connectPhaseMicros, forKey: .connectPhaseMicros); try c.encode(messagesLost, forKey: .messagesLost)
            try c.encode(generatorPeakCPUPercent, forKey: .generatorPeakCPUPercent)
            try c.encode(generatorPeakClientLoopCPUPercent, forKey: .generatorPeakClientLoopCPUPercent)
            try c.encode(generatorPeakRSSBytes, forKey: .generatorPeakRSSBytes)
            try c.encode(command, forKey: .command); try c.encode(faultError, forKey: .faultError); try c.encode(file, forKey: .file)
        }
    }

    /// One connect-phase metric during an event's window and before any event.
    public struct ConnectPhase: Codable, Sendable, Equatable {
        public var during: Latency?
        public var baseline: Latency?
        public init(during: Latency?, baseline: Latency?) { self.during = during; self.baseline = baseline }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(during, forKey: .during); try c.encode(baseline, forKey: .baseline)
        }
        enum CodingKeys: String, CodingKey { case during, baseline }
    }

    /// A command event's outcome.
    public struct Command: Codable, Sendable, Equatable {
        public var run: String
        /// Exit status; nil when it was killed by a signal or never started.
        public var exitStatus: Int32?
        public var signal: Int32?
        public var timedOut: Bool
        public var durationSeconds: Double
        /// Why it could not be started, if it could not.
        public var launchError: String?
        /// stdout and stderr together, in the results folder.
        public var outputFile: String
        public var outputTruncated: Bool
        enum CodingKeys: String, CodingKey {
            case run
            case exitStatus = "exit_status"
            case signal
            case timedOut = "timed_out"
            case durationSeconds = "duration_s"
            case launchError = "launch_error"
            case outputFile = "output_file"
            case outputTruncated = "output_truncated"
        }
        public init(run: String, exitStatus: Int32?, signal: Int32?, timedOut: Bool, durationSeconds: Double, launchError: String?,
                    outputFile: String, outputTruncated: Bool) {
            self.run = run; self.exitStatus = exitStatus; self.signal = signal; self.timedOut = timedOut
            self.durationSeconds = durationSeconds; self.launchError = launchError; self.outputFile = outputFile
            self.outputTruncated = outputTruncated
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(run, forKey: .run); try c.encode(exitStatus, forKey: .exitStatus); try c.encode(signal, forKey: .signal)
            try c.encode(timedOut, forKey: .timedOut); try c.encode(durationSeconds, forKey: .durationSeconds)
            try c.encode(launchError, forKey: .launchError); try c.encode(outputFile, forKey: .outputFile)
            try c.encode(outputTruncated, forKey: .outputTruncated)
        }
    }

    public init(
        schema: String = RunSummary.schemaIdentifier, partial: Bool, partialReason: String?, fatalError: String?,
        scenario: ScenarioInfo, environment: EnvironmentInfo, phasesSeconds: Phases, connections: Connections,
        messages: Messages, bytes: Bytes, latencyMicros: [String: Latency], latencyCorrection: LatencyCorrection,
        errors: [String: UInt64], errorsTotal: UInt64, upgradeStatuses: [String: UInt64], generator: Generator, files: [String],
        counters: [String: UInt64] = [:], hubErrors: [String: UInt64] = [:], storms: [Storm] = [], rest: Rest? = nil,
        tls: TLS? = nil
    ) {
        self.rest = rest; self.tls = tls
        self.counters = counters
        self.hubErrors = hubErrors; self.storms = storms
        self.schema = schema; self.partial = partial; self.partialReason = partialReason; self.fatalError = fatalError
        self.scenario = scenario; self.environment = environment; self.phasesSeconds = phasesSeconds
        self.connections = connections; self.messages = messages; self.bytes = bytes; self.latencyMicros = latencyMicros
        self.latencyCorrection = latencyCorrection; self.errors = errors; self.errorsTotal = errorsTotal
        self.upgradeStatuses = upgradeStatuses; self.generator = generator; self.files = files
    }

    enum CodingKeys: String, CodingKey {
        case schema, partial
        case partialReason = "partial_reason"
        case fatalError = "fatal_error"
        case scenario, environment
        case phasesSeconds = "phases_s"
        case connections, messages, bytes
        case latencyMicros = "latency_us"
        case latencyCorrection = "latency_correction"
        case errors
        case errorsTotal = "errors_total"
        case upgradeStatuses = "upgrade_statuses"
        case generator, files, counters
        case hubErrors = "hub_errors"
        case storms, rest, tls, thresholds, workers, flow
        case closeCodes = "close_codes"
        case connectErrors = "connect_errors"
        case populations
    }

    // Written by hand only so that nil optionals become `null` instead of disappearing.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schema, forKey: .schema)
        try c.encode(partial, forKey: .partial)
        try c.encode(partialReason, forKey: .partialReason)
        try c.encode(fatalError, forKey: .fatalError)
        try c.encode(scenario, forKey: .scenario)
        try c.encode(environment, forKey: .environment)
        try c.encode(phasesSeconds, forKey: .phasesSeconds)
        try c.encode(connections, forKey: .connections)
        try c.encode(messages, forKey: .messages)
        try c.encode(bytes, forKey: .bytes)
        try c.encode(latencyMicros, forKey: .latencyMicros)
        try c.encode(latencyCorrection, forKey: .latencyCorrection)
        try c.encode(errors, forKey: .errors)
        try c.encode(errorsTotal, forKey: .errorsTotal)
        try c.encode(upgradeStatuses, forKey: .upgradeStatuses)
        try c.encode(generator, forKey: .generator)
        try c.encode(files, forKey: .files)
        try c.encode(counters, forKey: .counters)
        try c.encode(hubErrors, forKey: .hubErrors)
        try c.encode(storms, forKey: .storms); try c.encode(rest, forKey: .rest)
        try c.encode(tls, forKey: .tls); try c.encode(thresholds, forKey: .thresholds); try c.encode(workers, forKey: .workers)
        try c.encode(closeCodes, forKey: .closeCodes); try c.encode(flow, forKey: .flow)
        try c.encode(connectErrors, forKey: .connectErrors)
        try c.encodeIfPresent(populations, forKey: .populations)
    }

    /// The summary as written to summary.json: pretty-printed, keys sorted, trailing newline.
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(self)
        data.append(0x0A)
        return data
    }

    /// Reads a summary.json written by `jsonData()`.
    public static func decode(from data: Data) throws -> RunSummary {
        try JSONDecoder().decode(RunSummary.self, from: data)
    }

    /// What was asked for: the scenario as loaded.
    public struct ScenarioInfo: Codable, Sendable, Equatable {
        public var name: String
        /// Path of the scenario file ("" when built in code).
        public var file: String
        public var workload: String
        /// "embedded" or the `ws://` URL.
        public var target: String
        public var clients: Int
        /// Connections opened per second during ramp-up.
        public var connectRate: Double
        /// Length of the message phase, seconds.
        public var durationSeconds: Double
        /// Open model: messages per second across all clients.
        public var messageRate: Double
        /// Bytes of message text.
        public var messageSize: Int
        /// "open" or "closed".
        public var loadModel: String
        /// What the latency figures mean under `loadModel`.
        public var latencyModel: String
        public var thinkTimeSeconds: Double
        public var seed: UInt64
        public var drainSeconds: Double

        public init(name: String, file: String, workload: String, target: String, clients: Int, connectRate: Double,
                    durationSeconds: Double, messageRate: Double, messageSize: Int, loadModel: String, latencyModel: String,
                    thinkTimeSeconds: Double, seed: UInt64, drainSeconds: Double) {
            self.name = name; self.file = file; self.workload = workload; self.target = target; self.clients = clients
            self.connectRate = connectRate; self.durationSeconds = durationSeconds; self.messageRate = messageRate
            self.messageSize = messageSize; self.loadModel = loadModel; self.latencyModel = latencyModel
            self.thinkTimeSeconds = thinkTimeSeconds; self.seed = seed; self.drainSeconds = drainSeconds
        }

        enum CodingKeys: String, CodingKey {
            case name, file, workload, target, clients
            case connectRate = "connect_rate"
            case durationSeconds = "duration_s"
            case messageRate = "message_rate"
            case messageSize = "message_size"
            case loadModel = "load_model"
            case latencyModel = "latency_model"
            case thinkTimeSeconds = "think_time_s"
            case seed
            case drainSeconds = "drain_s"
        }
    }

    /// Where and when the run happened.
    public struct EnvironmentInfo: Codable, Sendable, Equatable {
        public var stampedeVersion: String
        public var hostname: String
        public var cores: Int
        /// Client event loops (one thread each).
        public var loops: Int
        public var os: String
        /// How payload timestamps were taken ("monotonic": one host).
        public var clock: String
        public var commandLine: [String]
        /// ISO 8601, UTC, milliseconds.
        public var startedAt: String
        public var endedAt: String
        /// `ended_at − started_at`, seconds (wall clock).
        public var wallSeconds: Double

        public init(stampedeVersion: String, hostname: String, cores: Int, loops: Int, os: String, clock: String,
                    commandLine: [String], startedAt: String, endedAt: String, wallSeconds: Double) {
            self.stampedeVersion = stampedeVersion; self.hostname = hostname; self.cores = cores; self.loops = loops
            self.os = os; self.clock = clock; self.commandLine = commandLine; self.startedAt = startedAt
            self.endedAt = endedAt; self.wallSeconds = wallSeconds
        }

        enum CodingKeys: String, CodingKey {
            case stampedeVersion = "stampede_version"
            case hostname, cores, loops, os, clock
            case commandLine = "command_line"
            case startedAt = "started_at"
            case endedAt = "ended_at"
            case wallSeconds = "wall_seconds"
        }
    }

    /// Seconds actually spent in each phase.
    public struct Phases: Codable, Sendable, Equatable {
        public var rampUp: Double
        public var messages: Double
        public var drain: Double
        public init(rampUp: Double, messages: Double, drain: Double) { self.rampUp = rampUp; self.messages = messages; self.drain = drain }
        enum CodingKeys: String, CodingKey {
            case rampUp = "ramp_up"
            case messages, drain
        }
    }

    public struct Connections: Codable, Sendable, Equatable {
        public var attempted: UInt64
        public var connected: UInt64
        public var failed: UInt64
        /// Established connections that later ended, for any reason.
        public var disconnected: UInt64
        public var peakOpen: Int
        public var openAtEnd: Int
        public init(attempted: UInt64, connected: UInt64, failed: UInt64, disconnected: UInt64, peakOpen: Int, openAtEnd: Int) {
            self.attempted = attempted; self.connected = connected; self.failed = failed
            self.disconnected = disconnected; self.peakOpen = peakOpen; self.openAtEnd = openAtEnd
        }
        enum CodingKeys: String, CodingKey {
            case attempted, connected, failed, disconnected
            case peakOpen = "peak_open"
            case openAtEnd = "open_at_end"
        }
    }

    /// Message fates. Every sent message is delivered, failed or lost: see `accountingClosed`.
    public struct Messages: Codable, Sendable, Equatable {
        public var sent: UInt64
        public var delivered: UInt64
        public var failed: UInt64
        public var lost: UInt64
        /// Every `LossReason.key`, zeros included.
        public var lostByReason: [String: UInt64]
        public var fanoutExpected: UInt64
        public var fanoutReceived: UInt64
        /// `fanout_expected − fanout_received`, floored at 0.
        public var fanoutMissing: UInt64
        public var sendsDeferred: UInt64
        public var unparsed: UInt64
        /// `sent == delivered + failed + lost`.
        public var accountingClosed: Bool
        /// `sent − (delivered + failed + lost)`: 0 when accounting is closed; positive means messages with no recorded fate.
        public var unaccounted: Int64
        public var throughputPerSecond: Throughput

        public init(sent: UInt64, delivered: UInt64, failed: UInt64, lost: UInt64, lostByReason: [String: UInt64],
                    fanoutExpected: UInt64, fanoutReceived: UInt64, fanoutMissing: UInt64, sendsDeferred: UInt64,
                    unparsed: UInt64, accountingClosed: Bool, unaccounted: Int64, throughputPerSecond: Throughput) {
            self.sent = sent; self.delivered = delivered; self.failed = failed; self.lost = lost
            self.lostByReason = lostByReason; self.fanoutExpected = fanoutExpected; self.fanoutReceived = fanoutReceived
            self.fanoutMissing = fanoutMissing; self.sendsDeferred = sendsDeferred; self.unparsed = unparsed
            self.accountingClosed = accountingClosed; self.unaccounted = unaccounted; self.throughputPerSecond = throughputPerSecond
        }

        enum CodingKeys: String, CodingKey {
            case sent, delivered, failed, lost
            case lostByReason = "lost_by_reason"
            case fanoutExpected = "fanout_expected"
            case fanoutReceived = "fanout_received"
            case fanoutMissing = "fanout_missing"
            case sendsDeferred = "sends_deferred"
            case unparsed
            case accountingClosed = "accounting_closed"
            case unaccounted
            case throughputPerSecond = "throughput_per_s"
        }
    }

    /// Counts divided by the message phase's seconds (0 when that phase did not run).
    public struct Throughput: Codable, Sendable, Equatable {
        public var sent: Double
        public var delivered: Double
        public var fanoutReceived: Double
        public init(sent: Double, delivered: Double, fanoutReceived: Double) {
            self.sent = sent; self.delivered = delivered; self.fanoutReceived = fanoutReceived
        }
        enum CodingKeys: String, CodingKey {
            case sent, delivered
            case fanoutReceived = "fanout_received"
        }
    }

    public struct Bytes: Codable, Sendable, Equatable {
        public var sent: UInt64
        public var received: UInt64
        public init(sent: UInt64, received: UInt64) { self.sent = sent; self.received = received }
    }

    /// One latency metric over the whole run, microseconds, read from the merged histogram.
    public struct Latency: Codable, Sendable, Equatable {
        public var count: UInt64
        public var min: UInt64
        public var p50: UInt64
        public var p90: UInt64
        public var p99: UInt64
        public var p99_9: UInt64
        /// Exact largest recorded value.
        public var max: UInt64
        public var mean: Double
        public init(count: UInt64, min: UInt64, p50: UInt64, p90: UInt64, p99: UInt64, p99_9: UInt64, max: UInt64, mean: Double) {
            self.count = count; self.min = min; self.p50 = p50; self.p90 = p90; self.p99 = p99
            self.p99_9 = p99_9; self.max = max; self.mean = mean
        }
    }

    /// Which latency keys are measured from the intended send time and which from the actual send.
    public struct LatencyCorrection: Codable, Sendable, Equatable {
        /// Keys in `latency_us` measured from the intended send time.
        public var corrected: [String]
        /// Keys in `latency_us` measured from the moment the bytes were handed to the socket.
        public var uncorrected: [String]
        /// Keys in `latency_us` where the question does not arise (connection set-up).
        public var notApplicable: [String]
        /// Twins present in `latency_us`, with how far apart they are.
        public var pairs: [Pair]
        public init(corrected: [String], uncorrected: [String], notApplicable: [String], pairs: [Pair]) {
            self.corrected = corrected; self.uncorrected = uncorrected; self.notApplicable = notApplicable; self.pairs = pairs
        }
        enum CodingKeys: String, CodingKey {
            case corrected, uncorrected
            case notApplicable = "not_applicable"
            case pairs
        }

        public struct Pair: Codable, Sendable, Equatable {
            public var corrected: String
            public var uncorrected: String
            /// corrected p50 / uncorrected p50.
            public var p50Ratio: Double
            /// corrected p99 / uncorrected p99: well above 1 means senders ran late (server stalls or a busy generator).
            public var p99Ratio: Double
            public init(corrected: String, uncorrected: String, p50Ratio: Double, p99Ratio: Double) {
                self.corrected = corrected; self.uncorrected = uncorrected; self.p50Ratio = p50Ratio; self.p99Ratio = p99Ratio
            }
            enum CodingKeys: String, CodingKey {
                case corrected, uncorrected
                case p50Ratio = "p50_ratio"
                case p99Ratio = "p99_ratio"
            }
        }
    }

    /// The generator's own health: if it was saturated, latency partly belongs to it.
    public struct Generator: Codable, Sendable, Equatable {
        public var processCPUSeconds: Double
        public var clientLoopCPUSeconds: Double
        /// Client loop CPU µs per message received (own echoes + broadcasts); nil when none were received.
        public var cpuMicrosPerDeliveredMessage: Double?
        public var maxTimerLagMicros: UInt64
        public var saturated: Bool
        public var warnings: [String]
        /// Process resident memory: before connecting, with every client connected and idle, and the peak (bytes).
        public var rssBeforeConnectBytes: UInt64
        public var rssConnectedBytes: UInt64
        public var rssPeakBytes: UInt64
        /// (rss_connected − rss_before_connect) / connections open at the start of the message phase;
        /// with the embedded target this includes the server's side of each connection. Nil when unknown.
        public var rssPerConnectionBytes: Double?
        /// Peak over one-second intervals: whole-process CPU and client-loop CPU, percent of one core.
        public var peakCPUPercent: Double?
        public var peakClientLoopCPUPercent: Double?
        public init(processCPUSeconds: Double, clientLoopCPUSeconds: Double, cpuMicrosPerDeliveredMessage: Double?,
                    maxTimerLagMicros: UInt64, saturated: Bool, warnings: [String], rssBeforeConnectBytes: UInt64 = 0,
                    rssConnectedBytes: UInt64 = 0, rssPeakBytes: UInt64 = 0, rssPerConnectionBytes: Double? = nil,
                    peakCPUPercent: Double? = nil, peakClientLoopCPUPercent: Double? = nil) {
            self.peakCPUPercent = peakCPUPercent; self.peakClientLoopCPUPercent = peakClientLoopCPUPercent
            self.processCPUSeconds = processCPUSeconds; self.clientLoopCPUSeconds = clientLoopCPUSeconds
            self.cpuMicrosPerDeliveredMessage = cpuMicrosPerDeliveredMessage; self.maxTimerLagMicros = maxTimerLagMicros
            self.saturated = saturated; self.warnings = warnings
            self.rssBeforeConnectBytes = rssBeforeConnectBytes; self.rssConnectedBytes = rssConnectedBytes
            self.rssPeakBytes = rssPeakBytes; self.rssPerConnectionBytes = rssPerConnectionBytes
        }
        enum CodingKeys: String, CodingKey {
            case processCPUSeconds = "process_cpu_s"
            case clientLoopCPUSeconds = "client_loop_cpu_s"
            case cpuMicrosPerDeliveredMessage = "cpu_us_per_delivered_message"
            case maxTimerLagMicros = "max_timer_lag_us"
            case saturated, warnings
            case rssBeforeConnectBytes = "rss_before_connect_bytes"
            case rssConnectedBytes = "rss_connected_bytes"
            case rssPeakBytes = "rss_peak_bytes"
            case rssPerConnectionBytes = "rss_per_connection_bytes"
            case peakCPUPercent = "peak_cpu_percent"
            case peakClientLoopCPUPercent = "peak_client_loop_cpu_percent"
        }
        // By hand so that a nil `cpu_us_per_delivered_message` is written as null.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(processCPUSeconds, forKey: .processCPUSeconds)
            try c.encode(clientLoopCPUSeconds, forKey: .clientLoopCPUSeconds)
            try c.encode(cpuMicrosPerDeliveredMessage, forKey: .cpuMicrosPerDeliveredMessage)
            try c.encode(maxTimerLagMicros, forKey: .maxTimerLagMicros)
            try c.encode(saturated, forKey: .saturated)
            try c.encode(warnings, forKey: .warnings)
            try c.encode(rssBeforeConnectBytes, forKey: .rssBeforeConnectBytes)
            try c.encode(rssConnectedBytes, forKey: .rssConnectedBytes)
            try c.encode(rssPeakBytes, forKey: .rssPeakBytes)
            try c.encode(rssPerConnectionBytes, forKey: .rssPerConnectionBytes)
            try c.encode(peakCPUPercent, forKey: .peakCPUPercent)
            try c.encode(peakClientLoopCPUPercent, forKey: .peakClientLoopCPUPercent)
        }
    }
}
