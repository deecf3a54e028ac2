import StampedeLoop

extension ByteBuffer {
    /// Appends what `body` writes into at most `maxBytes` reserved bytes; on nil (too small)
    /// retries with twice the room, up to `limit`. Returns false if it never fit.
    func appendWriting(estimate: Int, limit: Int = 64 << 20, _ body: (UnsafeMutableRawBufferPointer) -> Int?) -> Bool {
        var room = max(estimate, 64)
        while true {
            let p = reserve(room)
            if let n = body(UnsafeMutableRawBufferPointer(start: p, count: room)) {
                commit(n)
                return true
            }
            guard room < limit else { return false }
            room *= 2
        }
    }
}
