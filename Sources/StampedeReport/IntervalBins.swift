import StampedeMetrics

/// A latency histogram as its non-empty buckets only: what an interval (or a few) holds takes a
/// few KB this way, where a `LatencyHistogram` always takes 184 KiB. Percentiles are computed
/// exactly as `LatencyHistogram.latencyValue(atPercentile:)` does on the full one.
public struct SparseHistogram: Sendable, Equatable {
    /// Each non-empty bucket's value as the histogram's iterator reports it (the bucket's highest
    /// equivalent value), increasing; and its count.
    public private(set) var values: [UInt64] = []
    public private(set) var counts: [UInt64] = []
    public private(set) var totalCount: UInt64 = 0
    /// The recorded minimum and maximum (`LatencyHistogram.min`, `.maxRecorded`); 0 when empty.
    public private(set) var min: UInt64 = 0
    public private(set) var max: UInt64 = 0

    public init() {}

    public init(_ h: LatencyHistogram) {
        guard h.totalCount > 0 else { return }
        for v in h.recordedValues() where v.count > 0 {
            values.append(v.value)
            counts.append(UInt64(v.count))
        }
        totalCount = h.totalCount
        min = h.min
        max = h.maxRecorded
    }

    /// The histogram `HistogramCodec.histogram(records)` would make, bucket by bucket, without
    /// making it: `records` in increasing value order, as the decoder gives them.
    public init(records: [(value: UInt64, count: UInt64)]) {
        let layout = makeLatencyHistogram()  // the shared empty one: only its layout is asked
        var minNonZero = UInt64.max, zero = false
        for r in records where r.count > 0 {
            let bucket = layout.highestEquivalentForValue(r.value)
            if let last = values.last, last == bucket { counts[counts.count - 1] &+= r.count } else { values.append(bucket); counts.append(r.count) }
            totalCount &+= r.count
            max = Swift.max(max, r.value)
            if r.value == 0 { zero = true } else { minNonZero = Swift.min(minNonZero, r.value) }
        }
        min = totalCount == 0 || zero ? 0 : minNonZero
    }

    /// Adds `other`'s counts (as `LatencyHistogram.add` does: the buckets summed, min and max kept).
    public mutating func add(_ other: SparseHistogram) {
        guard other.totalCount > 0 else { return }
        guard totalCount > 0 else { self = other; return }
        var v: [UInt64] = [], c: [UInt64] = []
        v.reserveCapacity(values.count + other.values.count)
        c.reserveCapacity(values.count + other.values.count)
        var i = 0, j = 0
        while i < values.count || j < other.values.count {
            if j == other.values.count || (i < values.count && values[i] < other.values[j]) {
                v.append(values[i]); c.append(counts[i]); i += 1
            } else if i == values.count || other.values[j] < values[i] {
                v.append(other.values[j]); c.append(other.counts[j]); j += 1
            } else {
                v.append(values[i]); c.append(counts[i] &+ other.counts[j]); i += 1; j += 1
            }
        }
        values = v; counts = c
        totalCount &+= other.totalCount
        min = Swift.min(min, other.min)
        max = Swift.max(max, other.max)
    }

    /// As `LatencyHistogram.latencyValue(atPercentile:)` on the full histogram.
    public func latencyValue(atPercentile percentile: Double) -> UInt64 {
        guard totalCount > 0 else { return 0 }
        guard percentile != 0 else { return min }
        guard percentile < 100 else { return max }
        let requested = Swift.min(Swift.max(percentile.nextDown, 0), 100)
        let countAtPercentile = Swift.max(1, UInt64((requested * Double(totalCount) / 100).rounded(.up)))
        var cumulative: UInt64 = 0
        for k in values.indices {
            cumulative += counts[k]
            if cumulative >= countAtPercentile { return Swift.max(Swift.min(values[k], max), min) }
        }
        return 0
    }
}

/// A metric's intervals, read in one pass with memory bounded whatever their number: the whole
/// run's exact histogram, and consecutive intervals added into at most `maxBins` bins (each a
/// `SparseHistogram`). While there are no more intervals than bins, each bin is one interval;
/// past that, neighbouring bins are paired (each then holds twice as many intervals), so there
/// are always between `maxBins / 2` and `maxBins` of them.
public struct IntervalBins: Sendable {
    public struct Bin: Sendable, Equatable {
        /// Seconds since the log's start: the first interval's start, the last one's end.
        public var start: Double
        public var end: Double
        public var intervals: Int
        public var histogram: SparseHistogram
    }

    public let maxBins: Int
    public private(set) var bins: [Bin] = []
    /// Intervals per bin (the last may hold fewer).
    public private(set) var binSize = 1
    /// Every interval added: exact, as the whole file's intervals merged.
    public private(set) var total = makeLatencyHistogram()
    public private(set) var intervalCount = 0
    public private(set) var intervalsWithSamples = 0

    public init(maxBins: Int) { self.maxBins = Swift.max(2, maxBins) }

    public mutating func add(_ interval: HistogramLogInterval) {
        let h = interval.histogram
        if h.totalCount > 0 { total.add(h) }
        add(SparseHistogram(h), startSeconds: interval.startSeconds, lengthSeconds: interval.lengthSeconds)
    }

    /// Adds an interval read as the values to record (`HistogramLogStream.nextRecords`): the
    /// reader's fast path, with no full histogram per interval.
    public mutating func add(records: [(value: UInt64, count: UInt64)], startSeconds: Double, lengthSeconds: Double) {
        for r in records where r.count > 0 { total.record(r.value, count: r.count) }
        add(SparseHistogram(records: records), startSeconds: startSeconds, lengthSeconds: lengthSeconds)
    }

    private mutating func add(_ sparse: SparseHistogram, startSeconds: Double, lengthSeconds: Double) {
        intervalCount += 1
        if sparse.totalCount > 0 { intervalsWithSamples += 1 }
        let interval = (startSeconds: startSeconds, lengthSeconds: lengthSeconds)
        if let last = bins.last, last.intervals < binSize {
            bins[bins.count - 1].histogram.add(sparse)
            bins[bins.count - 1].intervals += 1
            bins[bins.count - 1].end = interval.startSeconds + interval.lengthSeconds
        } else {
            bins.append(Bin(start: interval.startSeconds, end: interval.startSeconds + interval.lengthSeconds, intervals: 1, histogram: sparse))
        }
        if bins.count > maxBins { pairUp() }
    }

    /// Adds each bin to its neighbour: half as many bins, twice as wide.
    mutating func pairUp() {
        var paired: [Bin] = []
        paired.reserveCapacity(maxBins / 2 + 1)
        var k = 0
        while k < bins.count {
            var b = bins[k]
            if k + 1 < bins.count {
                let next = bins[k + 1]
                b.histogram.add(next.histogram)
                b.intervals += next.intervals
                b.end = next.end
            }
            paired.append(b)
            k += 2
        }
        bins = paired
        binSize *= 2
    }
}
