import StampedeMetrics
import StampedeReport

/// A capacity search on one run whose clients stay connected: the steps follow each other in
/// the run's message phase, and only what a step changes changes (clients join or leave, or the
/// rate moves). Driven by the run's interval reports, once a second; it answers with what the
/// engine is to do next (`RunSteering.Command`) and the steps it has judged.
///
/// A step settles first: its clients connected (a search over clients; given up on after the
/// time its joins need at the connect rate, plus 10 s, when the server will not take them: the
/// step then fails on the clients it lacks), then `warmupSeconds`, then `stepSeconds` of whole
/// intervals measured. After a failed step the sends pause (rate 0, the clients stay) until an
/// interval passes with nothing more arriving: the server has worked off the backlog the step
/// left (its queues, its socket buffers), which would otherwise be charged to the next step.
/// Then the load is set to `coolDownLoad` and 3-second probes (1 s settle, 2 s measured) run
/// until one passes; all of it within `cooldownSeconds`.
struct HeldSteps {
    /// What a step or probe is doing now.
    enum Stage {
        /// Waiting for the load to be in place, until `deadlineSeconds` (message-phase seconds).
        case settling(deadlineSeconds: Double)
        case measuring(StepWindow)
    }

    /// One step or cool-down probe under way.
    struct Current {
        var number: Int
        var stage: CapacitySearch.Stage
        var load: Double
        var isProbe: Bool
        var progress: Stage
        /// What happened to connections from the step's command to its end.
        var tally = ConnectionTally()
        /// Errors by class while settling (a refused connection is counted there), for the
        /// reason of a step that lacks clients.
        var settleErrors: [UInt64] = []
    }

    /// Connections opened and closed during a step (settling included): a held search shows
    /// that no client reconnected between steps.
    struct ConnectionTally: Sendable, Equatable {
        var joined: UInt64 = 0
        var left: UInt64 = 0
        var reconnected: UInt64 = 0

        mutating func add(_ m: MetricsShard) {
            joined += m[.rampedUp]
            left += m[.rampedDown]
            reconnected += m[.reconnected]
        }
    }

    /// What one report led to.
    struct Outcome {
        var commands: [RunSteering.Command] = []
        /// A step judged (not a probe), with its connection tally.
        var judged: (step: CapacityResult.Step, tally: ConnectionTally)?
        /// A cool-down that ended: the probes run and the seconds waited.
        var cooledDown: (probes: Int, seconds: Double)?
        var finished = false
    }

    let plan: CapacityPlan
    let connectRate: Double
    var search: CapacitySearch
    var current: Current?
    /// A cool-down under way: when it began (message-phase seconds), the probes run, and whether
    /// the sends are still paused (rate 0) for the backlog to drain.
    var coolDown: (sinceSeconds: Double, probes: Int, paused: Bool)?
    var steps = 0
    var lastOutcome: CapacitySearch.Outcome?
    /// The load in place now (clients connected, or the rate).
    var loadNow: Double

    init(plan: CapacityPlan, connectRate: Double, search: CapacitySearch) {
        self.plan = plan
        self.connectRate = max(1, connectRate)
        self.search = search
        loadNow = plan.from
    }

    /// The messages per second the schedule intends at `load`.
    func intendedRate(at load: Double) -> Double {
        switch plan.vary {
        case .messageRate: load
        case .clients: plan.perClientRate * load.rounded(.down)
        }
    }

    func command(for load: Double) -> RunSteering.Command {
        plan.vary == .clients ? .connectedClients(Int(load)) : .rate(load)
    }

    /// The rate the schedule runs at for `load` (a search over clients keeps the run's rate:
    /// the clients connected make the load).
    func rate(for load: Double) -> Double {
        plan.vary == .clients ? plan.heldLoad.ratePerSecond : load
    }

    /// Starts the next step (or probe) at `load` from message-phase second `t`.
    mutating func begin(number: Int, stage: CapacitySearch.Stage, load: Double, probe: Bool, at t: Double) -> RunSteering.Command {
        // Joins at the connect rate, then 10 s more for the stragglers.
        let joining = plan.vary == .clients ? max(0, load - loadNow) / connectRate : 0
        current = Current(number: number, stage: stage, load: load, isProbe: probe,
                          progress: .settling(deadlineSeconds: t + joining + 10))
        loadNow = load
        return command(for: load)
    }

    /// Takes one interval report of the message phase (the first one starts the first step).
    mutating func observe(_ r: IntervalReport) -> Outcome {
        var out = Outcome()
        guard r.phase == "messages", let phase = r.messagePhaseSeconds else { return out }
        if steps == 0 {
            out.commands = [nextStep(at: phase.upperBound)]
            return out
        }
        if let cool = coolDown, cool.paused {
            let t = phase.upperBound
            let arriving = r.interval[.messagesDelivered] &+ r.interval[.fanoutReceived]
            guard (arriving == 0 && t - cool.sinceSeconds >= 1) || t - cool.sinceSeconds >= plan.cooldownSeconds else { return out }
            coolDown?.paused = false
            out.commands = [.rate(rate(for: coolDownLoad)), begin(number: steps + 1, stage: .retry, load: coolDownLoad, probe: true, at: t)]
            return out
        }
        guard var cur = current else { return out }
        cur.tally.add(r.interval)
        let t = phase.upperBound
        switch cur.progress {
        case .settling(let deadline):
            cur.settleErrors = StepWindow.summed(cur.settleErrors, r.interval.errors)
            let connected = plan.vary != .clients || r.open >= Int(cur.load)
            if connected || t >= deadline {
                let warmup = cur.isProbe ? 1 : plan.warmupSeconds
                let length = cur.isProbe ? 2 : plan.stepSeconds
                var window = StepWindow(warmupSeconds: t + warmup, endSeconds: t + warmup + length)
                window.errorsUpToEnd = cur.settleErrors
                cur.progress = .measuring(window)
            }
            current = cur
        case .measuring(var window):
            window.add(r)
            guard t >= window.endSeconds - 0.001 else {
                cur.progress = .measuring(window)
                current = cur
                return out
            }
            if plan.vary == .clients { window.clients = Int(cur.load) }
            let judge = StepJudge(slos: plan.slos, limits: plan.limits)
            let step = judge.judge(window, number: cur.number, stage: cur.stage, load: cur.load, intendedRate: intendedRate(at: cur.load), runFailure: nil)
            current = nil
            let outcome = CapacitySearch.Outcome(rawValue: step.outcome) ?? .fail
            if cur.isProbe {
                out.commands += afterProbe(passed: outcome == .pass, at: t, into: &out)
            } else {
                out.judged = (step, cur.tally)
                search.record(outcome)
                lastOutcome = outcome
                out.commands += next(at: t, into: &out)
            }
        }
        return out
    }

    /// After a step: a cool-down when it failed, else the search's next step (or the end).
    mutating func next(at t: Double, into out: inout Outcome) -> [RunSteering.Command] {
        guard search.next != nil else { out.finished = true; return [.endMessages] }
        if lastOutcome == .fail || lastOutcome == .invalid, plan.cooldownSeconds > 0 {
            coolDown = (t, 1, true)
            // Clients a search over clients has too many leave during the pause (they are idle then).
            return [.rate(0)] + (plan.vary == .clients && coolDownLoad < loadNow ? [command(for: coolDownLoad)] : [])
        }
        return [nextStep(at: t)]
    }

    /// Where a cool-down waits: the highest load that passed so far (the search's answer is
    /// near it, so clients need not leave and come back), or `from`.
    var coolDownLoad: Double { search.coolDownLoad }

    mutating func afterProbe(passed: Bool, at t: Double, into out: inout Outcome) -> [RunSteering.Command] {
        guard var cool = coolDown else { return [nextStep(at: t)] }
        if passed || t - cool.sinceSeconds >= plan.cooldownSeconds {
            out.cooledDown = (cool.probes, t - cool.sinceSeconds)
            coolDown = nil
            return [nextStep(at: t)]
        }
        cool.probes += 1
        coolDown = cool
        return [begin(number: steps + 1, stage: .retry, load: coolDownLoad, probe: true, at: t)]
    }

    mutating func nextStep(at t: Double) -> RunSteering.Command {
        guard let (load, stage) = search.next else { return .endMessages }
        steps += 1
        return begin(number: steps, stage: stage, load: load, probe: false, at: t)
    }
}
