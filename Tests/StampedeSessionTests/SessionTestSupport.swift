import Testing
@testable import StampedeSession


/// A clock the test moves by hand: sessions are told the time, they never read it.
struct FakeClock {
    var now: UInt64 = 1_000_000_000
    mutating func advance(seconds: Double) { now += UInt64(seconds * 1e9) }
    mutating func advance(ns: UInt64) { now += ns }
}
