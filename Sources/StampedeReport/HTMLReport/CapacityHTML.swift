import Foundation

/// The report of a capacity run (capacity.json): the load–latency curve with the SLO limits,
/// the knee and the maximum sustainable load, and every step.
enum CapacityHTML {
    static func page(_ r: CapacityResult, location: String) -> String {
        var body: [String] = []
        body.append(HTMLPage.section("headline", "Summary", headline(r)))
        body.append(HTMLPage.section("load-latency", "Load and latency", charts(r)))
        body.append(HTMLPage.section("steps", "Steps", steps(r)))
        return HTMLPage.document(title: "Stampede capacity: \(r.scenario)",
                                 subtitle: "varying \(r.vary) against \(r.target), \(r.startedAt), verdict \(r.verdict)", body: body)
    }

    /// The x axis's name: a connection search's load is its connected clients.
    static func xLabel(_ r: CapacityResult) -> String { r.vary == "clients" ? "connections (clients)" : "load (\(r.unit))" }

    /// Latency figures spanning more than this factor are drawn on a log axis (else the low
    /// steps' figures sit flat on the floor under one failing step's seconds).
    static let logLatencySpan = 20.0

    static func load(_ r: CapacityResult, _ x: Double?) -> String { x.map { "\(Fmt.num($0)) \(r.unit)" } ?? "–" }

    static func headline(_ r: CapacityResult) -> String {
        var out = ""
        if r.partial { out += HTML.notice("warn", "Partial: the search was interrupted.") }
        switch r.verdict {
        case "found": out += HTML.notice("ok", r.conclusion)
        case "generator_limited": out += HTML.notice("warn", "Generator limited: " + r.conclusion)
        default: out += HTML.notice("warn", r.conclusion)
        }
        out += HTML.facts([
            ("scenario", r.scenario + (r.scenarioFile.isEmpty ? "" : " (\(r.scenarioFile))")),
            ("target", r.target), ("workload", r.workload),
            ("varied", "\(r.vary) (\(r.unit)) from \(Fmt.num(r.from)) to \(Fmt.num(r.to)), precision \(Fmt.percent(r.precision))"),
            ("SLOs", r.slos.joined(separator: "; ")),
            ("limits", "errors ≤ \(Fmt.percent(r.limits.errorRatio)), lost ≤ \(Fmt.percent(r.limits.lostRatio)), achieved send rate ≥ \(Fmt.percent(r.limits.sendRatio)) of intended"),
            ("steps", "\(r.steps.count): \(Fmt.sig(r.warmupSeconds)) s warm-up + \(Fmt.sig(r.stepSeconds)) s measured each"),
            ("verdict", r.verdict),
            ("max sustainable", load(r, r.maxSustainable)),
            ("knee", load(r, r.knee)),
            ("held at least", load(r, r.heldAtLeast)),
            ("generator limit", load(r, r.generatorLimit)),
            ("first failing", load(r, r.firstFailing) + (r.firstFailingReasons.isEmpty ? "" : ": " + r.firstFailingReasons.joined(separator: "; "))),
            ("started", "\(r.startedAt) (wall \(Fmt.sig(r.wallSeconds)) s)"),
            ("command", r.commandLine.joined(separator: " ")),
        ], id: "facts")
        return out
    }

    /// A step's figure for its `index`th SLO in ms (latency SLOs are in µs), or round_trip p99.
    static func sloValue(_ s: CapacityResult.Step, _ index: Int) -> Double? {
        if index < s.slos.count { return s.slos[index].unit == "us" ? s.slos[index].observed.map { $0 / 1000 } : nil }
        return index == 0 ? s.latencyMicros["round_trip"].map { Double($0.p99) / 1000 } : nil
    }

    static func sloName(_ t: RunSummary.Threshold) -> String { t.key + " " + t.condition }

    static func charts(_ r: CapacityResult) -> String {
        let ordered = r.steps.sorted { ($0.load, $0.number) < ($1.load, $1.number) }
        let loads = r.steps.map(\.load).filter { $0 > 0 }
        let axis: LineChart.XAxis = (loads.max() ?? 1) / max(loads.min() ?? 1, 1e-9) > 50 ? .log10 : .linear
        var series: [ChartSeries] = []
        let sloCount = max(1, r.steps.map(\.slos.count).max() ?? 0)
        for i in 0..<min(sloCount, 6) {
            let name = i < r.slos.count ? r.slos[i] : (r.steps.first { i < $0.slos.count }.map { sloName($0.slos[i]) } ?? "round_trip p(99)")
            series.append(ChartSeries(name: name, color: Palette.cycle[i % Palette.cycle.count],
                                      points: ordered.compactMap { s in sloValue(s, i).map { (s.load, $0) } }))
        }
        var markers: [ChartMarker] = []
        var bars: [ChartErrorBar] = []
        for s in r.steps {
            guard let y = sloValue(s, 0) else { continue }
            let (shape, color): (ChartMarker.Shape, String) = switch s.outcome {
            case "pass": (.circle, Palette.pass)
            case "fail": (.cross, Palette.fail)
            case "borderline": (.diamond, Palette.knee)
            default: (.square, Palette.invalid)
            }
            markers.append(ChartMarker(x: s.load, y: y, shape: shape, color: color,
                                       title: "step \(s.number) (\(s.stage)): \(Fmt.num(s.load)) \(r.unit), \(s.outcome)\(s.reasons.isEmpty ? "" : ": " + s.reasons.joined(separator: "; "))"))
        }
        for s in r.steps {
            guard let sp = s.spread else { continue }
            bars.append(ChartErrorBar(x: s.load, low: sp.min / 1000, high: sp.max / 1000, color: Palette.invalid,
                                      title: "step \(s.number): \(sp.slo) per interval \(Fmt.micros(sp.min)) … \(Fmt.micros(sp.max)) (median \(Fmt.micros(sp.median)), \(sp.intervals) intervals); "
                                          + "\(Fmt.sig(sp.confidence * 100))% bounds \(Fmt.micros(sp.low)) … \(Fmt.micros(sp.high)): \(sp.decision)"))
        }
        let figures = series.flatMap { $0.points.map { $0.y } } + bars.flatMap { [$0.low, $0.high] }
        let positive = figures.filter { $0 > 0 && $0.isFinite }
        let yAxis: LineChart.YAxis = (positive.max() ?? 1) / (positive.min() ?? 1) > logLatencySpan ? .log10 : .linear
        var rules: [ChartRule] = []
        var seen = Set<Double>()
        for slo in r.steps.flatMap(\.slos) where slo.unit == "us" && seen.insert(slo.limit).inserted {
            rules.append(ChartRule(value: slo.limit / 1000, label: "SLO " + sloName(slo), color: Palette.limit))
        }
        var vertical: [ChartRule] = []
        if let k = r.knee { vertical.append(ChartRule(value: k, label: "knee \(Fmt.num(k))", color: Palette.knee)) }
        if let m = r.maxSustainable { vertical.append(ChartRule(value: m, label: "max sustainable \(Fmt.num(m))", color: Palette.sustainable)) }
        if r.maxSustainable == nil, let h = r.heldAtLeast { vertical.append(ChartRule(value: h, label: "held at least \(Fmt.num(h))", color: Palette.sustainable)) }
        if let g = r.generatorLimit { vertical.append(ChartRule(value: g, label: "generator limit \(Fmt.num(g))", color: Palette.invalid)) }
        let by = r.vary == "clients" ? "connections" : "load"
        var out = "<p>One point per step (● pass, ✕ fail, ◆ borderline: run again, □ invalid: the generator was saturated); its bar spans the lowest to the highest "
            + "one-second figure of the step. Dashed lines: the SLO limit, the knee and the maximum sustainable load."
            + (yAxis == .log10 ? " Latency on a log scale (the figures span more than \(Fmt.sig(logLatencySpan))×)." : "") + "</p>"
        out += LineChart(id: "chart-capacity", title: "SLO latency by \(by)", xLabel: xLabel(r), yLabel: "latency (ms)", xAxis: axis, yAxis: yAxis,
                         series: series, markers: markers, errorBars: bars, horizontalRules: rules, verticalRules: vertical, xFormat: Fmt.tick).html()
        out += LineChart(id: "chart-capacity-rates", title: "Achieved rates by \(by)", xLabel: xLabel(r), yLabel: "messages/s", xAxis: axis,
                         series: [ChartSeries(name: "intended", color: "#888888", points: ordered.map { ($0.load, $0.intendedRate) }, dashed: true),
                                  ChartSeries(name: "achieved (sent)", color: Palette.p50, points: ordered.map { ($0.load, $0.achievedRate) }, dots: true),
                                  ChartSeries(name: "received", color: Palette.p99, points: ordered.map { ($0.load, $0.receivedRate) }, dots: true)],
                         verticalRules: vertical, xFormat: Fmt.tick, yFormat: Fmt.tick).html()
        return out
    }

    static func steps(_ r: CapacityResult) -> String {
        let metric = r.steps.first { !$0.slos.isEmpty }?.slos.first?.metric ?? "round_trip"
        let rows = r.steps.map { s -> [String] in
            let l = s.latencyMicros[metric]
            return ["\(s.number)", s.stage, Fmt.num(s.load), s.outcome, Fmt.num(s.intendedRate), Fmt.num(s.achievedRate), Fmt.num(s.receivedRate),
                    l.map { Fmt.micros($0.p50) } ?? "–", l.map { Fmt.micros($0.p99) } ?? "–", l.map { Fmt.micros($0.max) } ?? "–",
                    s.spread.map { "\(Fmt.micros($0.min)) … \(Fmt.micros($0.max))" } ?? "–",
                    Fmt.int(s.errors), Fmt.int(s.lost), "\(Fmt.int(s.open))/\(Fmt.int(s.clients))", s.generator.saturated ? "yes" : "no",
                    s.reasons.joined(separator: "; ")]
        }
        let folders = r.steps.compactMap { s in s.resultsFolder.map { "\(s.number): \($0)" } }
        let note = folders.isEmpty ? "" : "<p class=\"sub\">Each step's own results folder (with its report.html) is in this folder: " + HTML.escape(folders.joined(separator: ", ")) + ".</p>"
        return note + HTML.table(["#", "stage", r.vary == "clients" ? "connections" : "load", "outcome", "intended/s", "sent/s", "received/s", "\(metric) p50", "p99", "max", "SLO figure per second", "errors", "lost", "open", "saturated", "reasons"],
                          rows, id: "steps-table", numeric: Set([2] + Array(4...13))) { r.steps[$0].outcome }
    }
}
