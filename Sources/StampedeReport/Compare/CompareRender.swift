import Foundation

/// The output formats of `stampede compare`.
public enum CompareFormat: String, CaseIterable, Sendable {
    case table, markdown, json, junit
}

extension CompareReport {
    /// The report in `format`, ending in a newline.
    public func rendered(_ format: CompareFormat) -> String {
        switch format {
        case .table: table()
        case .markdown: markdown()
        case .json: json()
        case .junit: Self.junit(metrics.map { ($0.metric, $0.gated, $0.verdict, $0.reason) }, failOn: failOn)
        }
    }

    /// The verdicts' marks in markdown.
    static let icon: [CompareVerdict: String] = [.slower: "🔴", .faster: "🟢", .noChange: "⚪", .spreadChanged: "🟡", .tooFewSamples: "⚫"]

    static func ms(_ us: UInt64) -> String { String(format: "%.3f", Double(us) / 1000) }
    static func change(_ c: Double??) -> String {
        guard let c = c ?? nil else { return "n/a" }
        return String(format: "%+.1f%%", c)
    }
    static func number(_ x: Double) -> String {
        x == x.rounded() && abs(x) < 1e15 ? String(Int64(x)) : String(format: "%.1f", x)
    }

    /// Rows of the latency part: metric, percentile, baseline (CI), current (CI), change.
    func latencyRows() -> [[String]] {
        var rows: [[String]] = []
        for m in metrics {
            for (name, _) in comparePercentiles {
                guard let b = m.baseline.percentiles[name], let c = m.current.percentiles[name] else { continue }
                let ci = name == "max" ? { (_: PercentileEstimate) in "" } : { (e: PercentileEstimate) in " [\(Self.ms(e.low))–\(Self.ms(e.high))]" }
                rows.append([m.metric, name, Self.ms(b.value) + ci(b), Self.ms(c.value) + ci(c), Self.change(m.changePercent[name])])
            }
        }
        return rows
    }

    func table() -> String {
        var out = "baseline: \(baseline)\ncurrent:  \(current)\n\n"
        out += Self.aligned(header: ["metric", "pct", "baseline ms [95% CI]", "current ms [95% CI]", "change"], rows: latencyRows())
        out += "\n"
        for m in metrics {
            out += "\(m.metric): \(m.verdict.rawValue.uppercased())\(m.gated ? " (gated)" : "") - \(m.reason); "
                + String(format: "KS D %.3f, Wasserstein %.3f ms\n", m.ksD, m.wassersteinMs)
        }
        out += Self.tail(notes: notes, figures: figures, verdict: verdict, failOn: failOn, gateTripped: gateTripped)
        return out
    }

    /// A text table: the first two columns left-aligned, the others right-aligned.
    static func aligned(header: [String], rows: [[String]]) -> String {
        let widths = header.indices.map { i in max(header[i].count, rows.map { $0[i].count }.max() ?? 0) }
        func line(_ r: [String]) -> String {
            r.indices.map { i in i < 2 ? r[i].padding(toLength: widths[i], withPad: " ", startingAt: 0)
                : String(repeating: " ", count: widths[i] - r[i].count) + r[i] }.joined(separator: "  ")
        }
        return ([header] + rows).map { line($0) + "\n" }.joined()
    }

    /// The end of a text report: notes, the side-by-side figures and the verdict line.
    static func tail(notes: [String], figures: [CompareFigure], verdict: CompareVerdict, failOn: [CompareVerdict], gateTripped: Bool) -> String {
        var out = notes.map { "note: \($0)\n" }.joined() + "\n"
        let fw = figures.map(\.name.count).max() ?? 0
        for f in figures {
            out += f.name.padding(toLength: fw, withPad: " ", startingAt: 0)
                + "  \(number(f.baseline)) -> \(number(f.current))  \(change(f.changePercent))\n"
        }
        out += "\nverdict: \(verdict.rawValue)" + (failOn.isEmpty ? "" : gateTripped ? " (gate FAILED)" : " (gate passed)") + "\n"
        return out
    }

    func markdown() -> String {
        var out = "### Stampede compare: \(Self.icon[verdict] ?? "") \(verdict.rawValue)" + (failOn.isEmpty ? "" : gateTripped ? " (gate failed)" : " (gate passed)") + "\n\n"
        out += "Baseline `\(baseline)`, current `\(current)`; tolerance \(Self.number(tolerancePercent)) %, \(resamples) bootstrap resamples.\n\n"
        out += "| metric | verdict | KS D | Wasserstein (ms) |\n|---|---|---:|---:|\n"
        for m in metrics {
            out += "| `\(m.metric)`\(m.gated ? " (gated)" : "") | \(Self.icon[m.verdict] ?? "") \(m.verdict.rawValue) | "
                + String(format: "%.3f | %.3f |\n", m.ksD, m.wassersteinMs)
        }
        out += "\n| metric | percentile | baseline ms [95% CI] | current ms [95% CI] | change |\n|---|---|---:|---:|---:|\n"
        for r in latencyRows() { out += "| `\(r[0])` | " + r.dropFirst().joined(separator: " | ") + " |\n" }
        out += Self.markdownTail(figures: figures, notes: notes, figureHeader: "figure")
        return out
    }

    /// The end of a markdown report: the side-by-side figures, then the notes.
    static func markdownTail(figures: [CompareFigure], notes: [String], figureHeader: String) -> String {
        var out = "\n| \(figureHeader) | baseline | current | change |\n|---|---:|---:|---:|\n"
        for f in figures { out += "| \(f.name) | \(number(f.baseline)) | \(number(f.current)) | \(change(f.changePercent)) |\n" }
        if !notes.isEmpty { out += "\n" + notes.map { "- \($0)\n" }.joined() }
        return out
    }

    func json() -> String { Self.json(self) }

    /// `value` as pretty-printed JSON with sorted keys, ending in a newline.
    static func json(_ value: some Encodable) -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? e.encode(value) else { return "{}\n" }
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// One testcase per latency metric (name, gated, verdict, reason); a gated metric whose
    /// verdict is in `failOn` is a failure.
    static func junit(_ metrics: [(metric: String, gated: Bool, verdict: CompareVerdict, reason: String)], failOn: [CompareVerdict]) -> String {
        func esc(_ s: String) -> String {
            s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        let failures = metrics.filter { $0.gated && failOn.contains($0.verdict) }.count
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<testsuites name=\"stampede compare\" tests=\"\(metrics.count)\" failures=\"\(failures)\">\n"
        out += "  <testsuite name=\"stampede compare\" tests=\"\(metrics.count)\" failures=\"\(failures)\" errors=\"0\">\n"
        for m in metrics {
            let text = esc("\(m.verdict.rawValue): \(m.reason)")
            out += "    <testcase classname=\"stampede.compare\" name=\"\(esc(m.metric))\">\n"
            if m.gated && failOn.contains(m.verdict) {
                out += "      <failure message=\"\(text)\" type=\"\(esc(m.verdict.rawValue))\">\(text)</failure>\n"
            }
            out += "      <system-out>\(text)</system-out>\n    </testcase>\n"
        }
        out += "  </testsuite>\n</testsuites>\n"
        return out
    }
}
