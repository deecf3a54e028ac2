import StampedeLoop
import StampedeMetrics
import StampedeScenario

// `clients: {start, stages}`: the engine's 100 ms tick keeps the connected clients on the
// profile, asking the loops to let clients join as it rises and leave (cleanly) as it falls.
extension RunEngine {
    /// Joins or leaves clients so that as many are connected as the profile wants now.
    func followClientProfile(phaseStartNs t0: UInt64) {
        // A steered run's profile only holds clients back; the steering moves them.
        guard let profile = scenario.clientProfile, options.steering == nil else { return }
        let now = EventLoop.now()
        guard now >= t0 else { return }
        let t = seconds(now - t0)
        for waypoint in profile.waypoints(after: profileSeconds, through: t) {
            moveConnectedClients(toward: waypoint, atMost: .max)
        }
        profileSeconds = t
    }

    /// Asks clients to join or leave (up to `atMost` of them) toward `wanted` connected, shared
    /// out over the groups (this process's loops, or each worker); `profileClients` counts the
    /// joins less the leaves (a leave asked of a busy client is asked again at the next tick).
    func moveConnectedClients(toward given: Int, atMost: Int) {
        let wanted = min(given, scenario.clients)
        if wanted > profileClients {
            profileClients += shareOut(min(wanted - profileClients, atMost), over: groups.count) { i, n in groups[i].join(count: n) }
        } else if wanted < profileClients {
            profileClients -= shareOut(min(profileClients - wanted, atMost), over: groups.count) { i, n in groups[i].leave(count: n) }
        }
    }

    /// With a client profile the clients due each message change as it goes: an interval's
    /// messages are due to the clients connected at both its ends, less the sender (a lower
    /// bound: a client that joined or left during the interval is not counted).
    func addProfileFanoutDue(sent: UInt64, open: Int) {
        guard scenario.clientProfile != nil, expectsFanout else { return }
        profileFanoutDue += sent * UInt64(max(0, min(open, openAtLastInterval) - 1))
        openAtLastInterval = open
    }
}
