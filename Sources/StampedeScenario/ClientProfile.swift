/// Connected clients over the message phase (`clients: {start, stages}`, k6's ramping VUs):
/// `start` connect in the ramp-up, then each stage goes linearly from the previous count to its
/// `target` over its `duration`; after the last stage the count holds.
public struct ClientProfile: Sendable, Equatable {
    public var start: Int
    public var stages: [ClientStage]

    public init(start: Int, stages: [ClientStage]) { self.start = start; self.stages = stages }

    /// The most clients connected at once: the scenario's `clients`.
    public var peak: Int { stages.reduce(start) { max($0, $1.target) } }

    /// The stages' total length, seconds.
    public var totalSeconds: Double { stages.reduce(0) { $0 + $1.durationSeconds } }

    /// Clients meant to be connected `t` seconds into the message phase (rounded to the nearest).
    public func clients(atSeconds t: Double) -> Int {
        var from = Double(start), elapsed = 0.0
        for stage in stages {
            let to = Double(stage.target)
            if t < elapsed + stage.durationSeconds {
                let f = stage.durationSeconds > 0 ? max(0, t - elapsed) / stage.durationSeconds : 1
                return Int((from + (to - from) * f).rounded())
            }
            elapsed += stage.durationSeconds
            from = to
        }
        return Int(from)
    }

    /// The counts a follower ticking at `a` and then at `b` seconds should move through: the
    /// target of every stage that ends after `a` and by `b`, then the count at `b`. A tick that
    /// comes late still reaches each stage's target (as k6's ramping executors do) instead of
    /// cutting a peak short between two ticks.
    public func waypoints(after a: Double, through b: Double) -> [Int] {
        var out: [Int] = []
        var elapsed = 0.0
        for stage in stages {
            elapsed += stage.durationSeconds
            if elapsed > a && elapsed <= b { out.append(stage.target) }
        }
        out.append(clients(atSeconds: b))
        return out
    }
}

/// One stage of `clients.stages`: reach `target` connected clients over `duration`.
public struct ClientStage: Sendable, Equatable {
    public var durationSeconds: Double
    public var target: Int
    public init(durationSeconds: Double, target: Int) { self.durationSeconds = durationSeconds; self.target = target }
}
