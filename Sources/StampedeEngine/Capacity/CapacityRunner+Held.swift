import Foundation
import StampedeFleet
import StampedeReport
import StampedeScenario
import Synchronization

// The search on held connections: one run (its results folder `run/` inside the capacity
// folder) whose message phase holds every step; `HeldSteps` moves the load between them.
extension CapacityRunner {
    /// What the run's interval observer shares with the runner.
    struct HeldShared {
        var steps: HeldSteps
        var result: CapacityResult
        var writeError: String?
        /// The cool-down before the next step, seconds (given to that step's record).
        var cooledDown: Double?
    }

    /// Runs the whole search in one run; returns why the target could not be reached (nothing
    /// connected at the start), and the last error writing capacity.json.
    func runHeld(_ search: inout CapacitySearch, result: inout CapacityResult, folder: URL, startedAt: Date) -> (unreachable: String?, writeError: String?) {
        let load = plan.heldLoad
        let steering = RunSteering(load: load)
        var scenario = plan.scenario.steered(by: load)
        scenario.drainSeconds = min(scenario.drainSeconds, 2)
        let shared = Mutex(HeldShared(steps: HeldSteps(plan: plan, connectRate: scenario.connectRate, search: search), result: result))
        var runOptions = options
        runOptions.resultsRoot = folder
        runOptions.resultsFolderName = "run"
        runOptions.progress = .silent
        runOptions.steering = steering
        let live = stepObserver?("held") ?? options.intervalObserver
        runOptions.intervalObserver = { [self] report in
            live?(report)
            let commands = shared.withLock { s in observeHeld(report, &s, folder: folder, startedAt: startedAt) }
            for c in commands { steering.send(c) }
        }
        say("held connections: \(Self.format(Double(load.connectedAtStart))) of up to \(Self.format(Double(load.clients))) clients connect once; "
            + "steps change only the \(plan.vary == .clients ? "clients connected" : "rate")")
        var fatal: String?
        do {
            let outcome = try RunEngine(scenario: scenario, options: runOptions).run()
            fatal = outcome.record.fatalError
            if let e = outcome.writeError { shared.withLock { $0.writeError = $0.writeError ?? e } }
            if let f = outcome.resultsFolder { say("run: \(f.lastPathComponent): \(outcome.record.totals[.connected]) connections opened, "
                                                             + "\(outcome.record.totals[.reconnected]) reconnected, \(outcome.record.totals[.rampedDown]) closed by the search") }
        } catch {
            fatal = "the search's run could not start: \(error)"
        }
        let s = shared.withLock { $0 }
        search = s.steps.search
        result = s.result
        for i in result.steps.indices { result.steps[i].resultsFolder = "run" }
        return (s.result.steps.isEmpty ? fatal : nil, s.writeError)
    }

    /// One interval of the held run: the search's next move, and each judged step recorded,
    /// printed and written at once.
    func observeHeld(_ report: IntervalReport, _ s: inout HeldShared, folder: URL, startedAt: Date) -> [RunSteering.Command] {
        let out = s.steps.observe(report)
        if let cooled = out.cooledDown {
            s.cooledDown = ThresholdEvaluator.rounded(cooled.seconds)
            say("cool-down: \(cooled.probes) probe(s) at \(Self.format(s.steps.coolDownLoad)) \(plan.unit), \(Self.format(cooled.seconds)) s")
        }
        if let (judged, tally) = out.judged {
            var step = judged
            step.cooldownSeconds = s.cooledDown
            s.cooledDown = nil
            s.result.steps.append(step)
            let search = s.steps.search
            let bracket = "bracket \(search.highestPass.map(Self.format) ?? "–") … \(search.lowestFail.map(Self.format) ?? "?")"
            let moved = plan.vary == .clients ? "  joined \(tally.joined), left \(tally.left), reconnected \(tally.reconnected)" : ""
            say("step \(step.number) (\(step.stage)) at \(Self.format(step.load)) \(plan.unit): \(step.outcome)"
                + (step.reasons.isEmpty ? "" : " (" + step.reasons.joined(separator: "; ") + ")")
                + "  sent \(Self.format(step.achievedRate))/s" + primaryLatencyText(step) + spreadText(step) + moved + "  \(bracket)")
            conclude(&s.result, search: search, interrupted: false, unreachable: nil, startedAt: startedAt)
            s.writeError = write(s.result, to: folder) ?? s.writeError
        }
        // A step just begun (not a probe) is announced once.
        if !out.commands.isEmpty, let cur = s.steps.current, !cur.isProbe, case .settling = cur.progress {
            say("step \(cur.number) (\(cur.stage.rawValue)): \(Self.format(cur.load)) \(plan.unit), \(Self.format(plan.warmupSeconds)) s warm-up + \(Self.format(plan.stepSeconds)) s …")
        }
        return out.commands
    }
}
