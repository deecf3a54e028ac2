import Histogram

// The package's `mean`, `stdDeviation` and `valueAtPercentile` are generic and not inlinable, so
// every bucket they visit goes through value witnesses and generic metadata: at the end of a run
// they took a fifth of a short run's CPU. These are the same computations written against the
// package's inlinable iterator, so they compile here for `UInt64` counts. Tests hold them equal
// to the package's.
extension Histogram where Count == UInt64 {
    /// The mean of the recorded values, as `mean` computes it (each bucket at its median value).
    public var latencyMean: Double {
        guard totalCount > 0 else { return 0 }
        var total = 0.0
        for v in recordedValues() { total += Double(medianEquivalentForValue(v.value)) * Double(v.count) }
        return total / Double(totalCount)
    }

    /// The standard deviation of the recorded values, as `stdDeviation` computes it.
    public var latencyStandardDeviation: Double {
        guard totalCount > 0 else { return 0 }
        let mean = latencyMean
        var total = 0.0
        for v in recordedValues() {
            let deviation = Double(medianEquivalentForValue(v.value)) - mean
            total += deviation * deviation * Double(v.count)
        }
        return (total / Double(totalCount)).squareRoot()
    }

    /// The value at `percentile` (0…100), as `valueAtPercentile` computes it: the highest value
    /// equivalent to the bucket where the cumulative count reaches the percentile, clamped to
    /// the recorded minimum and maximum; 0 when empty.
    public func latencyValue(atPercentile percentile: Double) -> UInt64 {
        guard percentile != 0 else { return min }
        guard percentile < 100 else { return maxRecorded }
        let requested = Swift.min(Swift.max(percentile.nextDown, 0), 100)
        let countAtPercentile = Swift.max(1, UInt64((requested * Double(totalCount) / 100).rounded(.up)))
        var cumulative: UInt64 = 0
        for v in recordedValues() {
            cumulative += v.count
            if cumulative >= countAtPercentile { return Swift.max(Swift.min(v.value, maxRecorded), min) }
        }
        return 0
    }
}
