import StampedeLoop
import StampedeMetrics
import StampedeScenario

// `clients: {start, stages}`: the engine's 100 ms tick keeps the connected clients on the
// profile, asking the loops to let clients join as it rises and leave (cleanly) as it falls.
extension RunEngine {
    /// Joins or leaves clients so that as many are connected as the profile wants now.
    func followClientProfile(phaseStartNs t0: UInt64) {
        guard let profile = scenario.clientProfile else { return }
        let now = EventLoop.now()
        guard now >= t0 else { return }
        let wanted = min(profile.clients(atSeconds: seconds(now - t0)), scenario.clients)
        if wanted > profileClients {
            profileClients += groups.reduce(0) { n, g in n + (n + profileClients < wanted ? g.join(count: wanted - profileClients - n) : 0) }
        } else if wanted < profileClients {
            profileClients -= groups.reduce(0) { n, g in n + (profileClients - n > wanted ? g.leave(count: profileClients - n - wanted) : 0) }
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
