import CStampedeLinux
#if canImport(Glibc)
import Glibc
#endif

extension EventLoop {
    // MARK: Write queues

    /// Queues bytes for `id`; they are written at the end of this loop iteration.
    @inline(__always)
    public func write(_ id: ConnectionID, _ bytes: UnsafeRawBufferPointer) {
        guard let i = slotIndex(id), slots[i].state == .stream, fits(i, bytes.count) else { return }
        outBuffer(i).append(bytes)
        queued(i, bytes.count)
    }

    /// Lets the caller build up to `maxBytes` directly in the write queue; `body` returns how many it wrote.
    @inline(__always)
    public func write(_ id: ConnectionID, reserving maxBytes: Int, _ body: (UnsafeMutableRawPointer) -> Int) {
        guard let i = slotIndex(id), slots[i].state == .stream, fits(i, maxBytes) else { return }
        let out = outBuffer(i)
        let n = body(out.reserve(maxBytes))
        out.commit(n)
        queued(i, n)
    }

    @inline(__always)
    func outBuffer(_ i: Int) -> ByteBuffer {
        if let b = slots[i].out { return b }
        let b = takeBuffer()
        slots[i].out = b
        return b
    }

    @inline(__always)
    func queued(_ i: Int, _ n: Int) {
        queuedBytes += n
        if !slots[i].dirty {
            slots[i].dirty = true
            dirtySlots.append(UInt32(i))
        }
        if !slots[i].backedUp, let out = slots[i].out, out.count > configuration.highWaterMark {
            slots[i].backedUp = true
            if limits != nil && !slots[i].exempt {
                // Stop reading it until its answers go out (see `ConnectionLimits`).
                slots[i].throttled = true
                updateInterest(i)
            }
        }
    }

    func markDirty(_ i: Int) {
        if !slots[i].dirty { slots[i].dirty = true; dirtySlots.append(UInt32(i)) }
    }

    /// Bytes waiting to be written on `id`.
    public func queuedBytes(_ id: ConnectionID) -> Int {
        guard let i = slotIndex(id) else { return 0 }
        return slots[i].out?.count ?? 0
    }

    /// True while the write queue is over the high-water mark: the owner should defer sends
    /// until `writable` (backpressure instead of unbounded memory).
    public func isBackedUp(_ id: ConnectionID) -> Bool {
        guard let i = slotIndex(id) else { return false }
        return slots[i].backedUp
    }

    // MARK: Output

    func flushDirty() {
        while !dirtySlots.isEmpty {
            // Swap rather than copy: copying then clearing would allocate a fresh array every iteration.
            swap(&dirtySlots, &flushBatch)
            defer { flushBatch.removeAll(keepingCapacity: true) }
            for raw in flushBatch {
                let i = Int(raw)
                slots[i].dirty = false
                guard slots[i].state == .stream else { continue }
                flush(i, id: ConnectionID(index: raw, generation: slots[i].generation))
            }
        }
    }

    func flush(_ i: Int, id: ConnectionID) {
        let registrationErrno = slots[i].registrationErrno
        if registrationErrno != 0 {
            peerClosed(i, id: id, reason: .error(registrationErrno))
            return
        }
        if slots[i].overLimit {
            peerClosed(i, id: id, reason: .slowConsumer)
            return
        }
        if let out = slots[i].out {
            let fd = slots[i].fd
            while !out.isEmpty {
                let view = out.readable
                let r = slots[i].stream.write(fd, UnsafeRawBufferPointer(view))
                switch r {
                case .done(let n):
                    out.consume(n)
                    queuedBytes -= n
                    slots[i].lastProgress = wakeTime
                case .wouldBlock:
                    if slots[i].backedUp && out.count < configuration.lowWaterMark {
                        guard relieved(i, id: id) else { return }
                    }
                    if slots[i].stream.writeAwaitsInput {
                        // A writable socket would wake the loop for nothing: `readAvailable` retries.
                        if slots[i].pollingOut { slots[i].pollingOut = false; updateInterest(i) }
                        return
                    }
                    if !slots[i].pollingOut {
                        slots[i].pollingOut = true
                        slots[i].lastProgress = wakeTime
                        updateInterest(i)
                    }
                    return
                case .failed(let e):
                    peerClosed(i, id: id, reason: (e == ECONNRESET || e == EPIPE) ? .reset : .error(e))
                    return
                }
            }
            // Drained: the queue goes back to the loop (`EventLoop+SpareBuffers`).
            slots[i].out = nil
            recycle(out)
        }
        if slots[i].stream.hasPendingOutput {
            // TLS records made from bytes the queue already gave up.
            switch slots[i].stream.flushPendingOutput(slots[i].fd) {
            case .done: break
            case .wouldBlock:
                if !slots[i].pollingOut { slots[i].pollingOut = true; slots[i].lastProgress = wakeTime; updateInterest(i) }
                return
            case .failed(let e):
                peerClosed(i, id: id, reason: (e == ECONNRESET || e == EPIPE) ? .reset : .error(e))
                return
            }
        }
        if slots[i].pollingOut {
            slots[i].pollingOut = false
            updateInterest(i)
        }
        if slots[i].closeWhenFlushed {
            slots[i].stream.closeGracefully(slots[i].fd)
            Glibc.close(slots[i].fd)
            releaseSlot(i)
            return
        }
        if slots[i].shutdownWhenFlushed {
            slots[i].shutdownWhenFlushed = false
            // A failure (ENOTCONN: the peer is already gone) shows up on the next read, which
            // ends the connection with its reason; there is nothing to do about it here.
            let e = slots[i].stream.shutdownWrite(slots[i].fd)
            if e != 0 && e != ENOTCONN { peerClosed(i, id: id, reason: .error(e)); return }
        }
        if slots[i].backedUp { _ = relieved(i, id: id) }
    }

    /// The queue fell below the low-water mark: reading resumes, the owner hears `writable`, and
    /// input it left unconsumed while backed up (pipelined requests) is offered again. False
    /// when the connection is gone.
    func relieved(_ i: Int, id: ConnectionID) -> Bool {
        slots[i].backedUp = false
        if slots[i].throttled {
            slots[i].throttled = false
            updateInterest(i)
        }
        handler.writable(id, loop: self)
        guard slotIndex(id) != nil else { return false }
        if limits != nil, let pending = slots[i].pending, !pending.isEmpty {
            deliver(i, id: id, count: 0)
            guard slotIndex(id) != nil else { return false }
        }
        // Input TLS took off the socket while reading was throttled: the socket will not say so.
        if slots[i].stream.hasBufferedInput && !slots[i].throttled {
            readAvailable(i, id: id)
            return slotIndex(id) != nil
        }
        return true
    }
}
