import ArgumentParser
import Foundation
import StampedeEngine
import StampedeScenario
#if canImport(Glibc)
import Glibc
#endif

/// Set by SIGINT/SIGTERM during `interleave`, with the signal's number so it can be passed on.
let interleaveInterrupt = InterleaveInterrupt()

struct Interleave: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a scenario N times against a baseline and a current target, in alternation.",
        discussion: """
            Makes --runs pairs of `stampede run`s, one against each side, so that `stampede \
            compare --baseline DIR/baseline --current DIR/current` can compare the two builds \
            over several runs. Pair i runs the baseline first when i is odd and the current \
            side first when it is even (AB, BA, AB, …), so slow drift of the machine falls on \
            both sides alike and neither always runs first.

            A side's command (optional) is started with /bin/sh -c before each of that side's \
            runs, with STAMPEDE_SIDE=baseline|current and STAMPEDE_PAIR=i in its environment \
            and its output in DIR/<side>-server-<i>.log; the run starts once the side's target \
            accepts a TCP connection, and the command's process group is stopped after it \
            (SIGTERM, then SIGKILL after 5 s).

            DIR/runs.json lists each pair's order and each run's folder and exit code; it is \
            rewritten after every run. Flags after -- go to every `stampede run`; what a run \
            prints goes to DIR/<side>-run-<i>.log, and one line per run to stderr.

            Exit codes: 0 every run made (a run's 98 or 99 is recorded, not an error); 1 a run \
            or a server command failed (the message names it); 2 bad flags; 130 interrupted \
            (runs.json marked partial).

            Example (lines continued with \\ as in a shell):
              stampede interleave scenarios/chat-local-server.yaml --runs 5 \\
              --results results/ab --baseline-command 'old/stampede serve --port 8765' \\
              --current-command 'new/stampede serve --port 8765' -- --duration 30s
            """)

    @Argument(help: "Scenario file (YAML).")
    var scenario: String

    @Option(help: ArgumentHelp("Pairs of runs, 1 to 100 (each: one baseline run, one current run).", valueName: "N"))
    var runs: Int

    @Option(help: ArgumentHelp("Folder for the set: baseline/, current/, the server logs and runs.json.", valueName: "DIR"))
    var results: String

    @Option(help: ArgumentHelp("The baseline's target (default: the scenario's).", valueName: "URL"))
    var baselineTarget: String?

    @Option(help: ArgumentHelp("The current side's target (default: the scenario's).", valueName: "URL"))
    var currentTarget: String?

    @Option(help: ArgumentHelp("Starts the baseline server before each baseline run (/bin/sh -c).", valueName: "CMD"))
    var baselineCommand: String?

    @Option(help: ArgumentHelp("Starts the current server before each current run (/bin/sh -c).", valueName: "CMD"))
    var currentCommand: String?

    @Option(help: ArgumentHelp("How long a side's server may take to accept a connection (500ms, 30s, …; at most 1h).", valueName: "duration"))
    var readyTimeout: String = "30s"

    @Argument(parsing: .postTerminator, help: ArgumentHelp("Flags for every `stampede run`, after --.", valueName: "run-flags"))
    var runFlags: [String] = []

    /// The flags interleave sets on each run itself.
    static let reservedRunFlags = ["--results", "--target", "--quiet"]

    func validate() throws {
        guard (1...InterleavePlan.pairLimit).contains(runs) else {
            throw ValidationError("--runs must be from 1 to \(InterleavePlan.pairLimit), got \(runs)")
        }
        guard let t = parseDuration(readyTimeout), t > 0, t <= 3600 else {
            throw ValidationError("--ready-timeout must be a duration from 1ms to 1h (500ms, 30s, 2m), got '\(readyTimeout)'")
        }
        for flag in runFlags where Self.reservedRunFlags.contains(where: { flag == $0 || flag.hasPrefix($0 + "=") }) {
            throw ValidationError("\(flag) cannot follow --: interleave sets it on each run (use --results, --baseline-target, --current-target)")
        }
        guard FileManager.default.fileExists(atPath: scenario) else {
            throw ValidationError("scenario file '\(scenario)' not found")
        }
    }

    /// A side from its flags: its target (the scenario's when not given), checked by the loader.
    func side(_ side: InterleaveSide, target: String?, command: String?) throws -> (InterleaveSideSetup, Scenario) {
        let flag = "--\(side.rawValue)-target"
        let overrides = target.map { [ScenarioLoader.Override(flag: flag, field: "target", value: $0)] } ?? []
        let s: Scenario
        do { s = try ScenarioLoader.load(path: scenario, overrides: overrides) } catch { throw ValidationError("\(error)") }
        var setup = InterleaveSideSetup(side: side, target: s.target.description, command: command)
        switch s.target {
        case .embedded:
            if command != nil {
                throw ValidationError("--\(side.rawValue)-command needs a target to wait for: give \(flag) (the scenario's target is embedded)")
            }
        case .webSocket(let url), .http(let url):
            setup.host = url.host
            setup.port = url.port
        }
        return (setup, s)
    }

    func run() throws {
        let (baseline, s) = try side(.baseline, target: baselineTarget, command: baselineCommand)
        let (current, _) = try side(.current, target: currentTarget, command: currentCommand)
        if baseline.target == current.target && baselineCommand == nil && currentCommand == nil {
            throw ValidationError("both sides would run against \(baseline.target): give --baseline-target or --current-target another URL, or a --baseline-command or --current-command")
        }
        installInterleaveSignalHandlers()
        let root = URL(fileURLWithPath: results)
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        var runner = InterleaveRunner(plan: InterleavePlan(pairs: runs, root: root), scenarioPath: scenario, scenarioName: s.name,
                                      baseline: baseline, current: current, executable: exe, interrupt: interleaveInterrupt) { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        runner.runArguments = runFlags
        runner.readyTimeout = parseDuration(readyTimeout) ?? 30
        switch runner.run() {
        case .completed:
            let dir = results.count > 1 && results.hasSuffix("/") ? String(results.dropLast()) : results
            print("stampede compare --baseline \(dir)/baseline --current \(dir)/current")
        case .failed(let failure, _):
            FileHandle.standardError.write(Data("error: \(failure)\n".utf8))
            throw ExitCode(ExitStatus.runFailed)
        case .interrupted:
            FileHandle.standardError.write(Data("stampede: interrupted; runs.json marked partial\n".utf8))
            throw ExitCode(ExitStatus.interrupted)
        }
    }
}

/// SIGINT and SIGTERM only record the signal: the runner passes it to the run in progress,
/// stops the server and writes runs.json (a second Ctrl-C must not leave a server behind).
func installInterleaveSignalHandlers() {
    installSignalHandlers { interleaveInterrupt.raise($0) }
}
