/// The longest span a timer or deadline holds: about 146 years. Two such spans added to the
/// monotonic clock still fit in a UInt64, so `now + nanoseconds(x) + nanoseconds(y)` cannot trap.
public let maxNanoseconds: UInt64 = 1 << 62

/// Seconds as whole nanoseconds, for timers and deadlines, from any Double.
///
/// `UInt64(seconds * 1e9)` traps on NaN, on negatives and past 584 years; a Double can come from
/// a scenario (after validation, but one missed case would still be a crash) or from a server
/// (`Retry-After: 1e300`). Here NaN and negatives become 0 and large values saturate at
/// `maxNanoseconds`, so no input reaches a runtime trap.
@inlinable
public func nanoseconds(_ seconds: Double) -> UInt64 {
    let ns = seconds * 1e9
    guard ns > 0 else { return 0 }  // also NaN
    return ns < Double(maxNanoseconds) ? UInt64(ns) : maxNanoseconds
}
