import StampedeLoop
import StampedeScenario
import StampedeWorkloads

/// What a scenario means for the engine, worked out before anything starts: loops, file
/// descriptors, where the embedded target runs, and every time span in nanoseconds.
///
/// Pure (no sockets, no clock, no environment), so the whole path from YAML to the numbers a
/// run uses can be fuzzed: `ScenarioProbe` drives it with arbitrary input and must never trap.
public struct RunPlan: Sendable, Equatable {
    /// How many client loops a run may have (`--loops`).
    public static let loopRange = 1...256

    /// Client event loops: no more than there are clients.
    public let loopCount: Int
    /// Descriptors one client holds (`WorkloadKind.descriptorsPerClient`).
    public let descriptorsPerClient: Int
    /// Descriptors this process needs (both ends when the embedded target shares it).
    public let descriptorsNeeded: Int
    /// The embedded target moves to a `stampede serve` child because both ends do not fit.
    public let targetInChildProcess: Bool
    /// Server processes the embedded target takes when it cannot share this process
    /// (`stampede serve --processes`, sharing one port): enough that each holds its share of the
    /// connections within the open-file limit (`serverProcesses`); 1 otherwise.
    public let targetProcesses: Int
    /// Why the run cannot start on this machine, or nil.
    public let problem: String?

    public let connectTimeoutNs: UInt64
    public let thinkTimeNs: UInt64
    public let durationNs: UInt64
    public let drainNs: UInt64
    /// A backstop on the ramp-up: every attempt ends by itself before, by its own timeouts.
    public let rampBudgetNs: UInt64
    /// Each event's offset into the message phase.
    public let eventOffsetsNs: [UInt64]

    /// Where the clients run: nil in this process, else the worker processes (given with
    /// `--processes`/`--workers`, or chosen here when this process's descriptors do not hold them).
    public let fleet: FleetSpec?

    /// Descriptors one worker process may use for clients: its limit less room for everything else.
    public static let workerDescriptorMargin = 1024

    /// - Parameters:
    ///   - loops: Loops asked for (`--loops`, default one per core).
    ///   - openFilesLimit: This process's limit (0: unknown, not checked).
    ///   - canSpawnTarget: Whether a `stampede` executable is there to run the target as a child.
    ///   - fleet: The workers the user asked for (`--processes`, `--workers`), or nil.
    ///   - canSpawnWorkers: Whether this process may start local workers when its descriptors
    ///     do not hold the clients (a `stampede` executable and the scenario's text are there).
    public init(scenario s: Scenario, loops: Int, openFilesLimit: Int, canSpawnTarget: Bool, fleet asked: FleetSpec? = nil, canSpawnWorkers: Bool = false) {
        loopCount = max(1, min(loops, s.clients))
        let embedded = s.target == .embedded
        descriptorsPerClient = WorkloadKinds.kind(of: s.workload).descriptorsPerClient(s)
        let clientDescriptors = s.clients * descriptorsPerClient
        var fleet = asked
        if fleet == nil, canSpawnWorkers, openFilesLimit > Self.workerDescriptorMargin * 2, clientDescriptors + 64 > openFilesLimit {
            let perWorker = openFilesLimit - Self.workerDescriptorMargin
            fleet = .processes((clientDescriptors + perWorker - 1) / perWorker)
        }
        self.fleet = fleet
        // With workers, this process holds no client's descriptor, only (maybe) the target's.
        let ours = (fleet == nil ? clientDescriptors : 0) + 64
        var needed = ours + (embedded ? clientDescriptors : 0)
        var child = false
        if embedded && openFilesLimit > 0 && needed > openFilesLimit, canSpawnTarget, ours <= openFilesLimit {
            child = true
            needed = ours
        }
        descriptorsNeeded = needed
        targetInChildProcess = child
        let serverEnds = s.clients * descriptorsPerClient
        targetProcesses = embedded && openFilesLimit > 0 && serverEnds * 2 + 64 > openFilesLimit
            ? Self.serverProcesses(connections: serverEnds, openFilesLimit: openFilesLimit) : 1
        if case .processes(let n) = fleet, openFilesLimit > 0, (s.clients + n - 1) / max(1, n) * descriptorsPerClient + 64 > openFilesLimit {
            let each = (s.clients + n - 1) / max(1, n) * descriptorsPerClient + 64
            problem = "--processes \(n): each worker process would need about \(each) file descriptors but a process may open \(openFilesLimit); use more processes"
        } else if openFilesLimit > 0 && needed > openFilesLimit {
            problem = "\(s.clients) clients need about \(needed) file descriptors \(embedded ? "(the embedded target holds the other end of every connection) " : "")but this process may open \(openFilesLimit). Use fewer clients, run the target in its own process (stampede serve), or split the load over worker processes (--processes N)."
        } else if targetProcesses > 1, let why = WorkloadKinds.kind(of: s.workload).crossProcessProblem(s) {
            problem = "\(s.clients) clients need an embedded target of \(targetProcesses) server processes (stampede serve --processes \(targetProcesses)), but \(why). Use at most \(Self.singleProcessClients(openFilesLimit: openFilesLimit, descriptorsPerClient: descriptorsPerClient)) clients, or your own target."
        } else {
            problem = nil
        }

        connectTimeoutNs = nanoseconds(s.connectTimeoutSeconds)
        thinkTimeNs = nanoseconds(s.thinkTimeSeconds)
        durationNs = nanoseconds(s.durationSeconds)
        drainNs = nanoseconds(s.drainSeconds)
        rampBudgetNs = nanoseconds(Double(s.clients) / s.connectRate + s.connectTimeoutSeconds * 2 + (s.hub?.handshakeTimeoutSeconds ?? 0) + 5)
        eventOffsetsNs = s.events.map { nanoseconds($0.atSeconds) }
    }

    /// Server processes it takes to hold `connections` server ends when each process may open
    /// `openFilesLimit` files: each keeps a tenth (at least 256) free for its own descriptors and
    /// for the kernel's uneven spreading of connections over SO_REUSEPORT listeners.
    public static func serverProcesses(connections: Int, openFilesLimit: Int) -> Int {
        guard openFilesLimit > 0 else { return 1 }
        let perProcess = max(1, openFilesLimit - max(256, openFilesLimit / 10))
        return max(1, (connections + perProcess - 1) / perProcess)
    }

    /// Most clients whose embedded target fits in one server process.
    static func singleProcessClients(openFilesLimit: Int, descriptorsPerClient: Int) -> Int {
        max(1, (openFilesLimit - max(256, openFilesLimit / 10)) / max(1, descriptorsPerClient))
    }

    /// The message schedule every loop follows, begun for a phase starting at `startNs`.
    public func schedule(for s: Scenario, startNs: UInt64) -> LoadSchedule {
        var schedule = LoadSchedule(totalClients: s.clients, connectRate: s.connectRate, loadModel: s.loadModel,
                                    totalRate: s.message.ratePerSecond, stages: s.message.stages, thinkTimeNs: thinkTimeNs, seed: s.seed)
        _ = schedule.beginMessages(startNs: startNs, endNs: startNs + durationNs)
        return schedule
    }
}
