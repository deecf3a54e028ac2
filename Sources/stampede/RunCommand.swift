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

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a scenario and write its results under results/.",
        discussion: """
            Prints a progress line every second (to stderr), a summary at the end, and, as the \
            last line on stdout, the results folder. Ctrl-C ends the run early and still writes \
            what was gathered, marked partial.

            Exit codes:
              0    passed (the run completed; every threshold passed)
              1    the run failed, for example because no client could connect. \
            The results folder still records the connect errors by class
              2    bad input (the scenario file or a flag; the message names file, line and field)
              99   a threshold failed (at the end, or live with abort_on_fail: the run stopped early); \
            with a saturated generator, only one missed by more than twice its timer lag
              98   no verdict: the generator was saturated (timers over 10 ms late, or client loops \
            at full CPU, for 2 s in a row) and its delay could have decided a threshold; \
            one that held despite the delay passes (summary.json thresholds[].verdict)
              130  interrupted (Ctrl-C, SIGTERM); results written, marked partial

            Examples:
              stampede run scenarios/chat-broadcast.yaml
              stampede run scenarios/chat-broadcast.yaml --clients 200 --duration 5
              stampede run scenarios/chat-local-server.yaml --target ws://127.0.0.1:8765/chat
              stampede run scenarios/chat-100k.yaml                    # worker processes as needed
              stampede run scenarios/chat-broadcast.yaml --processes 2
              stampede run scenario.yaml --workers 10.0.0.5:7070,10.0.0.6:7070

            Clients that need more file descriptors than one process may open (20,000 here) \
            run in worker processes (`--processes N` to choose); `--workers` spreads them over \
            `stampede worker`s on other hosts. Either way the run has one schedule, one \
            results folder with exactly merged histograms, and thresholds judged once.
            """)

    @Argument(help: "Scenario file (YAML).")
    var scenario: String

    @OptionGroup
    var load: LoadOptions

    @Option(help: "Override the number of clients (1 to 1,000,000).")
    var clients: String?

    @Option(help: "Override the message phase duration: seconds, or with a unit (500ms, 90s, 2m, 1h; at most 168h).")
    var duration: String?

    @Flag(help: "Plain log lines instead of a live progress line.")
    var plain = false

    @Flag(help: "No progress output.")
    var quiet = false

    @OptionGroup(title: "Live metrics")
    var metrics: MetricsOptions

    @OptionGroup(title: "Worker processes")
    var fleet: FleetOptions

    /// The flags that replace scenario fields, checked by the loader exactly as those fields are.
    var overrides: [ScenarioLoader.Override] {
        [("--target", load.target), ("--clients", clients), ("--duration", duration)].compactMap { flag, value in
            value.flatMap { ScenarioLoader.Override(flag: flag, value: $0) }
        }
    }

    func run() throws {
        let s: Scenario
        do { s = try ScenarioLoader.load(path: scenario, overrides: overrides) } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(ExitStatus.badInput)
        }
        let style: RunOptions.ProgressStyle = quiet ? .silent : (plain || isatty(STDERR_FILENO) == 0) ? .lines : .terminal
        var options = try load.runOptions(progress: style)
        options.fleet = fleet.spec
        // The workers parse the very text this process parsed, with the same overrides.
        if let text = try? String(contentsOfFile: scenario, encoding: .utf8) {
            options.scenarioSource = ScenarioSource(yaml: text, file: scenario, overrides: overrides)
        }
        installSignalHandlers()
        // Up from before the run until its results are written (the engine returns after that).
        let live = try metrics.start(for: s)
        live?.observe(&options)
        defer { live?.stop() }
        let targetText = s.target == .embedded ? "embedded target" : s.target.description
        // Where the clients run: worker processes say so in a note of their own once they are up.
        let whereText = options.fleet == nil ? "\(options.loops) loop(s)" : "on workers"
        FileHandle.standardError.write(Data("stampede \(RunEngine.version): \(s.name): \(s.clients) clients → \(targetText), \(whereText)\n".utf8))
        if !s.populations.isEmpty { return try runPopulations(s, options: options) }
        let outcome: RunOutcome
        do { outcome = try RunEngine(scenario: s, options: options).run() } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(interrupt.isRaised ? ExitStatus.interrupted : ExitStatus.runFailed)
        }
        print(SummaryText.render(outcome.summary))
        if let fatal = outcome.record.fatalError { FileHandle.standardError.write(Data("error: \(fatal)\n".utf8)) }
        if let e = outcome.writeError { FileHandle.standardError.write(Data("error: could not write results: \(e)\n".utf8)) }
        if let folder = outcome.resultsFolder { print("results: \(relativePath(folder))") }
        try finish(exitCode: outcome.exitCode, thresholds: outcome.summary.thresholds)
    }

    /// A scenario with `populations:`: one engine per population, one merged results folder.
    func runPopulations(_ s: Scenario, options: RunOptions) throws {
        let outcome: PopulationOutcome
        do { outcome = try PopulationRun(scenario: s, options: options).run() } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(interrupt.isRaised ? ExitStatus.interrupted : ExitStatus.runFailed)
        }
        print(SummaryText.render(outcome.summary))
        for (name, o) in outcome.populations {
            if let fatal = o.record.fatalError { FileHandle.standardError.write(Data("error: population \(name): \(fatal)\n".utf8)) }
            if let e = o.writeError { FileHandle.standardError.write(Data("error: could not write the results of population \(name): \(e)\n".utf8)) }
        }
        if let fatal = outcome.fatalError { FileHandle.standardError.write(Data("error: \(fatal)\n".utf8)) }
        if let e = outcome.writeError { FileHandle.standardError.write(Data("error: could not write results: \(e)\n".utf8)) }
        if let folder = outcome.resultsFolder { print("results: \(relativePath(folder))") }
        try finish(exitCode: outcome.exitCode, thresholds: outcome.summary.thresholds)
    }

    /// The line a CI log shows next to the exit code (the summary above has the details), and the exit.
    func finish(exitCode: Int32, thresholds: [RunSummary.Threshold]?) throws {
        let failedThresholds = thresholds?.filter { $0.verdict == .fail }.count ?? 0
        let unjudged = thresholds?.filter { $0.verdict == .unjudged }.count ?? 0
        if exitCode == ExitStatus.thresholdFailed {
            FileHandle.standardError.write(Data("stampede: \(failedThresholds) threshold condition(s) failed (exit 99)\n".utf8))
        } else if exitCode == ExitStatus.saturated {
            FileHandle.standardError.write(Data("stampede: the generator was saturated; \(unjudged) threshold condition(s) not judged, its delay could have decided them (exit 98)\n".utf8))
        }
        if exitCode != 0 { throw ExitCode(exitCode) }
    }
}
