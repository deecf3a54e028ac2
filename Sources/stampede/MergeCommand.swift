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
    /// When every input is a run of populations: each population they all have, merged into
    /// `out/populations/NAME` and judged against its thresholds; its entries for the run's
    /// summary, and those thresholds' results.
    static func mergePopulations(_ inputs: [URL], into out: URL, thresholds: [String: [ThresholdSpec]])
        throws(ResultsMergeError) -> ([RunSummary.PopulationEntry], [RunSummary.Threshold]) {
        var entries: [[RunSummary.PopulationEntry]] = []
        for folder in inputs {
            guard let data = FileManager.default.contents(atPath: folder.appendingPathComponent(ResultsWriter.summaryFileName).path),
                  let s = try? RunSummary.decode(from: data), let p = s.populations else { return ([], []) }
            entries.append(p)
        }
        var merged: [RunSummary.PopulationEntry] = [], judged: [RunSummary.Threshold] = []
        for first in entries[0] where entries.allSatisfy({ $0.contains { $0.name == first.name } }) {
            let parts = inputs.map { $0.appendingPathComponent(first.folder) }
            let target = out.appendingPathComponent(first.folder)
            var m = try ResultsMerge.combine(parts, output: target)
            var results = MergedThresholds.judge(thresholds[first.name] ?? [], m) ?? []
            for i in results.indices { results[i].population = first.name }
            m.summary.thresholds = results.isEmpty ? nil : results
            let summary = try ResultsMerge.write(m, to: target)
            judged += results
            let exit = entries.compactMap { $0.first { $0.name == first.name }?.exitCode }.first { $0 != 0 } ?? Int32(0)
            merged.append(RunSummary.PopulationEntry(name: first.name, workload: first.workload, clients: summary.scenario.clients,
                                                     startSeconds: first.startSeconds, folder: first.folder, summary: summary, exitCode: exit))
        }
        return (merged, judged)
    }

    static let configuration = CommandConfiguration(
        abstract: "Merge results folders of runs made side by side into one (histograms added exactly, counts summed).",
        discussion: """
            With --scenario, the scenario's thresholds are judged on the merge (windows on the \
            merged per-second latency) and the exit code says how they fared, as for a run: \
            0 passed, 99 a threshold failed, 98 unjudged (a saturated generator's delay could \
            have decided it). Exit 2 when an input is not a results folder.

            Example:
              stampede merge results/a results/b -o results/merged --scenario scenarios/ci-gate.yaml
            """)
    @Argument(help: "Results folders.") var folders: [String]
    @Option(name: .short, help: ArgumentHelp("The merged folder (created; must not exist or be empty).", valueName: "out")) var output: String
    @Option(help: ArgumentHelp("Judge this scenario's thresholds on the merge.", valueName: "file")) var scenario: String?

    func run() throws {
        var specs: [ThresholdSpec] = []
        var populationSpecs: [String: [ThresholdSpec]] = [:]
        if let scenario {
            do {
                let s = try ScenarioLoader.load(path: scenario)
                specs = s.thresholds
                for p in s.populations { populationSpecs[p.name] = p.scenario.thresholds }
            } catch {
                FileHandle.standardError.write(Data("error: --scenario: \(error)\n".utf8))
                throw ExitCode(ExitStatus.badInput)
            }
        }
        let out = URL(fileURLWithPath: output)
        var merged: ResultsMerge.Merged
        do {
            let inputs = folders.map { URL(fileURLWithPath: $0) }
            // Runs of populations: each population merged on its own, as the run merges them.
            let (populations, judged) = try Self.mergePopulations(inputs, into: out, thresholds: populationSpecs)
            merged = try ResultsMerge.combine(inputs, output: out)
            let own = MergedThresholds.judge(specs, merged) ?? []
            merged.summary.thresholds = own.isEmpty && judged.isEmpty ? nil : own + judged
            if !populations.isEmpty { merged.summary.populations = populations }
            try ResultsMerge.write(merged, to: out, besides: populations.isEmpty ? [] : ["populations"])
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            if case .badInput = error { throw ExitCode(ExitStatus.badInput) }
            throw ExitCode(ExitStatus.runFailed)
        }
        let s = merged.summary
        print("merged \(folders.count) folders: \(s.messages.sent) messages sent, \(s.errorsTotal) errors")
        for t in s.thresholds ?? [] {
            let mark = switch t.verdict { case .pass: "✓"; case .fail: "✗"; case .unjudged: "? (unjudged)" }
            print("  \(mark) \(t.key) \(t.condition): \(t.observedText)")
        }
        print(output)
        // As for a run: a failed threshold, then one a saturated generator could have decided.
        if let t = s.thresholds, t.contains(where: { $0.verdict == .fail }) { throw ExitCode(ExitStatus.thresholdFailed) }
        if let t = s.thresholds, t.contains(where: { $0.verdict == .unjudged }) { throw ExitCode(ExitStatus.saturated) }
    }
}
