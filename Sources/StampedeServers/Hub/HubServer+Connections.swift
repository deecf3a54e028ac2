import StampedeLoop
import StampedeSession
import StampedeWire

extension HubServer {
    // MARK: Connection table

    func newConnection(negotiateVersion: Int, statefulReconnect: Bool) -> HubConnection {
        // Every connection starts unclaimed (a WebSocket without negotiate is claimed at once).
        while statistics.unclaimed >= max(1, configuration.maxUnclaimedNegotiations),
              let oldest = unclaimed.popOldest(connections) {
            statistics.unclaimedEvicted += 1
            dispose(oldest)
        }
        let index: Int
        if let free = freeConnections.popLast() {
            index = free
        } else {
            index = connections.count
            connections.append(nil)
            connectionGenerations.append(0)
        }
        let id = HubBytes.randomId(&random)
        let token = negotiateVersion >= 1 ? HubBytes.randomId(&random) : id
        let c = HubConnection(index: index, generation: connectionGenerations[index], connectionId: id, tokenBytes: token,
                              statefulNegotiated: statefulReconnect)
        connections[index] = c
        byToken[c.token] = c
        statistics.unclaimed += 1
        unclaimed.append(c, live: statistics.unclaimed, connections)
        c.disposeAt = EventLoop.now() + disconnectTimeoutNs
        scheduleNext(c)
        return c
    }

    /// A transport took the connection: the handshake may start.
    func claim(_ c: HubConnection) {
        if c.phase == .negotiated { statistics.unclaimed -= 1 }
        let now = EventLoop.now()
        c.phase = .handshaking
        c.handshakeDeadline = now + handshakeTimeoutNs
        c.disposeAt = .max
        c.lastReceived = now
        c.lastSent = now
        c.counted = true
        statistics.open += 1
        if let early = c.earlyInput {
            c.earlyInput = nil
            feed(c, UnsafeRawBufferPointer(early.readable))
        }
        if !c.disposed { scheduleNext(c) }
    }

    /// Gives back `c`'s `--max-connections` slot, if it holds one (its WebSocket ended).
    func releaseSlot(_ c: HubConnection) {
        guard c.holdsSlot else { return }
        c.holdsSlot = false
        connectionQuota?.release()
    }

    /// `--max-connections`: answers `s` 503 when the limit is reached (and disposes `c`, the
    /// connection it would have carried, if it is not claimed yet). Returns whether it did.
    func refusedForQuota(_ s: HubSocket, _ c: HubConnection?, take: Bool) -> Bool {
        guard let q = connectionQuota else { return false }
        if take ? q.acquire() : q.current < q.limit {
            if take, let c { c.holdsSlot = true }
            return false
        }
        statistics.connectionsRefused += 1
        ConnectionQuota.refuse(loop, s.id)
        forget(s)
        if let c, c.phase == .negotiated { dispose(c) }
        return true
    }

    /// Forgets the connection entirely (its id answers 404 from now on).
    func dispose(_ c: HubConnection) {
        guard !c.disposed else { return }
        if c.phase == .negotiated { statistics.unclaimed -= 1 }
        if c.phase != .ended { detachHub(c) }
        if c.counted {
            c.counted = false
            statistics.open -= 1
            statistics.closes += 1
        }
        releaseSlot(c)
        if let p = c.pollSocket { completePoll(c, p, status: 204) }
        if let id = c.socket, let s = socket(id) {
            loop.closeAfterFlush(id)
            forget(s)
        }
        c.socket = nil
        c.disposed = true
        c.phase = .ended
        if byToken[c.token] === c { byToken[c.token] = nil }
        connections[c.index] = nil
        connectionGenerations[c.index] &+= 1
        freeConnections.append(c.index)
        c.lpQueue = nil
        c.inbound = nil
        c.earlyInput = nil
    }

    /// Removes the connection from the hub: broadcast list, groups, streams, pending calls.
    func detachHub(_ c: HubConnection) {
        if c.memberIndex >= 0 {
            let last = members.removeLast()
            if c.memberIndex < members.count {
                members[c.memberIndex] = last
                last.memberIndex = c.memberIndex
            }
            c.memberIndex = -1
        }
        while let m = c.groups.last { groups.leave(c, m.group) }
        for si in c.streams { freeStream(si) }
        c.streams.removeAll()
        c.uploads.removeAll()
        c.clientResults.removeAll()
        c.stateful = nil
        c.inbound = nil
        c.earlyInput = nil
    }

    /// Ends a connection: optionally a Close message first, then the transport is closed (a
    /// long-polling connection stays as `ended` until its next poll collects what is queued).
    func endConnection(_ c: HubConnection, close: HubCloseInfo?) {
        guard !c.disposed, c.phase != .ended else { return }
        if let close, c.phase == .open { sendClose(c, close) }
        detachHub(c)
        if c.counted {
            c.counted = false
            statistics.open -= 1
            statistics.closes += 1
        }
        releaseSlot(c)
        c.phase = .ended
        c.handshakeDeadline = .max
        switch c.transport {
        case .webSockets?, .serverSentEvents?:
            if let id = c.socket, let s = socket(id) {
                if c.transport == .webSockets {
                    sendWebSocketClose(s)
                } else if c.sseChunked {
                    let last = HTTPResponseWriter.lastChunk
                    loop.write(id, UnsafeRawBufferPointer(start: last.utf8Start, count: last.utf8CodeUnitCount))
                }
                loop.closeAfterFlush(id)
                forget(s)
            }
            c.socket = nil
            dispose(c)
        case .longPolling?:
            let hasData = !(c.lpQueue?.isEmpty ?? true)
            if let p = c.pollSocket {
                completePoll(c, p, status: hasData ? 200 : 204)
                if !hasData {
                    dispose(c)
                    return
                }
            }
            c.disposeAt = EventLoop.now() + disconnectTimeoutNs
            scheduleNext(c)
        case nil:
            dispose(c)
        }
    }

    /// The WebSocket or SSE socket went away without a Close.
    func transportLost(_ c: HubConnection) {
        if c.phase == .open, c.stateful != nil, c.transport == .webSockets, !isShutDown {
            // Stateful reconnect: keep everything for `disconnectTimeout` and wait for the client.
            c.disposeAt = EventLoop.now() + disconnectTimeoutNs
            scheduleNext(c)
            return
        }
        endConnection(c, close: nil)
    }

    // MARK: Timers

    func wake(_ c: HubConnection, at deadline: UInt64) {
        guard deadline < c.nextWake else { return }
        c.nextWake = deadline
        loop.schedule(at: deadline, token: TimerToken(HubTimer.connection, slot: c.index, epoch: c.generation))
    }

    func scheduleNext(_ c: HubConnection) {
        guard !c.disposed else { return }
        var next = min(c.disposeAt, c.handshakeDeadline, c.pollDeadline)
        if c.flushPending || c.overflowed { next = 0 }
        if c.phase == .open, c.socket != nil, c.transport == .webSockets || c.transport == .serverSentEvents {
            next = min(next, c.lastSent &+ keepAliveNs, c.lastReceived &+ clientTimeoutNs)
            if let st = c.stateful { next = min(next, st.ackDue) }
        }
        if next != .max { wake(c, at: next) }
    }

    /// Acts on whatever is due for `c`.
    func evaluate(_ c: HubConnection, now: UInt64) {
        if c.overflowed {
            c.overflowed = false
            statistics.limits.slowConsumersDropped += 1
            c.lpQueue = nil  // what it could not keep up with is not kept for it either
            endConnection(c, close: nil)
            if !c.disposed { dispose(c) }
            return
        }
        switch c.phase {
        case .negotiated:
            if now >= c.disposeAt {
                statistics.unclaimedDisposed += 1
                dispose(c)
            }
            return
        case .ended:
            if let p = c.pollSocket, let q = c.lpQueue, !q.isEmpty {
                completePoll(c, p, status: 200)
            } else if now >= c.disposeAt {
                dispose(c)
            }
            return
        case .handshaking, .open:
            break
        }
        if c.phase == .handshaking && now >= c.handshakeDeadline {
            statistics.handshakeTimeouts += 1
            handshakeFailed(c, "Handshake was canceled.")
            return
        }
        switch c.transport {
        case .longPolling?:
            c.flushPending = false
            if let p = c.pollSocket {
                if let q = c.lpQueue, !q.isEmpty {
                    completePoll(c, p, status: 200)
                } else if now >= c.pollDeadline {
                    statistics.pollTimeouts += 1
                    completePoll(c, p, status: 200)
                }
            } else if now >= c.disposeAt {
                statistics.pollAbandoned += 1
                endConnection(c, close: nil)
                if !c.disposed { dispose(c) }
            }
        case .webSockets?, .serverSentEvents?:
            if c.socket == nil {
                if now >= c.disposeAt { endConnection(c, close: nil) }
                return
            }
            guard c.phase == .open else { return }
            if now >= c.lastReceived &+ clientTimeoutNs {
                statistics.clientTimeouts += 1
                endConnection(c, close: HubCloseInfo(error: "Connection closed with an error.", allowReconnect: true))
                return
            }
            if now >= c.lastSent &+ keepAliveNs { sendPing(c) }
            if let st = c.stateful, now >= st.ackDue { sendAck(c) }
        case nil:
            break
        }
    }

    // MARK: Output

    /// Sends one or more complete framed hub messages in `c`'s protocol over its transport.
    /// `numbered`: a message of types 1–5, kept for replay on stateful connections.
    func send(_ c: HubConnection, _ message: UnsafeRawBufferPointer, numbered: Bool = true) {
        if numbered, let st = c.stateful { recordStateful(c, st, message) }
        switch c.transport {
        case .webSockets?:
            // A socket past the output limit is closed by the loop (see `ServerLimits`).
            guard let s = c.socket else { return }
            writeFrame(s, c.proto == .json ? .text : .binary, message)
        case .serverSentEvents?:
            guard let s = c.socket else { return }
            writeEvent(s, chunked: c.sseChunked, message)
        case .longPolling?:
            queueForPoll(c, message)
        case nil:
            return
        }
        c.lastSent = EventLoop.now()
    }

    func sendPing(_ c: HubConnection) {
        let m: UnsafeRawBufferPointer?
        switch c.proto {
        case .json: m = out.write { JSONHubProtocol.writePing(into: $0) }
        case .messagePack: m = out.write { MessagePackHubProtocol.writePing(into: $0) }
        }
        guard let m else { return }
        statistics.pingsSent += 1
        send(c, m, numbered: false)
    }

    func sendClose(_ c: HubConnection, _ info: HubCloseInfo) {
        func write<P: HubProtocolCodec>(_ p: P.Type) -> UnsafeRawBufferPointer? {
            if var e = info.error {
                return e.withUTF8 { e in out.write { P.writeClose(into: $0, error: .utf8(UnsafeRawBufferPointer(e)), allowReconnect: info.allowReconnect) } }
            }
            return out.write { P.writeClose(into: $0, error: nil, allowReconnect: info.allowReconnect) }
        }
        let m = c.proto == .json ? write(JSONHubProtocol.self) : write(MessagePackHubProtocol.self)
        guard let m else { return }
        statistics.closeMessagesSent += 1
        send(c, m, numbered: false)
    }
}
