import Yams

extension Keys {
    static let rateStage = ["duration", "rate"]
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

    /// The rules between `message.stages` and the rest of the scenario: an arrival rate needs the
    /// open model, and the stages must fit in the message phase (`duration`).
    func checkRateStages(_ message: MessageSpec, fields: Fields, duration: Double, loadModel: LoadModel, workload: Workload) throws(ScenarioError) {
        guard !message.stages.isEmpty, let node = fields["message"]?.mapping?["stages"] else { return }
        if loadModel == .closed {
            throw error(at: node, field: "message.stages",
                        "the closed model has no arrival rate (each client sends a think time after its reply): remove message.stages or set 'load_model: open'")
        }
        if workload == .rest {
            throw error(at: node, field: "message.stages",
                        "REST clients poll on rest.interval and send no messages: remove message.stages")
        }
        let total = message.stages.reduce(0) { $0 + $1.durationSeconds }
        // A small tolerance: stages written as 0.1s steps add up with rounding error.
        if total > duration * (1 + 1e-9) {
            throw error(at: node, field: "message.stages",
                        "the stages take \(format(total))s, longer than the message phase (duration: \(format(duration))s\(origin(of: "duration"))): "
                            + "shorten the stages or raise duration")
        }
    }
}
