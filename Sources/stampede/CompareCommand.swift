import ArgumentParser
import Foundation
import StampedeReport

struct Compare: ParsableCommand {
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
            let report = try CompareReport.make(baseline: URL(fileURLWithPath: baseline), current: URL(fileURLWithPath: current), settings: o.settings, failOn: o.failOn)
            print(report.rendered(o.format), terminator: "")
            if report.gateTripped { throw ExitCode(ExitStatus.gateTripped) }
        } catch let e as CompareError {
            FileHandle.standardError.write(Data("error: \(e)\n".utf8))
            throw ExitCode(ExitStatus.runFailed)
        }
    }
}
