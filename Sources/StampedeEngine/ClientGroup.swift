import CStampedeLinux
import StampedeFleet
import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeWorkloads

/// Clients the engine commands as one: this process's loops (`LocalClientGroup`), or a worker
/// process reached over the coordinator–worker protocol (`RemoteClientGroup`). The engine's
/// phases, events, thresholds and intervals are the same for both; only where the clients run
/// differs. Instants are the engine's monotonic nanoseconds.
protocol ClientGroup: AnyObject {
    /// Client event loops in the group.
    var loopCount: Int { get }
    func beginRampUp(startNs: UInt64)
    func beginMessages(startNs: UInt64, endNs: UInt64)
    func dropConnections(fraction: Double)
    func storm(index: Int, atNs: UInt64, fraction: Double, mode: StormMode, stallNs: UInt64)
    func watch(index: Int, atNs: UInt64)
    /// Up to `count` connected, idle clients leave and join again.
    func churn(count: Int)
    /// `clients.stages`: up to `count` clients not connected join; returns how many did.
    func join(count: Int) -> Int
    /// `clients.stages`: up to `count` connected, idle clients leave cleanly; returns how many did.
    func leave(count: Int) -> Int
    /// Open model, a capacity search on held connections: the run's rate from `atNs` on.
    func changeRate(to ratePerSecond: Double, atNs: UInt64)
    func beginDrain()
    func closeAll(lostReason: LossReason)
    /// Gauges at a tick.
    func state() -> GroupState
    /// This interval's measurements, taken and reset.
    func takeInterval() -> GroupInterval
    /// Clients not yet ended (connecting, open or closing).
    func liveClients() -> Int
    /// What the group's clients saw of each storm (read once, at the end).
    func storms() -> [StormShard]
    /// Stops the group's loops (or its process) and waits for them.
    func stop(interrupted: Bool)
}

/// This process's client loops, one workload each.
final class LocalClientGroup: ClientGroup {
    let loops: [EventLoop]
    let workloads: [any LoopWorkload]
    /// Per loop, a cleared shard for the loop to take at the next interval boundary (nil while lent out).
    var spareShards: [MetricsShard?]
    var cpuSeen: [UInt64]
    /// Where the next churn share starts, so no loop is always the first asked.
    var churnRotation = 0

    init(loops: [EventLoop], workloads: [any LoopWorkload]) {
        self.loops = loops; self.workloads = workloads
        spareShards = workloads.map { _ in MetricsShard() }
        cpuSeen = loops.map { _ in 0 }
    }

    var loopCount: Int { loops.count }

    func each(_ body: @escaping @Sendable (any LoopWorkload) -> Void) {
        for (i, w) in workloads.enumerated() { loops[i].execute { _ in body(w) } }
    }

    func beginRampUp(startNs: UInt64) { each { $0.beginRampUp(startNs: startNs) } }
    func beginMessages(startNs: UInt64, endNs: UInt64) { each { $0.beginMessages(startNs: startNs, endNs: endNs) } }
    func dropConnections(fraction: Double) { each { $0.dropConnections(fraction: fraction) } }
    func storm(index: Int, atNs: UInt64, fraction: Double, mode: StormMode, stallNs: UInt64) {
        each { $0.storm(index: index, atNs: atNs, fraction: fraction, mode: mode, stallNs: stallNs) }
    }
    /// Waits until every loop watches: the engine applies the server fault right after, and a
    /// loop that read the fault's closes before its watch task ran would not count those
    /// clients as affected.
    func watch(index: Int, atNs: UInt64) {
        for (i, w) in workloads.enumerated() { loops[i].submitAndWait { _ in w.watch(index: index, atNs: atNs) } }
    }
    func beginDrain() { each { $0.beginDrain() } }
    func changeRate(to ratePerSecond: Double, atNs: UInt64) { each { $0.changeRate(to: ratePerSecond, atNs: atNs) } }
    func closeAll(lostReason: LossReason) { each { $0.closeAll(lostReason: lostReason) } }

    func churn(count: Int) {
        for (i, share) in evenShares(of: count, over: workloads.count, rotation: churnRotation) {
            loops[i].execute { [w = workloads[i]] _ in w.churn(count: share) }
        }
        churnRotation += 1
    }

    func join(count: Int) -> Int { onLoops(count) { w, n in w.join(count: n) } }
    func leave(count: Int) -> Int { onLoops(count) { w, n in w.leave(count: n) } }

    /// `shareOut` over this group's loops, from a rotating first one.
    func onLoops(_ count: Int, _ body: @escaping @Sendable (any LoopWorkload, Int) -> Int) -> Int {
        defer { churnRotation += 1 }
        return shareOut(count, over: workloads.count, rotation: churnRotation) { i, share in
            loops[i].submitAndWait { [w = workloads[i]] _ in body(w, share) }
        }
    }

    func state() -> GroupState {
        var t = GroupState()
        for (i, w) in workloads.enumerated() {
            t.add(loops[i].submitAndWait { _ in
                var s = GroupState()
                s.open = w.openCount; s.inFlight = w.inFlightConnects; s.notYetStarted = w.notYetStarted
                s.outstanding = w.totalOutstanding; s.sent = w.metrics[.messagesSent]; s.fanout = w.metrics[.fanoutReceived]
                return s
            })
        }
        return t
    }

    struct LoopInterval: Sendable {
        var metrics: MetricsShard
        var open: Int, connecting: Int, reconnecting: Int
        var timerLagNs: UInt64, cpuNs: UInt64
        /// When the loop swapped its shard: where this interval's counts end.
        var boundaryNs: UInt64
    }

    func takeInterval() -> GroupInterval {
        var merged = GroupInterval()
        var boundarySum: UInt64 = 0
        for (i, w) in workloads.enumerated() {
            // The loop swaps in a cleared shard, so nothing at the boundary runs on the loop thread
            // but the swap (its timers are not held up); the engine clears the taken one here,
            // off the loop, and hands it back next time.
            let spare = spareShards[i].take() ?? MetricsShard()
            var d = loops[i].submitAndWait { loop in
                let data = LoopInterval(metrics: w.metrics, open: w.openCount, connecting: w.inFlightConnects, reconnecting: w.reconnectingCount,
                                        timerLagNs: loop.takeMaxTimerLag(), cpuNs: cs_thread_cpu_ns(), boundaryNs: EventLoop.now())
                w.metrics = spare
                return data
            }
            merged.metrics.add(d.metrics)
            d.metrics.reset()
            spareShards[i] = d.metrics
            merged.open += d.open
            merged.connecting += d.connecting
            merged.reconnecting += d.reconnecting
            merged.timerLagNs = max(merged.timerLagNs, d.timerLagNs)
            cpuSeen[i] = d.cpuNs
            boundarySum &+= d.boundaryNs
        }
        merged.loopCPUNs = cpuSeen.reduce(0, +)
        // The loops share the clients evenly, so the mean of their boundaries is where the
        // group's interval ends for a per-client rate.
        merged.boundaryNs = workloads.isEmpty ? 0 : boundarySum / UInt64(workloads.count)
        return merged
    }

    func liveClients() -> Int {
        loops.indices.reduce(0) { n, i in n + loops[i].submitAndWait { [w = workloads[i]] _ in w.liveClients } }
    }

    func storms() -> [StormShard] {
        var merged: [StormShard] = []
        for (i, w) in workloads.enumerated() {
            let shards = loops[i].submitAndWait { _ in w.storms }
            for (n, shard) in shards.enumerated() {
                if n >= merged.count { merged.append(StormShard()) }
                merged[n].add(shard)
            }
        }
        return merged
    }

    func stop(interrupted: Bool) {
        for l in loops { l.stop() }
        for l in loops { l.join() }
    }
}

/// How many of `total` global clients shard `index` of `count` runs (those `g` with
/// `g % count == index`, as `LocalClientGroup.start` deals them).
func shardClients(_ total: Int, index: Int, count: Int) -> Int {
    count > 0 && index < total ? (total - index + count - 1) / count : 0
}

/// Asks `n` parts in turn (from `rotation` on) to move an even share of what is left of
/// `count`, then, for what parts short of clients could not move, each the whole rest; returns
/// how many moved (`clients.stages` joins and leaves, over loops or over workers).
func shareOut(_ count: Int, over n: Int, rotation: Int = 0, _ move: (_ part: Int, _ share: Int) -> Int) -> Int {
    var done = 0
    for j in 0..<n where done < count {
        done += move((j + rotation) % n, (count - done + (n - j) - 1) / (n - j))
    }
    for j in 0..<n where done < count { done += move((j + rotation) % n, count - done) }
    return done
}

/// `count` dealt over `n` parts as evenly as can be, the remainder going to the parts from
/// `rotation` on (so no part is always the one that gets more): (part, share) for shares > 0.
func evenShares(of count: Int, over n: Int, rotation: Int) -> [(part: Int, share: Int)] {
    guard n > 0 else { return [] }
    return (0..<n).compactMap { j in
        let share = count / n + (j < count % n ? 1 : 0)
        return share > 0 ? ((j + rotation) % n, share) : nil
    }
}

extension LocalClientGroup {
    /// Starts `loopCount` loops for this process's share of the scenario's clients: every
    /// global client `g` with `g % shard.count == shard.index` (all of them when the process runs
    /// the whole run), dealt out to the loops in turn. Global indices keep the schedule global:
    /// client `g` connects at `start + g / connect_rate` and sends on its own slots wherever it runs.
    static func start(scenario given: Scenario, kind: any WorkloadKind, endpoint givenEndpoint: ClientEndpoint, tls: ClientTLS?, loopCount: Int,
                      shard: (index: Int, count: Int) = (0, 1), clockOffsetNs: Int64 = 0) throws(RunSetupError) -> LocalClientGroup {
        // Every process of the run works this out from the whole run's clients, so together they
        // stay within each source address's ports.
        var scenario = given
        switch SourceAddressPlan.addresses(clients: scenario.clients, connectionsPerClient: kind.descriptorsPerClient(scenario),
                                           targets: givenEndpoint.addresses, given: scenario.sourceAddresses) {
        case .success(let sources): scenario.sourceAddresses = sources
        case .failure(let e): throw e
        }
        let endpoint = givenEndpoint.with(sources: scenario.sourceAddressValues)
        var token: String? = nil
        if let source = scenario.hub?.accessToken {
            do { token = try ScenarioLoader.resolveToken(source, scenarioFile: scenario.file) } catch { throw RunSetupError("\(error)") }
        }
        if let source = scenario.rest?.token {
            do { token = try ScenarioLoader.resolveToken(source, scenarioFile: scenario.file, field: "rest.token") } catch { throw RunSetupError("\(error)") }
        }
        let headerLines = Array(scenario.headers.map { "\($0.name): \($0.value)\r\n" }.joined().utf8)
        let mine = Array(stride(from: shard.index, to: scenario.clients, by: max(1, shard.count)))
        let count = max(1, min(loopCount, mine.count))
        let hubRedirects = HubRedirectResolver(policy: scenario.resolve)  // no thread until a redirect names a host
        var loops: [EventLoop] = [], workloads: [any LoopWorkload] = []
        func abandon() { for l in loops { l.stop() }; for l in loops { l.join() } }
        for i in 0..<count {
            let loop: EventLoop
            do { loop = try EventLoop(index: i) } catch { abandon(); throw RunSetupError("cannot start event loop \(i): \(error)") }
            // Loop i of shard 0 keeps the seed a single process gives it, so one process and
            // one worker run the same clients the same way.
            let seed = scenario.seed &+ UInt64(shard.index * 4096 + i) &* 0x1000_0001
            let setup = LoopClientsSetup(scenario: scenario, loop: loop, endpoint: endpoint,
                                         clients: Array(stride(from: i, to: mine.count, by: count).map { mine[$0] }),
                                         random: FastRandom(seed: seed), token: token, headerLines: headerLines, tls: tls,
                                         stampClockOffsetNs: clockOffsetNs, hubRedirects: hubRedirects)
            do { workloads.append(try kind.makeClients(setup)) } catch { loops.append(loop); abandon(); throw error }
            loops.append(loop)
            loop.start(name: "stampede-loop-\(i)")
        }
        return LocalClientGroup(loops: loops, workloads: workloads)
    }
}
