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

    /// Each path as results folders: a folder with summary.json is one run; a folder without
    /// one stands for the run folders directly inside it (those with summary.json), in name
    /// order, which is time order for the folders `stampede run` and `stampede interleave`
    /// write (`<scenario>-<UTC time>`). Throws naming a path that holds no run.
    public static func runFolders(_ paths: [String]) throws(CompareError) -> [URL] {
        var out: [URL] = []
        let fm = FileManager.default
        for path in paths {
            let url = URL(fileURLWithPath: path)
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw CompareError("\(path): not a results folder (no such directory)")
            }
            if fm.fileExists(atPath: url.appendingPathComponent("summary.json").path) { out.append(url); continue }
            let inside = ((try? fm.contentsOfDirectory(atPath: url.path)) ?? []).sorted()
                .map { url.appendingPathComponent($0) }
                .filter { fm.fileExists(atPath: $0.appendingPathComponent("summary.json").path) }
            guard !inside.isEmpty else {
                throw CompareError("\(path): holds no results folder (neither summary.json nor folders with one)")
            }
            out += inside
        }
        return out
    }

    /// The tolerance when `--tolerance` is not given: 25 % for one run a side (the runs' own
    /// noise does not cover the drift between runs), 5 % with several runs or a history (their
    /// spread does; docs/compare.md, the power table).
    public static let defaultTolerance = (single: "25%", runs: "5%")

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

        Several runs a side (--baseline A1 A2 ... --current B1 B2 ..., best \
        interleaved with `stampede interleave`): each run is one sample of each \
        percentile; the change of the median run's p50 with a hierarchical \
        bootstrap interval (runs, then intervals within runs) and a Mann-Whitney \
        U test. Slower: significant (interval above 0; p <= 0.05 when each side \
        has 4 or more runs) and beyond the tolerance (default 5%). A folder \
        holding run folders stands for all of them, in name (time) order.

        --paired: the i-th runs of the two sides were made together (stampede \
        interleave); the change is the geometric mean of the pairs' ratios with a \
        paired t interval, which cancels what the machine did to both runs of a pair.

        History (--history DIR CURRENT): CURRENT against the last --history-runs \
        runs in DIR (main-branch runs, oldest first by name): slower when its p50 \
        is above the history's 95% prediction interval and beyond the tolerance.

        Exit codes: 0 compared (gate passed); 97 --fail-on tripped on a gated \
        metric; 1 a folder or file could not be read; 2 bad flags.

        Examples:
          stampede compare results/base-20260101T000000Z results/pr-20260101T001000Z
          stampede compare BASE CURRENT --fail-on slower --format markdown
          stampede compare --baseline ab/baseline --current ab/current --fail-on slower
          stampede compare --history history/ results/pr-20260101T001000Z --fail-on slower
        """
}
