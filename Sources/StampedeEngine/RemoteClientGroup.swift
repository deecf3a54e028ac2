import Foundation
import StampedeFleet
import StampedeLoop
import StampedeMetrics
import StampedeReport
import StampedeScenario

/// A worker process's clients, commanded over the coordinator–worker protocol. Every request
/// has a deadline; when the worker's stream ends or it stops answering, the group is lost: the
/// engine is told once (`takeLoss`), and from then on the group answers with nothing, so the
/// run goes on (or stops) without hanging on it.
final class RemoteClientGroup: ClientGroup {
    let link: WorkerLink
    let hello: WorkerHello
    let shardIndex: Int
    let clients: Int
    private(set) var loopCount = 0
    /// The worker's memory with its loops up and no client connected yet.
    private(set) var residentBytesAtStart: UInt64 = 0
    let clock: ClockOffsetEstimator
    /// The worker shares this kernel's monotonic clock (same boot id): instants need no conversion.
    let sameClock: Bool
    /// A local worker's process (nil for `--workers`): how it ended says why it was lost.
    let process: Process?
    /// Seconds into the run, for the loss record (set by the engine).
    var runClock: () -> Double = { 0 }

    /// What the worker has reported so far: its messages' outcomes (to count what it leaves
    /// outstanding if it is lost) and its last interval.
    private var reported = MetricsShard.Counts()
    private var lastIntervalSeconds: Double?
    private var openAtLastInterval = 0
    private(set) var loss: RunSummary.Worker.Lost?
    private var lossTaken = false
    private var lossPending: UInt64 = 0

    /// Requests are answered in well under a second; a worker's loops can be busy for a while
    /// at a storm, so the deadline is generous, and a dead worker is noticed at once anyway (EOF).
    static let requestDeadlineNs: UInt64 = 5_000_000_000

    init(link: WorkerLink, hello: WorkerHello, shardIndex: Int, clients: Int, clock: ClockOffsetEstimator, sameClock: Bool, process: Process?) {
        self.link = link; self.hello = hello; self.shardIndex = shardIndex; self.clients = clients
        self.clock = clock; self.sameClock = sameClock; self.process = process
    }

    /// Instants sent to the worker in its own clock.
    func there(_ ns: UInt64) -> UInt64 { sameClock ? ns : clock.workerInstant(ns) }

    /// Sends the plan and waits for the worker's loops to be up.
    func start(_ plan: WorkerPlan) throws(RunSetupError) {
        guard link.send(.plan(plan), deadlineNs: EventLoop.now() + 5_000_000_000) else { throw RunSetupError(describeFailure("could not send the plan")) }
        switch link.receive(deadlineNs: EventLoop.now() + 60_000_000_000) {
        case .ready(let loops, let rss): loopCount = loops; residentBytesAtStart = rss
        case .refused(let why): throw RunSetupError("worker \(shardIndex) (\(hello.hostname), pid \(hello.pid)): \(why)")
        case .some(let other): throw RunSetupError("worker \(shardIndex): unexpected answer to the plan: \(other)")
        case nil: throw RunSetupError(describeFailure("did not start"))
        }
    }

    func describeFailure(_ what: String) -> String {
        "worker \(shardIndex) (\(hello.hostname), pid \(hello.pid)) \(what): \(exitDescription() ?? link.failure ?? "no reason given")"
    }

    // MARK: Commands (no answer)

    func command(_ m: FleetMessage) {
        guard loss == nil else { return }
        if !link.send(m, deadlineNs: EventLoop.now() + Self.requestDeadlineNs) { lose() }
    }

    func beginRampUp(startNs: UInt64) { command(.beginRampUp(startNs: there(startNs))) }
    func beginMessages(startNs: UInt64, endNs: UInt64) { command(.beginMessages(startNs: there(startNs), endNs: there(endNs))) }
    func dropConnections(fraction: Double) { command(.dropConnections(fraction: fraction)) }
    func storm(index: Int, atNs: UInt64, fraction: Double, mode: StormMode, stallNs: UInt64) {
        command(.storm(index: index, atNs: there(atNs), fraction: fraction, mode: mode.rawValue, stallNs: stallNs))
    }
    func watch(index: Int, atNs: UInt64) { command(.watch(index: index, atNs: there(atNs))) }
    func churn(count: Int) { command(.churn(count: count)) }
    func changeRate(to ratePerSecond: Double, atNs: UInt64) { command(.changeRate(ratePerSecond: ratePerSecond, atNs: there(atNs))) }
    func join(count: Int) -> Int {
        if case .moved(let n) = request(.join(count: count)) { return n }
        return 0
    }
    func leave(count: Int) -> Int {
        if case .moved(let n) = request(.leave(count: count)) { return n }
        return 0
    }
    func beginDrain() { command(.beginDrain) }
    func closeAll(lostReason: LossReason) { command(.closeAll(lostReason: lostReason)) }

    // MARK: Requests

    func request(_ m: FleetMessage) -> FleetMessage? {
        guard loss == nil else { return nil }
        guard link.send(m, deadlineNs: EventLoop.now() + Self.requestDeadlineNs),
              let answer = link.receive(deadlineNs: EventLoop.now() + Self.requestDeadlineNs) else { lose(); return nil }
        return answer
    }

    func state() -> GroupState {
        if case .state(let s) = request(.stateRequest) { return s }
        return GroupState()
    }

    func takeInterval() -> GroupInterval {
        if case .interval(let i) = request(.intervalRequest) {
            reported.add(i.metrics)
            lastIntervalSeconds = runClock()
            openAtLastInterval = i.open
            return i
        }
        // Lost: its outstanding messages are counted once, in the interval after the loss.
        var empty = GroupInterval()
        if lossPending > 0 { empty.metrics.lose(.workerLost, lossPending); lossPending = 0 }
        return empty
    }

    func liveClients() -> Int {
        if case .live(let n) = request(.liveRequest) { return n }
        return 0
    }

    func storms() -> [StormShard] {
        if case .storms(let s) = request(.stormsRequest) { return s }
        return []
    }

    func stop(interrupted: Bool) {
        if loss == nil, link.send(.finish, deadlineNs: EventLoop.now() + 1_000_000_000) {
            _ = link.receive(deadlineNs: EventLoop.now() + (interrupted ? 500_000_000 : 5_000_000_000))
        }
        link.close()
        guard let process else { return }
        let deadline = Date().addingTimeInterval(interrupted ? 0.5 : 3)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
    }

    // MARK: Loss

    func lose() {
        guard loss == nil else { return }
        // A local worker that died has exited by now or very soon: say how.
        if let process { let d = Date().addingTimeInterval(0.3); while process.isRunning && Date() < d { Thread.sleep(forTimeInterval: 0.005) } }
        let outstanding = reported.sent &- min(reported.sent, reported.delivered &+ reported.failed &+ reported.lost)
        lossPending = outstanding
        loss = RunSummary.Worker.Lost(atSeconds: (runClock() * 10).rounded() / 10, reason: exitDescription() ?? link.failure ?? "stopped answering",
                                      lastIntervalSeconds: lastIntervalSeconds.map { ($0 * 10).rounded() / 10 },
                                      openAtLastInterval: openAtLastInterval, messagesLost: outstanding)
        link.close()
        if let process, process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// The loss, the first time it is asked for after it happened (the engine reports it once).
    func takeLoss() -> RunSummary.Worker.Lost? {
        guard let loss, !lossTaken else { return nil }
        lossTaken = true
        return loss
    }

    func exitDescription() -> String? {
        guard let process, !process.isRunning else { return nil }
        switch process.terminationReason {
        case .uncaughtSignal: return "its process was killed by signal \(process.terminationStatus)\(signalName(process.terminationStatus))"
        case .exit: return "its process exited with status \(process.terminationStatus)"
        @unknown default: return "its process ended"
        }
    }

    func signalName(_ s: Int32) -> String {
        switch s { case SIGKILL: " (SIGKILL)"; case SIGTERM: " (SIGTERM)"; case SIGSEGV: " (SIGSEGV)"; case SIGABRT: " (SIGABRT)"; case SIGINT: " (SIGINT)"; default: "" }
    }

    var summary: RunSummary.Worker {
        RunSummary.Worker(index: shardIndex, host: hello.hostname, pid: hello.pid, clients: clients, loops: loopCount,
                          clockOffsetMicros: Double(clock.offsetNs) / 1000,
                          clockUncertaintyMicros: Double(clock.uncertaintyNs) / 1000, sameClock: sameClock, lost: loss)
    }
}

extension MetricsShard {
    /// A worker's message outcomes so far (counters only: no histograms kept per worker).
    struct Counts {
        var sent: UInt64 = 0, delivered: UInt64 = 0, failed: UInt64 = 0, lost: UInt64 = 0
        mutating func add(_ s: MetricsShard) {
            sent &+= s[.messagesSent]; delivered &+= s[.messagesDelivered]; failed &+= s[.messagesFailed]; lost &+= s[.messagesLost]
        }
    }
}
