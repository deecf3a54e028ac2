import StampedeMetrics

/// What the live metrics endpoint shows: the run as it stood at the end of the latest interval.
/// The command line builds one from the engine's interval report (`RunOptions.intervalObserver`)
/// once a second; scrapes read the latest one. Counters and histograms are the run's totals
/// since it started, so they only grow, as OpenMetrics counters must.
public struct LiveSnapshot: Sendable {
    /// The scenario's name and workload (chat, hub, rest): the `scenario` and `workload` labels.
    public var scenario: String
    public var workload: String
    /// More labels for every sample (a capacity step's `step`), in name order after those two.
    /// A name that is not `[a-zA-Z_][a-zA-Z0-9_]*`, or that the families use themselves
    /// (scenario, workload, le, reason, class, stampede_run_phase), is left out.
    public var labels: [String: String] = [:]
    /// Where the run is: "starting" (before the first interval), the engine's phases
    /// ("ramp-up", "messages", "drain", "closing"), then "finished" after the last report.
    public var phase: String
    /// Seconds since the run started.
    public var elapsedSeconds: Double = 0
    /// Everything measured since the run started, every loop merged.
    public var totals = MetricsShard()
    /// Connections open, connecting and waiting to reconnect.
    public var open = 0
    public var connecting = 0
    public var reconnecting = 0
    /// The scenario's client count (the target number of connections).
    public var clients = 0
    /// The worst timer lateness of any client loop in the latest interval, seconds.
    public var timerLagSeconds: Double = 0
    /// CPU used over the latest interval as a fraction of one core (1 = one core busy; a
    /// process with several busy threads goes above 1): the whole process and the client loops.
    public var processCPURatio: Double = 0
    public var clientLoopCPURatio: Double = 0
    /// Client event loops (threads).
    public var loops = 0
    /// Resident memory of the generator process, bytes (0 when unknown).
    public var residentBytes: UInt64 = 0

    /// The phases a run goes through, in order: the states of `stampede_run_phase`.
    public static let phases = ["starting", "ramp-up", "messages", "drain", "closing", "finished"]

    /// A run that has not reported an interval yet: zero counts, phase "starting".
    public init(scenario: String, workload: String, phase: String = "starting") {
        self.scenario = scenario
        self.workload = workload
        self.phase = phase
    }
}
