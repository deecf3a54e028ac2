import StampedeLoop

// `RunOptions.steering`: a capacity search on held connections changes the load between its
// steps. Clients join at the scenario's connect rate (a step of 20,000 more must not arrive as
// one SYN flood) and leave as fast; a new rate takes effect 20 ms on, on every loop and worker.
extension RunEngine {
    /// Applies the commands given since the last tick and moves the clients one tick's worth
    /// toward the wanted count; true when the message phase is to end now.
    func steer(_ steering: RunSteering, state: TickState) -> Bool {
        var end = false
        for command in steering.take() {
            switch command {
            case .connectedClients(let n):
                steeredClients = max(0, min(n, scenario.clients))
                // Each step asks from the clients really there: those a server refused in the
                // last step are not asked again (they would be refused again, or compound).
                profileClients = state.open + state.inFlight
            case .rate(let r):
                let at = EventLoop.now() + 20_000_000
                for g in groups { g.changeRate(to: r, atNs: at) }
                rateProfile = rateProfile.changing(to: r, atSeconds: signedSeconds(at, since: messageStartNs))
            case .endMessages:
                end = true
            }
        }
        if let wanted = steeredClients, wanted != profileClients {
            // One tick (100 ms) of the connect rate.
            moveConnectedClients(toward: wanted, atMost: max(1, Int(scenario.connectRate / 10)))
        }
        return end
    }
}
