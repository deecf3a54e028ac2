import Foundation
import StampedeMetrics
import StampedeReport

/// The end-of-run summary for a terminal.
public enum SummaryText {
    public static func render(_ s: RunSummary) -> String {
        var out: [String] = []
        let m = s.messages, c = s.connections
        out.append("")
        out.append("\(s.scenario.name)\(s.partial ? " (PARTIAL: \(s.partialReason ?? "ended early"))" : "") — \(s.scenario.workload), \(s.scenario.loadModel) model, target \(s.scenario.target)")
        out.append("  connections  attempted \(c.attempted)  connected \(c.connected)  failed \(c.failed)  peak open \(c.peakOpen)")
        out.append("  messages     sent \(m.sent)  delivered \(m.delivered)  failed \(m.failed)  lost \(m.lost)\(m.accountingClosed ? "" : "  (ACCOUNTING OPEN)")")
        out.append("  fan-out      expected \(m.fanoutExpected)  received \(m.fanoutReceived)  missing \(m.fanoutMissing)")
        out.append(String(format: "  throughput   sent %.1f/s  delivered %.1f/s  fan-out received %.1f/s", m.throughputPerSecond.sent, m.throughputPerSecond.delivered, m.throughputPerSecond.fanoutReceived))
        out.append("  latency           count      p50      p90      p99    p99.9      max")
        // The built-in metrics in their order, then the scenario's named ones by name.
        let named = s.latencyMicros.keys.filter { LatencyMetric(key: $0) == nil }.sorted()
        for key in LatencyMetric.allCases.map(\.key) + named {
            guard let l = s.latencyMicros[key] else { continue }
            out.append("    " + key.padding(toLength: 24, withPad: " ", startingAt: 0)
                       + [String(l.count), formatMicros(l.p50), formatMicros(l.p90), formatMicros(l.p99), formatMicros(l.p99_9), formatMicros(l.max)]
                .map { $0.leftPadded(8) }.joined(separator: " "))
        }
        if let populations = s.populations {
            out.append("  populations  (each in its own folder: populations/NAME)")
            for p in populations {
                var line = "    " + p.name.padding(toLength: 14, withPad: " ", startingAt: 0) + " \(p.workload) × \(p.clients)"
                if p.startSeconds > 0 { line += " from +\(ThresholdMeasure.trimmed(p.startSeconds))s" }
                line += "  sent \(p.messagesSent)  delivered \(p.messagesDelivered)  lost \(p.messagesLost)"
                if p.fanoutExpected + p.fanoutReceived > 0 { line += "  fan-out \(p.fanoutReceived)/\(p.fanoutExpected)" }
                line += "  errors \(p.errorsTotal)\(p.partial ? "  (partial)" : "")"
                out.append(line)
            }
        }
        let errors = s.errors.filter { $0.value > 0 }.sorted { $0.key < $1.key }
        out.append("  errors       \(s.errorsTotal == 0 ? "none" : errors.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
        if let codes = s.closeCodes, !codes.isEmpty {
            out.append("  server closes " + codes.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(5).map { "\($0.value) × \($0.key)" }.joined(separator: "; "))
        }
        if let texts = s.connectErrors, !texts.isEmpty {
            out.append("  refused      " + texts.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(3).map { "\($0.value) × \($0.key)" }.joined(separator: "; "))
        }
        if let f = s.flow, !f.stepErrors.isEmpty {
            out.append("  step errors  " + f.stepErrors.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(3).map { "\($0.value) × \($0.key)" }.joined(separator: "; "))
        }
        if !s.hubErrors.isEmpty {
            out.append("  hub errors   " + s.hubErrors.sorted { $0.value > $1.value }.prefix(3).map { "\($0.value) × \($0.key)" }.joined(separator: "; "))
        }
        if let t = s.tls {
            var line = "  TLS          handshakes \(t.handshakes)  resumed \(t.resumed)"
            if !t.failureReasons.isEmpty {
                line += "  failed: " + t.failureReasons.sorted { $0.value > $1.value }.prefix(3).map { "\($0.value) × \($0.key)" }.joined(separator: "; ")
            }
            out.append(line)
        }
        if !s.upgradeStatuses.isEmpty {
            out.append("  HTTP statuses  " + s.upgradeStatuses.sorted { $0.key < $1.key }.map { "\($0.key) × \($0.value)" }.joined(separator: ", "))
        }
        for e in s.storms {
            func ms(_ key: String) -> String { (e.recoveryMs[key] ?? nil).map { formatMicros(UInt64($0 * 1000)) } ?? "never" }
            var line = "  event \(e.number)      \(e.kind ?? "storm") \(e.mode) at \(formatSeconds(e.atSeconds)): affected \(e.affected), recovered \(e.recovered)"
            if e.gaveUp > 0 { line += ", gave up \(e.gaveUp)" }
            if e.affected > 0 { line += "; back in p50 \(ms("p50"))  p99 \(ms("p99"))  p100 \(ms("p100"))" }
            out.append(line)
            if let c = e.command {
                let how = c.launchError ?? (c.timedOut ? "timed out" : c.exitStatus.map { "exit \($0)" } ?? "signal \(c.signal ?? 0)")
                out.append("               command \(how) after \(formatSeconds(c.durationSeconds)) (output in \(c.outputFile))")
            }
            if let problem = e.faultError { out.append("               fault not applied: \(problem)") }
        }
        if let r = s.rest {
            let statuses = r.byStatus.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            out.append("  REST         requests \(r.requests)  answers \(statuses.isEmpty ? "none" : statuses)")
            var line = "               304 ratio \(r.notModifiedRatio.map { String(format: "%.3f", $0) } ?? "-")  changed \(r.changed)  unprocessed \(r.unprocessed)  clients stopped \(r.clientsStopped)"
            if let min = r.rateLimitRemainingMin { line += "  rate-limit remaining min \(min)" }
            if let ra = r.retryAfterMaxSeconds { line += "  Retry-After max \(ra)s" }
            out.append(line)
        }
        if s.counters["churn_left", default: 0] > 0 {
            out.append("  churn        left \(s.counters["churn_left", default: 0])  joined \(s.counters["churn_joined", default: 0])")
        }
        var peak = ""
        if let p = s.generator.peakCPUPercent, p > 0 { peak = String(format: "  peak %.0f%% of a core", p) }
        out.append(String(format: "  generator    cpu %.2fs (client loops %.2fs)%@  max timer lag %@", s.generator.processCPUSeconds, s.generator.clientLoopCPUSeconds, peak as NSString, formatMicros(s.generator.maxTimerLagMicros) as NSString))
        for w in s.generator.warnings.prefix(5) { out.append("  warning: \(w)") }
        out += thresholdLines(s)
        return out.joined(separator: "\n")
    }
}

func formatSeconds(_ s: Double) -> String { s < 10 ? String(format: "%.2fs", s) : String(format: "%.1fs", s) }

extension String {
    func leftPadded(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}
