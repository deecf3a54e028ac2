import Testing
@testable import StampedeSession

/// Bytes from a hex string such as "81 05 48 65".
func hex(_ s: String) -> [UInt8] {
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

/// A clock the test moves by hand: sessions are told the time, they never read it.
struct FakeClock {
    var now: UInt64 = 1_000_000_000
    mutating func advance(seconds: Double) { now += UInt64(seconds * 1e9) }
    mutating func advance(ns: UInt64) { now += ns }
}
