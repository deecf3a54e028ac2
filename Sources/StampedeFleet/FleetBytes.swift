/// Little-endian writing for the coordinator–worker protocol's frames.
public struct FleetWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    public init() {}

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    public mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    public mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }
    public mutating func double(_ v: Double) { u64(v.bitPattern) }
    public mutating func bool(_ v: Bool) { u8(v ? 1 : 0) }
    /// A length-prefixed byte string.
    public mutating func blob(_ v: [UInt8]) { u32(UInt32(v.count)); bytes.append(contentsOf: v) }
    public mutating func string(_ v: String) { blob(Array(v.utf8)) }
    public mutating func u64s(_ v: [UInt64]) { u32(UInt32(v.count)); for x in v { u64(x) } }
}

/// Bounds-checked little-endian reading: a short or malformed frame is an error, never a trap.
public struct FleetReader: Sendable {
    let bytes: [UInt8]
    var offset = 0
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var isAtEnd: Bool { offset == bytes.count }

    mutating func take(_ n: Int) throws(FleetError) -> ArraySlice<UInt8> {
        guard n >= 0, bytes.count - offset >= n else { throw .malformed("frame ends early (wanted \(n) bytes at \(offset) of \(bytes.count))") }
        defer { offset += n }
        return bytes[offset..<offset + n]
    }

    public mutating func u8() throws(FleetError) -> UInt8 { try take(1).first! }
    public mutating func u32() throws(FleetError) -> UInt32 {
        try take(4).reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
    public mutating func u64() throws(FleetError) -> UInt64 {
        try take(8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }
    public mutating func i64() throws(FleetError) -> Int64 { Int64(bitPattern: try u64()) }
    public mutating func double() throws(FleetError) -> Double { Double(bitPattern: try u64()) }
    public mutating func bool() throws(FleetError) -> Bool { try u8() != 0 }
    public mutating func blob() throws(FleetError) -> [UInt8] { Array(try take(Int(try u32()))) }
    public mutating func string() throws(FleetError) -> String {
        let b = try blob()
        guard let s = String(validating: b, as: UTF8.self) else { throw .malformed("text is not UTF-8") }
        return s
    }
    /// At most `limit` numbers: a length is checked before anything is allocated for it.
    public mutating func u64s(limit: Int) throws(FleetError) -> [UInt64] {
        let n = Int(try u32())
        guard n <= limit, bytes.count - offset >= n * 8 else { throw .malformed("a list of \(n) numbers (at most \(limit))") }
        var out = [UInt64]()
        out.reserveCapacity(n)
        for _ in 0..<n { out.append(try u64()) }
        return out
    }
}

/// A frame that does not follow the protocol (a different version, a corrupt stream).
public enum FleetError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    public var description: String {
        switch self { case .malformed(let why): "malformed coordinator–worker frame: \(why)" }
    }
}
