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

    static let configuration = CommandConfiguration(abstract: "Compare two results folders: percentiles with their noise, effect sizes, a verdict per metric.", discussion: CompareCommandLine.help)
    @Argument(help: "The baseline results folder.") var baseline: String
    @Argument(help: "The current results folder.") var current: String
    @Option(help: "table, markdown, json or junit.") var format = "table"
    @Option(help: "Exit 97 when a gated metric is slower (or faster, spread-changed; comma-separated).") var failOn: String?
    @Option(help: "Smallest shift of p50 and p90 called a change, like 25%.") var tolerance = "25%"
    @Option(help: "The gated metrics, comma-separated (default round_trip,fanout).") var metrics: String?
    @Option(help: "Bootstrap resamples (seed fixed).") var resamples = 1000

    func run() throws {
        let o: CompareCommandLine.Options
        do { o = try CompareCommandLine.options(format: format, failOn: failOn, tolerance: tolerance, metrics: metrics, resamples: resamples) } catch { throw ValidationError(error.description) }
        do {
            let (a, b) = (URL(fileURLWithPath: baseline), URL(fileURLWithPath: current))
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
        } catch let e as CompareError {
            FileHandle.standardError.write(Data("error: \(e)\n".utf8))
            throw ExitCode(ExitStatus.runFailed)
        }
    }
}
