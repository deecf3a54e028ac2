import StampedeLoop
import StampedeSession
import StampedeWire

/// A Close hub message to send before ending a connection.
struct HubCloseInfo {
    var error: String?
    var allowReconnect: Bool
}

/// One SignalR connection (a negotiated id), whatever transport carries it.
final class HubConnection {
    enum Transport { case webSockets, serverSentEvents, longPolling }
    enum Phase { case negotiated, handshaking, open, ended }
    enum Proto { case json, messagePack }

    let index: Int
    let generation: UInt32
    let connectionId: [UInt8]
    /// The `id` clients use afterwards: the connection token (v1) or the connection id (v0).
    let tokenBytes: [UInt8]
    let token: HubTokenKey
    let statefulNegotiated: Bool
    var disposed = false
    var transport: Transport? = nil
    var phase: Phase = .negotiated
    var proto: Proto = .json
    /// Counted in `statistics.open`.
    var counted = false
    /// The WebSocket or SSE socket.
    var socket: ConnectionID? = nil
    var sseChunked = true
    /// Long polling: the poll waiting for messages, and the messages waiting for a poll.
    var pollSocket: ConnectionID? = nil
    var lpQueue: ByteBuffer? = nil
    /// Received bytes of an incomplete hub message.
    var inbound: ByteBuffer? = nil
    /// POSTed before the transport started.
    var earlyInput: ByteBuffer? = nil
    var lastSent: UInt64 = 0
    var lastReceived: UInt64 = 0
    /// Deadlines (monotonic ns, .max = none).
    var disposeAt: UInt64 = .max
    var handshakeDeadline: UInt64 = .max
    var pollDeadline: UInt64 = .max
    var flushPending = false
    var overflowed = false
    /// Earliest wake-up timer outstanding.
    var nextWake: UInt64 = .max
    /// Position in `HubServer.members`.
    var memberIndex = -1
    var groups: [HubMembership] = []
    /// Counter streams running (indices into `HubServer.streams`).
    var streams: [Int] = []
    var uploads: [HubUpload] = []
    var clientResults: [HubClientResultWait] = []
    var nextServerInvocationId: UInt64 = 0
    var stateful: HubStatefulState? = nil

    init(index: Int, generation: UInt32, connectionId: [UInt8], tokenBytes: [UInt8], statefulNegotiated: Bool) {
        self.index = index
        self.generation = generation
        self.connectionId = connectionId
        self.tokenBytes = tokenBytes
        token = HubTokenKey(tokenBytes)!
        self.statefulNegotiated = statefulNegotiated
    }

    var isActive: Bool { !disposed && (phase == .handshaking || phase == .open) }
}

struct HubMembership {
    var group: Int
    var position: Int
}

struct HubGroup {
    var name: [UInt8]
    var hash: UInt64
    var members: [HubConnection] = []
    var nextSameHash = -1
}

/// A Counter stream (server-to-client).
struct HubOutStream {
    var generation: UInt32 = 0
    var active = false
    var connection: HubConnection? = nil
    var invocationId: [UInt8] = []
    var next: Int64 = 0
    var count: Int64 = 0
    var delayNs: UInt64 = 0
}

/// An Upload in progress (client-to-server stream).
struct HubUpload {
    var streamId: [UInt8]
    var callerId: [UInt8]?
    var items: Int64 = 0
}

/// An AskClient waiting for the client's answer.
struct HubClientResultWait {
    var serverId: UInt64
    var callerId: [UInt8]?
}

/// Stateful reconnect bookkeeping (docs/protocols.md §6): outgoing messages of types 1–5 are numbered
/// from 1 and kept until acked; incoming ones are counted and acked about a second later.
final class HubStatefulState {
    /// Numbered messages sent so far (the last id used).
    var sent: UInt64 = 0
    /// Unacked messages, oldest first, and their lengths.
    let buffer = ByteBuffer()
    var lengths: [Int] = []
    var lengthsHead = 0
    /// Id of the oldest buffered message (`sent + 1` when none).
    var firstBufferedId: UInt64 = 1
    /// Highest numbered message processed, and the id of the last one seen.
    var received: UInt64 = 0
    var incoming: UInt64 = 0
    var ackDue: UInt64 = .max
    /// After a resume, everything before the client's Sequence is ignored.
    var awaitingSequence = false

    func record(_ message: UnsafeRawBufferPointer) {
        sent += 1
        buffer.append(message)
        lengths.append(message.count)
    }

    func ack(_ id: UInt64) {
        while firstBufferedId <= id && lengthsHead < lengths.count {
            buffer.consume(lengths[lengthsHead])
            lengthsHead += 1
            firstBufferedId += 1
        }
        if lengthsHead == lengths.count {
            lengths.removeAll(keepingCapacity: true)
            lengthsHead = 0
        } else if lengthsHead > 1024 && lengthsHead * 2 > lengths.count {
            lengths.removeFirst(lengthsHead)
            lengthsHead = 0
        }
    }
}

extension HubServer {
    // MARK: Connection table

    func newConnection(negotiateVersion: Int, statefulReconnect: Bool) -> HubConnection {
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
        c.disposeAt = EventLoop.now() + disconnectTimeoutNs
        scheduleNext(c)
        return c
    }

    /// A transport took the connection: the handshake may start.
    func claim(_ c: HubConnection) {
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

    /// Forgets the connection entirely (its id answers 404 from now on).
    func dispose(_ c: HubConnection) {
        guard !c.disposed else { return }
        if c.phase != .ended { detachHub(c) }
        if c.counted {
            c.counted = false
            statistics.open -= 1
            statistics.closes += 1
        }
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
        while let m = c.groups.last { leaveGroup(c, m.group) }
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
        c.phase = .ended
        c.handshakeDeadline = .max
        switch c.transport {
        case .webSockets?, .serverSentEvents?:
            if let id = c.socket, let s = socket(id) {
                if c.transport == .webSockets {
                    // Our own Close (1000). The socket is forgotten with the connection, so TCP goes
                    // once it is written rather than after the client's answer (§7.1.1: the server
                    // closes first either way).
                    writeCloseFrame(id, s.closeHandshake.sending(code: 1000))
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

    /// One SSE event (chunk-framed unless the response is close-delimited).
    func writeEvent(_ s: ConnectionID, chunked: Bool, _ message: UnsafeRawBufferPointer) {
        let event = SSEWriter.encodedCount(message)
        let total = chunked ? HTTPResponseWriter.chunkLength(payloadCount: event) : event
        loop.write(s, reserving: total) { p in
            let room = UnsafeMutableRawBufferPointer(start: p, count: total)
            var n = 0
            if chunked {
                var w = HTTPByteWriter(room)
                w.appendHex(event)
                w.append("\r\n")
                n = w.count
            }
            guard let e = SSEWriter.write(message, into: UnsafeMutableRawBufferPointer(rebasing: room[n...])) else { return 0 }
            n += e
            if chunked {
                room[n] = 0x0D
                room[n + 1] = 0x0A
                n += 2
            }
            return n
        }
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

    // MARK: Stateful reconnect

    func recordStateful(_ c: HubConnection, _ st: HubStatefulState, _ message: UnsafeRawBufferPointer) {
        st.record(message)
        if st.buffer.count > configuration.statefulReconnectBufferSize && !c.overflowed {
            c.overflowed = true
            wake(c, at: 0)
        }
    }

    func sendAck(_ c: HubConnection) {
        guard let st = c.stateful else { return }
        st.ackDue = .max
        let id = st.received
        let m: UnsafeRawBufferPointer?
        switch c.proto {
        case .json: m = out.write { JSONHubProtocol.writeAck(into: $0, sequenceId: id) }
        case .messagePack: m = out.write { MessagePackHubProtocol.writeAck(into: $0, sequenceId: id) }
        }
        guard let m else { return }
        statistics.acksSent += 1
        send(c, m, numbered: false)
    }

    /// A numbered message arrived from a stateful client: count it, and ack it soon. Returns
    /// false when it must be skipped (before the client's Sequence, or already processed).
    func acceptNumbered(_ c: HubConnection, _ st: HubStatefulState) -> Bool {
        if st.awaitingSequence { return false }
        st.incoming += 1
        if st.incoming <= st.received { return false }
        st.received = st.incoming
        if st.ackDue == .max {
            st.ackDue = EventLoop.now() + 1_000_000_000
            wake(c, at: st.ackDue)
        }
        return true
    }

    /// The client's Sequence after a resume: messages from `id` on follow.
    func receivedSequence(_ c: HubConnection, _ st: HubStatefulState, _ id: UInt64) {
        guard id >= 1, id <= st.received + 1 else {
            statistics.protocolErrors += 1
            endConnection(c, close: HubCloseInfo(error: "Connection closed with an error. InvalidDataException: Sequence ID greater than amount of messages we've received.",
                                                 allowReconnect: false))
            return
        }
        st.incoming = id - 1
        st.awaitingSequence = false
    }

    /// The same id came back on a new WebSocket: send Sequence and replay what is unacked.
    func resumeStateful(_ c: HubConnection) {
        guard let st = c.stateful, let s = c.socket else { return }
        let now = EventLoop.now()
        st.awaitingSequence = true
        let first = st.firstBufferedId
        let seq: UnsafeRawBufferPointer?
        switch c.proto {
        case .json: seq = out.write { JSONHubProtocol.writeSequence(into: $0, sequenceId: first) }
        case .messagePack: seq = out.write { MessagePackHubProtocol.writeSequence(into: $0, sequenceId: first) }
        }
        let opcode: WebSocketOpcode = c.proto == .json ? .text : .binary
        if let seq { writeFrame(s, opcode, seq) }
        let all = UnsafeRawBufferPointer(st.buffer.readable)
        var offset = 0
        for k in st.lengthsHead..<st.lengths.count {
            let n = st.lengths[k]
            writeFrame(s, opcode, UnsafeRawBufferPointer(rebasing: all[offset..<(offset + n)]))
            offset += n
            statistics.messagesReplayed += 1
        }
        statistics.reconnectsResumed += 1
        c.disposeAt = .max
        c.lastReceived = now
        c.lastSent = now
        scheduleNext(c)
    }
}
