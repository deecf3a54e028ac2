import Foundation

/// The contents of `capacity.json`, schema `stampede.capacity/1`: what `stampede capacity`
/// tried, step by step, and what it concluded.
///
/// Keys are snake_case (the encoder converts them); latencies are microseconds, durations
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
    /// "above_range" (even `to` passed), "below_range" (even `from` failed), "unconfirmed" (the
    /// confirmation failed again at every retry), "interrupted".
    public var verdict: String
    /// The highest load that passed every check, confirmed; nil unless the verdict is "found".
    public var maxSustainable: Double?
    /// The lowest load at which the SLO latency figure reached twice its lowest-load value (the
    /// bend of the load–latency curve), when a step showed it; nil otherwise.
    public var knee: Double?
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

    public struct Limits: Codable, Sendable, Equatable {
        /// Errors ÷ messages sent, and messages lost ÷ messages sent, allowed in a step's measured window.
        public var errorRatio: Double
        public var lostRatio: Double
        /// The least achieved send rate, as a share of the intended one (0.99).
        public var sendRatio: Double
        public init(errorRatio: Double, lostRatio: Double, sendRatio: Double) {
            self.errorRatio = errorRatio; self.lostRatio = lostRatio; self.sendRatio = sendRatio
        }
    }

    /// One steady step: the load held for warm-up plus the measured window.
    public struct Step: Codable, Sendable, Equatable {
        public var number: Int
        /// "exponential", "binary" or "confirm".
        public var stage: String
        public var load: Double
        /// "pass", "fail" or "invalid" (the generator was saturated: the step says nothing about the server).
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
        /// The measured window's latency per metric key: p50, p90, p99, p99.9, max, count.
        public var latencyMicros: [String: Latency]
        /// Each SLO's measured value (µs for latencies) and whether it held.
        public var slos: [SLOResult]
        public var generator: Generator
        /// The step's results folder (a normal run's), relative to where capacity ran.
        public var resultsFolder: String?

        public init(number: Int, stage: String, load: Double, outcome: String, reasons: [String], measuredSeconds: Double,
                    intendedRate: Double, achievedRate: Double, receivedRate: Double, sent: UInt64, delivered: UInt64, lost: UInt64,
                    errors: UInt64, open: Int, clients: Int, latencyMicros: [String: Latency], slos: [SLOResult], generator: Generator,
                    resultsFolder: String?) {
            self.number = number; self.stage = stage; self.load = load; self.outcome = outcome; self.reasons = reasons
            self.measuredSeconds = measuredSeconds; self.intendedRate = intendedRate; self.achievedRate = achievedRate
            self.receivedRate = receivedRate; self.sent = sent; self.delivered = delivered; self.lost = lost; self.errors = errors
            self.open = open; self.clients = clients; self.latencyMicros = latencyMicros; self.slos = slos; self.generator = generator
            self.resultsFolder = resultsFolder
        }
    }

    public struct Latency: Codable, Sendable, Equatable {
        public var p50: UInt64, p90: UInt64, p99: UInt64, p999: UInt64, max: UInt64, count: UInt64
        public init(p50: UInt64, p90: UInt64, p99: UInt64, p999: UInt64, max: UInt64, count: UInt64) {
            self.p50 = p50; self.p90 = p90; self.p99 = p99; self.p999 = p999; self.max = max; self.count = count
        }
    }

    public struct SLOResult: Codable, Sendable, Equatable {
        /// As given: "round_trip p(99) < 50ms".
        public var slo: String
        /// The metric key and percentile it reads, the limit and the measured value (µs); value nil when the metric had no samples.
        public var metric: String
        public var percentile: Double
        public var limitMicros: UInt64
        public var valueMicros: UInt64?
        public var passed: Bool
        public init(slo: String, metric: String, percentile: Double, limitMicros: UInt64, valueMicros: UInt64?, passed: Bool) {
            self.slo = slo; self.metric = metric; self.percentile = percentile; self.limitMicros = limitMicros
            self.valueMicros = valueMicros; self.passed = passed
        }
    }

    public struct Generator: Codable, Sendable, Equatable {
        /// Worst timer lateness, µs; peak client-loop and process CPU over the window, percent of one core.
        public var maxTimerLagMicros: UInt64
        public var peakClientLoopCPUPercent: Double
        public var peakProcessCPUPercent: Double
        public var loops: Int
        public var saturated: Bool
        public init(maxTimerLagMicros: UInt64, peakClientLoopCPUPercent: Double, peakProcessCPUPercent: Double, loops: Int, saturated: Bool) {
            self.maxTimerLagMicros = maxTimerLagMicros; self.peakClientLoopCPUPercent = peakClientLoopCPUPercent
            self.peakProcessCPUPercent = peakProcessCPUPercent; self.loops = loops; self.saturated = saturated
        }
    }

    /// JSON as written to `capacity.json` (snake_case keys, sorted, pretty).
    public func jsonData() throws -> Data {
        let e = JSONEncoder()
        e.keyEncodingStrategy = .convertToSnakeCase
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try e.encode(self)
    }

    /// Reads `capacity.json`.
    public static func read(_ data: Data) throws -> CapacityResult {
        let d = JSONDecoder()
        d.keyDecodingStrategy = .convertFromSnakeCase
        return try d.decode(CapacityResult.self, from: data)
    }
}
