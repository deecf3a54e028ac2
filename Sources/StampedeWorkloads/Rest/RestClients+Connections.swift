import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeSession
import StampedeWire

// The connection pool as a runtime of `HTTPClientExchange`: requests written, response bytes fed
// to the connection's exchange and its actions carried out on the loop, connections opened and
// lost.

extension RestClients {
    // MARK: Requests

    func send(_ q: Int, on c: Int, intendedNs: UInt64, target: [UInt8]?) {
        let r = q % resourceCount
        let etagLength = Int(polls[q].etagLength)
        let line = requestLines[r]
        let total = (target.map { $0.count + 16 } ?? line.count) + commonHeaders.count + (etagLength > 0 ? etagLength + 17 : 0) + 2
        loop.write(connections[c].id, reserving: total) { out in
            var n = 0
            @inline(__always) func put(_ bytes: UnsafeRawBufferPointer) {
                (out + n).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
                n += bytes.count
            }
            if let target {
                Self.get.withUnsafeBytes(put)
                target.withUnsafeBytes(put)
                Self.http11.withUnsafeBytes(put)
            } else {
                line.withUnsafeBytes(put)
            }
            commonHeaders.withUnsafeBytes(put)
            if etagLength > 0 {
                Self.ifNoneMatch.withUnsafeBytes(put)
                etags.withUnsafeBytes { put(UnsafeRawBufferPointer(rebasing: $0[q * Self.maxETagBytes..<q * Self.maxETagBytes + etagLength])) }
                out.storeBytes(of: 0x0A0D, toByteOffset: n, as: UInt16.self); n += 2
            }
            out.storeBytes(of: 0x0A0D, toByteOffset: n, as: UInt16.self); n += 2
            metrics.count(.bytesSent, UInt64(n))
            return n
        }
        let now = EventLoop.now()
        if target == nil {
            polls[q].nextSequence += 1
            polls[q].inFlight = true
            metrics.count(.messagesSent)
            totalOutstanding += 1
            connections[c].redirectsLeft = plan.spec.maxRedirects
        }
        connections[c].state = .busy
        connections[c].slot = q
        connections[c].intendedNs = intendedNs
        connections[c].sentNs = now
        connections[c].changedAt = nil
        connections[c].retryAfterSeconds = nil
        connections[c].etag.removeAll(keepingCapacity: true)
        connections[c].location.removeAll(keepingCapacity: true)
        connections[c].closeAfter = false
        // One timer per request: the exchange asks for the first-byte deadline, and for the
        // whole response's when that passes after the head came (a heap entry costs as much as
        // the rest).
        if let deadline = connections[c].exchange.start(method: .get, body: .discard, now: now) {
            loop.schedule(at: deadline, token: token(.response, c, epoch: connections[c].epoch))
        }
    }

    // MARK: Connections

    func openConnection(_ c: Int) {
        let k = c / poolSize
        connections[c].epoch &+= 1
        connections[c].exchange.reset()
        metrics.count(.connectAttempts)
        stormBook.attempt(&clients[k].storm, nowNs: EventLoop.now())
        let source = plan.sourceAddresses.isEmpty ? nil : plan.sourceAddresses[c % plan.sourceAddresses.count]
        let target = plan.addresses.isEmpty ? plan.address : plan.addresses[k % plan.addresses.count]
        switch loop.connectClient(to: target, from: source, timeoutNs: plan.connectTimeoutNs, tls: plan.tls, client: k, random: &random) {
        case .success(let id):
            connections[c].id = id
            connections[c].state = .connecting
            connections[c].connectStartNs = EventLoop.now()
            inFlightConnects += 1
            bind(id, c)
        case .failure(let e):
            metrics.count(.connectFailed)
            metrics.error(.connectFailure(e.errno))
        }
    }

    func bind(_ id: ConnectionID, _ c: Int) {
        let i = Int(id.index)
        if i >= slotConnection.count { slotConnection.append(contentsOf: repeatElement(-1, count: i + 1 - slotConnection.count + 64)) }
        slotConnection[i] = Int32(c)
    }

    @inline(__always) func owner(_ id: ConnectionID) -> Int? {
        let i = Int(id.index)
        guard i < slotConnection.count, slotConnection[i] >= 0 else { return nil }
        let c = Int(slotConnection[i])
        return connections[c].id == id && connections[c].state != .none ? c : nil
    }

    public func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {
        guard let c = owner(id) else { return }
        let k = c / poolSize
        inFlightConnects -= 1
        guard error == 0 else {
            connections[c].state = .none
            metrics.count(.connectFailed)
            metrics.error(.connectFailure(error))
            return
        }
        metrics.recordConnected(id, loop: loop, startNs: connections[c].connectStartNs, nowNs: EventLoop.now())
        metrics.count(.connected)
        connections[c].state = .idle
        if clients[k].openConnections == 0 { openCount += 1 }
        clients[k].openConnections += 1
        stormBook.recovered(&clients[k].storm, nowNs: EventLoop.now())
        dispatch(k)
    }

    public func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) { loop.close(id) }

    /// Closes connection `c` (its request, if any, already accounted for).
    func closeConnection(_ c: Int, reset: Bool) {
        guard connections[c].state != .none else { return }
        loop.close(connections[c].id, reset: reset)
        connectionGone(c)
    }

    func connectionGone(_ c: Int) {
        let k = c / poolSize
        if connections[c].state == .connecting { inFlightConnects -= 1 }
        if connections[c].state == .idle || connections[c].state == .busy {
            clients[k].openConnections -= 1
            if clients[k].openConnections == 0 { openCount -= 1 }
            metrics.count(.disconnected)
            if phase == .messages || phase == .draining { stormBook.dropped(&clients[k].storm) }
        }
        connections[c].state = .none
        connections[c].epoch &+= 1
        connections[c].slot = -1
    }

    func loseInFlight(_ c: Int, _ reason: LossReason) {
        let q = connections[c].slot
        guard q >= 0, connections[c].state == .busy else { return }
        polls[q].inFlight = false
        metrics.lose(reason)
        totalOutstanding -= 1
        connections[c].slot = -1
    }

    public func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {
        guard let c = owner(id) else { return }
        if connections[c].state == .busy {
            if case .complete? = connections[c].exchange.connectionClosed() {
                // A read-until-close body ended with the connection: the answer is complete.
                connections[c].closeAfter = true
                finish(c)
                if connections[c].state == .none { return }
            } else {
                metrics.error(reason == .endOfFile ? .unexpectedEOF : .connectionReset)
                loseInFlight(c, .connectionClosed)
            }
        }
        connectionGone(c)
        dispatch(c / poolSize)
    }

    public func writable(_ id: ConnectionID, loop: EventLoop) {}

    // MARK: Responses

    public func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        guard let c = owner(id) else { return buffer.count }
        metrics.count(.bytesReceived, UInt64(buffer.count))
        let bytes = UnsafeRawBufferPointer(buffer)
        guard connections[c].state == .busy else {
            // Bytes with no request outstanding: the server is not speaking HTTP to us.
            metrics.error(.protocolError)
            closeConnection(c, reset: true)
            return bytes.count
        }
        var offset = 0
        while true {
            let view = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let (action, used) = connections[c].exchange.next(view)
            switch action {
            case .needMore:
                return offset + used
            case .head(let head):
                readHead(c, head, view)
            case .body, .event, .heldEvent:
                break  // REST bodies are discarded or collected, never reported in pieces
            case .complete(let reusable):
                offset += used
                connections[c].closeAfter = !reusable
                finish(c)
                // `finish` may have closed this connection, or sent the next request on it (whose
                // answer cannot be in these bytes yet).
                guard connections[c].id == id, connections[c].state != .none else { return bytes.count }
                if connections[c].state != .busy { return offset }
                continue
            case .ended(let end):
                exchangeEnded(c, end)
                return bytes.count
            }
            offset += used
        }
    }

    /// The exchange on connection `c` failed: count it as before the exchange existed (a
    /// timeout, a response too large, a protocol error), lose the poll, reset the connection.
    func exchangeEnded(_ c: Int, _ end: HTTPExchangeEnd) {
        let loss: LossReason
        switch end {
        case .firstByteTimeout, .responseTimeout:
            metrics.error(.responseTimeout)
            loss = .timedOut
        case .responseTooLarge:
            metrics.error(.messageTooBig)
            loss = .connectionClosed
        case .invalidResponse, .invalidEventStream, .unsolicitedBytes, .closedBeforeResponse, .closedMidResponse:
            // (The close classes do not come here: `closed` counts a close by its reason.)
            metrics.error(.protocolError)
            loss = .connectionClosed
        }
        loseInFlight(c, loss)
        closeConnection(c, reset: true)
        dispatch(c / poolSize)
    }
}
