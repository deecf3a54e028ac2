import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeSession
import StampedeWire

// The poll schedule: when each (client, resource) poll is due, its timers, and which idle
// pooled connection sends it.

extension RestClients {
    // MARK: Scheduling

    @inline(__always) func token(_ kind: TimerKind, _ index: Int, epoch: UInt32 = 0) -> TimerToken {
        TimerToken(kind, slot: index, epoch: epoch)
    }

    func schedulePoll(_ q: Int, at t: UInt64) {
        guard t < messagesEndNs else { return }
        loop.schedule(at: t, token: token(.poll, q, epoch: UInt32(polls[q].epoch)))
    }

    @inline(__always) func intended(_ q: Int, _ sequence: UInt32) -> UInt64 {
        polls[q].scheduleStartNs + UInt64(sequence) * polls[q].intervalNs
    }

    /// Restarts resource `q`'s schedule at `t` with its current interval (a processor changed
    /// it, or a rate limit ends): what was due and not sent is dropped from the schedule.
    func restartSchedule(_ q: Int, at t: UInt64) {
        polls[q].epoch &+= 1
        polls[q].scheduleStartNs = t
        polls[q].nextSequence = 0
        polls[q].dueSequence = 0
        if phase == .messages { schedulePoll(q, at: t) }
    }

    public func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {
        let index = token.index
        let epoch = token.epoch
        let kind = token.kind(as: TimerKind.self)
        switch kind {
        case .connect:
            notYetStarted -= 1
            guard phase == .rampUp else { return }
            clients[index].started = true
            openConnection(index * poolSize)
        case .poll:
            let q = index
            guard UInt32(polls[q].epoch) == epoch, phase == .messages, !polls[q].stopped else { return }
            let k = q / resourceCount
            // A schedule this far behind has long stopped meaning anything; end it rather than trap.
            guard !clients[k].stopped, polls[q].dueSequence < UInt32.max else { return }
            polls[q].dueSequence += 1
            if plan.loadModel == .open { schedulePoll(q, at: intended(q, polls[q].dueSequence)) }
            dispatch(k)
        case .response:
            let c = index
            guard connections[c].epoch == epoch, connections[c].state == .busy else { return }
            // The exchange tells a stale deadline (an earlier request's) from its own, and turns
            // a passed first-byte deadline into the whole response's once the head has come.
            switch connections[c].exchange.timerFired(deadline: deadline, now: EventLoop.now()) {
            case .nothing:
                return
            case .armTimer(let at):
                loop.schedule(at: at, token: self.token(.response, c, epoch: connections[c].epoch))
            case .ended(let end):
                exchangeEnded(c, end)
            }
        case .stallEnd:
            let c = index
            guard connections[c].epoch == epoch, connections[c].state != .none, loop.isReadingPaused(connections[c].id) else { return }
            loop.pauseReading(connections[c].id, false)
            stormBook.recovered(&clients[c / poolSize].storm, nowNs: EventLoop.now())
        case nil:
            break
        }
    }

    /// Sends what is due for client `k` on its idle connections, oldest intended time first,
    /// opening another pooled connection when every open one is busy.
    func dispatch(_ k: Int) {
        guard !clients[k].stopped, phase == .messages || phase == .draining else { return }
        let now = EventLoop.now()
        while true {
            var best = -1
            var bestAt = UInt64.max
            for r in 0..<resourceCount {
                let q = k * resourceCount + r
                let p = polls[q]
                guard !p.inFlight, !p.stopped, p.dueSequence > p.nextSequence, p.resumeAtNs <= now else { continue }
                let at = intended(q, p.nextSequence)
                if at < bestAt { best = q; bestAt = at }
            }
            guard best >= 0 else { return }
            var idle = -1
            var free = -1
            for c in k * poolSize..<(k + 1) * poolSize {
                if connections[c].state == .idle { idle = c; break }
                if connections[c].state == .none && free < 0 { free = c }
            }
            if idle < 0 {
                let connecting = (k * poolSize..<(k + 1) * poolSize).contains { connections[$0].state == .connecting }
                if free >= 0 && !connecting { openConnection(free) }
                return
            }
            send(best, on: idle, intendedNs: bestAt, target: nil)
        }
    }
}
