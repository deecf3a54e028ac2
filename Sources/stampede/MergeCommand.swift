import ArgumentParser
import Foundation
import StampedeEngine
import StampedeLoop
import StampedeReport
import StampedeScenario
import StampedeServers
#if canImport(Glibc)
import Glibc
#endif

struct Merge: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Merge results folders of runs made side by side into one (histograms added exactly, counts summed).",
        discussion: """
            With --scenario, the scenario's thresholds are judged on the merge (windows on the
            merged per-second latency) and the exit code says how they fared, as for a run:
            0 passed, 99 a threshold failed. Exit 2 when an input is not a results folder.

            Example:
              stampede merge results/a results/b -o results/merged --scenario scenarios/ci-gate.yaml
            """)
    @Argument(help: "Results folders.") var folders: [String]
    @Option(name: .short, help: ArgumentHelp("The merged folder (created; must not exist or be empty).", valueName: "out")) var output: String
    @Option(help: ArgumentHelp("Judge this scenario's thresholds on the merge.", valueName: "file")) var scenario: String?

    func run() throws {
        var specs: [ThresholdSpec] = []
        if let scenario {
            do { specs = try ScenarioLoader.load(path: scenario).thresholds } catch {
                FileHandle.standardError.write(Data("error: --scenario: \(error)\n".utf8))
                throw ExitCode(ExitStatus.badInput)
            }
        }
        let out = URL(fileURLWithPath: output)
        var merged: ResultsMerge.Merged
        do {
            merged = try ResultsMerge.combine(folders.map { URL(fileURLWithPath: $0) }, output: out)
            merged.summary.thresholds = MergedThresholds.judge(specs, merged)
            try ResultsMerge.write(merged, to: out)
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            if case .badInput = error { throw ExitCode(ExitStatus.badInput) }
            throw ExitCode(ExitStatus.runFailed)
        }
        let s = merged.summary
        print("merged \(folders.count) folders: \(s.messages.sent) messages sent, \(s.errorsTotal) errors")
        for t in s.thresholds ?? [] { print("  \(t.passed ? "✓" : "✗") \(t.key) \(t.condition): \(t.observedText)") }
        print(output)
        if let t = s.thresholds, !t.allSatisfy(\.passed) { throw ExitCode(ExitStatus.thresholdFailed) }
    }
}
