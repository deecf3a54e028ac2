
/// A growable scratch area the server builds messages in. Its memory moves when it grows,
/// so nothing may keep a pointer into it across `ensure` calls.
final class HubScratch {
    private(set) var buffer: UnsafeMutableRawBufferPointer

    init(_ capacity: Int) {
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
    }

    deinit { buffer.deallocate() }

    func ensure(_ n: Int) {
        guard n > buffer.count else { return }
        var c = buffer.count
        while c < n { c *= 2 }
        buffer.deallocate()
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: c, alignment: 16)
    }

    /// Runs a message writer that returns nil when out of room, growing and retrying up to
    /// `limit` bytes. Returns the written bytes (valid until the next use of this scratch).
    func write(limit: Int = 64 << 20, _ body: (UnsafeMutableRawBufferPointer) -> Int?) -> UnsafeRawBufferPointer? {
        while true {
            if let n = body(buffer) { return UnsafeRawBufferPointer(rebasing: buffer[0..<n]) }
            guard buffer.count < limit else { return nil }
            ensure(buffer.count * 2)
        }
    }
}
