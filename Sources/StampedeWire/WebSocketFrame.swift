/// RFC 6455 §5.2 frame opcodes.
public enum WebSocketOpcode: UInt8, Sendable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    @inlinable public var isControl: Bool { rawValue & 0x8 != 0 }
}

/// A parsed frame header. `payloadOffset` is relative to the start of the header.
public struct WebSocketFrameHeader: Sendable, Equatable {
    public var fin: Bool
    /// RSV1–3 as the low three bits.
    public var reservedBits: UInt8
    /// Raw opcode nibble (may be a reserved value; the session rejects those).
    public var opcodeBits: UInt8
    public var masked: Bool
    /// Masking key in wire order packed little-endian, so byte i of the key is `(maskKey >> (8*i)) & 0xFF`.
    public var maskKey: UInt32
    public var payloadLength: Int
    public var headerLength: Int

    @inlinable
    public init(fin: Bool, reservedBits: UInt8, opcodeBits: UInt8, masked: Bool, maskKey: UInt32, payloadLength: Int, headerLength: Int) {
        self.fin = fin; self.reservedBits = reservedBits; self.opcodeBits = opcodeBits; self.masked = masked
        self.maskKey = maskKey; self.payloadLength = payloadLength; self.headerLength = headerLength
    }

    @inlinable public var opcode: WebSocketOpcode? { WebSocketOpcode(rawValue: opcodeBits) }
    @inlinable public var frameLength: Int { headerLength + payloadLength }
}

public enum WebSocketFrameCodec {
    /// Largest header: 2 + 8 (64-bit length) + 4 (mask).
    public static let maxHeaderLength = 14

    /// Result of looking at the start of a buffer for a frame header.
    public enum HeaderParse: Sendable, Equatable {
        case needMore
        case header(WebSocketFrameHeader)
        /// The 64-bit length had its most significant bit set (RFC 6455 §5.2).
        case invalidLength
    }

    /// Parses a frame header at the start of `bytes` without copying.
    @inlinable
    public static func parseHeader(_ bytes: UnsafeRawBufferPointer) -> HeaderParse {
        let count = bytes.count
        guard count >= 2 else { return .needMore }
        let b0 = bytes[0], b1 = bytes[1]
        let masked = b1 & 0x80 != 0
        var length = Int(b1 & 0x7F)
        var offset = 2
        if length == 126 {
            guard count >= 4 else { return .needMore }
            length = Int(bytes[2]) << 8 | Int(bytes[3])
            offset = 4
        } else if length == 127 {
            guard count >= 10 else { return .needMore }
            var l: UInt64 = 0
            for i in 2..<10 { l = l << 8 | UInt64(bytes[i]) }
            if l & (1 << 63) != 0 { return .invalidLength }
            // Larger than any buffer we would hold; the caller's size limit rejects it.
            length = l > UInt64(Int.max / 2) ? Int.max / 2 : Int(l)
            offset = 10
        }
        var key: UInt32 = 0
        if masked {
            guard count >= offset + 4 else { return .needMore }
            key = UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
            offset += 4
        }
        return .header(WebSocketFrameHeader(
            fin: b0 & 0x80 != 0, reservedBits: (b0 >> 4) & 0x7, opcodeBits: b0 & 0x0F,
            masked: masked, maskKey: key, payloadLength: length, headerLength: offset))
    }

    /// Header size for a payload of `length` bytes.
    @inlinable
    public static func headerLength(payloadLength length: Int, masked: Bool) -> Int {
        (length < 126 ? 2 : length <= 0xFFFF ? 4 : 10) + (masked ? 4 : 0)
    }

    /// Writes a frame header at `out` (which must have `headerLength(...)` bytes) and returns its length.
    /// `maskKey` is nil for unmasked (server) frames; the key uses the packing of `WebSocketFrameHeader.maskKey`.
    @inlinable
    public static func writeHeader(into out: UnsafeMutableRawPointer, fin: Bool, opcode: WebSocketOpcode, payloadLength length: Int, maskKey: UInt32?) -> Int {
        out.storeBytes(of: (fin ? 0x80 : 0) | opcode.rawValue, toByteOffset: 0, as: UInt8.self)
        let maskBit: UInt8 = maskKey == nil ? 0 : 0x80
        var offset: Int
        if length < 126 {
            out.storeBytes(of: maskBit | UInt8(length), toByteOffset: 1, as: UInt8.self)
            offset = 2
        } else if length <= 0xFFFF {
            out.storeBytes(of: maskBit | 126, toByteOffset: 1, as: UInt8.self)
            out.storeBytes(of: UInt16(length).bigEndian, toByteOffset: 2, as: UInt16.self)
            offset = 4
        } else {
            out.storeBytes(of: maskBit | 127, toByteOffset: 1, as: UInt8.self)
            out.storeBytes(of: UInt64(length).bigEndian, toByteOffset: 2, as: UInt64.self)
            offset = 10
        }
        if let key = maskKey {
            out.storeBytes(of: key.littleEndian, toByteOffset: offset, as: UInt32.self)
            offset += 4
        }
        return offset
    }

    /// XORs `bytes` in place with the masking key (RFC 6455 §5.3). `keyOffset` is the position of
    /// `bytes[0]` within the payload, so a payload can be (un)masked in pieces.
    ///
    /// Vectorised: 16-byte SIMD lanes (SSE2 / NEON, the baseline ISAs), 64 bytes per iteration
    /// from a 16-byte aligned address for long payloads, then 16-, 8-, 4- and 1-byte tails. The
    /// key is rotated so that its lane 0 lines up with the first byte of each stretch.
    @inlinable
    public static func applyMask(_ bytes: UnsafeMutableRawBufferPointer, maskKey: UInt32, keyOffset: Int = 0) {
        guard let start = bytes.baseAddress, bytes.count > 0 else { return }
        var p = start
        var left = bytes.count
        // Key bytes in memory order from key byte (keyOffset mod 4): byte i of `key` (as a
        // little-endian word) masks the byte at p + i.
        var key = rotatedKey(maskKey, by: keyOffset & 3)
        if left >= 128 {
            // Unaligned 16-byte loads and stores that straddle a cache line cost about twice as
            // much; a long payload first goes byte-wise to a 16-byte boundary.
            let head = Int(bitPattern: 0 &- UInt(bitPattern: p)) & 15
            if head > 0 {
                maskBytes(p, head, key)
                key = rotatedKey(key, by: head & 3)
                p += head
                left -= head
            }
        }
        let k32 = UInt32(littleEndian: key)
        let k16 = unsafeBitCast(SIMD4<UInt32>(repeating: k32), to: SIMD16<UInt8>.self)
        while left >= 64 {
            let a = p.loadUnaligned(as: SIMD16<UInt8>.self)
            let b = p.loadUnaligned(fromByteOffset: 16, as: SIMD16<UInt8>.self)
            let c = p.loadUnaligned(fromByteOffset: 32, as: SIMD16<UInt8>.self)
            let d = p.loadUnaligned(fromByteOffset: 48, as: SIMD16<UInt8>.self)
            p.storeBytes(of: a ^ k16, as: SIMD16<UInt8>.self)
            p.storeBytes(of: b ^ k16, toByteOffset: 16, as: SIMD16<UInt8>.self)
            p.storeBytes(of: c ^ k16, toByteOffset: 32, as: SIMD16<UInt8>.self)
            p.storeBytes(of: d ^ k16, toByteOffset: 48, as: SIMD16<UInt8>.self)
            p += 64
            left -= 64
        }
        while left >= 16 {
            p.storeBytes(of: p.loadUnaligned(as: SIMD16<UInt8>.self) ^ k16, as: SIMD16<UInt8>.self)
            p += 16
            left -= 16
        }
        // Multiples of 4 so far, so the key is still in phase.
        if left >= 8 {
            let k64 = UInt64(k32) | UInt64(k32) << 32
            p.storeBytes(of: p.loadUnaligned(as: UInt64.self) ^ k64, as: UInt64.self)
            p += 8
            left -= 8
        }
        if left >= 4 {
            p.storeBytes(of: p.loadUnaligned(as: UInt32.self) ^ k32, as: UInt32.self)
            p += 4
            left -= 4
        }
        if left > 0 { maskBytes(p, left, key) }
    }

    /// `key` (byte i of the payload's key in bits 8i…8i+7) starting from its byte `n` (0…3).
    @inlinable @inline(__always)
    static func rotatedKey(_ key: UInt32, by n: Int) -> UInt32 {
        let shift = UInt32(truncatingIfNeeded: n & 3) &* 8
        return shift == 0 ? key : (key >> shift) | (key << (32 &- shift))
    }

    /// XORs `count` bytes at `p` one at a time, key byte 0 first.
    @inlinable @inline(__always)
    static func maskBytes(_ p: UnsafeMutableRawPointer, _ count: Int, _ key: UInt32) {
        var k = key
        for i in 0..<count {
            p.storeBytes(of: p.load(fromByteOffset: i, as: UInt8.self) ^ UInt8(truncatingIfNeeded: k), toByteOffset: i, as: UInt8.self)
            k = (k >> 8) | (k << 24)
        }
    }

    /// Whether a close code may appear on the wire (RFC 6455 §7.4): the RFC's codes, 1012–1014
    /// from the IANA registry (1012 "service restart" is what our servers send on a clean drop),
    /// and the 3000–4999 ranges. 1004–1006 and 1015 are reserved and never sent.
    @inlinable
    public static func isValidCloseCode(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014: return true
        case 3000...4999: return true
        default: return false
        }
    }
}
