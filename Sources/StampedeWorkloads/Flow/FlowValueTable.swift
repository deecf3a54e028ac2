import StampedeWire

/// One client's `{name}` values as `TemplateValues.named` takes them: a table of byte buffers
/// by slot (captures first, then secrets), pointing into memory this table owns, so a render
/// borrows them without copying or allocating. Captures change only on the connect path.
final class FlowValueTable {
    let named: UnsafeMutableBufferPointer<UnsafeRawBufferPointer>
    private let captureCount: Int

    /// `secrets` point into the loop's `FlowProgram`, which outlives every client.
    init(captureCount: Int, secrets: UnsafeBufferPointer<UnsafeRawBufferPointer>) {
        self.captureCount = captureCount
        named = .allocate(capacity: captureCount + secrets.count)
        for i in 0..<captureCount { named[i] = UnsafeRawBufferPointer(start: nil, count: 0) }
        for (i, s) in secrets.enumerated() { named[captureCount + i] = s }
    }

    /// Sets capture `slot` to a copy of `bytes`.
    func capture(_ slot: Int, _ bytes: UnsafeRawBufferPointer) {
        guard slot < captureCount else { return }
        free(slot)
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        if let base = bytes.baseAddress, bytes.count > 0 { copy.baseAddress?.copyMemory(from: base, byteCount: bytes.count) }
        named[slot] = UnsafeRawBufferPointer(copy)
    }

    /// Forgets every capture (a new connection captures its own).
    func clearCaptures() { for i in 0..<captureCount { free(i) } }

    private func free(_ slot: Int) {
        if named[slot].baseAddress != nil { UnsafeMutableRawBufferPointer(mutating: named[slot]).deallocate() }
        named[slot] = UnsafeRawBufferPointer(start: nil, count: 0)
    }

    deinit {
        clearCaptures()
        named.deallocate()
    }
}
