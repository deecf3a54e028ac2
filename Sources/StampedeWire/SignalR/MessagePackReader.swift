extension MessagePackHubProtocol {
    /// One MessagePack item as a zero-copy token: payloads are ranges into the read buffer;
    /// containers report their element count and their elements follow in the buffer.
    public enum Value: Sendable, Equatable {
        case null
        case bool(Bool)
        /// Signed formats (int 8…64) and negative fixint.
        case int(Int64)
        /// Positive fixint and unsigned formats (uint 8…64).
        case uint(UInt64)
        /// float 32 (widened) or float 64.
        case float(Double)
        case string(Range<Int>)
        case binary(Range<Int>)
        case array(count: Int)
        /// `count` key/value pairs follow.
        case map(count: Int)
        /// Extension types are carried but not interpreted.
        case ext(type: Int8, data: Range<Int>)

        /// The value as a signed integer, if it is an integer that fits.
        public var int64: Int64? {
            switch self {
            case .int(let v): v
            case .uint(let v): v <= UInt64(Int64.max) ? Int64(v) : nil
            default: nil
            }
        }

        /// The value as an unsigned integer, if it is a non-negative integer.
        public var uint64: UInt64? {
            switch self {
            case .int(let v): v >= 0 ? UInt64(v) : nil
            case .uint(let v): v
            default: nil
            }
        }
    }

    /// A minimal MessagePack reader over a caller's bytes (msgpack spec "formats"). It never reads
    /// outside `position..<end`; truncated data and the never-used byte 0xC1 make it return nil.
    public struct Reader {
        public let buffer: UnsafeRawBufferPointer
        /// Where the next item starts. Moved only by reading, so it always stays in bounds.
        public internal(set) var position: Int
        /// One past the last byte this reader may look at.
        public let end: Int

        /// Reads `buffer[range]` (clamped to the buffer), or the whole buffer.
        public init(_ buffer: UnsafeRawBufferPointer, range: Range<Int>? = nil) {
            self.buffer = buffer
            let r = range ?? 0..<buffer.count
            end = min(max(r.upperBound, 0), buffer.count)
            position = min(max(r.lowerBound, 0), end)
        }

        public var isAtEnd: Bool { position >= end }

        /// Reads one item header (and a scalar's payload); a container's elements are left to
        /// the following reads. On failure `position` is unchanged.
        public mutating func read() -> Value? {
            let p = position
            guard p < end else { return nil }
            let b = buffer[p]
            switch b {
            case 0x00...0x7F: position = p + 1; return .uint(UInt64(b))
            case 0x80...0x8F: position = p + 1; return .map(count: Int(b & 0x0F))
            case 0x90...0x9F: position = p + 1; return .array(count: Int(b & 0x0F))
            case 0xA0...0xBF: return payload(p, header: 1, length: Int(b & 0x1F)).map { .string($0) }
            case 0xC0: position = p + 1; return .null
            case 0xC2: position = p + 1; return .bool(false)
            case 0xC3: position = p + 1; return .bool(true)
            case 0xC4: return uintAt(p + 1, 1).flatMap { payload(p, header: 2, length: $0) }.map { .binary($0) }
            case 0xC5: return uintAt(p + 1, 2).flatMap { payload(p, header: 3, length: $0) }.map { .binary($0) }
            case 0xC6: return uintAt(p + 1, 4).flatMap { payload(p, header: 5, length: $0) }.map { .binary($0) }
            case 0xC7: return ext(p, lengthSize: 1, fixed: nil)
            case 0xC8: return ext(p, lengthSize: 2, fixed: nil)
            case 0xC9: return ext(p, lengthSize: 4, fixed: nil)
            case 0xCA:
                guard let bits = uintAt(p + 1, 4) else { return nil }
                position = p + 5
                return .float(Double(Float(bitPattern: UInt32(truncatingIfNeeded: bits))))
            case 0xCB:
                guard let bits = uint64At(p + 1, 8) else { return nil }
                position = p + 9
                return .float(Double(bitPattern: bits))
            case 0xCC, 0xCD, 0xCE, 0xCF:
                let size = 1 << Int(b - 0xCC)
                guard let v = uint64At(p + 1, size) else { return nil }
                position = p + 1 + size
                return .uint(v)
            case 0xD0, 0xD1, 0xD2, 0xD3:
                let size = 1 << Int(b - 0xD0)
                guard let v = uint64At(p + 1, size) else { return nil }
                position = p + 1 + size
                // Sign-extend from the encoded width.
                let shift = UInt64(64 - 8 * size)
                return .int(Int64(bitPattern: v << shift) >> shift)
            case 0xD4: return ext(p, lengthSize: 0, fixed: 1)
            case 0xD5: return ext(p, lengthSize: 0, fixed: 2)
            case 0xD6: return ext(p, lengthSize: 0, fixed: 4)
            case 0xD7: return ext(p, lengthSize: 0, fixed: 8)
            case 0xD8: return ext(p, lengthSize: 0, fixed: 16)
            case 0xD9: return uintAt(p + 1, 1).flatMap { payload(p, header: 2, length: $0) }.map { .string($0) }
            case 0xDA: return uintAt(p + 1, 2).flatMap { payload(p, header: 3, length: $0) }.map { .string($0) }
            case 0xDB: return uintAt(p + 1, 4).flatMap { payload(p, header: 5, length: $0) }.map { .string($0) }
            case 0xDC: return uintAt(p + 1, 2).map { position = p + 3; return .array(count: $0) }
            case 0xDD: return uintAt(p + 1, 4).map { position = p + 5; return .array(count: $0) }
            case 0xDE: return uintAt(p + 1, 2).map { position = p + 3; return .map(count: $0) }
            case 0xDF: return uintAt(p + 1, 4).map { position = p + 5; return .map(count: $0) }
            case 0xE0...0xFF: position = p + 1; return .int(Int64(Int8(bitPattern: b)))
            default: return nil  // 0xC1 is never used
            }
        }

        /// Skips one complete item, containers included, and returns its range. Iterative: a
        /// count of items still owed replaces recursion, so nesting depth cannot exhaust the
        /// stack; since every item takes at least a byte, owing more items than bytes remain
        /// fails at once. On failure `position` is unchanged.
        public mutating func skip() -> Range<Int>? {
            let start = position
            var owed = 1
            while owed > 0 {
                guard let v = read() else { position = start; return nil }
                owed -= 1
                switch v {
                case .array(let n): owed += n
                case .map(let n): owed += 2 * n
                default: break
                }
                if owed > end - position { position = start; return nil }
            }
            return start..<position
        }

        /// Peeks at the next item without moving.
        public func peek() -> Value? {
            var copy = self
            return copy.read()
        }

        // MARK: Helpers

        /// Big-endian unsigned integer of `size` bytes at `at`, as an Int (sizes ≤ 4).
        func uintAt(_ at: Int, _ size: Int) -> Int? {
            uint64At(at, size).map { Int($0) }
        }

        func uint64At(_ at: Int, _ size: Int) -> UInt64? {
            guard at <= end, size <= end - at else { return nil }
            var v: UInt64 = 0
            for k in 0..<size { v = v << 8 | UInt64(buffer[at + k]) }
            return v
        }

        mutating func payload(_ p: Int, header: Int, length: Int) -> Range<Int>? {
            let start = p + header
            guard start <= end, length <= end - start else { return nil }
            position = start + length
            return start..<(start + length)
        }

        mutating func ext(_ p: Int, lengthSize: Int, fixed: Int?) -> Value? {
            let length: Int
            if let fixed { length = fixed } else {
                guard let n = uintAt(p + 1, lengthSize) else { return nil }
                length = n
            }
            let typeAt = p + 1 + lengthSize
            guard typeAt < end else { return nil }
            let type = Int8(bitPattern: buffer[typeAt])
            guard let data = payload(p, header: 2 + lengthSize, length: length) else { return nil }
            return .ext(type: type, data: data)
        }
    }
}
