import StampedeMetrics

/// Distribution statistics on latency histograms (µs), for `stampede compare`: percentiles of
/// bootstrap resamples, the Kolmogorov–Smirnov distance and the Wasserstein (earth mover's)
/// distance. All of them work on the histograms' buckets, so they are exact for what the
/// histograms hold.
public enum HistogramStatistics {
    /// A histogram as (value, count) pairs in increasing value order; each value is its bucket's
    /// highest equivalent value, as `valueAtPercentile` reports it.
    public static func points(_ h: LatencyHistogram) -> [(value: UInt64, count: UInt64)] {
        var out: [(value: UInt64, count: UInt64)] = []
        for v in h.recordedValues() where v.count > 0 {
            out.append((h.highestEquivalentForValue(v.value), UInt64(v.count)))
        }
        return out
    }

    /// The largest gap between the two cumulative distributions (0…1); 0 when either is empty.
    public static func kolmogorovSmirnov(_ a: LatencyHistogram, _ b: LatencyHistogram) -> Double {
        walk(points(a), points(b)).d
    }

    /// The area between the two cumulative distributions, in µs: how far, on average, each unit
    /// of probability has to move to turn one distribution into the other; 0 when either is empty.
    public static func wasserstein(_ a: LatencyHistogram, _ b: LatencyHistogram) -> Double {
        walk(points(a), points(b)).w
    }

    /// Walks the union of both value sets once, tracking both step CDFs.
    static func walk(_ a: [(value: UInt64, count: UInt64)], _ b: [(value: UInt64, count: UInt64)]) -> (d: Double, w: Double) {
        let ta = a.reduce(0.0) { $0 + Double($1.count) }, tb = b.reduce(0.0) { $0 + Double($1.count) }
        guard ta > 0, tb > 0 else { return (0, 0) }
        var i = 0, j = 0
        var ca = 0.0, cb = 0.0
        var d = 0.0, w = 0.0
        var previous: UInt64? = nil
        var gap = 0.0  // |Fa − Fb| since `previous`
        while i < a.count || j < b.count {
            let v = min(i < a.count ? a[i].value : .max, j < b.count ? b[j].value : .max)
            if let p = previous { w += gap * Double(v - p) }
            if i < a.count, a[i].value == v { ca += Double(a[i].count); i += 1 }
            if j < b.count, b[j].value == v { cb += Double(b[j].count); j += 1 }
            gap = abs(ca / ta - cb / tb)
            d = max(d, gap)
            previous = v
        }
        return (d, w)
    }

    /// The value at `percentile` (0…100) of counts over `values`, as HdrHistogram's
    /// `valueAtPercentile` picks it (the first value whose cumulative count reaches
    /// ⌈p × total / 100⌉, at least 1; 100 is the largest value present).
    static func valueAtPercentile(_ percentile: Double, values: [UInt64], counts: [UInt64], total: UInt64) -> UInt64 {
        guard total > 0 else { return 0 }
        if percentile >= 100 {
            for k in stride(from: values.count - 1, through: 0, by: -1) where counts[k] > 0 { return values[k] }
            return 0
        }
        let wanted = max(1, UInt64((max(percentile.nextDown, 0) * Double(total) / 100).rounded(.up)))
        var cumulative: UInt64 = 0
        for k in values.indices {
            cumulative &+= counts[k]
            if cumulative >= wanted { return values[k] }
        }
        return values.last ?? 0
    }

    /// A bootstrap confidence interval for each of `percentiles`: `resamples` times, draw as many
    /// intervals as there are, with replacement, merge them, and take the percentile; the interval
    /// is the central `level` share of those resampled values. Deterministic for a `seed`.
    /// Intervals without samples are left out; with none, every bound is 0.
    public static func bootstrap(intervals: [LatencyHistogram], percentiles: [Double], resamples: Int = 1000,
                                 seed: UInt64 = 0x5EED, level: Double = 0.95) -> [(low: UInt64, high: UInt64)] {
        bootstrap(parts: intervals.map { SparseHistogram($0) }, percentiles: percentiles, resamples: resamples, seed: seed, level: level)
    }

    /// As `bootstrap(intervals:…)`, over sparse histograms: each one interval, or a bin of
    /// consecutive intervals (`IntervalBins`), which then are what is drawn.
    public static func bootstrap(parts all: [SparseHistogram], percentiles: [Double], resamples: Int = 1000,
                                 seed: UInt64 = 0x5EED, level: Double = 0.95) -> [(low: UInt64, high: UInt64)] {
        let drawn = replicates(parts: all, percentiles: percentiles, resamples: resamples, seed: seed)
        guard drawn.allSatisfy({ !$0.isEmpty }) else { return percentiles.map { _ in (0, 0) } }
        let tail = (1 - level) / 2
        return drawn.map { d in
            let s = d.sorted()
            let lo = s[min(s.count - 1, max(0, Int((tail * Double(s.count)).rounded(.down))))]
            let hi = s[min(s.count - 1, max(0, Int(((1 - tail) * Double(s.count)).rounded(.up)) - 1))]
            return (lo, hi)
        }
    }

    /// The bootstrap's resampled values themselves: for each of `percentiles`, `resamples`
    /// values, each the percentile of one resample of the parts (drawn with replacement, as
    /// many as there are). Empty lists when no part has samples. Deterministic for a `seed`.
    /// Runs compared as several per side draw from these (`RunLevelStatistics.hierarchicalChange`).
    public static func replicates(parts all: [SparseHistogram], percentiles: [Double], resamples: Int,
                                  seed: UInt64 = 0x5EED) -> [[UInt64]] {
        let parts = all.filter { $0.totalCount > 0 }
        guard !parts.isEmpty, resamples > 0 else { return percentiles.map { _ in [] } }
        // One cumulative row per part over the union of values: a resample's cumulative counts
        // are the sum of its draws' rows, weighted by how often each was drawn, so a percentile
        // is a binary search over them (the first value whose cumulative count reaches it).
        let values = Array(Set(parts.flatMap(\.values))).sorted()
        var slot: [UInt64: Int] = [:]
        for (k, v) in values.enumerated() { slot[v] = k }
        let width = values.count
        var cumulative = [UInt64](repeating: 0, count: parts.count * width)
        for (n, part) in parts.enumerated() {
            let row = n * width
            for (v, c) in zip(part.values, part.counts) { if let k = slot[v] { cumulative[row + k] &+= c } }
            for k in 1 ..< max(1, width) { cumulative[row + k] &+= cumulative[row + k - 1] }
        }
        let totals = parts.map(\.totalCount)
        var rng = SplitMix64(seed: seed)
        var drawn = percentiles.map { _ in [UInt64]() }
        var times = [UInt64](repeating: 0, count: parts.count)
        var picked: [Int] = []
        for _ in 0..<min(resamples, 100_000) {
            for k in picked { times[k] = 0 }
            picked.removeAll(keepingCapacity: true)
            var total: UInt64 = 0
            for _ in 0..<parts.count {
                let pick = Int(rng.next() % UInt64(parts.count))
                if times[pick] == 0 { picked.append(pick) }
                times[pick] += 1
                total &+= totals[pick]
            }
            func reached(_ k: Int) -> UInt64 { picked.reduce(0) { $0 &+ times[$1] &* cumulative[$1 * width + k] } }
            for (n, p) in percentiles.enumerated() {
                // As `valueAtPercentile`: the first value whose cumulative count reaches
                // ⌈p × total / 100⌉ (at least 1); for 100, the whole total (the largest value present).
                let wanted = p >= 100 ? total : max(1, UInt64((max(p.nextDown, 0) * Double(total) / 100).rounded(.up)))
                var lo = 0, hi = width - 1
                if reached(hi) < wanted { drawn[n].append(values[hi]); continue }
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if reached(mid) >= wanted { hi = mid } else { lo = mid + 1 }
                }
                drawn[n].append(values[lo])
            }
        }
        return drawn
    }
}

/// A small, fast, seedable generator (SplitMix64), so a bootstrap gives the same answer every time.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
