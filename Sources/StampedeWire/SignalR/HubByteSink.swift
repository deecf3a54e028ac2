/// Bounded appender over a caller's output buffer. A write that does not fit sets `failed` and
/// every later write is ignored, so message writers check once at the end instead of after each
/// field, and nothing is ever written past `out.count`.
struct HubByteSink {
    let out: UnsafeMutableRawBufferPointer
    var pos: Int
    var failed: Bool

    init(_ out: UnsafeMutableRawBufferPointer, at pos: Int = 0) {
        self.out = out
        self.pos = pos
        failed = pos < 0 || pos > out.count
    }

    /// Bytes written so far, or nil if something did not fit.
    var result: Int? { failed ? nil : pos }

    @inline(__always)
    mutating func reserve(_ n: Int) -> Bool {
        if failed { return false }
        if n > out.count - pos { failed = true; return false }
        return true
    }

    @inline(__always)
    mutating func byte(_ b: UInt8) {
        guard reserve(1) else { return }
        out[pos] = b
        pos += 1
    }

    mutating func bytes(_ src: UnsafeRawBufferPointer) {
        guard !src.isEmpty, reserve(src.count), let d = out.baseAddress, let s = src.baseAddress else { return }
        (d + pos).copyMemory(from: s, byteCount: src.count)
        pos += src.count
    }

    mutating func ascii(_ s: StaticString) {
        s.withUTF8Buffer { bytes(UnsafeRawBufferPointer($0)) }
    }

    mutating func fill(_ b: UInt8, count: Int) {
        guard count > 0, reserve(count), let d = out.baseAddress else { return }
        (d + pos).initializeMemory(as: UInt8.self, repeating: b, count: count)
        pos += count
    }

    mutating func decimal(_ v: UInt64) {
        let n = HubDecimal.digitCount(v)
        guard reserve(n) else { return }
        _ = HubDecimal.write(v, into: UnsafeMutableRawBufferPointer(rebasing: out[pos..<(pos + n)]))
        pos += n
    }

    /// Big-endian, as MessagePack requires.
    mutating func bigEndian<T: FixedWidthInteger>(_ v: T) {
        let size = MemoryLayout<T>.size
        guard reserve(size) else { return }
        for k in 0..<size {
            out[pos + k] = UInt8(truncatingIfNeeded: v >> ((size - 1 - k) * 8))
        }
        pos += size
    }

    /// Moves the bytes `from..<pos` right by `gap` (overlap-safe: `copyMemory` is a memmove) so a
    /// header that turned out longer than its reserved byte can be written in front of them.
    mutating func openGap(at from: Int, _ gap: Int) -> Bool {
        guard gap > 0 else { return !failed }
        guard reserve(gap), let d = out.baseAddress else { return false }
        let length = pos - from
        if length > 0 { (d + from + gap).copyMemory(from: UnsafeRawPointer(d + from), byteCount: length) }
        pos += gap
        return true
    }
}
