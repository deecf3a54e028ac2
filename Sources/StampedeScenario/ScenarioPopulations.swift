import Yams

/// One of a run's client populations (`populations:`): its own workload, target, clients and load,
/// run side by side with the others against the same run clock, with results of its own.
public struct Population: Sendable, Equatable {
    /// `name:`, unique in the run; the key of its results (`populations/NAME/`) and of its thresholds.
    public var name: String
    /// `start:`: seconds into the run's message phase at which its clients begin to connect (0:
    /// they connect in the run's ramp-up, with every other population that starts at 0).
    public var startSeconds: Double
    /// Everything the population runs, as a scenario of its own: the run's top-level fields with
    /// the population's fields over them. Its `name` is the population's, its `durationSeconds`
    /// the run's less `start`, its `thresholds` those the run gives as `metric{population:NAME}`.
    public var scenario: Scenario

    public init(name: String, startSeconds: Double, scenario: Scenario) {
        self.name = name; self.startSeconds = startSeconds; self.scenario = scenario
    }
}

extension Keys {
    /// Top-level fields that belong to the run, never inherited by a population.
    static let runOnly = ["name", "duration", "drain", "thresholds", "populations"]
    /// Fields of one `populations:` entry: every scenario field a population may set for itself.
    static let population = ["name", "start"] + topLevel.filter { !runOnly.contains($0) }
    /// Top-level fields that make no sense beside `populations:` (each population gives its own).
    static let perPopulationOnly = ["clients", "events"]
}

extension Reader {
    /// A scenario with `populations:`: each entry is read as a whole scenario (the top-level
    /// fields with the entry's over them, so every field of its workload and every check of the
    /// loader applies), and the run is their sum.
    func scenarioWithPopulations(root: Node, fields: Fields) throws(ScenarioError) -> Scenario {
        guard case .mapping(let top) = root, let listNode = fields["populations"] else { preconditionFailure("called without populations") }
        for key in Keys.perPopulationOnly {
            if let keyNode = fields.keyNode(key) {
                throw error(at: keyNode, field: key, "with 'populations', each population gives its own \(key): move it into the populations that need it")
            }
        }
        guard case .sequence(let entries) = listNode, !entries.isEmpty else {
            throw error(at: listNode, field: "populations",
                        "expected a list of populations (like '- {name: listeners, workload: chat, clients: 1000}'), got \(describe(listNode))")
        }
        guard let durationNode = fields["duration"] else {
            throw ScenarioError(file: file, line: 1, field: "duration", message: "missing required field 'duration'")
        }
        let duration = try self.duration(durationNode, field: "duration", allowZero: false)
        let runName: String
        if let node = fields["name"] { runName = try scenarioName(node) } else { runName = try defaultName() }
        // What every population inherits: the top-level fields that are not the run's own.
        let inherited = top.filter { !Keys.runOnly.contains($0.key.string ?? "") }.map { ($0.key, $0.value) }

        var populations: [Population] = []
        for (index, entry) in entries.enumerated() {
            let path = "populations[\(index)]"
            guard case .mapping(let own) = entry else {
                throw error(at: entry, field: path, "expected a mapping with at least 'name' and 'clients', got \(describe(entry))")
            }
            let f = try Fields(own, path: path, known: Keys.population, reader: self, misplaced: Keys.populationMisplaced)
            guard let nameNode = f["name"] else {
                throw error(at: entry, field: "\(path).name", "missing required field 'name' (the population's name, used in its results and thresholds)")
            }
            let name = try string(nameNode, field: "\(path).name", expecting: "a name")
            guard isValidName(name) else {
                throw error(at: nameNode, field: "\(path).name",
                            "expected a name of 1 to \(Limits.nameLength) letters, digits, '.', '_' or '-', got \(describe(nameNode))")
            }
            if populations.contains(where: { $0.name == name }) {
                throw error(at: nameNode, field: "\(path).name", "a population named '\(name)' is given twice: population names must differ")
            }
            guard f["clients"] != nil else {
                throw error(at: entry, field: "\(path).clients", "missing required field 'clients' (how many clients the population '\(name)' runs)")
            }
            var start = 0.0
            if let n = f["start"] {
                start = try self.duration(n, field: "\(path).start", allowZero: true)
                guard start < duration else {
                    throw error(at: n, field: "\(path).start",
                                "start (\(format(start))s) is not before the end of the run (duration \(format(duration))s\(origin(of: "duration"))): the population would never send")
                }
            }
            // The population's fields over the inherited ones; its own name and start are not scenario fields.
            var merged: [(Node, Node)] = inherited.filter { f.keyNode($0.0.string ?? "") == nil }
            merged += own.filter { $0.key.string != "name" && $0.key.string != "start" }.map { ($0.key, $0.value) }
            merged.append((Node("name"), nameNode))
            merged.append((Node("duration"), durationNode))
            let lines = lineSpan(of: entry)
            var s: Scenario
            do {
                s = try scenario(from: .mapping(Node.Mapping(merged)))
            } catch {
                var e = error
                if lines.contains(e.line) {
                    e.field = e.field.isEmpty ? path : "\(path).\(e.field)"
                } else {
                    // A top-level field that does not suit this population: say which one.
                    e.message += " (for population '\(name)', which takes '\(e.field)' from the top level)"
                }
                throw e
            }
            s.name = name
            s.durationSeconds = duration - start
            let stages = s.message.stages.reduce(0) { $0 + $1.durationSeconds }
            if start > 0, stages > s.durationSeconds * (1 + 1e-9), let n = f["start"] {
                throw error(at: n, field: "\(path).start",
                            "the population's message stages take \(format(stages))s but it starts \(format(start))s into a \(format(duration))s run: "
                                + "shorten the stages, start it earlier or raise duration")
            }
            populations.append(Population(name: name, startSeconds: start, scenario: s))
        }

        // The run as a whole: the first population's settings, with the run's name, clients and thresholds.
        var run = populations[0].scenario
        run.name = runName
        run.durationSeconds = duration
        run.clients = populations.reduce(0) { $0 + $1.scenario.clients }
        run.events = []
        run.thresholds = []
        run.populations = populations
        if let n = fields["drain"] {
            let drain = try self.duration(n, field: "drain", allowZero: true)
            run.drainSeconds = drain
            for i in run.populations.indices { run.populations[i].scenario.drainSeconds = drain }
        }
        if let node = fields["thresholds"] {
            var names = ThresholdNames()
            for p in populations {
                names.latencies.formUnion(p.scenario.declaredMetrics.latencies)
                names.counters.formUnion(p.scenario.declaredMetrics.counters)
            }
            let specs = try thresholdList(node, messageSeconds: duration, names: names,
                                          populations: Dictionary(uniqueKeysWithValues: populations.map { ($0.name, $0.scenario.declaredMetrics) }))
            run.thresholds = specs.filter { $0.population == nil }
            for i in run.populations.indices {
                run.populations[i].scenario.thresholds = specs.filter { $0.population == run.populations[i].name }
            }
        }
        return run
    }

    /// The first and last lines of `node` and everything under it.
    private func lineSpan(of node: Node) -> ClosedRange<Int> {
        var low = node.mark?.line ?? 0, high = low
        func visit(_ n: Node) {
            if let line = n.mark?.line { low = min(low, line); high = max(high, line) }
            switch n {
            case .mapping(let m): for (k, v) in m { visit(k); visit(v) }
            case .sequence(let s): for item in s { visit(item) }
            default: break
            }
        }
        visit(node)
        return low...high
    }
}

extension Keys {
    static let populationMisplaced = [
        "duration": "; the run's duration is the same for every population: set it at the top level (use 'start' to begin a population later)",
        "drain": "; drain applies to the whole run: set it at the top level",
        "thresholds": "; give a population's thresholds at the top level, as 'metric{population:NAME}'",
        "populations": "; populations do not nest",
    ]
}
