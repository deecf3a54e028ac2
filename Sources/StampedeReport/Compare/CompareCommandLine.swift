import Foundation

/// The flags of `stampede compare`, checked here so the command itself stays a few lines.
public enum CompareCommandLine {
    public struct Options: Sendable {
        public var settings = CompareSettings()
        public var failOn: [CompareVerdict] = []
        public var format = CompareFormat.table
    }

    /// The options from the flags' text, or why not (the message names the flag).
    public static func options(format: String, failOn: String?, tolerance: String, metrics: String?, resamples: Int) throws(CompareError) -> Options {
        var o = Options()
        guard let f = CompareFormat(rawValue: format) else {
            throw CompareError("--format must be table, markdown, json or junit, got '\(format)'")
        }
        o.format = f
        if let failOn {
            for part in failOn.split(separator: ",", omittingEmptySubsequences: false) {
                let name = part.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "-", with: " ")
                guard let v = CompareVerdict(rawValue: name), v != .noChange, v != .tooFewSamples else {
                    throw CompareError("--fail-on takes slower, faster or spread-changed (comma-separated), got '\(part)'")
                }
                o.failOn.append(v)
            }
        }
        var t = tolerance.trimmingCharacters(in: .whitespaces)
        let percent = t.hasSuffix("%")
        if percent { t.removeLast() }
        guard let value = Double(t), value.isFinite, value >= 0, t.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              percent ? value <= 1000 : value <= 10 else {
            throw CompareError("--tolerance must be a share like 5% or 0.05 (0 to 1000%), got '\(tolerance)'")
        }
        o.settings.tolerance = percent ? value / 100 : value
        if let metrics {
            let names = metrics.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard !names.isEmpty, names.allSatisfy({ !$0.isEmpty && $0.count <= 64 }) else {
                throw CompareError("--metrics must list metric names like round_trip,fanout, got '\(metrics)'")
            }
            o.settings.gated = Set(names)
        }
        guard (100...100_000).contains(resamples) else { throw CompareError("--resamples must be from 100 to 100000, got \(resamples)") }
        o.settings.resamples = resamples
        return o
    }

    /// The `--help` discussion.
    public static let help = """
        Reads summary.json and the per-interval latency logs (<metric>.hlog) of two \
        results folders. For each latency metric in both: p50, p90, p99, p99.9 and \
        max side by side, each with a 95% bootstrap interval from the run's own \
        intervals (its noise), the change in %, the Kolmogorov-Smirnov D and the \
        Wasserstein distance (ms) of the whole-run histograms, and a verdict: \
        slower, faster, no change, spread changed (or too few samples).

        Slower: p50 and p90 both above the baseline's intervals and both up by \
        more than the tolerance (see docs/compare.md). Throughput, errors and \
        accounting follow side by side.

        Exit codes: 0 compared (gate passed); 97 --fail-on tripped on a gated \
        metric; 1 a folder or file could not be read; 2 bad flags.

        Examples:
          stampede compare results/base-20260101T000000Z results/pr-20260101T001000Z
          stampede compare BASE CURRENT --fail-on slower --format markdown
        """
}
