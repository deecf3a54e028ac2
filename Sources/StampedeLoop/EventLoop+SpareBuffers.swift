extension EventLoop {
    // MARK: Spare queues

    /// A connection holds a write queue (or a queue of unconsumed input) only while bytes are
    /// in it: once drained, the queue and its storage go back to the loop, and the next
    /// connection with something to queue takes one from here. An idle connection then costs
    /// no buffer (a 1 KiB queue kept per connection was most of an idle chat client's memory),
    /// and steady traffic still allocates nothing: what one iteration drains, the next reuses.
    /// Bounded in count and in bytes, so a burst does not pin memory.
    static let maxSpareBuffers = 1024
    static let maxSpareBytes = 1 << 20

    /// A queue for a connection that has bytes to hold: a spare one if any, else a new one
    /// (whose storage is allocated by its first append).
    @inline(__always)
    func takeBuffer() -> ByteBuffer {
        guard let b = spareBuffers.popLast() else { return ByteBuffer() }
        spareBytes -= b.capacity
        return b
    }

    /// Takes back a queue a connection no longer holds; it is dropped (and its storage freed)
    /// when the spares are full.
    @inline(__always)
    func recycle(_ b: ByteBuffer) {
        b.clear()
        guard spareBuffers.count < Self.maxSpareBuffers, spareBytes + b.capacity <= Self.maxSpareBytes else { return }
        spareBytes += b.capacity
        spareBuffers.append(b)
    }

    /// Queues held by connections (write queues and unconsumed input), for tests and figures.
    public var heldBufferCount: Int {
        slots.reduce(0) { $0 + ($1.out == nil ? 0 : 1) + ($1.pending == nil ? 0 : 1) }
    }
}
