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
            profileClients += shareOut(wanted - profileClients) { g, n in g.join(count: n) }
        } else if wanted < profileClients {
            profileClients -= shareOut(profileClients - wanted) { g, n in g.leave(count: n) }
        }
    }

    /// Asks the groups (this process's loops, or each worker) for even shares of `count`, then
    /// the ones with clients to spare for what is left; returns how many moved.
    func shareOut(_ count: Int, _ move: (any ClientGroup, Int) -> Int) -> Int {
        var done = 0
        for (j, g) in groups.enumerated() where done < count {
            done += move(g, (count - done + (groups.count - j) - 1) / (groups.count - j))
        }
        for g in groups where done < count { done += move(g, count - done) }
        return done
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
