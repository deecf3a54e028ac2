import StampedeMetrics

/// How one hub client comes back after losing its connection, and why it left: its reconnect
/// timeline, whether it was ever connected (a later connection is a reconnect), the storm that
/// hit it, and churn (leaving and joining again as a new user).
struct HubReconnectState {
    /// How a connection came about, as `connected()` tells it.
    enum Arrival { case first, reconnected, joinedAsNewUser, rampedUp }

    /// Attempts since the client was last connected, for the reconnect policy.
    var timeline = ReconnectTimeline()
    var everConnected = false
    /// The storm that hit this client, and its attempts since (see `StormBook`).
    var storm = StormClientTrack()
    /// Churn: this client left and is joining again as a new user.
    var churnJoining = false
    /// Churn: how many new users this client has been (part of the user's name).
    var churnGeneration: UInt32 = 0
    /// `clients.stages`: not connected because the profile does not want it now, and joining
    /// because the profile rose.
    var parked = false
    var rampJoining = false

    /// The client is connected (handshake done, joined): the policy starts afresh.
    mutating func connected() -> Arrival {
        timeline.connected()
        if rampJoining {
            rampJoining = false
            churnJoining = false
            everConnected = true
            return .rampedUp
        }
        guard everConnected else {
            everConnected = true
            return .first
        }
        guard churnJoining else { return .reconnected }
        churnJoining = false
        return .joinedAsNewUser
    }

    /// `clients.stages` rose: the client joins as a new user (whether it was connected before or
    /// not); returns that user's generation.
    mutating func joinForProfile() -> UInt32 {
        parked = false
        rampJoining = true
        churnGeneration &+= 1
        return churnGeneration
    }

    /// Churn: the client leaves to join again as a new user; returns that user's generation.
    mutating func leaveForChurn() -> UInt32 {
        churnGeneration &+= 1
        churnJoining = true
        timeline.connected()
        return churnGeneration
    }
}
