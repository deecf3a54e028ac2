import Foundation
import StampedeMetrics

/// The charts of a run's report, drawn from the exact interval histograms (.hlog) and
/// timeseries.csv.
enum RunCharts {
    static let percentiles: [(name: String, value: Double, color: String)] = [
        ("p50", 50, Palette.p50), ("p90", 90, Palette.p90), ("p99", 99, Palette.p99), ("max", 100, Palette.max),
    ]

    /// The metrics to chart over time: corrected metrics with their uncorrected twins, then the
    /// other metrics measured in the message phase (connect-phase metrics have a table row only).
    static func latencyPairs(_ run: RunData) -> [(corrected: String, uncorrected: String?)] {
        var out: [(String, String?)] = []
        for m in LatencyMetric.allCases where run.intervals[m.key] != nil {
            switch m.correction {
            case .corrected: out.append((m.key, m.uncorrectedTwin.map(\.key).flatMap { run.intervals[$0] != nil ? $0 : nil }))
            case .uncorrected: if !LatencyMetric.allCases.contains(where: { $0.uncorrectedTwin == m && run.intervals[$0.key] != nil }) { out.append((m.key, nil)) }
            case .notApplicable:
                if m == .pingRoundTrip || m == .staleness { out.append((m.key, nil)) }
            }
        }
        // The scenario's named latencies: `ack` with its twin `ack_uncorrected`.
        let named = run.intervals.keys.filter { LatencyMetric(key: $0) == nil }.sorted()
        for key in named {
            switch LatencyCorrectionKind(namedKey: key, among: named) {
            case .corrected: out.append((key, key + LatencyCorrectionKind.uncorrectedSuffix))
            case .uncorrected:
                if !named.contains(String(key.dropLast(LatencyCorrectionKind.uncorrectedSuffix.count))) { out.append((key, nil)) }
            case .notApplicable: break
            }
        }
        return out
    }

    /// p50/p90/p99/max per interval, corrected solid and uncorrected dashed.
    static func latencyOverTime(_ run: RunData) -> String {
        let pairs = latencyPairs(run)
        guard !pairs.isEmpty else { return HTMLPage.section("latency-over-time", "Latency over time", "<p>No latency was recorded.</p>") }
        var out = "<p>Each point is one interval (about a second) of the metric&#39;s interval log: its exact percentiles. Dashed: the uncorrected twin, measured from the actual send instead of the intended send time.</p>"
        for (key, twin) in pairs {
            var series: [ChartSeries] = []
            for (k, dashed) in [(key, false)] + (twin.map { [($0, true)] } ?? []) {
                let list = run.intervals[k] ?? []
                for p in percentiles {
                    let points = list.map { i -> (x: Double, y: Double) in (i.end, i.value(p.value) / 1000) }
                    series.append(ChartSeries(name: "\(p.name)\(dashed ? " uncorrected" : "")", color: p.color, points: points, dashed: dashed))
                }
            }
            out += LineChart(id: "chart-latency-\(key)", title: "\(key): latency per interval" + (twin.map { " (and \($0))" } ?? ""),
                             xLabel: "seconds since the run started", yLabel: "latency (ms)", series: series).html()
        }
        return HTMLPage.section("latency-over-time", "Latency over time", out)
    }

    /// The percentile spectrum of the whole run (HdrHistogram's plot): x = 1/(1−p) on a log axis.
    static func spectrum(_ run: RunData) -> String {
        let pairs = latencyPairs(run)
        guard !pairs.isEmpty else { return "" }
        var out = "<p>The whole run&#39;s merged histograms. The x axis is HdrHistogram&#39;s percentile scale: each step right is ten times rarer. The gap between the corrected and uncorrected curves is the coordinated omission.</p>"
        for (key, twin) in pairs {
            var series: [ChartSeries] = []
            for (k, dashed, color) in [(key, false, Palette.p99)] + (twin.map { [($0, true, Palette.p50)] } ?? []) {
                guard let h = run.merged(k) else { continue }
                series.append(ChartSeries(name: k, color: color, points: spectrumPoints(h), dashed: dashed))
            }
            out += LineChart(id: "chart-spectrum-\(key)", title: "\(key): percentile spectrum", xLabel: "percentile",
                             yLabel: "latency (ms)", xAxis: .percentile, series: series).html()
            if let h = run.merged(key) {
                let rows = [50.0, 90, 99, 99.9, 99.99, 99.999, 100].filter { $0 == 100 || 1 / (1 - $0 / 100) <= Double(h.totalCount) }.map { p in
                    [Fmt.percentileLabel(p), Fmt.micros(p >= 100 ? h.maxRecorded : h.latencyValue(atPercentile: p))]
                }
                out += HTML.table(["\(key)", "latency"], rows, id: "spectrum-table-\(key)", numeric: [1])
            }
        }
        return HTMLPage.section("percentile-spectrum", "Percentile spectrum", out)
    }

    /// Points of a percentile distribution, ten per decade of 1/(1−p), up to what the sample
    /// count supports, then the maximum.
    static func spectrumPoints(_ h: LatencyHistogram) -> [(x: Double, y: Double)] {
        var points: [(x: Double, y: Double)] = []
        let limit = max(1, Double(h.totalCount))
        var k = 0
        while k <= 70 {
            let x = Foundation.pow(10, Double(k) / 10)
            if x > limit { break }
            points.append((x, Double(h.latencyValue(atPercentile: 100 * (1 - 1 / x))) / 1000))
            k += 1
        }
        points.append((max(limit, points.last?.x ?? 1), Double(h.maxRecorded) / 1000))
        return points
    }

    /// Messages per second, connections, and errors by class over time, from timeseries.csv.
    static func timeseries(_ run: RunData) -> String {
        guard let t = run.timeseries?.downsampled(levels: CSVTable.timeseriesLevels), let elapsed = t.column("elapsed_s"), !elapsed.isEmpty else {
            return HTMLPage.section("rates", "Messages, connections and errors over time", "<p>No timeseries.csv in this folder (a merged folder has none).</p>")
        }
        // Counts are per interval; divide by the interval's length for a rate.
        let lengths = elapsed.indices.map { i in i == 0 ? elapsed[0] : elapsed[i] - elapsed[i - 1] }
        func rate(_ name: String) -> [(x: Double, y: Double)] {
            guard let c = t.column(name) else { return [] }
            return c.indices.map { i in (elapsed[i], lengths[i] > 0.05 ? c[i] / lengths[i] : .nan) }
        }
        func level(_ name: String) -> [(x: Double, y: Double)] {
            guard let c = t.column(name) else { return [] }
            return c.indices.map { (elapsed[$0], c[$0]) }
        }
        var messageSeries = [ChartSeries(name: "sent", color: Palette.p50, points: rate("messages_sent")),
                             ChartSeries(name: "received (echoes + broadcasts)", color: Palette.p99, points: rate("messages_received"))]
        // The open model's intended rate (message.rate or its stages), when the run had one.
        if let target = t.column("target_rate"), target.contains(where: { $0 > 0 }) {
            messageSeries.append(ChartSeries(name: "target (intended)", color: Palette.max, points: level("target_rate"), dashed: true))
        }
        var out = LineChart(id: "chart-messages", title: "Messages per second", xLabel: "seconds since the run started", yLabel: "messages/s",
                            series: messageSeries, yFormat: Fmt.tick).html()
        out += LineChart(id: "chart-connections", title: "Connections", xLabel: "seconds since the run started", yLabel: "clients",
                         series: [ChartSeries(name: "open", color: Palette.p90, points: level("connections_open")),
                                  ChartSeries(name: "connecting", color: Palette.p50, points: level("connections_connecting")),
                                  ChartSeries(name: "reconnecting", color: Palette.max, points: level("connections_reconnecting"))],
                         yFormat: Fmt.tick).html()
        var errorSeries = [ChartSeries(name: "all errors", color: "#333333", points: rate("errors"))]
        let classes = t.header.filter { $0.hasPrefix("errors_") }.filter { (t.column($0) ?? []).contains { $0 > 0 } }
        for (i, c) in classes.prefix(9).enumerated() {
            errorSeries.append(ChartSeries(name: String(c.dropFirst("errors_".count)), color: Palette.cycle[i % Palette.cycle.count], points: rate(c), dashed: true))
        }
        out += LineChart(id: "chart-errors", title: "Errors per second" + (classes.isEmpty ? "" : ", by class"), xLabel: "seconds since the run started",
                         yLabel: "errors/s", series: errorSeries).html()
        return HTMLPage.section("rates", "Messages, connections and errors over time", out)
    }

    /// Each storm's thundering-herd curve and recovery times.
    static func storms(_ run: RunData) -> String {
        let storms = run.summary.storms
        guard !storms.isEmpty else { return "" }
        func rec(_ s: RunSummary.Storm, _ k: String) -> String { (s.recoveryMs[k] ?? nil).map { Fmt.sig($0) + " ms" } ?? "never" }
        var out = HTML.table(["#", "at", "kind", "mode", "affected", "recovered", "gave up", "p50", "p95", "p99", "p100", "lost"],
                             storms.map { s in
                                 ["\(s.number)", Fmt.sig(s.atSeconds) + " s", s.kind ?? "storm", s.mode, Fmt.int(s.affected), Fmt.int(s.recovered),
                                  Fmt.int(s.gaveUp), rec(s, "p50"), rec(s, "p95"), rec(s, "p99"), rec(s, "p100"), s.messagesLost.map { Fmt.int($0) } ?? "–"]
                             }, id: "storms-table", numeric: Set(4...11))
        for s in storms {
            guard let curve = run.stormCurves[s.number], let offset = curve.column("offset_ms") else { continue }
            func series(_ name: String, _ col: String, _ color: String) -> ChartSeries {
                let c = curve.column(col) ?? []
                return ChartSeries(name: name, color: color, points: c.indices.map { (offset[$0], c[$0]) })
            }
            out += LineChart(id: "chart-storm-\(s.number)", title: "Event \(s.number) (\(s.mode)): reconnects per 100 ms",
                             xLabel: "ms after the event", yLabel: "clients",
                             series: [series("attempts", "attempts", Palette.p99), series("successes", "successes", Palette.p50),
                                      series("recovered so far", "recovered_total", Palette.p90)],
                             yFormat: Fmt.tick).html()
        }
        return HTMLPage.section("storms", "Storms and recovery", out)
    }
}
