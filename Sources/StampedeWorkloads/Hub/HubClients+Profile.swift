import StampedeLoop
import StampedeMetrics

// `clients.stages` for hub clients: leaving is the churn's clean leave (a Close message, then
// the transport), counted `ramped_down`; joining starts a new user, counted `ramped_up` once
// connected, sending from where the run is.
extension HubClients {
    public func join(count: Int) -> Int {
        guard phase == .messages || phase == .rampUp, count > 0 else { return 0 }
        var joined = 0
        for k in clients.indices where joined < count && clients[k].reconnect.parked {
            let generation = clients[k].reconnect.joinForProfile()
            userNames[k] = Array("\(plan.runTag)-user-\(plan.load.senderBase + plan.load.globalIndices[k])-\(generation)".utf8)
            start(k)
            joined += 1
        }
        return joined
    }

    public func leave(count: Int) -> Int {
        guard phase == .messages, count > 0 else { return 0 }
        var left = 0
        for k in clients.indices.reversed() where left < count {
            guard clients[k].phase == .connected, clients[k].connections.mainState != .none, clients[k].calls.outstanding == 0, !sessions[k].isResuming,
                  !loop.isReadingPaused(clients[k].connections.main) else { continue }
            leaveCleanly(k)
            clients[k].reconnect.parked = true
            metrics.count(.rampedDown)
            left += 1
        }
        return left
    }

    public func changeRate(to ratePerSecond: Double, atNs: UInt64) {
        guard plan.load.loadModel == .open else { return }
        schedule.changeRate(to: ratePerSecond, atNs: atNs)
        guard phase == .messages, plan.spec.operation != .none && plan.spec.call != nil else { return }
        for k in clients.indices {
            if let next = clients[k].calls.rearm(on: schedule) {
                loop.schedule(at: next, token: sendToken(k))
            } else if !clients[k].calls.sendChain, clients[k].phase == .connected {
                // Its chain ended while the rate was 0 (a pause): it picks the schedule up now.
                rejoinSchedule(k)
            }
        }
    }
}
