import Foundation

/// The contents of `capacity.json`, schema `stampede.capacity/1`: what `stampede capacity`
/// tried, step by step, and what it concluded.
///
/// Keys are snake_case; latencies are microseconds, durations
/// seconds, loads in the unit of the varied field (`unit`). Optional fields are written as JSON
/// `null`, never left out. Every field is documented for users in `docs/capacity.md`.
public struct CapacityResult: Codable, Sendable, Equatable {
    public static let schemaIdentifier = "stampede.capacity/1"
    public static let fileName = "capacity.json"

    public var schema: String = Self.schemaIdentifier
    /// The scenario's name and file, its workload and target.
    public var scenario: String
    public var scenarioFile: String
    public var workload: String
    public var target: String
    /// What was varied: "message.rate" (messages per second across all clients) or "clients".
    public var vary: String
    /// "messages/s" or "clients".
    public var unit: String
    /// The service level objectives as given ("round_trip p(99) < 50ms").
    public var slos: [String]
    /// The limits a step must stay within besides the SLOs.
    public var limits: Limits
    public var stepSeconds: Double
    public var warmupSeconds: Double
    /// The search's range and the relative precision it stops at (0.02: the bracket is within 2 %).
    public var from: Double
    public var to: Double
    public var precision: Double
    /// Every step, in the order run.
    public var steps: [Step]
    /// How the search ended: "found" (a maximum sustainable load, confirmed), "generator_limited"
    /// (the generator could not produce a load the server might fail: no knee is reported),
    /// "above_range" (even `to` passed), "below_range" (even `from` failed), "unstable" (the
    /// confirmations failed again and again: the server passed and failed by turns), "interrupted".
    /// Files written before "unstable" existed say "unconfirmed" for it.
    public var verdict: String
    /// The highest load that passed every check, confirmed; nil unless the verdict is "found".
    public var maxSustainable: Double?
    /// The lowest load at which the SLO latency figure reached twice its lowest-load value (the
    /// bend of the load–latency curve), when a step showed it; nil otherwise.
    public var knee: Double?
    /// The highest load that passed when no answer could be confirmed (a generator limit, a
    /// failed confirmation): the server held at least this much. Nil when nothing passed.
    public var heldAtLeast: Double?
    /// The lowest load the generator could not drive (its step invalid twice); nil when none.
    public var generatorLimit: Double?
    /// The lowest failing load above `max_sustainable` and why it failed.
    public var firstFailing: Double?
    public var firstFailingReasons: [String]
    /// One sentence for people: what the search found, or why it found nothing.
    public var conclusion: String
    public var partial: Bool
    public var startedAt: String
    public var endedAt: String
    public var wallSeconds: Double
    public var commandLine: [String]

    enum CodingKeys: String, CodingKey {
        case schema
        case scenario
        case scenarioFile = "scenario_file"
        case workload
        case target
        case vary
        case unit
        case slos
        case limits
        case stepSeconds = "step_seconds"
        case warmupSeconds = "warmup_seconds"
        case from
        case to
        case precision
        case steps
        case verdict
        case maxSustainable = "max_sustainable"
        case knee
        case heldAtLeast = "held_at_least"
        case generatorLimit = "generator_limit"
        case firstFailing = "first_failing"
        case firstFailingReasons = "first_failing_reasons"
        case conclusion
        case partial
        case startedAt = "started_at"
        case endedAt = "ended_at"
        case wallSeconds = "wall_seconds"
        case commandLine = "command_line"
    }

    public init(scenario: String, scenarioFile: String, workload: String, target: String, vary: String, unit: String, slos: [String],
                limits: Limits, stepSeconds: Double, warmupSeconds: Double, from: Double, to: Double, precision: Double, steps: [Step],
                verdict: String, maxSustainable: Double?, knee: Double?, heldAtLeast: Double?, generatorLimit: Double?,
                firstFailing: Double?, firstFailingReasons: [String], conclusion: String, partial: Bool, startedAt: String,
                endedAt: String, wallSeconds: Double, commandLine: [String]) {
        self.scenario = scenario; self.scenarioFile = scenarioFile; self.workload = workload; self.target = target; self.vary = vary
        self.unit = unit; self.slos = slos; self.limits = limits; self.stepSeconds = stepSeconds; self.warmupSeconds = warmupSeconds
        self.from = from; self.to = to; self.precision = precision; self.steps = steps; self.verdict = verdict
        self.maxSustainable = maxSustainable; self.knee = knee; self.heldAtLeast = heldAtLeast; self.generatorLimit = generatorLimit
        self.firstFailing = firstFailing; self.firstFailingReasons = firstFailingReasons; self.conclusion = conclusion
        self.partial = partial; self.startedAt = startedAt; self.endedAt = endedAt; self.wallSeconds = wallSeconds
        self.commandLine = commandLine
    }

    /// Writes `capacity.json` into `folder` (atomically: a reader never sees half a file).
    public func write(into folder: URL) throws {
        try AtomicFile.write(try jsonData(), to: folder.appendingPathComponent(Self.fileName))
    }

    public struct Limits: Codable, Sendable, Equatable {
        /// Errors ÷ messages sent, and messages lost ÷ messages sent, allowed in a step's measured window.
        public var errorRatio: Double
        public var lostRatio: Double
        /// The least achieved send rate, as a share of the intended one (0.99).
        public var sendRatio: Double
        enum CodingKeys: String, CodingKey {
            case errorRatio = "error_ratio"
            case lostRatio = "lost_ratio"
            case sendRatio = "send_ratio"
        }

        public init(errorRatio: Double, lostRatio: Double, sendRatio: Double) {
            self.errorRatio = errorRatio; self.lostRatio = lostRatio; self.sendRatio = sendRatio
        }
    }

    /// One steady step: the load held for warm-up plus the measured window.
    public struct Step: Codable, Sendable, Equatable {
        public var number: Int
        /// "exponential", "binary", "confirm", or "retry" (the same load again after a borderline step).
        public var stage: String
        public var load: Double
        /// "pass", "fail", "invalid" (the generator was saturated: the step says nothing about the
        /// server) or "borderline" (an SLO's bootstrap bounds straddle its limit: run again).
        public var outcome: String
        /// Why it failed or is invalid ("round_trip p(99) 83.1ms ≥ 50ms", "achieved 18,950/s < 99 % of 20,000/s").
        public var reasons: [String]
        /// The measured window (after the warm-up), seconds.
        public var measuredSeconds: Double
        /// Messages per second: intended (from the schedule), sent and received in the window.
        public var intendedRate: Double
        public var achievedRate: Double
        public var receivedRate: Double
        public var sent: UInt64
        public var delivered: UInt64
        public var lost: UInt64
        public var errors: UInt64
        /// Connections open at the end of the window, of `clients`.
        public var open: Int
        public var clients: Int
        /// The measured window's latency per metric key, as in summary.json's `latency_us`.
        public var latencyMicros: [String: RunSummary.Latency]
        /// Each SLO judged over the measured window, as summary.json's `thresholds` entries.
        public var slos: [RunSummary.Threshold]
        public var generator: Generator
        /// The step's results folder (an ordinary run's), inside the capacity folder.
        public var resultsFolder: String?
        /// Seconds spent before this step waiting for the server to recover from the last
        /// (failed) one, probing at `from`; nil when the step followed a pass.
        public var cooldownSeconds: Double? = nil
        /// How the first latency SLO's statistic varied over the window's intervals, and its
        /// bootstrap bounds; nil without a latency SLO or without samples.
        public var spread: Spread? = nil

        enum CodingKeys: String, CodingKey {
            case number
            case stage
            case load
            case outcome
            case reasons
            case measuredSeconds = "measured_seconds"
            case intendedRate = "intended_rate"
            case achievedRate = "achieved_rate"
            case receivedRate = "received_rate"
            case sent
            case delivered
            case lost
            case errors
            case open
            case clients
            case latencyMicros = "latency_us"
            case slos
            case generator
            case resultsFolder = "results_folder"
            case cooldownSeconds = "cooldown_seconds"
            case spread
        }

        public init(number: Int, stage: String, load: Double, outcome: String, reasons: [String], measuredSeconds: Double,
                    intendedRate: Double, achievedRate: Double, receivedRate: Double, sent: UInt64, delivered: UInt64, lost: UInt64,
                    errors: UInt64, open: Int, clients: Int, latencyMicros: [String: RunSummary.Latency], slos: [RunSummary.Threshold], generator: Generator,
                    resultsFolder: String?) {
            self.number = number; self.stage = stage; self.load = load; self.outcome = outcome; self.reasons = reasons
            self.measuredSeconds = measuredSeconds; self.intendedRate = intendedRate; self.achievedRate = achievedRate
            self.receivedRate = receivedRate; self.sent = sent; self.delivered = delivered; self.lost = lost; self.errors = errors
            self.open = open; self.clients = clients; self.latencyMicros = latencyMicros; self.slos = slos; self.generator = generator
            self.resultsFolder = resultsFolder
        }

        /// Every key written, unknown values as null (synthesized Codable would leave them out).
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(number, forKey: .number)
            try c.encode(stage, forKey: .stage)
            try c.encode(load, forKey: .load)
            try c.encode(outcome, forKey: .outcome)
            try c.encode(reasons, forKey: .reasons)
            try c.encode(measuredSeconds, forKey: .measuredSeconds)
            try c.encode(intendedRate, forKey: .intendedRate)
            try c.encode(achievedRate, forKey: .achievedRate)
            try c.encode(receivedRate, forKey: .receivedRate)
            try c.encode(sent, forKey: .sent)
            try c.encode(delivered, forKey: .delivered)
            try c.encode(lost, forKey: .lost)
            try c.encode(errors, forKey: .errors)
            try c.encode(open, forKey: .open)
            try c.encode(clients, forKey: .clients)
            try c.encode(latencyMicros, forKey: .latencyMicros)
            try c.encode(slos, forKey: .slos)
            try c.encode(generator, forKey: .generator)
            try c.encode(resultsFolder, forKey: .resultsFolder)
            try c.encode(cooldownSeconds, forKey: .cooldownSeconds)
            try c.encode(spread, forKey: .spread)
        }
    }

    /// One latency SLO's statistic over a step's intervals: how much it moved from one second to
    /// the next, and how sure the whole window's figure is (a bootstrap over the intervals).
    public struct Spread: Codable, Sendable, Equatable {
        /// The SLO as given ("round_trip p(99) < 50ms").
        public var slo: String
        /// Intervals with samples (one second each; once there are more than 600, neighbours are
        /// merged pairwise, and each of these is then 2, 4 … seconds).
        public var intervals: Int
        /// The statistic over each interval alone, µs: the lowest, the median and the highest.
        public var min: Double
        public var median: Double
        public var max: Double
        /// The statistic's bootstrap bounds for the whole window, µs: each one-sided at `confidence`.
        public var low: Double
        public var high: Double
        /// 0.9: the true figure is below `high` (and above `low`) with 90 % confidence.
        public var confidence: Double
        /// How the bounds judged the SLO: "pass" (the worse bound meets it), "fail" (even the
        /// better bound misses it), "borderline" (between), or, for a retry's step, the point
        /// estimate's "pass" or "fail".
        public var decision: String

        public init(slo: String, intervals: Int, min: Double, median: Double, max: Double, low: Double, high: Double, confidence: Double,
                    decision: String) {
            self.slo = slo; self.intervals = intervals; self.min = min; self.median = median; self.max = max
            self.low = low; self.high = high; self.confidence = confidence; self.decision = decision
        }
    }

    public struct Generator: Codable, Sendable, Equatable {
        /// Worst timer lateness, µs; peak client-loop and process CPU over the window, percent of one core.
        public var maxTimerLagMicros: UInt64
        public var peakClientLoopCPUPercent: Double
        public var peakProcessCPUPercent: Double
        public var loops: Int
        public var saturated: Bool
        enum CodingKeys: String, CodingKey {
            case maxTimerLagMicros = "max_timer_lag_us"
            case peakClientLoopCPUPercent = "peak_client_loop_cpu_percent"
            case peakProcessCPUPercent = "peak_process_cpu_percent"
            case loops
            case saturated
        }

        public init(maxTimerLagMicros: UInt64, peakClientLoopCPUPercent: Double, peakProcessCPUPercent: Double, loops: Int, saturated: Bool) {
            self.maxTimerLagMicros = maxTimerLagMicros; self.peakClientLoopCPUPercent = peakClientLoopCPUPercent
            self.peakProcessCPUPercent = peakProcessCPUPercent; self.loops = loops; self.saturated = saturated
        }
    }

    /// Every key written, unknown values as null (synthesized Codable would leave them out).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schema, forKey: .schema)
        try c.encode(scenario, forKey: .scenario)
        try c.encode(scenarioFile, forKey: .scenarioFile)
        try c.encode(workload, forKey: .workload)
        try c.encode(target, forKey: .target)
        try c.encode(vary, forKey: .vary)
        try c.encode(unit, forKey: .unit)
        try c.encode(slos, forKey: .slos)
        try c.encode(limits, forKey: .limits)
        try c.encode(stepSeconds, forKey: .stepSeconds)
        try c.encode(warmupSeconds, forKey: .warmupSeconds)
        try c.encode(from, forKey: .from)
        try c.encode(to, forKey: .to)
        try c.encode(precision, forKey: .precision)
        try c.encode(steps, forKey: .steps)
        try c.encode(verdict, forKey: .verdict)
        try c.encode(maxSustainable, forKey: .maxSustainable)
        try c.encode(knee, forKey: .knee)
        try c.encode(heldAtLeast, forKey: .heldAtLeast)
        try c.encode(generatorLimit, forKey: .generatorLimit)
        try c.encode(firstFailing, forKey: .firstFailing)
        try c.encode(firstFailingReasons, forKey: .firstFailingReasons)
        try c.encode(conclusion, forKey: .conclusion)
        try c.encode(partial, forKey: .partial)
        try c.encode(startedAt, forKey: .startedAt)
        try c.encode(endedAt, forKey: .endedAt)
        try c.encode(wallSeconds, forKey: .wallSeconds)
        try c.encode(commandLine, forKey: .commandLine)
    }

    /// JSON as written to `capacity.json` (snake_case keys, sorted, pretty).
    public func jsonData() throws -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try e.encode(self)
    }

    /// Reads `capacity.json`.
    public static func read(_ data: Data) throws -> CapacityResult {
        try JSONDecoder().decode(CapacityResult.self, from: data)
    }
}
