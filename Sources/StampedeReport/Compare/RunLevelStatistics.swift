import Foundation

/// Statistics over runs, for `stampede compare` with several runs per side and with a history:
/// each run is one sample of a percentile. The machine's drift between runs is larger than a
/// run's own second-to-second noise, so only the spread of whole runs says how far two builds
/// really differ (docs/compare.md, "Several runs per side").
public enum RunLevelStatistics {
    /// The median of `values` (the mean of the middle two for an even count); 0 when empty.
    public static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let s = values.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    /// The two-sided p-value of the Mann–Whitney U test that `a` and `b` come from one
    /// distribution (ties counted half). Exact, from the distribution of U over all
    /// arrangements, when both sides have at most 30 values and there are no ties; else the
    /// normal approximation with the tie correction. 1 when either side is empty.
    ///
    /// The smallest p-value is bounded by the sample sizes: 2 ÷ C(n+m, n), so 3 runs a side can
    /// never reach 0.05 (0.1), 4 a side reach 0.029 and 5 a side 0.008, which is why Go's
    /// benchstat asks for at least 5 to 10 runs a side.
    public static func mannWhitneyP(_ a: [Double], _ b: [Double]) -> Double {
        let n = a.count, m = b.count
        guard n > 0, m > 0 else { return 1 }
        var u = 0.0
        var tied = false
        for x in a {
            for y in b {
                if x < y { u += 1 } else if x == y { u += 0.5; tied = true }
            }
        }
        let uMin = min(u, Double(n * m) - u)
        if !tied, n <= 30, m <= 30 {
            // counts[k] = arrangements with U = k, built one value at a time (the standard recurrence).
            let counts = uDistribution(n, m)
            let total = counts.reduce(0, +)
            let below = counts[0...Int(uMin)].reduce(0, +)
            return min(1, 2 * below / total)
        }
        // Normal approximation with ties: ranks over both samples.
        let all = (a.map { ($0, 0) } + b.map { ($0, 1) }).sorted { $0.0 < $1.0 }
        var tieTerm = 0.0
        var i = 0
        while i < all.count {
            var j = i
            while j + 1 < all.count, all[j + 1].0 == all[i].0 { j += 1 }
            let t = Double(j - i + 1)
            tieTerm += t * t * t - t
            i = j + 1
        }
        let nn = Double(n), mm = Double(m), total = nn + mm
        let variance = nn * mm / 12 * ((total + 1) - tieTerm / (total * (total - 1)))
        guard variance > 0 else { return 1 }
        let z = (abs(u - nn * mm / 2) - 0.5) / variance.squareRoot()
        return min(1, max(0, erfc(max(0, z) / 2.squareRoot())))
    }

    /// The number of arrangements of `n` and `m` values giving each U from 0 to n·m (as Doubles:
    /// C(60, 30) is past UInt64's range but well within a Double's exact-enough range).
    static func uDistribution(_ n: Int, _ m: Int) -> [Double] {
        // f[i][j][u]: arrangements of i values of a and j of b with U = u. Built up in j for each i.
        var table = [[[Double]]](repeating: [[Double]](repeating: [], count: m + 1), count: n + 1)
        for i in 0...n {
            for j in 0...m {
                var row = [Double](repeating: 0, count: i * j + 1)
                if i == 0 || j == 0 {
                    row[0] = 1
                } else {
                    // The largest value is either one of a's (then it exceeds all j of b's: U grows by j) or one of b's.
                    let fromA = table[i - 1][j], fromB = table[i][j - 1]
                    for (k, c) in fromA.enumerated() { row[k + j] += c }
                    for (k, c) in fromB.enumerated() { row[k] += c }
                }
                table[i][j] = row
            }
        }
        return table[n][m]
    }

    /// The two-sided Student t quantile for `level` (0.90, 0.95 or 0.99) and `df` degrees of
    /// freedom: a table for small df, the normal quantile with a correction beyond it.
    public static func tQuantile(level: Double, df: Int) -> Double {
        let z: Double = level >= 0.99 ? 2.5758 : level >= 0.95 ? 1.9600 : 1.6449
        guard df >= 1 else { return .infinity }
        let small95: [Double] = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086]
        if level >= 0.95, level < 0.99, df <= small95.count { return small95[df - 1] }
        // Cornish–Fisher expansion of t in terms of z: close enough beyond the table (and for 90 %/99 %).
        let d = Double(df)
        let z3 = z * z * z, z5 = z3 * z * z
        return z + (z3 + z) / (4 * d) + (5 * z5 + 16 * z3 + 3 * z) / (96 * d * d)
    }

    /// A `level` prediction interval for one more value drawn like `values`, in the logarithm:
    /// mean ± t·s·√(1 + 1/n), returned as a ratio range around the geometric mean (so a
    /// latency that doubles and one that halves are equally far). nil with fewer than 3 values
    /// or a zero/negative value.
    public static func predictionInterval(_ values: [Double], level: Double = 0.95) -> (low: Double, center: Double, high: Double)? {
        guard values.count >= 3, values.allSatisfy({ $0 > 0 }) else { return nil }
        let logs = values.map { log($0) }
        let n = Double(logs.count)
        let mean = logs.reduce(0, +) / n
        let s = (logs.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / (n - 1)).squareRoot()
        let half = tQuantile(level: level, df: logs.count - 1) * s * (1 + 1 / n).squareRoot()
        return (exp(mean - half), exp(mean), exp(mean + half))
    }

    /// The change of paired runs (current ÷ baseline − 1, pair by pair): the geometric mean of
    /// the pairs' ratios and its `level` t interval, so whatever the machine did to both runs of
    /// a pair cancels. (0, 0, 0) with fewer than 2 pairs or a value not above 0.
    public static func pairedChange(baseline: [Double], current: [Double], level: Double = 0.95) -> (change: Double, low: Double, high: Double) {
        let n = min(baseline.count, current.count)
        guard n >= 2, (baseline + current).allSatisfy({ $0 > 0 }) else { return (0, 0, 0) }
        let d = (0..<n).map { log(current[$0] / baseline[$0]) }
        let mean = d.reduce(0, +) / Double(n)
        let s = (d.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(n - 1)).squareRoot()
        let half = tQuantile(level: level, df: n - 1) * s / Double(n).squareRoot()
        return (exp(mean) - 1, exp(mean - half) - 1, exp(mean + half) - 1)
    }

    /// A hierarchical bootstrap of the change of the median run (current ÷ baseline − 1):
    /// `resamples` times, draw as many runs as each side has, with replacement, and for each
    /// drawn run one of its own bootstrap replicates (its intervals resampled), so both the
    /// spread between runs and the noise within each run are in the interval. Returns the
    /// central `level` share of the resampled changes. Deterministic for a `seed`.
    ///
    /// `baseline[r]` and `current[r]` are run r's replicates of the percentile (µs), the run's
    /// own value first; a run with none is left out.
    public static func hierarchicalChange(baseline: [[Double]], current: [[Double]], resamples: Int = 2000,
                                          seed: UInt64 = 0x5EED, level: Double = 0.95) -> (low: Double, high: Double) {
        let b = baseline.filter { !$0.isEmpty }, c = current.filter { !$0.isEmpty }
        guard !b.isEmpty, !c.isEmpty, resamples > 0 else { return (0, 0) }
        var rng = SplitMix64(seed: seed)
        func draw(_ side: [[Double]]) -> Double {
            var picks: [Double] = []
            picks.reserveCapacity(side.count)
            for _ in side.indices {
                let run = side[Int(rng.next() % UInt64(side.count))]
                picks.append(run[Int(rng.next() % UInt64(run.count))])
            }
            return median(picks)
        }
        var changes: [Double] = []
        changes.reserveCapacity(resamples)
        for _ in 0..<min(resamples, 100_000) {
            let base = draw(b)
            guard base > 0 else { continue }
            changes.append(draw(c) / base - 1)
        }
        guard !changes.isEmpty else { return (0, 0) }
        changes.sort()
        let tail = (1 - level) / 2
        let lo = changes[min(changes.count - 1, max(0, Int((tail * Double(changes.count)).rounded(.down))))]
        let hi = changes[min(changes.count - 1, max(0, Int(((1 - tail) * Double(changes.count)).rounded(.up)) - 1))]
        return (lo, hi)
    }
}
