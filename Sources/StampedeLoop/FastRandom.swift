import CStampedeLinux

/// wyrand: a fast 64-bit generator for masking keys, start offsets and names. One per loop,
/// seeded from the scenario's seed (reproducible runs) or from getrandom.
public struct FastRandom: RandomNumberGenerator, Sendable {
    @usableFromInline var state: UInt64

    public init(seed: UInt64) { state = seed ^ 0x9E37_79B9_7F4A_7C15 }

    /// Seeded from the kernel's entropy.
    public static func fromSystem() -> FastRandom {
        var seed: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &seed) { cs_getrandom($0.baseAddress, 8) }
        return FastRandom(seed: seed)
    }

    @inlinable
    public mutating func next() -> UInt64 {
        state &+= 0xA076_1D64_78BD_642F
        let m = state.multipliedFullWidth(by: state ^ 0xE703_7ED1_A0B4_28DB)
        return m.high ^ m.low
    }

    /// A uniformly random double in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }
}

extension FastRandom {
    /// Writes a random (version 4) UUID as 36 lowercase ASCII bytes at `out`; returns 36.
    public mutating func writeUUID(into out: UnsafeMutableRawPointer) -> Int {
        let a = (next() & ~0xF000) | 0x4000                                  // version 4
        let b = (next() & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000     // RFC 4122 variant
        var p = 0
        @inline(__always) func nibbles(_ v: UInt64, _ count: Int, _ topShift: Int) {
            for k in 0..<count {
                let n = UInt8((v >> UInt64(topShift - 4 * k)) & 0xF)
                out.storeBytes(of: n < 10 ? 48 + n : 87 + n, toByteOffset: p, as: UInt8.self)
                p += 1
            }
        }
        @inline(__always) func dash() { out.storeBytes(of: UInt8(ascii: "-"), toByteOffset: p, as: UInt8.self); p += 1 }
        nibbles(a, 8, 60); dash(); nibbles(a, 4, 28); dash(); nibbles(a, 4, 12); dash(); nibbles(b, 4, 60); dash(); nibbles(b, 12, 44)
        return p
    }

    /// A random (version 4) UUID string.
    public mutating func uuidString() -> String {
        var bytes = [UInt8](repeating: 0, count: 36)
        _ = bytes.withUnsafeMutableBytes { writeUUID(into: $0.baseAddress!) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
