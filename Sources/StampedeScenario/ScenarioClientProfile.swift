import Yams

extension Keys {
    static let clientProfile = ["start", "stages"]
    static let clientStage = ["duration", "target"]
}

extension Reader {
    /// `clients: {start: 0, stages: [{duration: 1m, target: 5000}, …]}`; nil for a plain count.
    func clientProfile(_ node: Node) throws(ScenarioError) -> ClientProfile? {
        guard case .mapping(let mapping) = node else { return nil }
        let f = try Fields(mapping, path: "clients", known: Keys.clientProfile, reader: self)
        var start = 0
        if let n = f["start"] { start = try integer(n, field: "clients.start", in: 0...Limits.clients.upperBound) }
        guard let list = f["stages"], case .sequence(let items) = list, !items.isEmpty else {
            throw error(at: f["stages"] ?? node, field: "clients.stages",
                        "expected a list of stages like [{duration: 1m, target: 5000}] (connected clients over time), got \(f["stages"].map(describe) ?? "nothing")")
        }
        var stages: [ClientStage] = []
        for (i, item) in items.enumerated() {
            let path = "clients.stages[\(i)]"
            guard case .mapping(let m) = item else {
                throw error(at: item, field: path, "expected {duration: 1m, target: 5000}, got \(describe(item))")
            }
            let s = try Fields(m, path: path, known: Keys.clientStage, reader: self)
            guard let d = s["duration"], let t = s["target"] else {
                throw error(at: item, field: path, "a stage needs both 'duration' and 'target' (the clients connected at its end)")
            }
            stages.append(ClientStage(durationSeconds: try duration(d, field: "\(path).duration", allowZero: false),
                                      target: try integer(t, field: "\(path).target", in: 0...Limits.clients.upperBound)))
        }
        let profile = ClientProfile(start: start, stages: stages)
        guard profile.peak >= 1 else {
            throw error(at: list, field: "clients.stages", "every stage's target (and start) is 0: no client would ever connect")
        }
        return profile
    }

    /// What the engine can do with a client profile: it must fit in the run, and its workload
    /// must be able to let clients leave and join (the WebSocket workloads, so far).
    func checkClientProfile(_ profile: ClientProfile?, node: Node, duration: Double, workload: Workload) throws(ScenarioError) {
        guard let profile, case .mapping(let m) = node else { return }
        let stagesNode = m["stages"] ?? node
        guard workload != .rest else {
            throw error(at: stagesNode, field: "clients.stages",
                        "REST pollers cannot follow a profile of connected clients yet: give 'clients' as a number")
        }
        if profile.totalSeconds > duration * (1 + 1e-9) {
            throw error(at: stagesNode, field: "clients.stages",
                        "the stages take \(format(profile.totalSeconds))s, longer than the message phase (duration: \(format(duration))s\(origin(of: "duration"))): "
                            + "shorten the stages or raise duration")
        }
    }
}
