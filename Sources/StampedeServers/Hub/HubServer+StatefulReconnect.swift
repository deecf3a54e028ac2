import StampedeLoop
import StampedeWire

extension HubServer {
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
