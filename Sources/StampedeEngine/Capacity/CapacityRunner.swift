import Foundation
import StampedeFleet
import StampedeReport
import StampedeScenario
import Synchronization

/// What `stampede capacity` varies, over what range, and what a step must meet.
public struct CapacityPlan: Sendable {
    public enum Vary: String, Sendable, CaseIterable {
        /// Messages per second across all clients; the client count stays.
        case messageRate = "message.rate"
        /// Connected clients; each keeps the scenario's per-client message rate.
        case clients
    }
    public var scenario: Scenario
    public var vary: Vary
    /// The population varied (`--vary NAME.message.rate`) while the others hold their load;
    /// nil for a scenario of one population. The SLOs judge that population.
    public var population: String? = nil
    /// The SLOs as given and as parsed (`ThresholdSpec.parseSLO`).
    public var sloTexts: [String]
    public var slos: [ThresholdSpec]
    public var from: Double
    public var to: Double
    public var precision: Double
    public var stepSeconds: Double
    public var warmupSeconds: Double
    public var limits: CapacityResult.Limits
    /// After a step that failed, the longest wait for the server to recover before the next
    /// step (probing at `from` until the SLOs hold again); 0 turns the wait off.
    public var cooldownSeconds: Double = 60
    /// Passing runs the answer needs before it is reported (`--confirmations`).
    public var confirmations = 1
    /// `--fresh-steps`: every step a whole run (connect, measure, close), for servers whose
    /// state must be reset between steps; otherwise the clients stay connected across steps.
    public var freshSteps = false

    public init(scenario: Scenario, vary: Vary, sloTexts: [String], slos: [ThresholdSpec], from: Double, to: Double, precision: Double,
                stepSeconds: Double, warmupSeconds: Double, limits: CapacityResult.Limits) {
        self.scenario = scenario; self.vary = vary; self.sloTexts = sloTexts; self.slos = slos; self.from = from; self.to = to
        self.precision = precision; self.stepSeconds = stepSeconds; self.warmupSeconds = warmupSeconds; self.limits = limits
    }

    /// What is varied, as `--vary` gives it: "message.rate", "publishers.clients".
    public var varyText: String { (population.map { $0 + "." } ?? "") + vary.rawValue }

    /// `--vary`: "message.rate", "clients", or either after a population's name
    /// ("publishers.message.rate"); nil for anything else.
    public static func parseVary(_ text: String) -> (population: String?, vary: Vary)? {
        if let vary = Vary(rawValue: text) { return (nil, vary) }
        for vary in Vary.allCases where text.hasSuffix("." + vary.rawValue) {
            let name = String(text.dropLast(vary.rawValue.count + 1))
            if !name.isEmpty { return (name, vary) }
        }
        return nil
    }

    /// "messages/s" or "clients".
    public var unit: String { vary == .clients ? "clients" : "messages/s" }

    /// The scenario of a step at `load`: the varied field set, the message phase as long as the
    /// warm-up plus the measured window, a short drain (what is still in flight after the window
    /// is not measured), and no thresholds (the SLOs judge steps). A step holds one load, so the
    /// scenario's rate stages are set aside (its starting rate is the per-client rate's base).
    public func stepScenario(load: Double) -> Scenario {
        var s = scenario
        s.durationSeconds = warmupSeconds + stepSeconds
        s.drainSeconds = min(s.drainSeconds, 2)
        s.thresholds = []
        guard let population else { return Self.step(s, vary: vary, load: load) }
        // With populations: every one starts with the step and holds one load; only the varied one changes.
        for i in s.populations.indices {
            var p = s.populations[i]
            p.startSeconds = 0
            p.scenario.durationSeconds = s.durationSeconds
            p.scenario.drainSeconds = s.drainSeconds
            p.scenario.thresholds = []
            p.scenario.message.stages = []
            if p.name == population { p.scenario = Self.step(p.scenario, vary: vary, load: load) }
            s.populations[i] = p
        }
        s.clients = s.populations.reduce(0) { $0 + $1.scenario.clients }
        return s
    }

    /// `s` holding `load` of `vary` (its rate stages set aside).
    static func step(_ given: Scenario, vary: Vary, load: Double) -> Scenario {
        var s = given
        s.message.stages = []
        switch vary {
        case .messageRate:
            s.message.ratePerSecond = load
        case .clients:
            let perClient = given.clients > 0 ? given.message.ratePerSecond / Double(given.clients) : 0
            s.clients = Int(load)
            s.message.ratePerSecond = perClient * Double(s.clients)
        }
        return s
    }

    /// Messages per second per client: the scenario's rate over its clients.
    public var perClientRate: Double {
        let s = variedScenario
        return s.clients > 0 ? s.message.ratePerSecond / Double(s.clients) : 0
    }

    /// Whether the steps run on one run whose clients stay connected (`HeldSteps`): always,
    /// unless `--fresh-steps` asks otherwise or the scenario has populations (each step a run).
    public var holdsConnections: Bool { !freshSteps && population == nil }

    /// The held search's run: every client the search may want set up (the rest held back),
    /// `from` connected or sent at the start, and a message phase as long as a search can be
    /// (the runner ends it when the search has its answer).
    public var heldLoad: SteeredLoad {
        let hours12 = 12.0 * 3600
        switch vary {
        case .messageRate:
            return SteeredLoad(clients: scenario.clients, connectedAtStart: scenario.clients, ratePerSecond: from, durationSeconds: hours12)
        case .clients:
            let top = Int(to.rounded(.up)), start = Int(from)
            return SteeredLoad(clients: top, connectedAtStart: start, ratePerSecond: perClientRate * Double(top), durationSeconds: hours12)
        }
    }

    /// One fresh step's load, as its workers must run it.
    public func stepLoad(_ s: Scenario) -> SteeredLoad {
        SteeredLoad(clients: s.clients, connectedAtStart: s.clients, ratePerSecond: s.message.ratePerSecond, durationSeconds: s.durationSeconds)
    }

    /// The scenario (or population) whose load is varied.
    public var variedScenario: Scenario { scenario.populations.first { $0.name == population }?.scenario ?? scenario }
}

/// What a capacity run produced.
public struct CapacityOutcome: Sendable {
    public var result: CapacityResult
    /// The capacity folder (nil if it could not be made: `writeError`).
    public var folder: URL?
    public var writeError: String?
    /// 0 found (or the whole range held), 98 the generator was the limit, 99 no load met the
    /// SLOs (or none could be confirmed), 1 the target could not be reached, 130 interrupted.
    public var exitCode: Int32
}

/// Runs the search: one ordinary run per step (its own results folder inside the capacity
/// folder), judged on its measured window, until `CapacitySearch` has a verdict. capacity.json
/// is rewritten after every step, so an interrupted search keeps what it learned.
///
/// Sendable for the held search's interval observer, which runs on the engine's thread: it reads
/// only what never changes once the search runs (the plan, the options, the step observer).
public final class CapacityRunner: @unchecked Sendable {
    let plan: CapacityPlan
    let options: RunOptions
    let progress: ProgressPrinter
    /// Live outputs per step (the metrics endpoint with a `step` label): given the step's folder
    /// name, an observer of that step's intervals. Probes during a cool-down are steps too.
    public var stepObserver: (@Sendable (String) -> @Sendable (IntervalReport) -> Void)? = nil

    /// `options` as for `RunEngine`: its results root is where the capacity folder goes; its
    /// interval observer (live metrics) sees every step's intervals.
    public init(plan: CapacityPlan, options: RunOptions) {
        self.plan = plan
        self.options = options
        progress = ProgressPrinter(style: options.progress)
    }

    public func run() -> CapacityOutcome {
        let startedAt = Date()
        var search = CapacitySearch(from: plan.from, to: plan.to, precision: plan.precision, integral: plan.vary == .clients,
                                    confirmations: plan.confirmations)
        var result = emptyResult(startedAt: startedAt)
        var folder: URL?
        do {
            folder = try ResultsWriter.makeRunFolder(in: options.resultsRoot, baseName: "capacity-" + ResultsWriter.folderName(scenarioName: plan.scenario.name, startedAt: startedAt))
        } catch {
            return CapacityOutcome(result: result, folder: nil, writeError: "\(error)", exitCode: RunExitStatus.runFailed)
        }
        var writeError: String?
        var unreachable: String?
        var interrupted = false
        if plan.holdsConnections {
            (unreachable, writeError) = runHeld(&search, result: &result, folder: folder!, startedAt: startedAt)
            interrupted = options.interrupt.isRaised
        }
        while !plan.holdsConnections, let (load, stage) = search.next {
            let number = result.steps.count + 1
            // A server pushed past its capacity may still be working off the backlog (its queues,
            // its socket buffers): measuring the next step now would charge it with the last one.
            var cooldown: Double?
            if let last = result.steps.last, last.outcome == "fail" || last.outcome == "invalid", plan.cooldownSeconds > 0 {
                cooldown = coolDown(before: number, at: search.coolDownLoad, folder: folder!)
                if options.interrupt.isRaised { interrupted = true; break }
            }
            let loadText = Self.format(load)
            say("step \(number) (\(stage.rawValue)): \(loadText) \(plan.unit) for \(Self.format(plan.warmupSeconds)) s warm-up + \(Self.format(plan.stepSeconds)) s …")
            var (step, fatal) = runStep(number: number, stage: stage, load: load, folder: folder!)
            step.cooldownSeconds = cooldown
            result.steps.append(step)
            if options.interrupt.isRaised { interrupted = true; break }
            // Nothing connected at the very first step: the target is not there, not slow.
            if number == 1, let fatal, step.open == 0 { unreachable = fatal; break }
            search.record(CapacitySearch.Outcome(rawValue: step.outcome) ?? .fail)
            let bracket = "bracket \(search.highestPass.map(Self.format) ?? "–") … \(search.lowestFail.map(Self.format) ?? "?")"
            say("step \(number): \(step.outcome)" + (step.reasons.isEmpty ? "" : " (" + step.reasons.joined(separator: "; ") + ")")
                + "  sent \(Self.format(step.achievedRate))/s" + primaryLatencyText(step) + spreadText(step) + "  \(bracket)")
            conclude(&result, search: search, interrupted: false, unreachable: nil, startedAt: startedAt)
            writeError = write(result, to: folder!) ?? writeError
        }
        conclude(&result, search: search, interrupted: interrupted, unreachable: unreachable, startedAt: startedAt)
        writeError = write(result, to: folder!) ?? writeError
        // The load–latency curve and the steps, for people (after capacity.json, which it reads).
        if let problem = HTMLReport.write(into: folder!) { writeError = writeError ?? problem }
        progress.finish()
        let exit: Int32
        if interrupted { exit = RunExitStatus.interrupted }
        else if unreachable != nil { exit = RunExitStatus.runFailed }
        else {
            switch search.verdict {
            case .found, .aboveRange: exit = RunExitStatus.passed
            case .generatorLimited: exit = RunExitStatus.saturated
            case .belowRange, .unstable, nil: exit = RunExitStatus.thresholdFailed
            }
        }
        return CapacityOutcome(result: result, folder: folder, writeError: writeError, exitCode: exit)
    }

    /// Probes at `load` (the last passing load), 1 s warm-up and 2 s measured, until a probe
    /// meets every check or `cooldownSeconds` have passed. Returns the seconds waited.
    func coolDown(before number: Int, at load: Double, folder: URL) -> Double {
        let start = Date()
        var probe = 0
        while Date().timeIntervalSince(start) < plan.cooldownSeconds, !options.interrupt.isRaised {
            probe += 1
            let (step, _) = runStep(number: number, stage: .retry, load: load, folder: folder, warmupSeconds: 1, stepSeconds: 2,
                                    folderName: String(format: "cooldown-%02d-%d", number, probe))
            if step.outcome == "pass" { break }
        }
        let waited = Date().timeIntervalSince(start)
        say("cool-down before step \(number): \(probe) probe(s) at \(Self.format(load)) \(plan.unit), \(Self.format(waited)) s")
        return ThresholdEvaluator.rounded(waited)
    }

    /// One step: an ordinary run of the step's scenario, judged on its measured window.
    func runStep(number: Int, stage: CapacitySearch.Stage, load: Double, folder: URL, warmupSeconds: Double? = nil, stepSeconds: Double? = nil,
                 folderName: String? = nil) -> (CapacityResult.Step, fatal: String?) {
        var scenario = plan.stepScenario(load: load)
        let warmup = warmupSeconds ?? plan.warmupSeconds
        scenario.durationSeconds = warmup + (stepSeconds ?? plan.stepSeconds)
        let window = Mutex(StepWindow(warmupSeconds: warmup, endSeconds: scenario.durationSeconds))
        var stepOptions = options
        stepOptions.resultsRoot = folder
        stepOptions.resultsFolderName = folderName ?? String(format: "step-%02d-%@-%@", number, stage.rawValue, Self.format(load).replacingOccurrences(of: ",", with: ""))
        stepOptions.progress = .silent
        let live = stepObserver?(stepOptions.resultsFolderName ?? String(number)) ?? options.intervalObserver
        let judged = plan.population
        stepOptions.intervalObserver = { report in
            // With populations, the SLOs judge the varied one.
            if report.population == judged { window.withLock { $0.add(report) } }
            live?(report)
        }
        var fatal: String?
        var stepFolder: String?
        do {
            if scenario.populations.isEmpty {
                // The step's load reaches worker processes with their plan.
                stepOptions.steering = RunSteering(load: plan.stepLoad(scenario))
                let outcome = try RunEngine(scenario: scenario, options: stepOptions).run()
                fatal = outcome.record.fatalError
                stepFolder = outcome.resultsFolder.map { $0.lastPathComponent }
            } else {
                let outcome = try PopulationRun(scenario: scenario, options: stepOptions).run()
                fatal = outcome.fatalError ?? outcome.populations.first { $0.name == judged }?.outcome.record.fatalError
                stepFolder = outcome.resultsFolder.map { $0.lastPathComponent }
            }
        } catch {
            fatal = "the step could not start: \(error)"
        }
        let judge = StepJudge(slos: plan.slos, limits: plan.limits)
        var step = judge.judge(window.withLock { $0 }, number: number, stage: stage, load: load,
                               intendedRate: scenario.populations.first { $0.name == judged }?.scenario.message.ratePerSecond ?? scenario.message.ratePerSecond,
                               runFailure: fatal)
        step.resultsFolder = stepFolder
        return (step, fatal)
    }

    func primaryLatencyText(_ step: CapacityResult.Step) -> String {
        guard let first = step.slos.first(where: { $0.unit == "us" }) else { return "" }
        return "  \(first.metric) \(first.condition.components(separatedBy: " ").first ?? "") \(first.observedText)"
    }

    func say(_ text: String) {
        guard options.progress != .silent else { return }
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Writes capacity.json (atomically); the error's text if it could not.
    func write(_ result: CapacityResult, to folder: URL) -> String? {
        do {
            try result.write(into: folder)
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// "20,000", "1,500.5", "0.25".
    public static func format(_ v: Double) -> String {
        let f = NumberFormatter()
        f.numberStyle = .decimal
        f.maximumFractionDigits = v >= 100 ? 0 : 2
        f.locale = Locale(identifier: "en_US")
        return f.string(from: NSNumber(value: v)) ?? "\(v)"
    }
}
