import CStampedeLinux
import Foundation
import StampedeFleet
import StampedeLoop
import StampedeMetrics
import StampedeReport
import StampedeScenario

/// The worker's side of the coordinator–worker protocol (`stampede worker`): greets the
/// coordinator, runs the shard of clients it is given on its own loops, does what it is told and
/// answers what it is asked, until `finish` — or until the coordinator goes away, when it closes
/// its clients and stops, so no worker outlives its run.
public enum WorkerService {
    /// The coordinator ticks every 100 ms during a run: this much silence means it is gone.
    static let coordinatorSilenceNs: UInt64 = 60_000_000_000

    /// Serves one run over the stream (`readFD`, `writeFD`); the process's exit status: 0 when the
    /// run ended with `finish`, 1 when the coordinator vanished or the stream broke, 130 when
    /// interrupted. `index`/`count` are the worker's own idea of its shard (an Indexed Job's),
    /// checked against the coordinator's. `log` gets one line per notable event.
    /// `keepIntervals`: a folder where the worker also writes every interval it sent, as one
    /// .hlog file per latency metric (`worker-<shard>-<metric>.hlog`): what a test merges by
    /// itself to check the coordinator's merge.
    public static func serve(readFD: Int32, writeFD: Int32, index: Int?, count: Int?, defaultLoops: Int,
                             interrupt: InterruptFlag, keepIntervals: URL? = nil, log: (String) -> Void) -> Int32 {
        let link = WorkerLink(readFD: readFD, writeFD: writeFD)
        var group: LocalClientGroup?
        var kept = keepIntervals.map { KeptIntervals(folder: $0) }
        var lastHeard = EventLoop.now()
        func reply(_ m: FleetMessage) { link.send(m, deadlineNs: EventLoop.now() + 10_000_000_000) }
        func end(_ status: Int32, _ why: String) -> Int32 {
            if let g = group {
                g.closeAll(lostReason: .interrupted)
                let deadline = EventLoop.now() + 1_000_000_000
                while g.liveClients() > 0 && EventLoop.now() < deadline { Thread.sleep(forTimeInterval: 0.02) }
                g.stop(interrupted: true)
            }
            link.close()
            log(why)
            return status
        }
        while true {
            if interrupt.isRaised { return end(130, "interrupted: clients closed") }
            guard let m = link.receive(deadlineNs: EventLoop.now() + 500_000_000, quietDeadline: true) else {
                if let failure = link.failure { return end(1, "the coordinator is gone (\(failure)): clients closed") }
                if EventLoop.now() - lastHeard > coordinatorSilenceNs { return end(1, "nothing from the coordinator for 60 s: clients closed") }
                continue
            }
            lastHeard = EventLoop.now()
            switch m {
            case .hello:
                reply(.helloReply(WorkerHello(version: FleetMessage.version, index: index ?? -1, count: count ?? -1, pid: Int(getpid()),
                                              hostname: FleetSockets.hostname, bootID: FleetSockets.bootID)))
            case .clockProbe(let t): reply(.clockReply(coordinatorNs: t, workerNs: EventLoop.now()))
            case .plan(let plan):
                switch start(plan, index: index, count: count, defaultLoops: defaultLoops) {
                case .success(let g):
                    group = g
                    kept?.shard = plan.shardIndex
                    log("shard \(plan.shardIndex) of \(plan.shardCount): \(g.loopCount) loop(s)")
                    reply(.ready(loops: g.loopCount, residentBytes: processResidentBytes()))
                case .failure(let e):
                    reply(.refused(e.description))
                    return end(1, "refused the plan: \(e.description)")
                }
            case .finish:
                kept?.finish()
                group?.stop(interrupted: false)
                group = nil
                reply(.bye)
                link.close()
                return 0
            default:
                guard let g = group else { reply(.refused("no plan yet")); continue }
                perform(m, on: g, reply: { sent in
                    if case .interval(let i) = sent { kept?.add(i.metrics) }
                    reply(sent)
                })
            }
        }
    }

    static func perform(_ m: FleetMessage, on g: LocalClientGroup, reply: (FleetMessage) -> Void) {
        // (`reply` is the only way out: what it sends is what `KeptIntervals` keeps.)
        switch m {
        case .beginRampUp(let t): g.beginRampUp(startNs: t)
        case .beginMessages(let a, let b): g.beginMessages(startNs: a, endNs: b)
        case .dropConnections(let f): g.dropConnections(fraction: f)
        case .storm(let index, let at, let fraction, let mode, let stall):
            g.storm(index: index, atNs: at, fraction: fraction, mode: StormMode(rawValue: mode) ?? .reset, stallNs: stall)
        case .watch(let index, let at): g.watch(index: index, atNs: at)
        case .churn(let n): g.churn(count: n)
        case .join(let n): reply(.moved(g.join(count: n)))
        case .leave(let n): reply(.moved(g.leave(count: n)))
        case .changeRate(let rate, let at): g.changeRate(to: rate, atNs: at)
        case .beginDrain: g.beginDrain()
        case .closeAll(let reason): g.closeAll(lostReason: reason)
        case .stateRequest: reply(.state(g.state()))
        case .intervalRequest:
            var i = g.takeInterval()
            i.processCPUNs = cs_process_cpu_ns()
            i.residentBytes = processResidentBytes()
            reply(.interval(i))
        case .liveRequest: reply(.live(g.liveClients()))
        case .stormsRequest: reply(.storms(g.storms()))
        default: break  // a coordinator's message a worker does not take: ignored, not fatal
        }
    }

    /// The plan's scenario parsed as the coordinator parsed it, its shard checked against ours,
    /// the descriptors checked against this process's limit, then the loops started.
    static func start(_ plan: WorkerPlan, index: Int?, count: Int?, defaultLoops: Int) -> Result<LocalClientGroup, RunSetupError> {
        if let index, index != plan.shardIndex { return .failure(RunSetupError("this worker is shard \(index) but was given shard \(plan.shardIndex)")) }
        if let count, count != plan.shardCount { return .failure(RunSetupError("this worker expects \(count) workers but the run has \(plan.shardCount)")) }
        guard plan.shardCount >= 1, (0..<plan.shardCount).contains(plan.shardIndex) else { return .failure(RunSetupError("shard \(plan.shardIndex) of \(plan.shardCount)")) }
        let overrides = plan.overrides.compactMap { $0.count == 3 ? ScenarioLoader.Override(flag: $0[0], field: $0[1], value: $0[2]) : nil }
        var scenario: Scenario
        do { scenario = try ScenarioLoader.parse(yaml: plan.scenarioYAML, file: plan.scenarioFile, overrides: overrides) } catch {
            return .failure(RunSetupError("the scenario: \(error)"))
        }
        if !plan.population.isEmpty {
            // One population of the scenario: its clients, numbered after the populations before it.
            guard let index = scenario.populations.firstIndex(where: { $0.name == plan.population }) else {
                return .failure(RunSetupError("the scenario has no population named '\(plan.population)'"))
            }
            var own = scenario.populations[index].scenario
            own.clientIndexBase = scenario.populations[..<index].reduce(0) { $0 + $1.scenario.clients }
            scenario = own
        }
        if let steered = plan.steered { scenario = scenario.steered(by: steered) }
        let kind = WorkloadKinds.kind(of: scenario.workload)
        let mine = shardClients(scenario.clients, index: plan.shardIndex, count: plan.shardCount)
        let limit = Int(cs_raise_open_files_limit())
        let needed = mine * kind.descriptorsPerClient(scenario) + 64
        if limit > 0 && needed > limit {
            return .failure(RunSetupError("its \(mine) clients need about \(needed) file descriptors but this process may open \(limit): use more workers"))
        }
        do {
            let endpoint = plan.embeddedPort > 0
                ? kind.embeddedEndpoint(scenario, address: .ipv4(0x7F00_0001, port: UInt16(clamping: plan.embeddedPort)), port: plan.embeddedPort)
                : try kind.targetEndpoint(scenario)
            let tls = try RunEngine.makeClientTLS(scenario, embeddedCertificatePEM: plan.embeddedCertificatePEM.isEmpty ? nil : plan.embeddedCertificatePEM)
            let loops = plan.loops > 0 ? plan.loops : defaultLoops
            return .success(try LocalClientGroup.start(scenario: scenario, kind: kind, endpoint: endpoint, tls: tls, loopCount: loops,
                                                       shard: (plan.shardIndex, plan.shardCount), clockOffsetNs: plan.clockOffsetNs))
        } catch {
            return .failure(error)
        }
    }
}

/// The intervals a worker sent, as .hlog lines per latency metric (`--keep-intervals`),
/// appended to their files as they are sent (nothing kept in memory).
struct KeptIntervals {
    let folder: URL
    var shard = 0
    let start = Date()
    let startNs = EventLoop.now()
    var lastNs = EventLoop.now()
    /// Opened at the first interval, once the shard (in the file names) is known; nil if the
    /// folder cannot be made (keeping intervals is a check's aid: the run goes on without).
    var spool: IntervalSpool?

    init(folder: URL) { self.folder = folder }

    mutating func add(_ shard: MetricsShard) {
        let now = EventLoop.now()
        if spool == nil { spool = try? IntervalSpool(folder: folder, startTime: start) }
        let prefix = "worker-\(self.shard)-"
        for (m, line) in HistogramLog.lines(of: shard, startSeconds: Double(lastNs - startNs) / 1e9, lengthSeconds: Double(now - lastNs) / 1e9) {
            spool?.append(line: line, toLog: prefix + ResultsWriter.hlogFileName(m))
        }
        for (key, line) in HistogramLog.namedLines(of: shard, startSeconds: Double(lastNs - startNs) / 1e9, lengthSeconds: Double(now - lastNs) / 1e9) {
            spool?.append(line: line, toLog: prefix + ResultsWriter.hlogFileName(named: key))
        }
        lastNs = now
    }

    /// Flushes and closes the files.
    func finish() {
        _ = spool?.finish()
    }
}

extension WorkerService {
    /// The worker's listening socket (`stampede worker --listen`); its descriptor and port.
    public static func listen(on address: SocketAddress) -> Result<(Int32, UInt16), RunSetupError> {
        FleetSockets.listen(on: address).map { ($0.fd, $0.port) }
    }

    /// The coordinator's connection, nil when interrupted first.
    public static func acceptCoordinator(_ listener: Int32, interrupt: InterruptFlag) -> Int32? {
        FleetSockets.acceptOne(listener) { interrupt.isRaised }
    }
}
