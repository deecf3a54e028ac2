import StampedeScenario

/// The load one loop's clients put on the server, the same for every workload that holds it:
/// how many clients the run has and which of them are on this loop, how fast they connect and
/// send (the `LoadSchedule` made from it), and what becomes of sends that fall due while a
/// client reconnects.
public struct LoadPlan: Sendable {
    public var totalClients: Int
    /// Global indices of the clients on this loop.
    public var globalIndices: [Int]
    public var connectRate: Double
    public var loadModel: LoadModel
    /// Open model: messages per second over all clients (with stages, where the first starts).
    public var totalRate: Double
    /// Open model: `message.stages`, the rate over the phase (empty: `totalRate` throughout).
    public var rateStages: [RateStage] = []
    public var thinkTimeNs: UInt64
    /// Seeds the open model's permutation of send slots (the scenario's seed).
    public var seed: UInt64 = 0
    /// Open model: what happens to messages that fall due while a client is reconnecting
    /// (waiting for its reconnect delay, or restarting).
    public var whileDisconnected: DisconnectedSends = .drop
    /// `queue`: the most messages one client keeps while it reconnects. The queue is only a
    /// count (sequence numbers; each message is written when it is sent), so this bounds the
    /// burst a client sends when it is back, not memory; when it is full the oldest is dropped
    /// and counted (`dropped_while_disconnected`), as an app's bounded send queue would.
    public var maxQueuedWhileDisconnected: UInt32 = 10_000
    /// Added to a client's global index where it names the client to other clients (the
    /// sender in its message stamps, its user name): the clients of the populations before this
    /// one (`Scenario.clientIndexBase`), so that populations sharing a server never take each
    /// other's messages for their own.
    public var senderBase: Int = 0
    /// `clients.stages`: only the clients with a global index below this connect in the
    /// ramp-up; the others wait for the profile to call them (`join`). Nil: every client.
    public var initialClients: Int? = nil

    /// The sender id in client `k`'s message stamps.
    @inline(__always) public func sender(_ k: Int) -> UInt32 { UInt32(truncatingIfNeeded: senderBase &+ globalIndices[k]) }

    public init(totalClients: Int, globalIndices: [Int], connectRate: Double, loadModel: LoadModel, totalRate: Double,
                thinkTimeNs: UInt64) {
        self.totalClients = totalClients; self.globalIndices = globalIndices; self.connectRate = connectRate
        self.loadModel = loadModel; self.totalRate = totalRate; self.thinkTimeNs = thinkTimeNs
    }

    /// How many of the messages due while a client reconnects it keeps for after (the rest are
    /// dropped and counted): none with `drop`.
    var keptWhileDisconnected: UInt32 { whileDisconnected == .queue ? maxQueuedWhileDisconnected : 0 }

    /// When this loop's clients connect and send.
    var schedule: LoadSchedule {
        LoadSchedule(totalClients: totalClients, connectRate: connectRate, loadModel: loadModel, totalRate: totalRate,
                     stages: rateStages, thinkTimeNs: thinkTimeNs, seed: seed)
    }
}
