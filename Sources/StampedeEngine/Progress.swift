import Foundation

/// Where a run is, as the progress line names it.
enum RunPhase: String, Sendable {
    case rampUp = "ramp-up", messages, drain, closing
}

/// One progress report, once per second.
struct ProgressLine {
    var elapsed: Double
    var phase: String
    var open: Int
    var clients: Int
    var sentPerSecond: Double
    var receivedPerSecond: Double
    var p50Micros: UInt64
    var p99Micros: UInt64
    var fanoutP99Micros: UInt64
    var errors: UInt64
    /// The intended rate over the interval, shown beside the achieved one when the rate changes
    /// over time (`message.stages`); nil otherwise.
    var targetPerSecond: Double? = nil

    var text: String {
        let sent = targetPerSecond.map { String(format: "%.0f/s of %.0f/s", sentPerSecond, $0) } ?? String(format: "%.0f/s", sentPerSecond)
        return String(format: "[%6.1fs] %-8@ conn %d/%d  sent %@  recv %.0f/s  rtt p50 %@ p99 %@  fan-out p99 %@  errors %llu",
               elapsed, phase as NSString, open, clients, sent as NSString, receivedPerSecond,
               formatMicros(p50Micros) as NSString, formatMicros(p99Micros) as NSString, formatMicros(fanoutP99Micros) as NSString, errors)
    }
}

/// Microseconds as a short human figure ("850µs", "12.3ms", "1.20s"); "-" when nothing was recorded.
func formatMicros(_ us: UInt64) -> String {
    if us == 0 { return "-" }
    if us < 1000 { return "\(us)µs" }
    if us < 1_000_000 { return String(format: "%.1fms", Double(us) / 1000) }
    return String(format: "%.2fs", Double(us) / 1e6)
}

/// Writes progress to stderr: one rewritten line on a terminal, plain lines otherwise.
final class ProgressPrinter {
    let style: RunOptions.ProgressStyle
    var wroteTerminalLine = false
    init(style: RunOptions.ProgressStyle) { self.style = style }

    func show(_ line: ProgressLine) {
        switch style {
        case .silent: return
        case .terminal:
            FileHandle.standardError.write(Data(("\r\u{1B}[2K" + line.text).utf8))
            wroteTerminalLine = true
        case .lines:
            FileHandle.standardError.write(Data((line.text + "\n").utf8))
        }
    }

    /// A one-off remark (not a progress figure), on its own line.
    func note(_ text: String) {
        guard style != .silent else { return }
        finish()
        FileHandle.standardError.write(Data(("note: " + text + "\n").utf8))
    }

    func finish() {
        if wroteTerminalLine { FileHandle.standardError.write(Data("\n".utf8)) }
        wroteTerminalLine = false
    }
}
