import ArgumentParser
import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
#if canImport(Glibc)
import Glibc
#endif

struct Capacity: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find the most load a server holds within its SLOs, and where latency bends (the knee).",
        discussion: """
            Runs the scenario in steady steps at one load each (after a warm-up that is not \
            measured): growing ×1.5 from --from until a step fails, then halving the bracket until \
            it is within --precision, then once more at the answer to confirm it.

            The clients stay connected across steps: a step over clients adds or closes clients, a step over the \
            rate changes only the schedule (--fresh-steps: a whole run per step). More clients \
            than one process holds run in worker processes (--processes, --workers), judged on \
            the exact merge.

            A latency SLO is judged on the step's one-second intervals: a \
            bootstrap bounds its figure at 90 %; it holds when the upper bound meets it, fails \
            when even the lower bound misses it, and a step in between is borderline and runs \
            once more, decided by its figure alone. A step fails on any SLO, on errors or lost \
            messages above their limits, or when fewer messages went out than the schedule asked \
            for (under 99 %). A step where the generator itself was saturated (timers late, \
            client loops at full CPU) is invalid and runs again; invalid twice, it is the \
            generator's ceiling and the search goes on below it. If the server holds everything \
            up to that ceiling, the search says so instead of reporting a knee.

            Writes results/capacity-<name>-<time>/ with capacity.json (every step, the answer, \
            the knee, why the next step failed), report.html, and the run's results folder (run/; \
            with --fresh-steps, each step's own).

            Exit codes: 0 found (or the whole range held), 1 the target could not be reached, \
            2 bad input, 98 the generator was the limit, 99 no load met the SLOs or the server was \
            too unstable to give one number (unstable), 130 interrupted (capacity.json is written, marked partial).

            Examples:
              stampede serve --port 8765 --max-rate 20000 &
              stampede capacity scenarios/capacity-chat.yaml --vary message.rate --slo "round_trip p(99) < 50ms"
              stampede capacity scenarios/hub-broadcast.yaml --vary clients --slo "fanout p(99) < 200ms" --from 100 --to 5000
              stampede serve --port 8766 --processes 6 --max-connections 60000 &
              stampede capacity scenarios/capacity-connections.yaml --vary clients --slo "ping_round_trip p(99) < 1s" --from 10000 --to 80000
            """)

    @Argument(help: "Scenario file (YAML): everything but the varied field stays as written.")
    var scenario: String

    @Option(help: ArgumentHelp("What to vary: message.rate (messages per second across all clients) or clients (each keeps the scenario's per-client rate).", valueName: "field"))
    var vary: String

    @Option(help: ArgumentHelp("A service level objective every step must meet, like \"round_trip p(99) < 50ms\" (repeatable; any threshold metric and one condition).", valueName: "slo"))
    var slo: [String] = []

    @Option(help: "Lowest load tried (default: the scenario's own value).")
    var from: Double?

    @Option(help: "Highest load tried (default: 1024 × --from, within the field's range).")
    var to: Double?

    @Option(help: "Stop when the bracket is within this share of the answer: 2%, or 0.02 (0.1% to 50%; default 2%).")
    var precision: String = "2%"

    @Option(help: "Measured time per step, after the warm-up (1s to 1h; default 30s).")
    var stepDuration: String = "30s"

    @Option(help: "Unmeasured time at the start of each step's message phase (0 to 1h; default 10s).")
    var warmup: String = "10s"

    @Option(help: "Passing runs the answer needs in the confirmation stage, 1 to 10 (default 1; 3 for a server whose latency is noisy near its limit).")
    var confirmations: Int = 1

    @Option(help: "After a failed step, wait at most this long for the server to recover (pausing the sends, then probing at the last passing load until the SLOs hold) before the next step; 0 = do not wait (default 60s).")
    var cooldown: String = "60s"

    @Option(help: "Errors allowed per message sent in a step: 0.1%, or 0.001 (default 0.1%).")
    var maxErrors: String = "0.1%"

    @Option(help: "Messages lost allowed per message sent in a step (default 0.1%).")
    var maxLost: String = "0.1%"

    @Flag(help: "Run every step as a whole run (connect, measure, close), for a server whose state must be reset between steps (default: clients stay connected across steps; only what a step changes changes).")
    var freshSteps = false

    @OptionGroup
    var load: LoadOptions

    @OptionGroup(title: "Worker processes")
    var fleet: FleetOptions

    @Flag(help: "No progress output.")
    var quiet = false

    @OptionGroup(title: "Live metrics")
    var metrics: MetricsOptions

    func validate() throws {
        guard CapacityPlan.parseVary(vary) != nil else {
            throw ValidationError("--vary must be message.rate or clients (or NAME.message.rate, NAME.clients for a population), got '\(vary)'")
        }
        guard !slo.isEmpty else { throw ValidationError("--slo: give at least one, like --slo \"round_trip p(99) < 50ms\"") }
        for s in slo {
            // A name the scenario declares (a flow's `ack`) is known only once it is loaded: here
            // the SLO's own name is taken as one, and `plan` checks the name against the scenario.
            let metric = String(s.trimmingCharacters(in: .whitespaces).prefix { $0 != " " && $0 != "\t" })
            if case .failure(let p) = ThresholdSpec.parseSLO(s, names: ThresholdNames(latencies: ThresholdMetricKind(metric) == nil ? [metric] : []))
            { throw ValidationError("--slo: \(p)") }
        }
        guard let p = Self.ratio(precision), p >= 0.001, p <= 0.5 else { throw ValidationError("--precision must be from 0.1% to 50%, got '\(precision)'") }
        guard let step = parseDuration(stepDuration), step >= 1, step <= 3600 else {
            throw ValidationError("--step-duration must be from 1s to 1h (like 30s), got '\(stepDuration)'")
        }
        guard let w = parseDuration(warmup), w <= 3600 else { throw ValidationError("--warmup must be from 0 to 1h (like 10s), got '\(warmup)'") }
        guard (1...10).contains(confirmations) else { throw ValidationError("--confirmations must be from 1 to 10, got \(confirmations)") }
        guard let c = parseDuration(cooldown), c <= 3600 else { throw ValidationError("--cooldown must be from 0 to 1h (like 60s), got '\(cooldown)'") }
        guard let e = Self.ratio(maxErrors), e <= 1 else { throw ValidationError("--max-errors must be a share from 0% to 100%, got '\(maxErrors)'") }
        guard let l = Self.ratio(maxLost), l <= 1 else { throw ValidationError("--max-lost must be a share from 0% to 100%, got '\(maxLost)'") }
        for (flag, v) in [("--from", from), ("--to", to)] {
            if let v, !(v.isFinite && v > 0) { throw ValidationError("\(flag) must be a number above 0, got \(v)") }
        }
        if let from, let to, to < from { throw ValidationError("--to (\(to)) is below --from (\(from))") }
    }

    /// The flags that replace scenario fields (`--target`).
    var overrides: [ScenarioLoader.Override] {
        load.target.flatMap { ScenarioLoader.Override(flag: "--target", value: $0) }.map { [$0] } ?? []
    }

    /// "2%" → 0.02, "0.02" → 0.02; nil for anything else.
    static func ratio(_ text: String) -> Double? {
        let t = text.trimmingCharacters(in: .whitespaces)
        let value = t.hasSuffix("%") ? Double(t.dropLast()).map { $0 / 100 } : Double(t)
        guard let value, value.isFinite, value >= 0 else { return nil }
        return value
    }

    func run() throws {
        let s: Scenario
        do { s = try ScenarioLoader.load(path: scenario, overrides: overrides) } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(ExitStatus.badInput)
        }
        let plan: CapacityPlan
        do { plan = try makePlan(s) } catch let e as ValidationError {
            FileHandle.standardError.write(Data("error: \(e.message)\n".utf8))
            throw ExitCode(ExitStatus.badInput)
        }
        var options = try load.runOptions(progress: quiet ? .silent : .lines)
        options.fleet = fleet.spec
        // Workers parse the very text this process parsed; each step's load reaches them with their plan.
        if let text = try? String(contentsOfFile: scenario, encoding: .utf8) {
            options.scenarioSource = ScenarioSource(yaml: text, file: scenario, overrides: overrides)
        }
        installSignalHandlers()
        let targetText = s.target == .embedded ? "embedded target" : s.target.description
        FileHandle.standardError.write(Data(("stampede \(RunEngine.version) capacity: \(s.name) → \(targetText), varying \(plan.varyText) from "
            + "\(CapacityRunner.format(plan.from)) to \(CapacityRunner.format(plan.to)) \(plan.unit), steps of \(CapacityRunner.format(plan.warmupSeconds)) s + "
            + "\(CapacityRunner.format(plan.stepSeconds)) s, \(options.fleet == nil ? "\(options.loops) loop(s)" : "on workers"), "
            + (plan.holdsConnections ? "connections kept between steps" : "a whole run per step") + "\n").utf8))
        // One endpoint for the whole search; every step's series carry its `step` label.
        let live = try metrics.start(for: s)
        defer { live?.stop() }
        let runner = CapacityRunner(plan: plan, options: options)
        if let live { runner.stepObserver = { step in live.observer(labels: ["step": step]) } }
        let outcome = runner.run()
        print("capacity: \(outcome.result.conclusion)")
        if let knee = outcome.result.knee { print("knee: \(CapacityRunner.format(knee)) \(plan.unit)") }
        if let e = outcome.writeError { FileHandle.standardError.write(Data("error: could not write results: \(e)\n".utf8)) }
        if let folder = outcome.folder { print("results: \(relativePath(folder))") }
        if outcome.exitCode != 0 { throw ExitCode(outcome.exitCode) }
    }

    /// The plan from the flags and the scenario; what the scenario cannot do is bad input.
    func makePlan(_ s: Scenario) throws -> CapacityPlan {
        // validate() has checked every flag; these guards only keep a trap out of reach.
        guard let (population, vary) = CapacityPlan.parseVary(vary), let precision = Self.ratio(precision), let step = parseDuration(stepDuration),
              let warmup = parseDuration(warmup), let cooldown = parseDuration(cooldown), let maxErrors = Self.ratio(maxErrors), let maxLost = Self.ratio(maxLost) else {
            throw ValidationError("a flag's value could not be read")
        }
        guard s.events.isEmpty, s.populations.allSatisfy({ $0.scenario.events.isEmpty }) else {
            throw ValidationError("\(scenario): capacity steps must be steady: remove the scenario's events")
        }
        // With populations, one of them is varied (the others hold) and the SLOs judge it.
        if !s.populations.isEmpty && population == nil {
            throw ValidationError("--vary: \(scenario) has populations (\(s.populations.map(\.name).joined(separator: ", "))): name the one to vary, like --vary \(s.populations[0].name).\(vary.rawValue)")
        }
        if let population, !s.populations.contains(where: { $0.name == population }) {
            throw ValidationError(s.populations.isEmpty
                ? "--vary \(population).\(vary.rawValue): \(scenario) has no populations; use --vary \(vary.rawValue)"
                : "--vary: no population named '\(population)' (populations: \(s.populations.map(\.name).joined(separator: ", ")))")
        }
        let whole = s
        let s = s.populations.first { $0.name == population }?.scenario ?? s
        let current: Double
        let range: ClosedRange<Double>
        switch vary {
        case .messageRate:
            guard s.workload != .rest else { throw ValidationError("--vary message.rate: REST clients poll at their resources' intervals; vary clients instead") }
            guard s.loadModel == .open else { throw ValidationError("--vary message.rate needs load_model: open (a closed loop sends as fast as replies come)") }
            current = s.message.ratePerSecond
            range = 0.001...10_000_000
        case .clients:
            current = Double(s.clients)
            range = 1...1_000_000
        }
        let from = self.from ?? (current > 0 ? current : 100)
        let to = min(self.to ?? from * 1024, range.upperBound)
        guard range.contains(from) else { throw ValidationError("--from must be within \(range.lowerBound) to \(range.upperBound) for \(vary.rawValue)") }
        guard range.contains(to), to >= from else { throw ValidationError("--to must be within \(from) to \(range.upperBound) for \(vary.rawValue)") }
        var slos: [ThresholdSpec] = []
        for text in slo {
            switch ThresholdSpec.parseSLO(text, names: s.declaredMetrics) {
            case .success(let spec): slos.append(spec)
            case .failure(let p): throw ValidationError("--slo: \(p)")
            }
        }
        var plan = CapacityPlan(
            scenario: whole, vary: vary, sloTexts: slo, slos: slos, from: from, to: to, precision: precision,
            stepSeconds: step, warmupSeconds: warmup, limits: .init(errorRatio: maxErrors, lostRatio: maxLost, sendRatio: 0.99))
        plan.cooldownSeconds = cooldown
        plan.population = population
        plan.confirmations = confirmations
        plan.freshSteps = freshSteps
        return plan
    }
}
