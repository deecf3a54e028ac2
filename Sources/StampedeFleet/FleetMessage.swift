import StampedeMetrics

/// The coordinator–worker protocol (docs/distributed.md). One stream per worker (a pipe pair to a
/// local worker process, a TCP connection to `stampede worker`), carrying frames of
/// `[UInt32 little-endian length][type byte][fields]`. The coordinator commands and asks; the
/// worker answers every request (the cases ending in `Request`, `hello`, `clockProbe` and `plan`)
/// in order and never speaks otherwise. Every instant is in the worker's own monotonic clock:
/// the coordinator converts its own with the offset it measured (`ClockOffsetEstimator`).
public enum FleetMessage: Sendable {
    // Coordinator → worker.
    case hello(version: UInt32)
    case clockProbe(coordinatorNs: UInt64)
    case plan(WorkerPlan)
    case beginRampUp(startNs: UInt64)
    case beginMessages(startNs: UInt64, endNs: UInt64)
    case dropConnections(fraction: Double)
    case storm(index: Int, atNs: UInt64, fraction: Double, mode: String, stallNs: UInt64)
    case watch(index: Int, atNs: UInt64)
    case churn(count: Int)
    /// `clients.stages`: up to `count` clients join, or leave; answered with `moved`.
    case join(count: Int)
    case leave(count: Int)
    /// Open model, a capacity search on held connections: the rate across all clients of the run
    /// from `atNs` on (`LoopWorkload.changeRate`).
    case changeRate(ratePerSecond: Double, atNs: UInt64)
    case beginDrain
    case closeAll(lostReason: LossReason)
    case stateRequest
    case intervalRequest
    case liveRequest
    case stormsRequest
    /// The run is over: the worker stops its loops, answers `bye` and exits.
    case finish

    // Worker → coordinator.
    case helloReply(WorkerHello)
    case clockReply(coordinatorNs: UInt64, workerNs: UInt64)
    /// The worker's loops are up; its resident memory before any client connects.
    case ready(loops: Int, residentBytes: UInt64)
    /// The worker cannot run the plan (the target does not resolve there, a TLS file is missing …).
    case refused(String)
    case state(GroupState)
    case interval(GroupInterval)
    case live(Int)
    case storms([StormShard])
    /// How many clients a `join` or `leave` moved.
    case moved(Int)
    case bye

    /// Raised when either side changes a frame's layout.
    /// 2: a plan names its population (`WorkerPlan.population`); `join`, `leave` and `moved`
    /// (`clients.stages`). 3: `changeRate`, and a plan's `steered` load (`stampede capacity`).
    public static let version: UInt32 = 3
    /// No frame is longer (a full interval of 17 histograms is a few hundred KiB at most).
    public static let maxFrameBytes = 64 << 20
}

/// What a worker is asked to run: the scenario as the coordinator read it (text and overrides,
/// so both parse the same), its shard of the clients, and where an embedded target listens.
public struct WorkerPlan: Sendable, Equatable {
    public var scenarioYAML: String
    /// The scenario's path on the coordinator (messages name it; relative files resolve from it).
    public var scenarioFile: String
    /// `(flag, value)` overrides (`--clients`, `--duration`, `--target`).
    public var overrides: [[String]]
    /// This worker's shard: it runs the global clients `g` with `g % shardCount == shardIndex`.
    public var shardIndex: Int
    public var shardCount: Int
    /// Client event loops on the worker (0: one per core there).
    public var loops: Int
    /// The embedded target's port on the coordinator's host (0: the scenario's own target).
    public var embeddedPort: Int
    /// The embedded target's throw-away certificate, trusted for TLS ("" if none).
    public var embeddedCertificatePEM: String
    /// Worker clock − coordinator clock, nanoseconds: message stamps are written in the
    /// coordinator's clock, so a sender and a receiver on different hosts agree.
    public var clockOffsetNs: Int64
    /// The scenario's population whose clients this worker runs ("" for a scenario of one).
    public var population: String = ""
    /// The load the coordinator set for this run (`stampede capacity`), applied to the parsed
    /// scenario; nil: the scenario's own.
    public var steered: SteeredLoad? = nil

    public init(scenarioYAML: String, scenarioFile: String, overrides: [[String]], shardIndex: Int, shardCount: Int, loops: Int,
                embeddedPort: Int = 0, embeddedCertificatePEM: String = "", clockOffsetNs: Int64 = 0) {
        self.scenarioYAML = scenarioYAML; self.scenarioFile = scenarioFile; self.overrides = overrides
        self.shardIndex = shardIndex; self.shardCount = shardCount; self.loops = loops
        self.embeddedPort = embeddedPort; self.embeddedCertificatePEM = embeddedCertificatePEM; self.clockOffsetNs = clockOffsetNs
    }
}

/// The load of a run that `stampede capacity` runs: one step, or the whole search on held
/// connections (clients join and leave, the rate changes, as the search goes). Every process
/// applies it to the scenario it parsed, so the coordinator's plan, not a re-parse of a changed
/// file, says what the workers run.
public struct SteeredLoad: Sendable, Equatable {
    /// The clients the run may connect (every shard's share of them is set up).
    public var clients: Int
    /// Clients connected in the ramp-up; the rest are held back until the coordinator asks them to join.
    public var connectedAtStart: Int
    /// Open model: messages per second across all clients at the start of the message phase.
    public var ratePerSecond: Double
    /// The message phase's longest length, seconds (the coordinator ends it sooner).
    public var durationSeconds: Double
    public init(clients: Int, connectedAtStart: Int, ratePerSecond: Double, durationSeconds: Double) {
        self.clients = clients; self.connectedAtStart = connectedAtStart; self.ratePerSecond = ratePerSecond; self.durationSeconds = durationSeconds
    }
}

/// Who a worker is: its own idea of its shard index (`JOB_COMPLETION_INDEX`, -1 if none), its
/// process and host, and the kernel's boot id (two workers with the same one share a
/// monotonic clock exactly, so no offset is estimated between them).
public struct WorkerHello: Sendable, Equatable {
    public var version: UInt32
    public var index: Int
    public var count: Int
    public var pid: Int
    public var hostname: String
    public var bootID: String
    public init(version: UInt32, index: Int, count: Int, pid: Int, hostname: String, bootID: String) {
        self.version = version; self.index = index; self.count = count; self.pid = pid; self.hostname = hostname; self.bootID = bootID
    }
}

/// A group of clients' gauges at a tick (every 100 ms): what the engine's phase logic needs.
public struct GroupState: Sendable, Equatable {
    public var open = 0, inFlight = 0, notYetStarted = 0
    public var outstanding: UInt64 = 0
    /// Messages sent and broadcasts received since the last interval boundary.
    public var sent: UInt64 = 0, fanout: UInt64 = 0
    public init() {}
    public mutating func add(_ o: GroupState) {
        open += o.open; inFlight += o.inFlight; notYetStarted += o.notYetStarted
        outstanding += o.outstanding; sent += o.sent; fanout += o.fanout
    }
}

/// A group of clients' measurements for one interval, taken (and reset) at its boundary.
public struct GroupInterval: Sendable {
    public var metrics: MetricsShard
    public var open = 0, connecting = 0, reconnecting = 0
    public var timerLagNs: UInt64 = 0
    /// CPU of the group's client loops since they started (cumulative), nanoseconds.
    public var loopCPUNs: UInt64 = 0
    /// CPU of the group's whole process since it started, and its resident memory (0: the
    /// group shares the engine's process, which measures itself).
    public var processCPUNs: UInt64 = 0
    public var residentBytes: UInt64 = 0
    /// When the loops swapped out the interval's measurements (`EventLoop.now()`, their mean
    /// over the group's loops), so the interval's counts end exactly there; 0 when not known
    /// on this host's clock (a worker's). Not sent over the wire.
    public var boundaryNs: UInt64 = 0
    public init(metrics: MetricsShard = MetricsShard()) { self.metrics = metrics }
}
