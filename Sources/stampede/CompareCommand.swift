import ArgumentParser
import Foundation
import StampedeReport

struct Compare: ParsableCommand {
    /// The populations both folders hold (`populations/NAME/summary.json`), in name order.
    static func sharedPopulations(_ a: URL, _ b: URL) -> [String] {
        func names(_ folder: URL) -> Set<String> {
            let dir = folder.appendingPathComponent("populations")
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
            return Set(entries.filter { FileManager.default.fileExists(atPath: dir.appendingPathComponent("\($0)/summary.json").path) })
        }
        return names(a).intersection(names(b)).sorted()
    }

    static let configuration = CommandConfiguration(
        abstract: "Compare runs: one against one, several against several, or one against a history; a verdict per metric.",
        discussion: CompareCommandLine.help)
    @Argument(help: "BASELINE CURRENT (two results folders); with --history, CURRENT only.") var folders: [String] = []
    @Option(parsing: .upToNextOption, help: "Several baseline runs (results folders, or folders holding them).") var baseline: [String] = []
    @Option(parsing: .upToNextOption, help: "Several current runs, as --baseline.") var current: [String] = []
    @Flag(help: "With --baseline/--current: the i-th runs of the two sides were made together (stampede interleave); judge the pairs' ratios.") var paired = false
    @Option(help: "A folder of main-branch runs to judge CURRENT against (its last --history-runs, in name order).") var history: String?
    @Option(help: "How many of the history's newest runs to use (3 to 1000).") var historyRuns = 20
    @Option(help: "table, markdown, json or junit.") var format = "table"
    @Option(help: "Exit 97 when a gated metric is slower (or faster, spread-changed; comma-separated).") var failOn: String?
    @Option(help: "Smallest shift called a change, like 25% (default 25% for one run a side, 5% with several or a history).") var tolerance: String?
    @Option(help: "The gated metrics, comma-separated (default round_trip,fanout).") var metrics: String?
    @Option(help: "Bootstrap resamples (seed fixed).") var resamples = 1000

    enum Form { case pair(String, String), runs([String], [String]), history(String, String) }

    var form: Form? {
        if let history { return baseline.isEmpty && current.isEmpty && folders.count == 1 ? .history(history, folders[0]) : nil }
        if !baseline.isEmpty || !current.isEmpty { return folders.isEmpty && !baseline.isEmpty && !current.isEmpty ? .runs(baseline, current) : nil }
        return folders.count == 2 ? .pair(folders[0], folders[1]) : nil
    }

    func validate() throws {
        guard form != nil else {
            throw ValidationError("give BASELINE CURRENT, or --baseline RUN… --current RUN…, or --history DIR CURRENT (see --help)")
        }
        if paired, baseline.isEmpty { throw ValidationError("--paired goes with --baseline RUN… --current RUN…") }
        guard (3...1000).contains(historyRuns) else { throw ValidationError("--history-runs must be from 3 to 1000, got \(historyRuns)") }
        _ = try options(single: true)  // bad flags exit 2 before any folder is read
    }

    func run() throws {
        guard let form else { throw ValidationError("give BASELINE CURRENT, or --baseline RUN… --current RUN…, or --history DIR CURRENT") }
        do {
            switch form {
            case .pair(let a, let b): try comparePair(URL(fileURLWithPath: a), URL(fileURLWithPath: b), try options(single: true))
            case .runs(let a, let b):
                let (base, cur) = (try CompareCommandLine.runFolders(a), try CompareCommandLine.runFolders(b))
                // One run a side has no spread between runs to measure: it is the two-folder form.
                if base.count == 1, cur.count == 1 { return try comparePair(base[0], cur[0], try options(single: true)) }
                try compareRuns(paired ? .pairs : .runs, base, cur, try options(single: false))
            case .history(let dir, let b):
                let past = try CompareCommandLine.runFolders([dir])
                let now = try CompareCommandLine.runFolders([b])
                guard now.count == 1 else { throw CompareError("\(b): --history judges one current run; this holds \(now.count)") }
                // The current run may sit in the history folder already (kept before judging): never judge it against itself.
                let kept = past.filter { $0.standardizedFileURL.path != now[0].standardizedFileURL.path }
                try compareRuns(.history, Array(kept.suffix(historyRuns)), now, try options(single: false))
            }
        } catch let e as CompareError {
            FileHandle.standardError.write(Data("error: \(e)\n".utf8))
            throw ExitCode(ExitStatus.runFailed)
        }
    }

    /// The flags, with the tolerance's default for one run a side or for several.
    func options(single: Bool) throws -> CompareCommandLine.Options {
        let tol = tolerance ?? (single ? CompareCommandLine.defaultTolerance.single : CompareCommandLine.defaultTolerance.runs)
        do { return try CompareCommandLine.options(format: format, failOn: failOn, tolerance: tol, metrics: metrics, resamples: resamples) } catch { throw ValidationError(error.description) }
    }

    func compareRuns(_ mode: RunSetMode, _ a: [URL], _ b: [URL], _ o: CompareCommandLine.Options) throws {
        let report = try RunSetReport.make(mode: mode, baseline: a, current: b, settings: o.settings,
                                           rule: RunSetRule(tolerance: o.settings.tolerance), failOn: o.failOn)
        print(report.rendered(o.format), terminator: "")
        if report.gateTripped { throw ExitCode(ExitStatus.gateTripped) }
    }

    func comparePair(_ a: URL, _ b: URL, _ o: CompareCommandLine.Options) throws {
        let report = try CompareReport.make(baseline: a, current: b, settings: o.settings, failOn: o.failOn)
        print(report.rendered(o.format), terminator: "")
        var tripped = report.gateTripped
        // Runs of several populations: each population both runs have, compared as runs of
        // their own (table and markdown; json and junit compare the folders they are given).
        if o.format == .table || o.format == .markdown {
            for name in Self.sharedPopulations(a, b) {
                let p = try CompareReport.make(baseline: a.appendingPathComponent("populations/\(name)"),
                                               current: b.appendingPathComponent("populations/\(name)"), settings: o.settings, failOn: o.failOn)
                print(o.format == .markdown ? "\n### Population \(name)\n" : "\npopulation \(name)", terminator: "\n")
                print(p.rendered(o.format), terminator: "")
                tripped = tripped || p.gateTripped
            }
        }
        if tripped { throw ExitCode(ExitStatus.gateTripped) }
    }
}
