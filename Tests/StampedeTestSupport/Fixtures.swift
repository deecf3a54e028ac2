// Fixture helpers shared by the codec and session tests (a library the test targets depend
// on, so the helpers exist once).

/// Bytes from a hex string such as "81 05 48 65".
public func hex(_ s: String) -> [UInt8] {
    let digits = s.filter { !$0.isWhitespace }
    precondition(digits.count % 2 == 0, "odd hex string")
    var out: [UInt8] = []
    var i = digits.startIndex
    while i < digits.endIndex {
        let j = digits.index(i, offsetBy: 2)
        out.append(UInt8(digits[i..<j], radix: 16)!)
        i = j
    }
    return out
}

/// A reference frame encoder written independently of the code under test (RFC 6455 §5.2).
/// `lengthBytes` forces a length encoding (0: 7-bit, 2: 16-bit, 8: 64-bit); nil picks the shortest.
public func makeFrame(fin: Bool = true, rsv: UInt8 = 0, opcode: UInt8, payload: [UInt8] = [], mask: [UInt8]? = nil,
                      lengthBytes: Int? = nil) -> [UInt8] {
    var f: [UInt8] = [(fin ? 0x80 : 0) | (rsv & 7) << 4 | (opcode & 0x0F)]
    let m: UInt8 = mask == nil ? 0 : 0x80
    let n = payload.count
    let form = lengthBytes ?? (n < 126 ? 0 : n <= 0xFFFF ? 2 : 8)
    switch form {
    case 0: f.append(m | UInt8(n))
    case 2: f.append(m | 126); f += [UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
    default: f.append(m | 127); for i in (0..<8).reversed() { f.append(UInt8(truncatingIfNeeded: UInt64(n) >> (8 * UInt64(i)))) }
    }
    if let key = mask {
        f += key
        for (i, b) in payload.enumerated() { f.append(b ^ key[i % 4]) }
    } else {
        f += payload
    }
    return f
}
