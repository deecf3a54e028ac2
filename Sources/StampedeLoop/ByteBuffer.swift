/// A growable byte queue with a read cursor: appended at the tail, consumed from the head.
/// One per connection direction, reused across messages so steady-state traffic does not allocate.
public final class ByteBuffer {
    @usableFromInline var storage: UnsafeMutableRawPointer?
    @usableFromInline var capacity = 0
    @usableFromInline var head = 0
    @usableFromInline var tail = 0

    public init() {}
    deinit { storage?.deallocate() }

    @inlinable public var count: Int { tail - head }
    @inlinable public var isEmpty: Bool { tail == head }

    /// Makes room for `n` more bytes at the tail and returns where to write them; call `commit(_:)` after.
    @inlinable
    public func reserve(_ n: Int) -> UnsafeMutableRawPointer {
        // `storage == nil`: a fresh or shrunk buffer has no memory even for `reserve(0)`.
        if capacity - tail < n || storage == nil { grow(n) }
        return storage.unsafelyUnwrapped + tail
    }

    @inlinable public func commit(_ n: Int) { tail += n }

    @inlinable
    public func append(_ bytes: UnsafeRawBufferPointer) {
        guard let src = bytes.baseAddress, bytes.count > 0 else { return }
        let dst = reserve(bytes.count)
        dst.copyMemory(from: src, byteCount: bytes.count)
        tail += bytes.count
    }

    @inlinable
    public func append(_ bytes: [UInt8]) { bytes.withUnsafeBytes { append($0) } }

    /// Drops `n` bytes from the head.
    @inlinable
    public func consume(_ n: Int) {
        head += n
        if head == tail { head = 0; tail = 0 }
    }

    /// The unread bytes. Valid until the next mutation.
    @inlinable
    public var readable: UnsafeMutableRawBufferPointer {
        guard let s = storage else { return UnsafeMutableRawBufferPointer(start: nil, count: 0) }
        return UnsafeMutableRawBufferPointer(start: s + head, count: tail - head)
    }

    public func clear() { head = 0; tail = 0 }

    /// Frees the storage when it grew past `limit` and is now empty, so a burst does not pin memory.
    public func shrinkIfIdle(limit: Int = 64 * 1024) {
        if head == tail && capacity > limit {
            storage?.deallocate()
            storage = nil
            capacity = 0
            head = 0; tail = 0
        }
    }

    @usableFromInline
    func grow(_ n: Int) {
        let live = tail - head
        // Compact first: moving the live bytes down is cheaper than growing when the head has advanced far.
        if head > 0 && capacity - live >= n && head >= live {
            if live > 0 { storage.unsafelyUnwrapped.copyMemory(from: storage.unsafelyUnwrapped + head, byteCount: live) }
            head = 0; tail = live
            return
        }
        var newCapacity = max(capacity * 2, 1024)
        while newCapacity - live < n { newCapacity *= 2 }
        let fresh = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let s = storage {
            if live > 0 { fresh.copyMemory(from: s + head, byteCount: live) }
            s.deallocate()
        }
        storage = fresh
        capacity = newCapacity
        head = 0; tail = live
    }
}
