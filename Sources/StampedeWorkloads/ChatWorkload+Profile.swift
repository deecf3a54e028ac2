import StampedeLoop
import StampedeMetrics

// `clients.stages`: the engine asks a loop's clients to join or leave as the profile of
// connected clients rises and falls. Leaving is a clean close (the WebSocket close handshake),
// counted `ramped_down`; joining is a new user in the room, starting its sends where the run is.
extension ChatWorkload {
    public func join(count: Int) -> Int {
        guard phase == .messages || phase == .rampUp, count > 0 else { return 0 }
        var joined = 0
        for k in plan.load.globalIndices.indices where joined < count && parked[k] {
            parked[k] = false
            rampJoining[k] = true
            if everOpened[k] {
                joinAsNewUser(k)
            } else {
                // Its first connect: no earlier user to replace.
                churnJoining[k] = true
                ws.connect(k)
            }
            joined += 1
        }
        return joined
    }

    public func leave(count: Int) -> Int {
        guard phase == .messages, count > 0 else { return 0 }
        var left = 0
        // From the last client down, so the clients that stay are the first ones.
        for k in plan.load.globalIndices.indices.reversed() where left < count {
            guard ws.isReady(k), outstanding[k] == 0, !churnLeaving[k], !ws.isReadingPaused(k) else { continue }
            dropDue(k)
            churnLeaving[k] = true
            parkOnClose[k] = true
            sendEpoch[k] &+= 1  // its send chain ends here
            ws.close(k)
            left += 1
        }
        return left
    }

    public func changeRate(to ratePerSecond: Double, atNs: UInt64) {
        guard plan.load.loadModel == .open else { return }
        schedule.changeRate(to: ratePerSecond, atNs: atNs)
        guard phase == .messages, schedule.paces else { return }
        // The clients whose chain runs: connected, or reconnecting with messages still falling
        // due (the open model goes on through a gap); not parked or leaving.
        for k in plan.load.globalIndices.indices where !parked[k] && !churnLeaving[k] && (ws.isReady(k) || reconnecting[k]) {
            sendEpoch[k] &+= 1
            let next = schedule.intended(slot: sendSlots[k], sequence: dueSequence[k])
            if schedule.isInPhase(next) { ws.schedule(at: next, token: token(.send, k)) }
        }
    }
}
