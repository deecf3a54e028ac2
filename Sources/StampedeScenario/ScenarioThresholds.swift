import Yams

/// One entry of the scenario's `thresholds:` block: a metric (with an optional `@label`), the
/// conditions it must meet, and when they are evaluated.
public struct ThresholdSpec: Sendable, Equatable {
    /// The metric as named in the scenario: "round_trip", "errors", "errors.tls_verify_failed",
    /// "messages.lost", "connections.failed", "storms.recovery_p99", "counters.reconnected" …
    public var metric: String
    /// The part after `@` in the key (`round_trip@steady`), so one metric can have several entries.
    public var label: String?
    /// The population in `{population:NAME}` (`round_trip{population:publishers}`): the entry
    /// is judged on that population's measurements alone; nil for the whole run.
    public var population: String? = nil
    public var conditions: [ThresholdCondition]
    /// Windowed entries: evaluated over every `windowSeconds` window of the message phase that
    /// starts at or after `afterSeconds`. `after` alone is one window from there to the end.
    public var afterSeconds: Double?
    public var windowSeconds: Double?
    /// Stop the run (exit 99) as soon as this entry fails, evaluated at every interval boundary
    /// once `delaySeconds` of the run have passed.
    public var abortOnFail: Bool = false
    public var delaySeconds: Double = 0
    /// Line of the entry's key in the scenario file (0 when built in code).
    public var line: Int = 0

    public init(metric: String, label: String? = nil, conditions: [ThresholdCondition], afterSeconds: Double? = nil,
                windowSeconds: Double? = nil, abortOnFail: Bool = false, delaySeconds: Double = 0) {
        self.metric = metric; self.label = label; self.conditions = conditions; self.afterSeconds = afterSeconds
        self.windowSeconds = windowSeconds; self.abortOnFail = abortOnFail; self.delaySeconds = delaySeconds
    }

    /// Evaluated per window rather than over the whole run.
    public var isWindowed: Bool { afterSeconds != nil || windowSeconds != nil }

    /// The key as written: "round_trip", "round_trip@steady", "round_trip{population:publishers}".
    public var key: String { metric + (population.map { "{population:\($0)}" } ?? "") + (label.map { "@\($0)" } ?? "") }

    /// What kind of metric `metric` names (validated at load, so never nil for a loaded scenario).
    public var kind: ThresholdMetricKind? { declaredKind ?? ThresholdMetricKind(metric) }
    /// The kind the loader found among the scenario's declared names (`ThresholdNames`), which
    /// `ThresholdMetricKind(metric)` alone does not know.
    public var declaredKind: ThresholdMetricKind? = nil
}

/// Names a scenario declares beyond the built-in metrics (a WebSocket flow's `ack` reply, its
/// rules' counters), so its thresholds may name them: `ack: [p(99) < 50ms]`,
/// `counters.flow.ack.matched: [count > 0]`.
public struct ThresholdNames: Sendable, Equatable {
    /// Keys of summary.json `latency_us` the scenario adds ("ack", "ack_uncorrected", "connect_flow").
    public var latencies: Set<String>
    /// Keys of summary.json `counters` the scenario adds ("flow.ack.matched").
    public var counters: Set<String>
    public init(latencies: Set<String> = [], counters: Set<String> = []) { self.latencies = latencies; self.counters = counters }
}

/// One condition such as `p(99) < 50ms`.
public struct ThresholdCondition: Sendable, Equatable, CustomStringConvertible {
    public var statistic: ThresholdStatistic
    public var comparison: ThresholdComparison
    /// Microseconds for latency statistics and storm recovery, a fraction for `rate`, a number for `count`.
    public var limit: Double
    /// As written in the scenario.
    public var text: String
    public init(statistic: ThresholdStatistic, comparison: ThresholdComparison, limit: Double, text: String) {
        self.statistic = statistic; self.comparison = comparison; self.limit = limit; self.text = text
    }
    public var description: String { text }
}

public enum ThresholdStatistic: Sendable, Equatable, CustomStringConvertible {
    /// 0 < N ≤ 100.
    case percentile(Double)
    case max, min, mean, count, rate

    public var description: String {
        switch self {
        case .percentile(let p): "p(\(format(p)))"
        case .max: "max"
        case .min: "min"
        case .mean: "mean"
        case .count: "count"
        case .rate: "rate"
        }
    }
    /// Whether the limit is a duration (microseconds).
    public var isDuration: Bool {
        switch self {
        case .percentile, .max, .min, .mean: true
        case .count, .rate: false
        }
    }
}

public enum ThresholdComparison: String, Sendable, Equatable, CaseIterable {
    case less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">=", equal = "==", notEqual = "!="

    public func holds(_ observed: Double, _ limit: Double) -> Bool {
        switch self {
        case .less: observed < limit
        case .lessOrEqual: observed <= limit
        case .greater: observed > limit
        case .greaterOrEqual: observed >= limit
        case .equal: observed == limit
        case .notEqual: observed != limit
        }
    }
}

/// The metrics a threshold can name. The name lists mirror StampedeMetrics' `LatencyMetric.key`,
/// `ErrorClass.key` and `Counter.key` (this module sits below it; ThresholdTests checks they agree).
public enum ThresholdMetricKind: Sendable, Equatable {
    /// A key of summary.json `latency_us`.
    case latency(String)
    /// All errors (nil) or one class; rate = errors / connection attempts.
    case errors(String?)
    /// "lost", "failed" or "delivered"; rate = / messages sent.
    case messages(String)
    /// rate = / connections attempted.
    case connectionsFailed
    /// "p50", "p99" or "p100": the largest over the run's storms (a storm not fully recovered counts as infinite).
    case stormRecovery(String)
    /// summary.json `counters.<key>`, built-in or named by the scenario.
    case counter(String)
    /// A latency the scenario names (`ThresholdNames.latencies`): a key of `latency_us` too.
    case named(String)

    public static let latencyKeys = [
        "round_trip", "round_trip_uncorrected", "fanout", "fanout_uncorrected", "tcp_connect", "tls_handshake", "ws_upgrade",
        "negotiate", "handshake", "stream_item", "ping_round_trip", "http_2xx", "http_3xx", "http_4xx", "http_5xx",
        "http_uncorrected", "staleness", "eio_handshake", "namespace_connect", "ack", "ack_uncorrected",
    ]
    /// Built-in latencies only Socket.IO clients record: a declared flow (which never records
    /// them) may still name a reply so, as flows did before Socket.IO came (`ack`); its own wins.
    public static let socketIOOnlyLatencyKeys: Set<String> = ["eio_handshake", "namespace_connect", "ack", "ack_uncorrected"]
    public static let errorClassKeys = [
        "connect_refused", "connect_timeout", "connect_error", "upgrade_rejected", "upgrade_invalid", "upgrade_timeout",
        "protocol_error", "invalid_utf8", "message_too_big", "connection_reset", "unexpected_eof", "closed_with_error",
        "io_error", "http_status", "negotiate_failed", "no_transport", "handshake_failed", "handshake_timeout",
        "server_timeout", "hub_error", "unexpected_reply", "response_timeout", "interrupted", "tls_handshake_failed",
        "tls_verify_failed", "tls_protocol_error", "expect_timeout", "expect_mismatch", "namespace_refused", "redirect_refused",
    ]
    public static let counterKeys = [
        "connect_attempts", "connected", "connect_failed", "disconnected", "messages_sent", "messages_delivered",
        "messages_failed", "messages_lost", "fanout_received", "fanout_expected", "sends_deferred", "bytes_sent",
        "bytes_received", "unparsed_messages", "heartbeats_sent", "pings_sent", "pongs_received", "stream_items",
        "streams_cancelled", "client_results", "reconnect_attempts", "reconnected", "connected_websockets",
        "connected_server_sent_events", "connected_long_polling", "sent_websockets", "sent_server_sent_events",
        "sent_long_polling", "churn_left", "churn_joined", "not_modified", "changed", "unprocessed", "clients_stopped",
        "redirects_followed", "rate_limit_headers_seen", "retry_after_seen", "tls_handshakes", "tls_resumed",
        "unrecognised_frames", "flow_ignored", "flow_responded", "upgraded", "upgrades_failed", "acks_received",
        "ramped_up", "ramped_down",
    ]
    static let stormKeys = ["p50", "p99", "p100"]
    static let messageKeys = ["lost", "failed", "delivered"]

    /// Every name a threshold accepts, for suggestions.
    public static var allNames: [String] {
        latencyKeys + ["errors"] + errorClassKeys.map { "errors.\($0)" } + messageKeys.map { "messages.\($0)" }
            + ["connections.failed"] + stormKeys.map { "storms.recovery_\($0)" } + counterKeys.map { "counters.\($0)" }
    }

    /// The kind `name` is, among the built-in metrics and the names the scenario declares.
    public init?(_ name: String, names: ThresholdNames) {
        if names.latencies.contains(name), !Self.latencyKeys.contains(name) || Self.socketIOOnlyLatencyKeys.contains(name) {
            self = .named(name)
            return
        }
        if name.hasPrefix("counters."), names.counters.contains(String(name.dropFirst("counters.".count))),
           !Self.counterKeys.contains(String(name.dropFirst("counters.".count))) {
            self = .counter(String(name.dropFirst("counters.".count)))
            return
        }
        self.init(name)
    }

    public init?(_ name: String) {
        if Self.latencyKeys.contains(name) { self = .latency(name); return }
        if name == "errors" { self = .errors(nil); return }
        if name == "connections.failed" { self = .connectionsFailed; return }
        guard let dot = name.firstIndex(of: ".") else { return nil }
        let head = name[..<dot], tail = String(name[name.index(after: dot)...])
        switch head {
        case "errors" where Self.errorClassKeys.contains(tail): self = .errors(tail)
        case "messages" where Self.messageKeys.contains(tail): self = .messages(tail)
        case "storms" where tail.hasPrefix("recovery_") && Self.stormKeys.contains(String(tail.dropFirst("recovery_".count))):
            self = .stormRecovery(String(tail.dropFirst("recovery_".count)))
        case "counters" where Self.counterKeys.contains(tail): self = .counter(tail)
        default: return nil
        }
    }

    /// The statistics this metric has, as users write them.
    public var statistics: [String] {
        switch self {
        case .latency, .named: ["p(N)", "max", "min", "mean", "count"]
        case .errors, .messages, .connectionsFailed: ["rate", "count"]
        case .stormRecovery: ["max"]
        case .counter: ["count"]
        }
    }

    func allows(_ statistic: ThresholdStatistic) -> Bool {
        switch (self, statistic) {
        case (.latency, .rate): false
        case (.latency, _): true
        case (.named, .rate): false
        case (.named, _): true
        case (.errors, .rate), (.errors, .count), (.messages, .rate), (.messages, .count): true
        case (.connectionsFailed, .rate), (.connectionsFailed, .count): true
        case (.stormRecovery, .max): true
        case (.counter, .count): true
        default: false
        }
    }

    /// Storm recovery exists only once the run is over: it has no windows and is not evaluated live.
    public var isEndOfRunOnly: Bool {
        if case .stormRecovery = self { return true }
        return false
    }
}

extension Reader {
    static let thresholdForm = "a list of conditions like [\"p(99) < 50ms\"], or {conditions: [...], after: 30s, window: 10s, "
        + "abort_on_fail: true, delay: 10s}"

    /// `names`: what the scenario declares beyond the built-in metrics, which thresholds may name.
    /// - Parameter populations: The run's populations and the names each declares; a key may
    ///   then name one (`round_trip{population:publishers}`), and its metric must be one of that
    ///   population's.
    func thresholdList(_ node: Node, messageSeconds: Double, names allNames: ThresholdNames = ThresholdNames(),
                       populations: [String: ThresholdNames] = [:]) throws(ScenarioError) -> [ThresholdSpec] {
        guard case .mapping(let mapping) = node else {
            throw error(at: node, field: "thresholds",
                        "expected a mapping of metric names to conditions (like 'round_trip: [\"p(99) < 50ms\"]'), got \(describe(node))")
        }
        var specs: [ThresholdSpec] = []
        for (keyNode, value) in mapping {
            let key = try string(keyNode, field: "thresholds", expecting: "a metric name")
            let field = "thresholds.\(key)"
            let parts = key.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
            var metric = String(parts[0])
            var names = allNames
            var population: String? = nil
            if let open = metric.firstIndex(of: "{") {
                let tag = metric[open...]
                let prefix = "{population:"
                guard tag.hasPrefix(prefix), tag.hasSuffix("}"), tag.count > prefix.count + 1 else {
                    throw error(at: keyNode, field: field, "expected '{population:NAME}' after the metric name (like 'round_trip{population:publishers}'), got '\(tag)'")
                }
                let name = String(tag.dropFirst(prefix.count).dropLast())
                guard let declared = populations[name] else {
                    let known = populations.keys.sorted()
                    throw error(at: keyNode, field: field, known.isEmpty
                                ? "'{population:\(name)}' names a population, but this scenario has no 'populations'"
                                : "no population named '\(name)' (populations: \(known.joined(separator: ", ")))")
                }
                population = name
                names = declared
                metric = String(metric[..<open])
            }
            var label: String?
            if parts.count == 2 {
                let text = String(parts[1])
                guard !text.isEmpty, text.count <= Limits.nameLength,
                      text.unicodeScalars.allSatisfy({ $0.isASCII && (isAlphanumeric($0) || "._-".unicodeScalars.contains($0)) })
                else {
                    throw error(at: keyNode, field: field, "expected a label of letters, digits, '.', '_' or '-' after '@', got '\(text)'")
                }
                label = text
            }
            guard let kind = ThresholdMetricKind(metric, names: names) else {
                var message = "unknown metric '\(metric)'"
                let declared = names.latencies.sorted() + names.counters.sorted().map { "counters.\($0)" }
                if let suggestion = closestKey(to: metric, in: ThresholdMetricKind.allNames + declared) {
                    message += ": did you mean '\(suggestion)'?"
                } else {
                    message += " (metrics: every key of summary.json latency_us such as round_trip or tcp_connect, errors, "
                        + "errors.<class>, messages.lost, messages.failed, messages.delivered, connections.failed, "
                        + "storms.recovery_p50, storms.recovery_p99, storms.recovery_p100, counters.<key>)"
                }
                throw error(at: keyNode, field: field, message)
            }
            var spec = ThresholdSpec(metric: metric, label: label, conditions: [])
            spec.population = population
            spec.declaredKind = kind
            spec.line = keyNode.mark?.line ?? 0
            var conditionsNode = value
            var conditionsField = field
            if case .mapping(let settings) = value {
                let f = try Fields(settings, path: field, known: ["conditions", "after", "window", "abort_on_fail", "delay"], reader: self)
                guard let c = f["conditions"] else {
                    throw error(at: keyNode, field: "\(field).conditions", "missing required field 'conditions' (a list like [\"p(99) < 50ms\"])")
                }
                conditionsNode = c
                conditionsField = "\(field).conditions"
                if let n = f["after"] { spec.afterSeconds = try duration(n, field: "\(field).after", allowZero: true) }
                if let n = f["window"] {
                    let w = try duration(n, field: "\(field).window", allowZero: false)
                    // Intervals are about a second long: a shorter window would hold no whole interval.
                    guard w >= 1 else { throw error(at: n, field: "\(field).window", "expected a window of at least 1s, got \(describe(n))") }
                    spec.windowSeconds = w
                }
                if let n = f["abort_on_fail"] { spec.abortOnFail = try boolean(n, field: "\(field).abort_on_fail") }
                if let n = f["delay"] {
                    guard spec.abortOnFail else {
                        throw error(at: n, field: "\(field).delay", "delay only applies with 'abort_on_fail: true' (it is how long the run goes before a failure may stop it)")
                    }
                    spec.delaySeconds = try duration(n, field: "\(field).delay", allowZero: true)
                }
                if spec.isWindowed, kind.isEndOfRunOnly, let n = f["window"] ?? f["after"] {
                    throw error(at: n, field: field, "storm recovery is known only at the end of the run: it has no windows")
                }
                if let after = spec.afterSeconds, after >= messageSeconds, let n = f["after"] {
                    throw error(at: n, field: "\(field).after",
                                "after (\(format(after))s) is not before the end of the message phase (duration \(format(messageSeconds))s\(origin(of: "duration"))): no window would be evaluated")
                }
            }
            guard case .sequence(let list) = conditionsNode, !list.isEmpty else {
                throw error(at: conditionsNode, field: conditionsField, "expected \(Self.thresholdForm), got \(describe(conditionsNode))")
            }
            for (index, item) in list.enumerated() {
                spec.conditions.append(try thresholdCondition(item, field: "\(conditionsField)[\(index)]", kind: kind, metric: metric))
            }
            specs.append(spec)
        }
        return specs
    }

    func thresholdCondition(_ node: Node, field: String, kind: ThresholdMetricKind, metric: String) throws(ScenarioError) -> ThresholdCondition {
        let text = try string(node, field: field, expecting: "a condition like \"p(99) < 50ms\"")
        let statistics = kind.statistics.joined(separator: ", ")
        switch parseCondition(text, kind: kind) {
        case .success(let condition): return condition
        case .failure(let problem):
            throw error(at: node, field: field, "\(problem.message) in '\(text)' (\(metric) has \(statistics); operators < <= > >= == !=)")
        }
    }
}

/// `p(99) < 50ms`, `max <= 2s`, `rate < 0.1%`, `count == 0`: statistic, operator, limit.
func parseCondition(_ written: String, kind: ThresholdMetricKind) -> Result<ThresholdCondition, TemplateProblem> {
    let text = Substring(written.trimmingCharacters(in: .whitespaces))
    guard let opStart = text.firstIndex(where: { "<>=!".contains($0) }) else {
        return .failure(TemplateProblem("expected an operator (< <= > >= == !=)"))
    }
    let statText = text[..<opStart].trimmingCharacters(in: .whitespaces)
    var rest = text[opStart...]
    guard let comparison = ThresholdComparison.allCases.sorted(by: { $0.rawValue.count > $1.rawValue.count })
        .first(where: { rest.hasPrefix($0.rawValue) })
    else {
        return .failure(TemplateProblem("expected an operator (< <= > >= == !=)"))
    }
    rest = rest.dropFirst(comparison.rawValue.count)
    let limitText = rest.trimmingCharacters(in: .whitespaces)

    let statistic: ThresholdStatistic
    switch statText {
    case "max": statistic = .max
    case "min": statistic = .min
    case "mean": statistic = .mean
    case "count": statistic = .count
    case "rate": statistic = .rate
    default:
        if statText.hasPrefix("p("), statText.hasSuffix(")") {
            let inner = statText.dropFirst(2).dropLast().trimmingCharacters(in: .whitespaces)
            guard !inner.isEmpty, inner.allSatisfy({ $0.isASCIIDigit || $0 == "." }), let p = Double(inner), p > 0, p <= 100 else {
                return .failure(TemplateProblem("expected a percentile p(N) with 0 < N ≤ 100, got '\(statText)'"))
            }
            statistic = .percentile(p)
        } else {
            var message = "unknown statistic '\(statText)'"
            if statText == "avg" || statText == "med" {
                message += statText == "avg" ? ": did you mean 'mean'?" : ": did you mean 'p(50)'?"
            } else if let s = closestKey(to: statText, in: ["max", "min", "mean", "count", "rate"]) {
                message += ": did you mean '\(s)'?"
            }
            return .failure(TemplateProblem(message))
        }
    }
    guard kind.allows(statistic) else {
        return .failure(TemplateProblem("'\(statistic)' does not apply to this metric"))
    }
    let limit: Double
    if statistic.isDuration || kind.isEndOfRunOnly {
        guard let micros = parseThresholdDuration(limitText) else {
            return .failure(TemplateProblem("expected a duration like 50ms, 250us, 1.5s (a plain number means ms), got '\(limitText)'"))
        }
        limit = micros
    } else if statistic == .rate {
        if limitText.hasSuffix("%"), let v = parseNumber(limitText.dropLast().trimmingCharacters(in: .whitespaces)) {
            limit = v / 100
        } else if let v = parseNumber(limitText) {
            limit = v
        } else {
            return .failure(TemplateProblem("expected a rate as a percentage (0.1%) or a fraction (0.001), got '\(limitText)'"))
        }
    } else {
        guard let v = parseNumber(limitText) else { return .failure(TemplateProblem("expected a count like 0 or 100, got '\(limitText)'")) }
        limit = v
    }
    return .success(ThresholdCondition(statistic: statistic, comparison: comparison, limit: limit, text: written))
}

/// A non-negative decimal number (no sign, exponent or separators), finite and below 1e15.
private func parseNumber(_ text: String) -> Double? {
    let digits = text.filter { $0 != "." }
    guard !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit), text.count - digits.count <= 1, let v = Double(text), v < 1e15 else { return nil }
    return v
}

/// Microseconds from "50ms", "250us", "250µs", "1.5s" or a plain number of milliseconds.
func parseThresholdDuration(_ text: String) -> Double? {
    let units: [(suffix: String, micros: Double)] = [("ms", 1000), ("us", 1), ("\u{B5}s", 1), ("\u{3BC}s", 1), ("s", 1_000_000)]
    for unit in units where text.hasSuffix(unit.suffix) {
        return parseNumber(String(text.dropLast(unit.suffix.count)).trimmingCharacters(in: .whitespaces)).map { $0 * unit.micros }
    }
    return parseNumber(text).map { $0 * 1000 }
}

extension ThresholdSpec {
    /// A service level objective as `stampede capacity --slo` takes it: a threshold metric and one
    /// condition, "round_trip p(99) < 50ms", "errors rate < 0.1%", "messages.lost count == 0".
    /// Judged over one step's measured window, so storm recovery (end of run only) is refused.
    /// The error says what is wrong, for a message naming the flag.
    /// `names`: what the scenario declares beyond the built-in metrics (`Scenario.declaredMetrics`).
    public static func parseSLO(_ text: String, names: ThresholdNames = ThresholdNames()) -> Result<ThresholdSpec, SLOProblem> {
        func problem(_ m: String) -> Result<ThresholdSpec, SLOProblem> { .failure(SLOProblem(description: m)) }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let space = trimmed.firstIndex(where: { $0 == " " || $0 == "\t" }) else {
            return problem("expected a metric and a condition like \"round_trip p(99) < 50ms\", got '\(text)'")
        }
        let metric = String(trimmed[..<space])
        guard let kind = ThresholdMetricKind(metric, names: names) else {
            var m = "unknown metric '\(metric)'"
            let declared = names.latencies.sorted() + names.counters.sorted().map { "counters.\($0)" }
            if let s = closestKey(to: metric, in: ThresholdMetricKind.allNames + declared) { m += ": did you mean '\(s)'?" }
            return problem(m + " (a latency such as round_trip, errors, errors.<class>, messages.lost, connections.failed or counters.<key>)")
        }
        guard !kind.isEndOfRunOnly else { return problem("'\(metric)' exists only at the end of a run, not per step") }
        switch parseCondition(String(trimmed[space...]), kind: kind) {
        case .failure(let p): return problem("'\(text)': \(p.message)")
        case .success(var condition):
            condition.text = String(trimmed[space...]).trimmingCharacters(in: .whitespaces)
            var spec = ThresholdSpec(metric: metric, conditions: [condition])
            spec.declaredKind = kind
            return .success(spec)
        }
    }
}

/// Why an SLO's text is not one (`ThresholdSpec.parseSLO`).
public struct SLOProblem: Error, Sendable, CustomStringConvertible {
    public var description: String
}
