import StampedeLoop
import StampedeWire

extension HubServer {
    func poll(_ s: HubSocket, _ target: HubConnection?) {
        guard let c = target, !c.disposed else {
            respond(s, status: 404, reason: "Not Found", text: "No Connection with that ID")
            return
        }
        let now = EventLoop.now()
        guard let t = c.transport else {
            // The first GET starts the connection and returns at once.
            c.transport = .longPolling
            statistics.connectionsLongPolling += 1
            respond(s, status: 200, reason: "OK", text: nil)
            claim(c)
            c.disposeAt = now + disconnectTimeoutNs
            scheduleNext(c)
            return
        }
        guard t == .longPolling else {
            respond(s, status: 400, reason: "Bad Request", text: "Cannot change transports mid-connection")
            return
        }
        if let old = c.pollSocket, old != s.id { completePoll(c, old, status: 204) }
        if c.phase == .ended {
            if let q = c.lpQueue, !q.isEmpty {
                respondPoll(s, c, status: 200)
            } else {
                respond(s, status: 204, reason: "No Content", text: nil)
                dispose(c)
            }
            return
        }
        if let q = c.lpQueue, !q.isEmpty {
            respondPoll(s, c, status: 200)
            c.disposeAt = now + disconnectTimeoutNs
            scheduleNext(c)
            return
        }
        s.mode = .poll
        limits.noDeadline(s.id, loop)
        s.connection = c
        c.pollSocket = s.id
        c.pollDeadline = now + pollTimeoutNs
        c.disposeAt = .max
        scheduleNext(c)
    }

    /// Answers the open poll `socket` of `c` (200 with the queued messages, or 204).
    func completePoll(_ c: HubConnection, _ socketID: ConnectionID, status: Int) {
        c.pollSocket = nil
        c.pollDeadline = .max
        c.disposeAt = EventLoop.now() + disconnectTimeoutNs
        guard let s = socket(socketID) else { return }
        if status == 204 {
            respond(s, status: 204, reason: "No Content", text: nil)
        } else {
            respondPoll(s, c, status: 200)
        }
        if !c.disposed { scheduleNext(c) }
    }

    func respondPoll(_ s: HubSocket, _ c: HubConnection, status: Int) {
        let q = c.lpQueue
        let body = q.map { UnsafeRawBufferPointer($0.readable) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
        respond(s, status: status, reason: "OK",
                contentType: c.proto == .messagePack ? "application/octet-stream" : "text/plain; charset=utf-8", body: body)
        q?.clear()
        q?.shrinkIfIdle()
    }

    func queueForPoll(_ c: HubConnection, _ message: UnsafeRawBufferPointer) {
        let q: ByteBuffer
        if let existing = c.lpQueue { q = existing } else { q = ByteBuffer(); c.lpQueue = q }
        q.append(message)
        if q.count > configuration.limits.maxOutputBytes && !c.overflowed {
            c.overflowed = true
            wake(c, at: 0)
        }
        // Answer the open poll once this loop iteration has queued everything it will.
        if c.pollSocket != nil && !c.flushPending {
            c.flushPending = true
            wake(c, at: EventLoop.now())
        }
    }
}
