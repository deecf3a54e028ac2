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
        for metric in LatencyMetric.allCases {
            guard let l = s.latencyMicros[metric.key] else { continue }
            out.append("    " + metric.key.padding(toLength: 24, withPad: " ", startingAt: 0)
                       + [String(l.count), formatMicros(l.p50), formatMicros(l.p90), formatMicros(l.p99), formatMicros(l.p99_9), formatMicros(l.max)]
                .map { $0.leftPadded(8) }.joined(separator: " "))
        }
        let errors = s.errors.filter { $0.value > 0 }.sorted { $0.key < $1.key }
        out.append("  errors       \(s.errorsTotal == 0 ? "none" : errors.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
        if !s.hubErrors.isEmpty {
            out.append("  hub errors   " + s.hubErrors.sorted { $0.value > $1.value }.prefix(3).map { "\($0.value) × \($0.key)" }.joined(separator: "; "))
        }
        if !s.upgradeStatuses.isEmpty {
            out.append("  HTTP statuses  " + s.upgradeStatuses.sorted { $0.key < $1.key }.map { "\($0.key) × \($0.value)" }.joined(separator: ", "))
        }
        out.append(String(format: "  generator    cpu %.2fs (client loops %.2fs)  max timer lag %@", s.generator.processCPUSeconds, s.generator.clientLoopCPUSeconds, formatMicros(s.generator.maxTimerLagMicros) as NSString))
        for w in s.generator.warnings.prefix(5) { out.append("  warning: \(w)") }
        return out.joined(separator: "\n")
    }
}

extension String {
    func leftPadded(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}
