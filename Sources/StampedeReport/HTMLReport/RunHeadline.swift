import Foundation
import StampedeMetrics

/// The top of a run's report: what ran, against what, when; thresholds; accounting; the
/// whole-run latency table; generator health.
enum RunHeadline {
    static func html(_ run: RunData) -> String {
        let s = run.summary
        var out = ""
        if s.partial { out += HTML.notice("warn", "Partial run: \(s.partialReason ?? "ended early"). The figures are what was gathered until then.") }
        if let fatal = s.fatalError { out += HTML.notice("fail", "Run failed: \(fatal)") }
        if s.generator.saturated {
            out += HTML.notice("warn", "Generator saturated: latency figures are partly the generator's, not the server's. " + s.generator.warnings.joined(separator: " "))
        }
        if let t = s.thresholds, !t.isEmpty {
            let failed = t.filter { $0.verdict == .fail }.count, unjudged = t.filter { $0.verdict == .unjudged }.count
            out += failed > 0 ? HTML.notice("fail", "Thresholds: \(failed) of \(t.count) failed.")
                : unjudged > 0 ? HTML.notice("warn", "Thresholds: \(unjudged) of \(t.count) unjudged: the saturated generator's delay could have decided them.")
                : HTML.notice("ok", "Thresholds: all \(t.count) passed.")
        }
        let sc = s.scenario, env = s.environment
        var facts: [(String, String)] = [
            ("scenario", sc.name + (sc.file.isEmpty ? "" : " (\(sc.file))")),
            ("target", sc.target),
            ("workload", sc.workload),
            ("clients", Fmt.int(sc.clients) + " (connect rate \(Fmt.sig(sc.connectRate))/s)"),
            ("load model", sc.loadModel == "open" ? "open, \(Fmt.num(sc.messageRate))/s intended" : "closed, think time \(Fmt.sig(sc.thinkTimeSeconds)) s"),
            ("message size", Fmt.int(sc.messageSize) + " bytes"),
            ("duration", "\(Fmt.sig(sc.durationSeconds)) s configured; ramp-up \(Fmt.sig(s.phasesSeconds.rampUp)) s, messages \(Fmt.sig(s.phasesSeconds.messages)) s, drain \(Fmt.sig(s.phasesSeconds.drain)) s"),
            ("started", env.startedAt + " (wall \(Fmt.sig(env.wallSeconds)) s)"),
            ("host", "\(env.hostname), \(env.cores) cores, \(env.loops) loops, \(env.os)"),
            ("Stampede", env.stampedeVersion),
            ("command", env.commandLine.joined(separator: " ")),
            ("throughput", "\(Fmt.num(s.messages.throughputPerSecond.sent))/s sent, \(Fmt.num(s.messages.throughputPerSecond.delivered))/s delivered, \(Fmt.num(s.messages.throughputPerSecond.fanoutReceived))/s fan-out received"),
        ]
        if s.partial { facts.append(("partial", s.partialReason ?? "yes")) }
        out += HTML.facts(facts, id: "facts")
        out += thresholds(s)
        out += accounting(s)
        out += latencyTable(s)
        return HTMLPage.section("headline", "Summary", out)
    }

    static func thresholds(_ s: RunSummary) -> String {
        guard let list = s.thresholds, !list.isEmpty else { return "" }
        let rows = list.map { t -> [String] in
            let window = t.failingWindow.map { " in the window \(Fmt.sig($0.startSeconds))–\(Fmt.sig($0.endSeconds)) s" } ?? ""
            let verdict = switch t.verdict { case .pass: "✓ pass"; case .fail: "✗ fail"; case .unjudged: "? unjudged" }
            let lag = t.generatorLagMicros.map { Fmt.sig(Double($0) / 1000) + " ms" } ?? ""
            return [verdict, t.key, t.condition, t.observedText + window, lag,
                    t.abortedRun ? "stopped the run" : ""]
        }
        return "<h3>Thresholds</h3>" + HTML.table(["verdict", "metric", "condition", "observed", "generator lag", ""], rows, id: "thresholds") {
            switch list[$0].verdict { case .pass: "pass"; case .fail: "fail"; case .unjudged: "warn" }
        }
    }

    /// A run of several populations: one row each, linked to its own report (its charts,
    /// latency and rate over time, are there); empty otherwise.
    static func populations(_ s: RunSummary) -> String {
        guard let populations = s.populations, !populations.isEmpty else { return "" }
        let rows = populations.map { p -> [String] in
            [p.name, p.workload, Fmt.int(p.clients),
             p.startSeconds > 0 ? "+" + Fmt.sig(p.startSeconds) + " s" : "0", Fmt.int(p.messagesSent), Fmt.int(p.messagesDelivered), Fmt.int(p.messagesLost),
             p.fanoutExpected + p.fanoutReceived > 0 ? "\(Fmt.int(p.fanoutReceived)) of \(Fmt.int(p.fanoutExpected))" : "–",
             Fmt.int(p.errorsTotal), String(p.exitCode) + (p.partial ? " (partial)" : "")]
        }
        let intro = HTML.el("p", "Each population ran as a run of its own, with its whole results and report in its folder; the figures above are their exact merge.")
        let links = "<p>Reports: " + populations.map { "<a href=\"\(HTML.escape($0.folder))/report.html\">\(HTML.escape($0.name))</a>" }.joined(separator: " · ") + "</p>"
        return HTMLPage.section("populations", "Populations",
                                intro + HTML.table(["population", "workload", "clients", "start", "sent", "delivered", "lost", "fan-out received", "errors", "exit"],
                                                   rows, id: "populations-table", numeric: [2, 4, 5, 6, 8, 9]) + links)
    }

    static func accounting(_ s: RunSummary) -> String {
        let m = s.messages
        var out = "<h3>Message accounting</h3>"
        let rule = "sent \(Fmt.int(m.sent)) = delivered \(Fmt.int(m.delivered)) + failed \(Fmt.int(m.failed)) + lost \(Fmt.int(m.lost))"
        out += m.accountingClosed ? HTML.notice("ok", rule + " ✓ closed")
            : HTML.notice("fail", rule + " ✗ not closed: \(Fmt.int(m.unaccounted)) unaccounted")
        let lost = m.lostByReason.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { "\($0.key) \(Fmt.int($0.value))" }
        var rows: [[String]] = [
            ["sent", Fmt.int(m.sent)], ["delivered", Fmt.int(m.delivered)], ["failed", Fmt.int(m.failed)],
            ["lost", Fmt.int(m.lost) + (lost.isEmpty ? "" : " (" + lost.joined(separator: ", ") + ")")],
        ]
        if m.fanoutExpected > 0 || m.fanoutReceived > 0 {
            rows.append(["fan-out received", "\(Fmt.int(m.fanoutReceived)) of \(Fmt.int(m.fanoutExpected)) expected (\(Fmt.int(m.fanoutMissing)) missing)"])
        }
        rows.append(["connections", "\(Fmt.int(s.connections.connected)) connected of \(Fmt.int(s.connections.attempted)) attempted, \(Fmt.int(s.connections.failed)) failed, \(Fmt.int(s.connections.disconnected)) disconnected, peak open \(Fmt.int(s.connections.peakOpen))"])
        rows.append(["errors", Fmt.int(s.errorsTotal)])
        rows.append(["bytes", "\(Fmt.bytes(Double(s.bytes.sent))) sent, \(Fmt.bytes(Double(s.bytes.received))) received"])
        return out + HTML.table(["", "count"], rows, id: "accounting")
    }

    static func latencyTable(_ s: RunSummary) -> String {
        let order = LatencyMetric.allCases.map(\.key)
        let keys = s.latencyMicros.keys.sorted { (order.firstIndex(of: $0) ?? 99, $0) < (order.firstIndex(of: $1) ?? 99, $1) }
        guard !keys.isEmpty else { return "" }
        let rows = keys.compactMap { k -> [String]? in
            guard let l = s.latencyMicros[k] else { return nil }
            return [k, Fmt.int(l.count), Fmt.micros(l.p50), Fmt.micros(l.p90), Fmt.micros(l.p99), Fmt.micros(l.p99_9), Fmt.micros(l.max), Fmt.micros(l.mean)]
        }
        return "<h3>Latency, whole run</h3>" + HTML.table(["metric", "count", "p50", "p90", "p99", "p99.9", "max", "mean"], rows, id: "latency-table", numeric: Set(1...7))
    }

    /// Errors by class, upgrade statuses, hub error texts, and the generator's health.
    static func errorsAndGenerator(_ s: RunSummary) -> String {
        var out = ""
        let errors = s.errors.filter { $0.value > 0 }.sorted { ($1.value, $0.key) < ($0.value, $1.key) }
        out += errors.isEmpty ? "<p>No errors.</p>"
            : HTML.table(["error class", "count"], errors.map { [$0.key, Fmt.int($0.value)] }, id: "errors-table", numeric: [1])
        if !s.upgradeStatuses.isEmpty {
            out += HTML.table(["upgrade status", "count"], s.upgradeStatuses.sorted { $0.key < $1.key }.map { [$0.key, Fmt.int($0.value)] }, numeric: [1])
        }
        if let codes = s.closeCodes, !codes.isEmpty {
            let top = codes.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(20)
            out += HTML.table(["server close", "count"], top.map { [$0.key, Fmt.int($0.value)] }, id: "close-codes", numeric: [1])
        }
        if let texts = s.connectErrors, !texts.isEmpty {
            let top = texts.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(20)
            out += HTML.table(["namespace refused (CONNECT_ERROR)", "count"], top.map { [$0.key, Fmt.int($0.value)] }, id: "connect-errors", numeric: [1])
        }
        if let f = s.flow {
            if !f.stepErrors.isEmpty {
                let top = f.stepErrors.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(20)
                out += HTML.table(["connect step error", "count"], top.map { [$0.key, Fmt.int($0.value)] }, id: "step-errors", numeric: [1])
            }
            if !f.counters.isEmpty {
                out += HTML.table(["flow counter", "count"], f.counters.sorted { $0.key < $1.key }.map { [$0.key, Fmt.int($0.value)] }, id: "flow-counters", numeric: [1])
            }
            if !f.unrecognisedSamples.isEmpty {
                out += HTML.table(["unrecognised frame (sample)"], f.unrecognisedSamples.map { [$0] }, id: "unrecognised-samples")
            }
        }
        if !s.hubErrors.isEmpty {
            let top = s.hubErrors.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(20)
            out += HTML.table(["hub error", "count"], top.map { [$0.key, Fmt.int($0.value)] }, numeric: [1])
        }
        let g = s.generator
        out += "<h3>Generator</h3>" + HTML.facts([
            ("saturated", g.saturated ? "yes: " + g.warnings.joined(separator: " ") : "no"),
            ("CPU", "process \(Fmt.sig(g.processCPUSeconds)) s, client loops \(Fmt.sig(g.clientLoopCPUSeconds)) s; peak \(g.peakCPUPercent.map { Fmt.sig($0) + " %" } ?? "–") process, \(g.peakClientLoopCPUPercent.map { Fmt.sig($0) + " %" } ?? "–") client loops"),
            ("max timer lag", Fmt.micros(g.maxTimerLagMicros)),
            ("memory", "RSS peak \(Fmt.bytes(Double(g.rssPeakBytes))), per connection \(g.rssPerConnectionBytes.map { Fmt.bytes($0) } ?? "–")"),
        ], id: "generator")
        return out
    }
}
