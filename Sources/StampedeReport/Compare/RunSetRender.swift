import Foundation

extension RunSetReport {
    /// The report in `format`, ending in a newline.
    public func rendered(_ format: CompareFormat) -> String {
        switch format {
        case .table: table()
        case .markdown: markdown()
        case .json: json()
        case .junit: CompareReport.junit(metrics.map { ($0.metric, $0.gated, $0.verdict, $0.reason) }, failOn: failOn)
        }
    }

    var sides: (String, String) {
        mode == .history ? ("history (\(baseline.count) runs)", "current") : ("baseline (\(baseline.count) runs)", "current (\(current.count) runs)")
    }

    /// Rows: metric, percentile, baseline median, current median, change, interval, p.
    func rows() -> [[String]] {
        metrics.flatMap { m in
            m.percentiles.map { p in
                [m.metric, p.name, String(format: "%.3f", p.baselineMedian / 1000), String(format: "%.3f", p.currentMedian / 1000),
                 RunSetRule.signed(p.changePct), "[\(RunSetRule.signed(p.lowPct)), \(RunSetRule.signed(p.highPct))]",
                 p.pValue.map { String(format: "%.3f", $0) } ?? "-"]
            }
        }
    }

    var header: [String] {
        ["metric", "pct", mode == .history ? "history ms" : "baseline ms", "current ms", "change",
         mode == .history ? "95% prediction" : "95% interval", "p"]
    }

    func table() -> String {
        let (b, c) = sides
        var out = "\(b): \(baseline.first ?? "")\(baseline.count > 1 ? " … \(baseline.last ?? "")" : "")\n"
        out += "\(c): \(current.first ?? "")\(current.count > 1 ? " … \(current.last ?? "")" : "")\n"
        let legend = switch mode {
        case .history: "(history: geometric mean of its runs; current: its one run)\n\n"
        case .pairs: "(medians of the runs; change: geometric mean of the \(baseline.count) pairs' ratios)\n\n"
        case .runs: "(medians of the runs)\n\n"
        }
        out += legend
        out += CompareReport.aligned(header: header, rows: rows())
        out += "\n"
        for m in metrics { out += "\(m.metric): \(m.verdict.rawValue.uppercased())\(m.gated ? " (gated)" : "") - \(m.reason)\n" }
        out += CompareReport.tail(notes: notes, figures: figures, verdict: verdict, failOn: failOn, gateTripped: gateTripped)
        return out
    }

    func markdown() -> String {
        let (b, c) = sides
        var out = "### Stampede compare: \(CompareReport.icon[verdict] ?? "") \(verdict.rawValue)"
            + (failOn.isEmpty ? "" : gateTripped ? " (gate failed)" : " (gate passed)") + "\n\n"
        out += "\(b.prefix(1).uppercased() + b.dropFirst()) against \(c); tolerance \(CompareReport.number(tolerancePercent)) %"
            + (mode == .runs ? ", Mann–Whitney at \(alpha).\n\n" : ".\n\n")
        out += "| metric | verdict | why |\n|---|---|---|\n"
        for m in metrics { out += "| `\(m.metric)`\(m.gated ? " (gated)" : "") | \(CompareReport.icon[m.verdict] ?? "") \(m.verdict.rawValue) | \(m.reason) |\n" }
        out += "\n| " + header.joined(separator: " | ") + " |\n|---|---|---:|---:|---:|---:|---:|\n"
        for r in rows() { out += "| `\(r[0])` | " + r.dropFirst().joined(separator: " | ") + " |\n" }
        out += CompareReport.markdownTail(figures: figures, notes: notes, figureHeader: "figure (median run)")
        return out
    }

    func json() -> String { CompareReport.json(self) }
}
