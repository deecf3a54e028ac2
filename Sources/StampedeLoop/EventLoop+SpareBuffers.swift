extension EventLoop {
    // MARK: Spare queues

    /// A connection holds a write queue (or a queue of unconsumed input) only while bytes are
    /// in it: once drained, the queue and its storage go back to the loop, and the next
    /// connection with something to queue takes one from here. An idle connection then costs
    /// no buffer (a 1 KiB queue kept per connection was most of an idle chat client's memory),
    /// and steady traffic still allocates nothing: the loop keeps as many spares as its
    /// connections held at once during the last second (at least `minSpareBuffers`), so a
    /// server broadcasting to every connection each second reuses the same queues, and spares
    /// beyond what is used go once a second passes. Queues that grew past `maxSpareCapacity`
    /// are freed when drained, so a burst does not pin memory.
    static let minSpareBuffers = 64
    static let maxSpareCapacity = 64 * 1024

    /// A queue for a connection that has bytes to hold: a spare one if any, else a new one
    /// (whose storage is allocated by its first append).
    @inline(__always)
    func takeBuffer() -> ByteBuffer {
        heldBuffers += 1
        if heldBuffers > heldBuffersPeak { heldBuffersPeak = heldBuffers }
        return spareBuffers.popLast() ?? ByteBuffer()
    }

    /// Takes back a queue a connection no longer holds; it is dropped (and its storage freed)
    /// when the loop has spares enough or it grew large.
    @inline(__always)
    func recycle(_ b: ByteBuffer) {
        heldBuffers -= 1
        if wakeTime &- spareReviewNs >= 1_000_000_000 { reviewSpares() }
        b.clear()
        guard spareBuffers.count < spareAllowance, b.capacity <= Self.maxSpareCapacity else { return }
        spareBuffers.append(b)
    }

    /// Once a second: the allowance becomes the most queues held at once since the last review,
    /// and spares beyond it are freed.
    func reviewSpares() {
        spareReviewNs = wakeTime
        spareAllowance = max(Self.minSpareBuffers, heldBuffersPeak)
        heldBuffersPeak = heldBuffers
        if spareBuffers.count > spareAllowance { spareBuffers.removeLast(spareBuffers.count - spareAllowance) }
    }

    /// Queues held by connections now (write queues and unconsumed input), for tests and figures.
    public var heldBufferCount: Int { heldBuffers }
}
