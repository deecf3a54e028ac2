import CStampedeLinux
import Foundation
import StampedeLoop
import StampedeMetrics
import StampedeReport
import StampedeScenario
import Synchronization

/// What a run of several populations produced: the whole run (the exact merge of the
/// populations, with the run's thresholds) and each population's own run.
public struct PopulationOutcome: Sendable {
    /// The merged summary (summary.json of the run's folder), with `populations` filled in.
    public var summary: RunSummary
    public var populations: [(name: String, outcome: RunOutcome)]
    public var resultsFolder: URL?
    public var writeError: String?
    /// As a run's (`RunOutcome.exitCode`), over every population and the run's thresholds.
    public var exitCode: Int32
    /// Why the run failed, when one population could not run at all.
    public var fatalError: String?
}

/// Runs a scenario's `populations:` side by side in this process: one engine per population on
/// loops of its own, the embedded targets started once and shared by the populations of their
/// workload, one message phase for all (`PopulationClock`). Each population's results are a
/// whole results folder (`populations/NAME/`); the run's folder is their exact merge
/// (`ResultsMerge`: histograms added, counts summed), judged against the run's thresholds.
public final class PopulationRun {
    let scenario: Scenario
    let options: RunOptions

    public init(scenario: Scenario, options: RunOptions) {
        precondition(!scenario.populations.isEmpty, "a scenario with populations")
        self.scenario = scenario
        self.options = options
    }

    public func run() throws(RunSetupError) -> PopulationOutcome {
        let startedAt = Date()
        let cpuAtStart = cs_process_cpu_ns()
        switch options.fleet {
        case .workers?, .discover?:
            throw RunSetupError("a scenario with populations runs its workers as local processes (--processes N, or chosen by itself); --workers and discovery are not supported with it yet")
        case .processes?, nil: break
        }
        let populations = scenario.populations
        let limit = Int(cs_raise_open_files_limit())
        let fleets = workerFleets(openFilesLimit: limit)
        let (targetsInChildren, problem) = descriptorPlan(openFilesLimit: limit, fleets: fleets)
        if let problem { throw RunSetupError(problem) }

        // The embedded targets, one per workload (and TLS or not), before any client.
        var holders: [RunEngine] = []
        defer { for h in holders { h.shutdown(interrupted: options.interrupt.isRaised) } }
        var shared: [String: SharedTarget] = [:]
        for p in populations where p.scenario.target == .embedded {
            let key = Self.targetKey(p.scenario)
            guard shared[key] == nil else { continue }
            var holderOptions = options
            holderOptions.progress = .silent
            let holder = RunEngine(scenario: targetScenario(key: key), options: holderOptions)
            holders.append(holder)
            if targetsInChildren {
                holder.targetInChildProcess = true
                holder.targetProcesses = RunPlan.serverProcesses(connections: serverEnds(key: key), openFilesLimit: limit)
            }
            let endpoint = try holder.startTarget()
            guard let address = endpoint.firstAddress else { throw RunSetupError("the embedded \(p.scenario.workload.rawValue) target has no address") }
            shared[key] = SharedTarget(address: address, server: holder.embeddedServer, serverLoop: holder.serverLoop,
                                       childAdmin: holder.childAdmin, certificatePEM: holder.embeddedCertificatePEM)
        }

        let firstWave = populations.filter { $0.startSeconds == 0 }.count
        let clock = PopulationClock(firstWave: firstWave, populations: populations.count, durationNs: nanoseconds(scenario.durationSeconds))
        let ledger = FanoutLedger(populations: populations.map(\.name), varying: populations.map { $0.scenario.clientProfile != nil })
        let printer = Mutex(ProgressPrinter(style: options.progress == .silent ? .silent : .lines))
        let outcomes = Mutex<[Int: Result<RunOutcome, RunSetupError>]>([:])
        let done = DispatchGroup()
        for (index, p) in populations.enumerated() {
            var o = options
            // The loops shared out by clients: a population of 10 publishers beside 20,000
            // listeners needs one loop, not one per core.
            let share = Double(p.scenario.clients) / Double(max(1, scenario.clients))
            o.loops = max(1, min(options.loops, Int((Double(options.loops) * share).rounded(.up))))
            o.progress = .silent
            // On worker processes of its own when this process's descriptors do not hold every client.
            o.fleet = fleets[index]
            o.scenarioSource = fleets[index] == nil ? nil : options.scenarioSource
            o.population = PopulationRole(name: p.name, clock: clock, startsLater: p.startSeconds > 0,
                                          sharedTarget: p.scenario.target == .embedded ? shared[Self.targetKey(p.scenario)] : nil)
            let name = p.name, clients = p.scenario.clients, earlier = options.intervalObserver
            o.intervalObserver = { report in
                earlier?(report)
                ledger.record(population: index, sent: report.interval[.messagesSent], open: report.open, atNs: EventLoop.now())
                let rtt = report.interval.histograms[LatencyMetric.roundTrip.rawValue]
                let fan = report.interval.histograms[LatencyMetric.fanout.rawValue]
                let line = ProgressLine(elapsed: report.elapsedSeconds, phase: report.phase, open: report.open, clients: clients,
                                        sentPerSecond: Double(report.interval[.messagesSent]),
                                        receivedPerSecond: Double(report.interval[.messagesDelivered] + report.interval[.fanoutReceived]),
                                        p50Micros: rtt.totalCount > 0 ? rtt.latencyValue(atPercentile: 50) : 0,
                                        p99Micros: rtt.totalCount > 0 ? rtt.latencyValue(atPercentile: 99) : 0,
                                        fanoutP99Micros: fan.totalCount > 0 ? fan.latencyValue(atPercentile: 99) : 0,
                                        errors: report.totals.errors.reduce(0, +))
                printer.withLock { $0.show(line, prefix: name) }
            }
            var own = p.scenario
            own.clientIndexBase = populations[..<index].reduce(0) { $0 + $1.scenario.clients }
            let engine = HandedOver(RunEngine(scenario: own, options: o))
            let start = p.startSeconds, interrupt = options.interrupt
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                // A later population begins its ramp-up `start` into the message phase.
                if start > 0 {
                    while !interrupt.isRaised {
                        if let t0 = clock.messageStartNs, EventLoop.now() >= t0 + nanoseconds(start) { break }
                        if let end = clock.messageEndNs, EventLoop.now() >= end { break }
                        Thread.sleep(forTimeInterval: 0.01)
                    }
                }
                let result: Result<RunOutcome, RunSetupError>
                do throws(RunSetupError) { result = .success(try engine.value.run()) } catch {
                    // It never reached the clock: the others must not wait for it.
                    if start == 0 { clock.giveUp() }
                    clock.drained()
                    result = .failure(error)
                }
                outcomes.withLock { $0[index] = result }
            }
            thread.name = "stampede-population-\(index)"
            thread.start()
        }
        done.wait()

        // Each population's results, with the fan-out it was due from every population it shares a target with.
        var ran: [(name: String, outcome: RunOutcome)] = []
        var setupErrors: [String] = []
        let results = outcomes.withLock { $0 }
        let folder: URL
        do { folder = try ResultsWriter.makeRunFolder(in: options.resultsRoot, baseName: options.resultsFolderName ?? ResultsWriter.folderName(scenarioName: scenario.name, startedAt: startedAt)) } catch {
            for case .success(let o) in results.values { o.record.spooledIntervals?.discard() }
            throw RunSetupError("cannot create the results folder in \(options.resultsRoot.path): \(error)")
        }
        let expected = ledger.expectedFanout(groups: fanoutGroups())
        let populationsFolder = folder.appendingPathComponent("populations")
        for (index, p) in populations.enumerated() {
            switch results[index] {
            case .success(var outcome)?:
                if let due = expected[index] { outcome.record.totals.counters[Counter.fanoutExpected.rawValue] = due }
                outcome.summary = ResultsWriter.summary(of: outcome.record)
                do { outcome.resultsFolder = try ResultsWriter.write(outcome.record, resultsRoot: populationsFolder, folderName: p.name) } catch {
                    outcome.writeError = "\(error)"
                }
                ran.append((p.name, outcome))
            case .failure(let e)?: setupErrors.append("population \(p.name): \(e.description)")
            case nil: setupErrors.append("population \(p.name): did not run")
            }
        }
        if !setupErrors.isEmpty && ran.isEmpty { throw RunSetupError(setupErrors.joined(separator: "; ")) }

        // The run: the exact merge of the populations' folders, judged against the run's thresholds.
        var outcome = PopulationOutcome(summary: ran[0].outcome.summary, populations: ran, resultsFolder: nil, writeError: nil, exitCode: 0,
                                        fatalError: setupErrors.isEmpty ? nil : setupErrors.joined(separator: "; "))
        let written = ran.compactMap(\.outcome.resultsFolder)
        do {
            var merged = try ResultsMerge.combine(written, output: folder)
            merged.summary.scenario.name = scenario.name
            // One process ran them all: each population's process-wide figures are the same
            // process's, so the run's are the process's own (and its populations' workers'),
            // not their sum as a merge of separate processes would have it. The client loops
            // were each population's own.
            let each = ran.map(\.outcome.summary.generator)
            merged.summary.generator.processCPUSeconds = ThresholdEvaluator.rounded(Double(cs_process_cpu_ns() - cpuAtStart) / 1e9
                                                                                    + ran.reduce(0) { $0 + $1.outcome.workerCPUSeconds })
            merged.summary.generator.peakCPUPercent = each.compactMap(\.peakCPUPercent).max()
            merged.summary.generator.rssBeforeConnectBytes = each.map(\.rssBeforeConnectBytes).max() ?? 0
            merged.summary.generator.rssConnectedBytes = each.map(\.rssConnectedBytes).max() ?? 0
            merged.summary.generator.rssPeakBytes = each.map(\.rssPeakBytes).max() ?? 0
            merged.summary.environment.loops = ran.reduce(0) { $0 + $1.outcome.summary.environment.loops }
            var workloads: [String] = []
            for p in populations where !workloads.contains(p.scenario.workload.rawValue) { workloads.append(p.scenario.workload.rawValue) }
            merged.summary.scenario.workload = workloads.joined(separator: "+")
            merged.summary.environment.commandLine = options.commandLine
            var thresholds = MergedThresholds.judge(scenario.thresholds, merged) ?? []
            for (_, o) in ran { thresholds += o.summary.thresholds ?? [] }
            merged.summary.thresholds = thresholds.isEmpty ? nil : thresholds
            merged.summary.populations = ran.map { name, o in
                let p = populations.first { $0.name == name }!
                return RunSummary.PopulationEntry(name: name, workload: p.scenario.workload.rawValue, clients: p.scenario.clients,
                                                  startSeconds: p.startSeconds, folder: "populations/\(name)", summary: o.summary, exitCode: o.exitCode)
            }
            if outcome.fatalError != nil { merged.summary.partial = true; merged.summary.fatalError = outcome.fatalError }
            outcome.summary = try ResultsMerge.write(merged, to: folder, besides: ["populations"])
            outcome.resultsFolder = folder
        } catch {
            outcome.writeError = "\(error)"
        }
        outcome.exitCode = Self.exitCode(ran.map(\.outcome), runThresholds: outcome.summary.thresholds, failed: outcome.fatalError != nil)
        if outcome.writeError != nil && outcome.exitCode == 0 { outcome.exitCode = RunExitStatus.runFailed }
        return outcome
    }

    /// The run's status from its populations': a population that failed or was interrupted
    /// decides it; then the thresholds' verdicts (a failed one, then an unjudged one), as for one run.
    static func exitCode(_ outcomes: [RunOutcome], runThresholds: [RunSummary.Threshold]?, failed: Bool) -> Int32 {
        let codes = outcomes.map(\.exitCode)
        if failed || codes.contains(RunExitStatus.runFailed) { return RunExitStatus.runFailed }
        if codes.contains(RunExitStatus.interrupted) { return RunExitStatus.interrupted }
        return RunEngine.exitCode(failed: false, interrupted: false, thresholds: runThresholds)
    }

    /// Populations that share an embedded target are served by one server: they share its key.
    static func targetKey(_ s: Scenario) -> String { s.workload.rawValue + (s.tls != nil ? "+tls" : "") }

    /// The scenario an embedded target is started from: the first population of its key, with
    /// every population of that key as its clients (what the target must hold).
    func targetScenario(key: String) -> Scenario {
        let members = scenario.populations.filter { $0.scenario.target == .embedded && Self.targetKey($0.scenario) == key }
        var s = members[0].scenario
        s.clients = members.reduce(0) { $0 + $1.scenario.clients }
        s.durationSeconds = scenario.durationSeconds
        return s
    }

    /// Server ends the embedded target of `key` holds.
    func serverEnds(key: String) -> Int {
        scenario.populations.filter { $0.scenario.target == .embedded && Self.targetKey($0.scenario) == key }
            .reduce(0) { $0 + $1.scenario.clients * WorkloadKinds.kind(of: $1.scenario.workload).descriptorsPerClient($1.scenario) }
    }

    /// Each population's worker processes, nil for those whose clients stay in this process:
    /// with `--processes N`, N for every population; otherwise the largest populations move to
    /// workers of their own (as many as their descriptors need) until the rest fit here.
    func workerFleets(openFilesLimit limit: Int) -> [FleetSpec?] {
        let ends = scenario.populations.map(Self.clientEnds)
        if case .processes(let n)? = options.fleet { return ends.map { _ in .processes(n) } }
        var fleets: [FleetSpec?] = ends.map { _ in nil }
        guard limit > RunPlan.workerDescriptorMargin * 2, options.stampedeExecutable != nil, options.scenarioSource != nil else { return fleets }
        var here = ends.reduce(0, +) + Self.margin(scenario.populations.count)
        let perWorker = limit - RunPlan.workerDescriptorMargin
        for i in ends.indices.sorted(by: { ends[$0] > ends[$1] }) where here > limit {
            fleets[i] = .processes((ends[i] + perWorker - 1) / perWorker)
            here -= ends[i]
        }
        return fleets
    }

    /// Descriptors a population's clients hold.
    static func clientEnds(_ p: Population) -> Int { p.scenario.clients * WorkloadKinds.kind(of: p.scenario.workload).descriptorsPerClient(p.scenario) }

    /// Descriptors this process keeps for itself beside the clients: its own, and each population's engine.
    static func margin(_ populations: Int) -> Int { 64 + 64 * populations }

    /// Whether the embedded targets must run in child processes, or why the run cannot start:
    /// the clients of the populations not on workers share this process's descriptors.
    func descriptorPlan(openFilesLimit limit: Int, fleets: [FleetSpec?]) -> (targetsInChildren: Bool, problem: String?) {
        let clientEnds = zip(scenario.populations, fleets).reduce(0) { $0 + ($1.1 == nil ? Self.clientEnds($1.0) : 0) }
        let keys = Set(scenario.populations.filter { $0.scenario.target == .embedded }.map { Self.targetKey($0.scenario) })
        let targetEnds = keys.reduce(0) { $0 + serverEnds(key: $1) }
        let margin = Self.margin(scenario.populations.count)
        guard limit > 0 else { return (false, nil) }
        if clientEnds + margin > limit {
            return (false, "the populations' clients in this process need about \(clientEnds + margin) file descriptors but it may open \(limit): "
                        + "use --processes N to run each population on N worker processes")
        }
        if clientEnds + targetEnds + margin <= limit { return (false, nil) }
        if options.stampedeExecutable == nil {
            return (false, "the populations' clients and the embedded targets need about \(clientEnds + targetEnds + margin) file descriptors "
                        + "but this process may open \(limit): use fewer clients, or run the targets yourself (stampede serve)")
        }
        return (true, nil)
    }

    /// Populations whose clients are due every other client's messages (the chat rule), grouped
    /// by the server they share (the embedded target of their workload, or the same URL).
    func fanoutGroups() -> [[Int]] {
        var groups: [String: [Int]] = [:]
        for (i, p) in scenario.populations.enumerated() where WorkloadKinds.kind(of: p.scenario.workload).expectsFanout(p.scenario) {
            let key = p.scenario.target == .embedded ? "embedded " + Self.targetKey(p.scenario) : p.scenario.target.description
            groups[key, default: []].append(i)
        }
        return groups.keys.sorted().map { groups[$0]! }
    }
}

/// Who sent how many messages in each second of the run, and how many clients of each
/// population were connected then: the fan-out each population was due from every
/// population sharing its server, following who was connected when each message was sent
/// (to the second), so a ramp or a late start does not read as loss.
final class FanoutLedger: Sendable {
    struct Second { var sent: UInt64 = 0; var open: Int? = nil }
    struct Book { var seconds: [[Int: Second]]; var lastOpen: [Int] }
    let book: Mutex<Book>
    let originNs = EventLoop.now()
    /// Populations whose clients come and go (`clients.stages`): only the clients connected at
    /// both ends of an interval count (a lower bound), or a ramp-down would read as loss.
    let varying: [Bool]

    init(populations: [String], varying: [Bool]) {
        book = Mutex(Book(seconds: populations.map { _ in [:] }, lastOpen: populations.map { _ in 0 }))
        self.varying = varying
    }

    /// An interval of `population` ended at `atNs` with `open` clients connected, `sent` messages
    /// sent in it. Its clients count as connected in that second as many as were at either end
    /// of the interval (the last interval ends with every client closed, but they were there
    /// while the others' last messages went out).
    func record(population: Int, sent: UInt64, open: Int, atNs: UInt64) {
        let second = Int((atNs &- originNs) / 1_000_000_000)
        book.withLock { b in
            let connected = varying[population] ? min(open, b.lastOpen[population])
                : max(open, b.lastOpen[population], b.seconds[population][second]?.open ?? 0)
            b.seconds[population][second, default: Second()].sent += sent
            b.seconds[population][second]!.open = connected
            b.lastOpen[population] = open
        }
    }

    /// For each population of `groups`, the fan-out it was due: every message sent in a second by
    /// any population of its group, times its clients connected in that second (the latest count
    /// at or before it), less its own messages (a client is not due its own).
    func expectedFanout(groups: [[Int]]) -> [Int: UInt64] {
        let s = book.withLock { $0.seconds }
        var due: [Int: UInt64] = [:]
        for group in groups {
            let last = group.compactMap { s[$0].keys.max() }.max() ?? -1
            guard last >= 0 else { continue }
            for q in group {
                var total: UInt64 = 0, open = 0
                for second in 0...last {
                    if let o = s[q][second]?.open { open = o }
                    let sentAll = group.reduce(UInt64(0)) { $0 + (s[$1][second]?.sent ?? 0) }
                    let own = s[q][second]?.sent ?? 0
                    let d = sentAll * UInt64(max(0, open)) 
                    total += d > own ? d - own : 0
                }
                due[q] = total
            }
        }
        return due
    }
}

/// A value made on one thread and from then on used only by the thread it is handed to.
struct HandedOver<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

extension ClientEndpoint {
    /// The first address the clients connect to.
    var firstAddress: SocketAddress? {
        switch self {
        case .webSocket(let e): e.address
        case .hub(let addresses, _), .rest(let addresses, _, _, _), .socketIO(let addresses, _, _): addresses.first
        }
    }
}

extension ProgressPrinter {
    /// A population's progress line, its name first.
    func show(_ line: ProgressLine, prefix: String) {
        guard style != .silent else { return }
        FileHandle.standardError.write(Data((prefix + " " + line.text + "\n").utf8))
    }
}
