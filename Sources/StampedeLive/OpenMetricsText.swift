import StampedeMetrics

/// The two text formats the endpoint speaks. OpenMetrics 1.0 is the default and what Prometheus
/// asks for first; the Prometheus text format 0.0.4 is given to a client that asks for
/// `text/plain` only, since `promtool check metrics` (Prometheus 2.x) and older scrapers parse
/// that format and no other (it has no `_total` rule for counter families, no UNIT, no stateset
/// and no `# EOF`).
public enum ExpositionFormat: Sendable, Equatable {
    case openMetrics
    case prometheusText

    /// The Content-Type of a response in this format.
    public var contentType: StaticString {
        switch self {
        case .openMetrics: "application/openmetrics-text; version=1.0.0; charset=utf-8"
        case .prometheusText: "text/plain; version=0.0.4; charset=utf-8"
        }
    }

    /// The format for a request's Accept header: OpenMetrics when it names it, when it does not
    /// name text/plain, or when there is no header; the 0.0.4 text format when it names
    /// text/plain and not OpenMetrics. (Quality values are not weighed: a client that accepts
    /// both gets OpenMetrics, which every such client parses.)
    public static func negotiate(accept: String?) -> ExpositionFormat {
        guard let accept = accept?.lowercased() else { return .openMetrics }
        if accept.contains("application/openmetrics-text") { return .openMetrics }
        return accept.contains("text/plain") ? .prometheusText : .openMetrics
    }
}

/// Renders a `LiveSnapshot` as OpenMetrics 1.0 text (or the Prometheus 0.0.4 text format):
/// every family is named `stampede_…`, carries the `scenario` and `workload` labels, and
/// `docs/metrics.md` lists them all. Pure: the same snapshot gives the same text.
///
/// Latencies are histograms with fixed `le` bounds in seconds (`latencyBounds`), so that series
/// from several generator processes or hosts add up bucket by bucket (`sum by (le)`), which
/// quantiles cannot. The counts come from the run's HdrHistograms (microseconds, 3 significant
/// digits): a recorded value counts towards a bucket when its HdrHistogram bucket's highest
/// equivalent value is at most `le`, so a value within 0.1 % of a bound may land one bucket up.
/// `_sum` is the HdrHistogram's mean times its count (an HdrHistogram keeps no exact sum), so
/// it is exact to the same 0.1 %.
public enum OpenMetricsText {
    /// Latency bucket bounds, microseconds: 1-2-5 per decade from 100 µs to 20 s, then 60 s.
    public static let latencyBoundsMicros: [UInt64] = [
        100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000,
        1_000_000, 2_000_000, 5_000_000, 10_000_000, 20_000_000, 60_000_000,
    ]
    /// The same bounds as `le` label values (seconds), written out so every process writes
    /// exactly the same text for a bound.
    public static let latencyBounds: [String] = [
        "0.0001", "0.0002", "0.0005", "0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5",
        "1", "2", "5", "10", "20", "60",
    ]

    /// Cumulative bucket counts of `h` for `latencyBoundsMicros`, then the total (`+Inf`).
    public static func cumulativeBuckets(_ h: LatencyHistogram) -> [UInt64] {
        var perBucket = [UInt64](repeating: 0, count: latencyBoundsMicros.count + 1)
        guard h.totalCount > 0 else { return perBucket }
        for v in h.recordedValues() {
            var i = 0
            while i < latencyBoundsMicros.count && v.value > latencyBoundsMicros[i] { i += 1 }
            perBucket[i] &+= v.count
        }
        var running: UInt64 = 0
        for i in perBucket.indices {
            running &+= perBucket[i]
            perBucket[i] = running
        }
        return perBucket
    }

    /// The exposition of `snapshot` in `format`.
    public static func render(_ snapshot: LiveSnapshot, format: ExpositionFormat = .openMetrics) -> String {
        render([snapshot], format: format)
    }

    /// Several snapshots in one exposition (a run of several populations: one each, told apart
    /// by their labels): each family once, with every snapshot's samples.
    public static func render(_ snapshots: [LiveSnapshot], format: ExpositionFormat = .openMetrics) -> String {
        var w = Writer(format: format, labels: "")
        for snapshot in snapshots {
            var common = "scenario=\"\(escape(snapshot.scenario))\",workload=\"\(escape(snapshot.workload))\""
            for (name, value) in snapshot.labels.sorted(by: { $0.key < $1.key }) where isExtraLabelName(name) {
                common += ",\(name)=\"\(escape(value))\""
            }
            w.labels = common
            write(snapshot, into: &w)
        }
        var out = w.text
        if format == .openMetrics { out += "# EOF\n" }
        return out
    }

    /// One snapshot's families and samples.
    static func write(_ snapshot: LiveSnapshot, into w: inout Writer) {
        let t = snapshot.totals

        w.counter("stampede_messages_sent", "Messages sent by the clients.", t[.messagesSent])
        w.counter("stampede_messages_delivered", "Own messages whose echo came back to the sender.", t[.messagesDelivered])
        w.counter("stampede_messages_failed", "Own messages the server answered with an error.", t[.messagesFailed])
        w.family("stampede_messages_lost", .counter, help: "Own messages that can no longer be delivered, by reason.")
        for r in LossReason.allCases { w.sample("stampede_messages_lost_total", "reason", r.key, value: t.lostCount(r)) }
        w.counter("stampede_fanout_received", "Broadcasts of other clients' messages received.", t[.fanoutReceived])
        w.family("stampede_errors", .counter, help: "Errors by class (summary.json errors).")
        for e in ErrorClass.allCases { w.sample("stampede_errors_total", "class", e.key, value: t.errorCount(e)) }
        w.counter("stampede_connect_attempts", "Connection attempts started.", t[.connectAttempts])
        w.counter("stampede_connected", "Connections established.", t[.connected])
        w.counter("stampede_connect_failed", "Connection attempts that failed.", t[.connectFailed])
        w.counter("stampede_disconnected", "Established connections that ended, for any reason.", t[.disconnected])
        w.counter("stampede_reconnect_attempts", "Reconnect attempts started.", t[.reconnectAttempts])
        w.counter("stampede_reconnected", "Reconnect attempts that ended connected again.", t[.reconnected])
        w.counter("stampede_sent_bytes", "Bytes written to the sockets.", t[.bytesSent], unit: "bytes")
        w.counter("stampede_received_bytes", "Bytes read from the sockets.", t[.bytesReceived], unit: "bytes")

        w.gauge("stampede_connections_open", "Connections open.", number(snapshot.open))
        w.gauge("stampede_connections_connecting", "Connections being set up.", number(snapshot.connecting))
        w.gauge("stampede_connections_reconnecting", "Clients waiting to reconnect.", number(snapshot.reconnecting))
        w.gauge("stampede_clients_target", "The scenario's client count.", number(snapshot.clients))
        w.gauge("stampede_timer_lag_seconds", "Worst timer lateness of any client loop in the last interval.",
                number(snapshot.timerLagSeconds), unit: "seconds")
        w.gauge("stampede_process_cpu_ratio", "CPU of the generator process in the last interval, in cores (1 = one core busy).",
                number(snapshot.processCPURatio), unit: "ratio")
        w.gauge("stampede_client_loop_cpu_ratio", "CPU of the client loops in the last interval, in cores (1 = one core busy).",
                number(snapshot.clientLoopCPURatio), unit: "ratio")
        w.gauge("stampede_client_loops", "Client event loops (threads); each can use at most one core.", number(snapshot.loops))
        w.gauge("stampede_resident_memory_bytes", "Resident memory of the generator process.", number(snapshot.residentBytes), unit: "bytes")
        w.gauge("stampede_elapsed_seconds", "Seconds since the run started.", number(snapshot.elapsedSeconds), unit: "seconds")
        var states = LiveSnapshot.phases
        if !states.contains(snapshot.phase) { states.append(snapshot.phase) }
        w.family("stampede_run_phase", .stateset, help: "The run's phase: 1 for the current one.")
        for s in states { w.sample("stampede_run_phase", "stampede_run_phase", s, value: s == snapshot.phase ? 1 : 0) }

        for m in LatencyMetric.allCases {
            let h = t.histograms[m.rawValue]
            guard h.totalCount > 0 else { continue }
            let name = "stampede_\(m.key)_seconds"
            w.family(name, .histogram, help: "Latency \(m.key) (as in summary.json), from the run's HdrHistogram.", unit: "seconds")
            let buckets = cumulativeBuckets(h)
            for (i, le) in latencyBounds.enumerated() { w.sample(name + "_bucket", "le", le, value: buckets[i]) }
            w.sample(name + "_bucket", "le", "+Inf", value: buckets[buckets.count - 1])
            w.sample(name + "_count", value: number(h.totalCount))
            w.sample(name + "_sum", value: number(h.latencyMean * Double(h.totalCount) / 1e6))
        }
        named(t, into: &w)
    }

    // MARK: Text

    /// Whether `name` can be an extra label: a valid label name that no family uses already.
    static func isExtraLabelName(_ name: String) -> Bool {
        let reserved: Set<String> = ["scenario", "workload", "le", "reason", "class", "stampede_run_phase", "metric", "counter", "close"]
        guard !reserved.contains(name), !name.hasPrefix("__"), let first = name.utf8.first, name.utf8.count <= 64 else { return false }
        func letter(_ b: UInt8) -> Bool { (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F }
        return letter(first) && name.utf8.allSatisfy { letter($0) || ($0 >= 0x30 && $0 <= 0x39) }
    }

    /// A label value with `\`, `"` and line feeds escaped (the same rule in both formats).
    public static func escape(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for c in value.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// A sample value: an integer as digits, any other finite number in Swift's shortest form
    /// (`0.25`, `1e-05`, which both formats read), and 0 for a value that is not finite.
    static func number(_ d: Double) -> String {
        guard d.isFinite else { return "0" }
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
        return d.description
    }
    static func number<I: BinaryInteger>(_ i: I) -> String { String(i) }

    enum FamilyType: String { case counter, gauge, histogram, stateset }

    struct Writer {
        let format: ExpositionFormat
        /// `scenario="…",workload="…"` (and any extra labels), put first in every sample's labels.
        var labels: String
        /// Each family's metadata lines and its samples, in the order the families first came:
        /// the samples of several snapshots stay together under one family, as the format wants.
        var families: [(header: String, samples: String)] = []
        var familyIndex: [String: Int] = [:]
        var current = 0

        init(format: ExpositionFormat, labels: String) {
            self.format = format
            self.labels = labels
        }

        /// The exposition so far (without `# EOF`).
        var text: String {
            var out = ""
            out.reserveCapacity(families.reduce(0) { $0 + $1.header.utf8.count + $1.samples.utf8.count })
            for f in families { out += f.header; out += f.samples }
            return out
        }

        /// Appends one sample line to the current family: `name{labels,own} value`.
        mutating func emit(_ name: String, own: (inout String) -> Void, value: String) {
            if families.isEmpty { families.append(("", "")) }
            families[current].samples += name
            families[current].samples += "{"
            families[current].samples += labels
            own(&families[current].samples)
            families[current].samples += "} "
            families[current].samples += value
            families[current].samples += "\n"
        }

        /// The metadata lines of a family. OpenMetrics names a counter family without its
        /// `_total` and has UNIT lines and statesets; the 0.0.4 format names the counter
        /// family as its samples and has neither (a stateset is a gauge there).
        mutating func family(_ name: String, _ type: FamilyType, help: String, unit: String? = nil) {
            if let i = familyIndex[name] { current = i; return }
            familyIndex[name] = families.count
            current = families.count
            families.append(("", ""))
            var out = ""
            defer { families[current].header = out }
            switch format {
            case .openMetrics:
                out += "# TYPE \(name) \(type.rawValue)\n"
                if let unit { out += "# UNIT \(name) \(unit)\n" }
                out += "# HELP \(name) \(help)\n"
            case .prometheusText:
                let shown = type == .counter ? name + "_total" : name
                out += "# HELP \(shown) \(help)\n"
                out += "# TYPE \(shown) \(type == .stateset ? "gauge" : type.rawValue)\n"
            }
        }

        mutating func sample(_ name: String, _ label: String? = nil, _ labelValue: String = "", value: String) {
            emit(name, own: { out in if let label { out += ",\(label)=\"\(OpenMetricsText.escape(labelValue))\"" } }, value: value)
        }

        /// A sample with several labels of its own after the common ones (values escaped here).
        mutating func sample(_ name: String, labels own: [(String, String)], value: String) {
            emit(name, own: { out in for (label, v) in own { out += ",\(label)=\"\(OpenMetricsText.escape(v))\"" } }, value: value)
        }

        mutating func sample(_ name: String, _ label: String, _ labelValue: String, value: UInt64) {
            sample(name, label, labelValue, value: String(value))
        }

        mutating func counter(_ name: String, _ help: String, _ value: UInt64, unit: String? = nil) {
            family(name, .counter, help: help, unit: unit)
            sample(name + "_total", value: String(value))
        }

        mutating func gauge(_ name: String, _ help: String, _ value: String, unit: String? = nil) {
            family(name, .gauge, help: help, unit: unit)
            sample(name, value: value)
        }
    }
}
