import StampedeWire
#if canImport(Glibc)
import Glibc
#endif

/// A short header value (an ETag, a timestamp) kept rendered in place, so responses copy it
/// instead of formatting it again.
final class RenderedField {
    let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: 32, alignment: 8)
    private(set) var count = 0

    deinit { storage.deallocate() }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[0..<count]) }

    func write(_ body: (inout HTTPByteWriter) -> Void) {
        var w = HTTPByteWriter(storage)
        body(&w)
        count = w.result ?? 0
    }

    func equals(_ other: UnsafeRawBufferPointer) -> Bool {
        other.count == count && (count == 0 || memcmp(storage.baseAddress!, other.baseAddress!, count) == 0)
    }
}
