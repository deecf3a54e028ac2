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

    /// - Parameters:
    ///   - loops: Loops asked for (`--loops`, default one per core).
    ///   - openFilesLimit: This process's limit (0: unknown, not checked).
    ///   - canSpawnTarget: Whether a `stampede` executable is there to run the target as a child.
    public init(scenario s: Scenario, loops: Int, openFilesLimit: Int, canSpawnTarget: Bool) {
        loopCount = max(1, min(loops, s.clients))
        let embedded = s.target == .embedded
        descriptorsPerClient = WorkloadKinds.kind(of: s.workload).descriptorsPerClient(s)
        let ours = s.clients * descriptorsPerClient + 64
        var needed = embedded ? s.clients * descriptorsPerClient * 2 + 64 : ours
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
        if openFilesLimit > 0 && needed > openFilesLimit {
            problem = "\(s.clients) clients need about \(needed) file descriptors \(embedded ? "(the embedded target holds the other end of every connection) " : "")but this process may open \(openFilesLimit). Use fewer clients, run the target in its own process (stampede serve), or split the load over several stampede processes."
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
                                    totalRate: s.message.ratePerSecond, thinkTimeNs: thinkTimeNs, seed: s.seed)
        _ = schedule.beginMessages(endNs: startNs + durationNs)
        return schedule
    }
}
