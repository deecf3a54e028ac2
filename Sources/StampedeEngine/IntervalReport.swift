import StampedeMetrics

/// What the engine knows at the end of each interval (once a second, and once more at the end
/// of the run): handed to `RunOptions.intervalObserver` for live outputs (the OpenMetrics
/// endpoint) and for `stampede capacity`, which judges a step on the intervals after its warm-up.
public struct IntervalReport: Sendable {
    /// Seconds since the run started, at the end of this interval.
    public var elapsedSeconds: Double
    /// Where the run was when the interval ended: "ramp-up", "messages", "drain", "closing".
    public var phase: String
    /// Seconds of the message phase at the start and the end of this interval (negative before
    /// the phase began; nil before it was scheduled).
    public var messagePhaseSeconds: ClosedRange<Double>?
    /// This interval's measurements, every loop merged.
    public var interval: MetricsShard
    /// Everything since the run started, every loop merged (this interval included).
    public var totals: MetricsShard
    /// Connections open, connecting and waiting to reconnect at the end of the interval.
    public var open: Int
    public var connecting: Int
    public var reconnecting: Int
    /// The scenario's client count.
    public var clients: Int
    /// The worst timer lateness of any client loop in this interval, nanoseconds.
    public var timerLagNs: UInt64
    /// Process CPU and client-loop CPU over this interval, percent of one core (0 for an interval under 0.5 s).
    public var processCPUPercent: Double
    public var clientLoopCPUPercent: Double
    /// Client event loops (threads): 100 % each is the most the loops can use.
    public var loops: Int
    /// Resident memory of this process, bytes (0 when unknown).
    public var residentBytes: UInt64
    /// True for the last report of the run.
    public var final: Bool
    /// The population whose engine made the report, in a run of several (nil otherwise).
    public var population: String? = nil
}
