import StampedeLoop
#if canImport(Glibc)
import Glibc
#endif

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
