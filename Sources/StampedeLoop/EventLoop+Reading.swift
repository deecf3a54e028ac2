import CStampedeLinux
#if canImport(Glibc)
import Glibc
#endif

extension EventLoop {
    // MARK: Input

    func readAvailable(_ index: Int, id: ConnectionID) {
        // Reading may have moved a TLS renegotiation on: its records go out, and a write that
        // waited for it is tried again, when the loop flushes.
        defer {
            if slotIndex(id) != nil, slots[index].stream.writeAwaitsInput || slots[index].stream.hasPendingOutput { markDirty(index) }
        }
        var budget = configuration.readCapPerWakeup
        // Input a TLS stream holds is read past the budget: the socket would not report it again.
        while budget > 0 || slots[index].stream.hasBufferedInput {
            let r = slots[index].stream.read(slots[index].fd, into: readBuffer)
            switch r {
            case .wouldBlock: return
            case .failed(let e):
                peerClosed(index, id: id, reason: (e == ECONNRESET || e == EPIPE) ? .reset : .error(e))
                return
            case .done(0):
                peerClosed(index, id: id, reason: .endOfFile)
                return
            case .done(let n):
                budget -= n
                deliver(index, id: id, count: n)
                guard slotIndex(id) != nil, !slots[index].throttled else { return }
                if n < readBuffer.count && !slots[index].stream.hasBufferedInput { return }
            }
        }
    }

    /// Hands input to the handler: straight from the shared read buffer when nothing is pending
    /// (no copy), else appended to the connection's pending bytes.
    func deliver(_ index: Int, id: ConnectionID, count n: Int) {
        if let pending = slots[index].pending, !pending.isEmpty {
            pending.append(UnsafeRawBufferPointer(rebasing: readBuffer[0..<n]))
            // Detach the buffer while the handler reads it: if the handler closes the connection,
            // releasing the slot must not free memory the handler is still looking at.
            slots[index].pending = nil
            let used = handler.received(id, buffer: pending.readable, loop: self)
            guard let i = slotIndex(id) else { recycle(pending); return }
            pending.consume(used)
            // All consumed: an idle connection holds no input queue (`EventLoop+SpareBuffers`).
            if pending.isEmpty { recycle(pending) } else { slots[i].pending = pending }
            return
        }
        let view = UnsafeMutableRawBufferPointer(rebasing: readBuffer[0..<n])
        let used = handler.received(id, buffer: view, loop: self)
        guard let i = slotIndex(id), used < n else { return }
        let pending: ByteBuffer
        if let p = slots[i].pending { pending = p } else { pending = takeBuffer(); slots[i].pending = pending }
        pending.append(UnsafeRawBufferPointer(rebasing: readBuffer[used..<n]))
    }

    // MARK: Pausing

    /// Stops (or resumes) reading a connection, as a frozen client would: it leaves epoll
    /// altogether, because hang-up and error events are reported even with an empty interest
    /// mask and would spin a level-triggered loop. Queued output is still sent when the loop
    /// flushes; a peer that gives up is noticed on the next write or after resuming.
    public func pauseReading(_ id: ConnectionID, _ paused: Bool) {
        guard let i = slotIndex(id), slots[i].state == .stream, slots[i].readPaused != paused else { return }
        slots[i].readPaused = paused
        let (epfd, fd) = (epfd, slots[i].fd)
        let e: Int32
        if paused {
            e = syscallStatus { cs_epoll_ctl(epfd, EPOLL_CTL_DEL, fd, 0, id.packed) }
        } else {
            var events: UInt32 = slots[i].throttled ? 0 : EPOLLIN.rawValue | EPOLLRDHUP.rawValue
            if slots[i].pollingOut { events |= EPOLLOUT.rawValue }
            e = syscallStatus { cs_epoll_ctl(epfd, EPOLL_CTL_ADD, fd, events, id.packed) }
        }
        if e != 0 { registrationFailed(i, errno: e) }
    }

    /// Whether `pauseReading` has taken the connection out of epoll.
    public func isReadingPaused(_ id: ConnectionID) -> Bool {
        guard let i = slotIndex(id) else { return false }
        return slots[i].readPaused
    }
}
