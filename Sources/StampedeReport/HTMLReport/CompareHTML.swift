import Foundation
import StampedeMetrics

/// Two runs side by side: `stampede compare`'s verdicts and tables, and both runs' latency over
/// time and percentile spectrum overlaid.
enum CompareHTML {
    static func page(_ report: CompareReport, baseline b: RunData, current c: RunData) -> String {
        var body: [String] = []
        body.append(HTMLPage.section("headline", "Summary", headline(report, b, c)))
        body.append(HTMLPage.section("comparison", "Verdicts", verdicts(report)))
        body.append(HTMLPage.section("overlay", "Latency over time, both runs", overlays(report, b, c)))
        body.append(HTMLPage.section("tables", "Percentiles, throughput, errors", tables(report)))
        return HTMLPage.document(title: "Stampede compare: \(b.summary.scenario.name) against \(c.summary.scenario.name)",
                                 subtitle: "verdict: \(report.verdict.rawValue)", body: body)
    }

    static func headline(_ r: CompareReport, _ b: RunData, _ c: RunData) -> String {
        var out = ""
        switch r.verdict {
        case .slower: out += HTML.notice("fail", "Verdict: slower.")
        case .faster: out += HTML.notice("ok", "Verdict: faster.")
        default: out += HTML.notice(r.verdict == .noChange ? "ok" : "warn", "Verdict: \(r.verdict.rawValue).")
        }
        func describe(_ d: RunData) -> String {
            let s = d.summary
            return "\(s.scenario.name): \(s.scenario.workload) against \(s.scenario.target), \(Fmt.int(s.scenario.clients)) clients, started \(s.environment.startedAt)"
                + (s.partial ? " (partial)" : "") + (s.generator.saturated ? " (generator saturated)" : "")
        }
        out += HTML.facts([
            ("baseline", r.baseline), ("", describe(b)),
            ("current", r.current), (" ", describe(c)),
            ("rule", "tolerance \(Fmt.sig(r.tolerancePercent)) %, \(Fmt.int(r.resamples)) bootstrap resamples (see docs/compare.md)"),
        ], id: "facts")
        for (name, d) in [("baseline", b), ("current", c)] where d.summary.generator.saturated {
            out += HTML.notice("warn", "The \(name) run's generator was saturated: its latency is partly the generator's.")
        }
        return out
    }

    static func verdicts(_ r: CompareReport) -> String {
        HTML.table(["metric", "verdict", "why", "KS D", "Wasserstein (ms)"],
                             r.metrics.map { [$0.metric + ($0.gated ? " (gated)" : ""), $0.verdict.rawValue, $0.reason,
                                              Fmt.trim(String(format: "%.3f", $0.ksD)), Fmt.trim(String(format: "%.3f", $0.wassersteinMs))] },
                             id: "verdicts", numeric: [3, 4]) { r.metrics[$0].verdict == .slower ? "fail" : nil }
    }

    static func tables(_ r: CompareReport) -> String {
        var out = HTML.table(["metric", "percentile", "baseline ms [95% CI]", "current ms [95% CI]", "change"], r.latencyRows(), id: "percentiles", numeric: [2, 3, 4])
        out += "<h3>Throughput, errors, accounting</h3>"
        out += HTML.table(["figure", "baseline", "current", "change"],
                          r.figures.map { [$0.name, Fmt.sig($0.baseline), Fmt.sig($0.current), CompareReport.change($0.changePercent)] },
                          id: "figures", numeric: [1, 2, 3])
        if !r.notes.isEmpty { out += "<ul>" + r.notes.map { "<li>\(HTML.escape($0))</li>" }.joined() + "</ul>" }
        return out
    }

    static func overlays(_ r: CompareReport, _ b: RunData, _ c: RunData) -> String {
        var out = "<p>Blue: baseline, orange: current. Solid p99, dashed p50, per interval, from each run&#39;s interval log; x is seconds since each run started.</p>"
        // Corrected metrics only (their uncorrected twins and connect times are in the tables).
        var corrected = Set(LatencyMetric.allCases.filter { $0.correction == .corrected }.map(\.key))
        let named = r.metrics.map(\.metric).filter { LatencyMetric(key: $0) == nil }
        for key in named where LatencyCorrectionKind(namedKey: key, among: named) == .corrected { corrected.insert(key) }
        let keys = r.metrics.map(\.metric).filter { corrected.contains($0) && b.intervals[$0] != nil && c.intervals[$0] != nil }
        for key in keys.prefix(6) {
            var series: [ChartSeries] = []
            for (name, run, color) in [("baseline", b, Palette.baseline), ("current", c, Palette.current)] {
                let list = run.intervals[key] ?? []
                for (p, dashed) in [(99.0, false), (50.0, true)] {
                    series.append(ChartSeries(name: "\(name) \(Fmt.percentileLabel(p))", color: color, points: list.map { i in
                        (i.end, i.value(p) / 1000)
                    }, dashed: dashed))
                }
            }
            out += LineChart(id: "chart-overlay-\(key)", title: "\(key): baseline and current per interval", xLabel: "seconds since the run started",
                             yLabel: "latency (ms)", series: series).html()
            var spectra: [ChartSeries] = []
            for (name, run, color) in [("baseline", b, Palette.baseline), ("current", c, Palette.current)] {
                if let h = run.merged(key) { spectra.append(ChartSeries(name: name, color: color, points: RunCharts.spectrumPoints(h))) }
            }
            out += LineChart(id: "chart-overlay-spectrum-\(key)", title: "\(key): percentile spectrum, both runs", xLabel: "percentile",
                             yLabel: "latency (ms)", xAxis: .percentile, series: spectra).html()
        }
        return out
    }
}
