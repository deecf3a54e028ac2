/// What one render of a `MessageTemplate` needs; the workload fills one per send.
///
/// Why this shape: every field is a value or a borrowed pointer, so building one and rendering
/// allocate nothing and need no generic or existential (a closure stored here would need a
/// context on the heap when it captures, and a protocol would spread generics through the
/// workload). Named values are a table of byte buffers indexed by slot (see
/// `MessageTemplate.bindNames`), which the workload keeps per connection, pointing into storage
/// it owns; randomness is a SplitMix64 state the render advances (any seed works, 0 included),
/// so the workload keeps one `UInt64` per client or per loop and writes it back.
public struct TemplateValues {
    public var stamp: MessageStamp
    /// The client's global index.
    public var client: Int
    public var sequence: UInt32
    /// The client's user name, inserted as given (the workload makes it JSON-safe).
    public var user: UnsafeRawBufferPointer
    /// Captures and secrets by slot, inserted as given: a capture taken from a JSON string is
    /// its contents with escapes as written, so it goes back into a JSON string unchanged.
    /// A slot beyond the table renders as nothing.
    public var named: UnsafeBufferPointer<UnsafeRawBufferPointer>
    /// SplitMix64 state for `{uuid}`, `{random_hex:N}` and `{random:N}`.
    public var random: UInt64

    public init(stamp: MessageStamp, client: Int, sequence: UInt32, user: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                named: UnsafeBufferPointer<UnsafeRawBufferPointer> = UnsafeBufferPointer(start: nil, count: 0), random: UInt64 = 0) {
        self.stamp = stamp
        self.client = client
        self.sequence = sequence
        self.user = user
        self.named = named
        self.random = random
    }

    /// The next SplitMix64 output.
    @inline(__always)
    mutating func nextRandom() -> UInt64 {
        random &+= 0x9E37_79B9_7F4A_7C15
        var z = random
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension MessageTemplate {
    /// The exact number of bytes `render` writes with these values (random parts have fixed widths).
    public func length(_ values: TemplateValues) -> Int {
        var n = 0
        for op in ops { n += Self.length(op, values) }
        return n
    }

    /// Writes the message at `out`, which holds `length(values)` bytes; returns that length.
    /// Advances `values.random` when the template has random parts.
    public func render(into out: UnsafeMutableRawPointer, _ values: inout TemplateValues) -> Int {
        literalBytes.withUnsafeBytes { literals in
            var p = 0
            for op in ops { p += Self.write(op, out + p, literals, &values) }
            return p
        }
    }

    static func length(_ op: Op, _ v: TemplateValues) -> Int {
        switch op {
        case .literal(_, let count): count
        case .textStamp: FlowStamp.textLength(v.stamp)
        case .paddedTextStamp(let n): max(n, FlowStamp.textLength(v.stamp))
        case .userUUID: 36
        case .binaryStamp: FlowStamp.binaryLength
        case .client: decimalLength(v.client)
        case .clientModulo(let n): decimalLength(modulo(v.client, n))
        case .sequence: decimalLength(Int(v.sequence))
        case .user: v.user.count
        case .uuid: 36
        case .randomHex(let n), .randomBytes(let n): n
        case .sequenceU16, .clientU16: 2
        case .sequenceU32, .clientU32: 4
        case .named(let slot): slot < v.named.count ? v.named[slot].count : 0
        }
    }

    static func write(_ op: Op, _ out: UnsafeMutableRawPointer, _ literals: UnsafeRawBufferPointer, _ v: inout TemplateValues) -> Int {
        switch op {
        case .literal(let start, let count):
            if let base = literals.baseAddress { out.copyMemory(from: base + start, byteCount: count) }
            return count
        case .textStamp: return FlowStamp.writeText(v.stamp, into: out)
        case .userUUID:
            // Two FNV-1a hashes of the name, with different offsets: stable, and apart per user.
            var high: UInt64 = 0xCBF2_9CE4_8422_2325, low: UInt64 = 0x8422_2325_CBF2_9CE4
            for byte in v.user {
                high = (high ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
                low = (low ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            }
            return formatUUID(out, high: high, low: low)
        case .paddedTextStamp(let n):
            let written = FlowStamp.writeText(v.stamp, into: out)
            guard written < n else { return written }
            (out + written).initializeMemory(as: UInt8.self, repeating: UInt8(ascii: "x"), count: n - written)
            return n
        case .binaryStamp:
            FlowStamp.writeBinary(v.stamp, into: out)
            return FlowStamp.binaryLength
        case .client: return writeDecimal(v.client, out)
        case .clientModulo(let n): return writeDecimal(modulo(v.client, n), out)
        case .sequence: return writeDecimal(Int(v.sequence), out)
        case .user: return copy(v.user, out)
        case .uuid: return writeUUID(out, &v)
        case .randomHex(let n):
            var i = 0
            while i < n {
                var r = v.nextRandom()
                for _ in 0..<min(16, n - i) {
                    out.storeBytes(of: hexDigit(UInt8(truncatingIfNeeded: r & 0xF)), toByteOffset: i, as: UInt8.self)
                    r >>= 4
                    i += 1
                }
            }
            return n
        case .randomBytes(let n):
            var i = 0
            while i < n {
                var r = v.nextRandom()
                for _ in 0..<min(8, n - i) {
                    out.storeBytes(of: UInt8(truncatingIfNeeded: r), toByteOffset: i, as: UInt8.self)
                    r >>= 8
                    i += 1
                }
            }
            return n
        case .sequenceU16:
            out.storeBytes(of: UInt16(truncatingIfNeeded: v.sequence).bigEndian, as: UInt16.self)
            return 2
        case .sequenceU32:
            out.storeBytes(of: v.sequence.bigEndian, as: UInt32.self)
            return 4
        case .clientU16:
            out.storeBytes(of: UInt16(truncatingIfNeeded: v.client).bigEndian, as: UInt16.self)
            return 2
        case .clientU32:
            out.storeBytes(of: UInt32(truncatingIfNeeded: v.client).bigEndian, as: UInt32.self)
            return 4
        case .named(let slot):
            return slot < v.named.count ? copy(v.named[slot], out) : 0
        }
    }

    @inline(__always)
    static func copy(_ b: UnsafeRawBufferPointer, _ out: UnsafeMutableRawPointer) -> Int {
        if let base = b.baseAddress { out.copyMemory(from: base, byteCount: b.count) }
        return b.count
    }

    /// `client % n` in 0..<n, also for a negative client.
    @inline(__always)
    static func modulo(_ client: Int, _ n: Int) -> Int {
        let r = client % n
        return r < 0 ? r + n : r
    }

    @inline(__always)
    static func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 48 + nibble : 87 + nibble }

    static func decimalLength(_ v: Int) -> Int {
        var m = v.magnitude
        var n = v < 0 ? 2 : 1
        while m >= 10 { m /= 10; n += 1 }
        return n
    }

    static func writeDecimal(_ v: Int, _ out: UnsafeMutableRawPointer) -> Int {
        let n = decimalLength(v)
        var m = v.magnitude
        var i = n - 1
        repeat {
            out.storeBytes(of: UInt8(48 + m % 10), toByteOffset: i, as: UInt8.self)
            m /= 10
            i -= 1
        } while m > 0
        if v < 0 { out.storeBytes(of: UInt8(ascii: "-"), as: UInt8.self) }
        return n
    }

    /// A version 4 UUID, lowercase `8-4-4-4-12`.
    static func writeUUID(_ out: UnsafeMutableRawPointer, _ v: inout TemplateValues) -> Int {
        formatUUID(out, high: v.nextRandom(), low: v.nextRandom())
    }

    /// A version 4 UUID's 36 characters from 128 bits (the version and variant bits set here).
    static func formatUUID(_ out: UnsafeMutableRawPointer, high bits: UInt64, low lowBits: UInt64) -> Int {
        let high = bits & 0xFFFF_FFFF_FFFF_0FFF | 0x4000  // version 4 in bits 12-15
        let low = lowBits & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000  // variant 10
        var p = 0
        for k in 0..<32 {
            if k == 8 || k == 12 || k == 16 || k == 20 {
                out.storeBytes(of: UInt8(ascii: "-"), toByteOffset: p, as: UInt8.self)
                p += 1
            }
            let word = k < 16 ? high : low
            let nibble = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * (k % 16)) & 0xF)
            out.storeBytes(of: hexDigit(nibble), toByteOffset: p, as: UInt8.self)
            p += 1
        }
        return p
    }
}
