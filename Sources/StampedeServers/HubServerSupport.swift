import StampedeLoop
import StampedeWire

// Small value types and byte helpers of the reference hub server (HubServer.swift).

/// A connection token (or v0 connection id) as a hashable value without a String: up to 24
/// bytes packed into three words plus the length. Our tokens are 22 base64url characters;
/// anything longer than 24 bytes cannot be ours and is never looked up.
struct HubTokenKey: Hashable {
    var a: UInt64 = 0
    var b: UInt64 = 0
    var c: UInt64 = 0
    var count: UInt8 = 0

    static let capacity = 24

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty, bytes.count <= Self.capacity else { return nil }
        count = UInt8(bytes.count)
        withUnsafeMutableBytes(of: &self) { raw in
            raw.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        }
    }

    init?(_ bytes: [UInt8]) {
        guard let k = bytes.withUnsafeBytes({ HubTokenKey($0) }) else { return nil }
        self = k
    }
}

/// The hub server's timers (`TimerToken` kinds): a connection's next check, or a stream's
/// next item. The token's slot is the table index and its epoch that slot's generation, so a
/// timer for a disposed connection or a finished stream is recognised and dropped.
enum HubTimer: UInt8 {
    case connection = 1
    case stream = 2
}

enum HubBytes {
    static let base64URL: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// 16 random bytes in base64url without padding: 22 characters, like ASP.NET's connection ids.
    static func randomId(_ random: inout FastRandom) -> [UInt8] {
        let w0 = random.next(), w1 = random.next()
        var bytes = [UInt8](repeating: 0, count: 18)  // 16 random + 2 zero bytes to make 6 groups of 3
        for k in 0..<8 { bytes[k] = UInt8(truncatingIfNeeded: w0 >> (8 * k)); bytes[8 + k] = UInt8(truncatingIfNeeded: w1 >> (8 * k)) }
        var out = [UInt8]()
        out.reserveCapacity(24)
        for g in 0..<6 {
            let v = UInt32(bytes[3 * g]) << 16 | UInt32(bytes[3 * g + 1]) << 8 | UInt32(bytes[3 * g + 2])
            for s in [18, 12, 6, 0] { out.append(base64URL[Int((v >> UInt32(s)) & 0x3F)]) }
        }
        return Array(out.prefix(22))
    }

    /// ASCII lowercase.
    @inline(__always) static func lower(_ b: UInt8) -> UInt8 { b &- 0x41 < 26 ? b | 0x20 : b }

    /// Whether `bytes` equals the lowercase ASCII `name`, ignoring ASCII case.
    static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ name: StaticString) -> Bool {
        guard bytes.count == name.utf8CodeUnitCount else { return false }
        let p = name.utf8Start
        for i in 0..<bytes.count where lower(bytes[i]) != p[i] { return false }
        return true
    }

    /// Whether `a` equals `b`, ignoring ASCII case.
    static func equalsIgnoringCase(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where lower(a[i]) != lower(b[i]) { return false }
        return true
    }

    static func equals(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return b.withUnsafeBytes { bb in
            guard let pa = a.baseAddress, let pb = bb.baseAddress else { return a.isEmpty }
            return memcmp(pa, pb, a.count) == 0
        }
    }

    /// FNV-1a, for group names.
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h
    }

    /// Whether a JSON string's raw contents hold an escape.
    static func hasBackslash(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let p = bytes.baseAddress, !bytes.isEmpty else { return false }
        return memchr(p, 0x5C, bytes.count) != nil
    }
}

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

#if canImport(Glibc)
import Glibc
#endif
