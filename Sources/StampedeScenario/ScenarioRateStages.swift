import Yams

extension Keys {
    static let rateStage = ["duration", "rate"]
    static let rateSpike = ["rate", "at", "ramp", "hold"]
    /// The `message` keys that give the rate over time; a scenario may write one of them.
    static let rateProfiles = ["stages", "spike", "step"]
    static let rateStep = ["rate", "steps", "every", "ramp"]
}

extension Limits {
    /// Most steps of `message.step` (each is two stages).
    static let rateSteps = 1...1_000
}

extension Reader {
    /// `message.rate`'s value rules, shared by `message.rate` and each stage's `rate`: 0 or a rate
    /// the schedule's nanosecond arithmetic can hold.
    func messageRate(_ node: Node, field: String) throws(ScenarioError) -> Double {
        let rate = try number(node, field: field, atLeast: 0, maximum: Limits.messageRate)
        guard rate == 0 || rate >= Limits.slowestRate else {
            throw error(at: node, field: field,
                        "expected 0 (no messages) or a rate from \(format(Limits.slowestRate)) to \(format(Limits.messageRate)) per second, got \(describe(node))")
        }
        return rate
    }

    /// `message.stages`: a sequence of `{duration, rate}` mappings.
    func rateStages(_ node: Node) throws(ScenarioError) -> [RateStage] {
        guard case .sequence(let sequence) = node, !sequence.isEmpty else {
            throw error(at: node, field: "message.stages",
                        "expected a list of stages like '- {duration: 10s, rate: 100}', got \(describe(node))")
        }
        var stages: [RateStage] = []
        for (i, item) in sequence.enumerated() {
            let path = "message.stages[\(i)]"
            guard case .mapping(let mapping) = item else {
                throw error(at: item, field: path, "expected a mapping with 'duration' and 'rate', got \(describe(item))")
            }
            let fields = try Fields(mapping, path: path, known: Keys.rateStage, reader: self)
            guard let durationNode = fields["duration"] else {
                throw error(at: item, field: "\(path).duration", "missing required field 'duration' (how long the stage takes, e.g. 10s)")
            }
            guard let rateNode = fields["rate"] else {
                throw error(at: item, field: "\(path).rate", "missing required field 'rate' (messages per second at the stage's end)")
            }
            let seconds = try duration(durationNode, field: "\(path).duration", allowZero: false)
            let rate = try messageRate(rateNode, field: "\(path).rate")
            stages.append(RateStage(durationSeconds: seconds, ratePerSecond: rate))
        }
        return stages
    }

    /// `message.spike: {rate, at, ramp, hold}`, a short form for stages: the base rate
    /// (`message.rate`) until `at`, a ramp of `ramp` (default 1 s) up to `rate`, `hold` at it,
    /// and the same ramp back down to the base rate, which then holds.
    func rateSpike(_ node: Node, base: Double) throws(ScenarioError) -> [RateStage] {
        guard case .mapping(let mapping) = node else {
            throw error(at: node, field: "message.spike", "expected a mapping like '{rate: 2000, at: 60s, hold: 30s}', got \(describe(node))")
        }
        let fields = try Fields(mapping, path: "message.spike", known: Keys.rateSpike, reader: self)
        guard let peakNode = fields["rate"] else {
            throw error(at: node, field: "message.spike.rate", "missing required field 'rate' (messages per second at the spike's top)")
        }
        guard let holdNode = fields["hold"] else {
            throw error(at: node, field: "message.spike.hold", "missing required field 'hold' (how long the spike stays at its top, e.g. 30s)")
        }
        let peak = try messageRate(peakNode, field: "message.spike.rate")
        let at = try fields["at"].map { n throws(ScenarioError) in try duration(n, field: "message.spike.at", allowZero: true) } ?? 0
        let ramp = try fields["ramp"].map { n throws(ScenarioError) in try duration(n, field: "message.spike.ramp", allowZero: false) } ?? 1
        let hold = try duration(holdNode, field: "message.spike.hold", allowZero: false)
        var stages: [RateStage] = []
        if at > 0 { stages.append(RateStage(durationSeconds: at, ratePerSecond: base)) }
        stages += [RateStage(durationSeconds: ramp, ratePerSecond: peak), RateStage(durationSeconds: hold, ratePerSecond: peak),
                   RateStage(durationSeconds: ramp, ratePerSecond: base)]
        return stages
    }

    /// `message.step: {rate, steps, every, ramp}`, a short form for stages: a staircase from the
    /// base rate (`message.rate`) to `rate` in `steps` equal steps, each reached over `ramp`
    /// (default 1 s) and then held for `every`; the last step holds to the end.
    func rateStep(_ node: Node, base: Double) throws(ScenarioError) -> [RateStage] {
        guard case .mapping(let mapping) = node else {
            throw error(at: node, field: "message.step", "expected a mapping like '{rate: 1000, steps: 5, every: 1m}', got \(describe(node))")
        }
        let fields = try Fields(mapping, path: "message.step", known: Keys.rateStep, reader: self)
        for key in ["rate", "steps", "every"] where fields[key] == nil {
            throw error(at: node, field: "message.step.\(key)", "missing required field '\(key)'")
        }
        let top = try messageRate(fields["rate"]!, field: "message.step.rate")
        let steps = try integer(fields["steps"]!, field: "message.step.steps", in: Limits.rateSteps)
        let every = try duration(fields["every"]!, field: "message.step.every", allowZero: false)
        let ramp = try fields["ramp"].map { n throws(ScenarioError) in try duration(n, field: "message.step.ramp", allowZero: false) } ?? 1
        var stages: [RateStage] = []
        for i in 1...steps {
            let rate = base + (top - base) * Double(i) / Double(steps)
            stages += [RateStage(durationSeconds: ramp, ratePerSecond: rate), RateStage(durationSeconds: every, ratePerSecond: rate)]
        }
        return stages
    }

    /// The rules between `message.stages` and the rest of the scenario: an arrival rate needs the
    /// open model, and the stages must fit in the message phase (`duration`).
    func checkRateStages(_ message: MessageSpec, fields: Fields, duration: Double, loadModel: LoadModel, workload: Workload) throws(ScenarioError) {
        let written = fields["message"]?.mapping
        guard !message.stages.isEmpty, let key = Keys.rateProfiles.first(where: { written?[$0] != nil }), let node = written?[key] else { return }
        let field = "message.\(key)"
        if loadModel == .closed {
            throw error(at: node, field: field,
                        "the closed model has no arrival rate (each client sends a think time after its reply): remove \(field) or set 'load_model: open'")
        }
        if workload == .rest {
            throw error(at: node, field: field,
                        "REST clients poll on rest.interval and send no messages: remove \(field)")
        }
        let total = message.stages.reduce(0) { $0 + $1.durationSeconds }
        // A small tolerance: stages written as 0.1s steps add up with rounding error.
        if total > duration * (1 + 1e-9) {
            throw error(at: node, field: field,
                        "the stages take \(format(total))s, longer than the message phase (duration: \(format(duration))s\(origin(of: "duration"))): "
                            + "shorten the stages or raise duration")
        }
    }
}
