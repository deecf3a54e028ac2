import StampedeMetrics
import StampedeReport

// A loop's measurements on the wire: counters as numbers, histograms in HdrHistogram's V2
// compressed encoding (the .hlog payload), so the coordinator adds exactly what the worker
// recorded — never a percentile of a percentile.
extension FleetWriter {
    public mutating func shard(_ s: MetricsShard) {
        u64s(s.counters)
        u64s(s.lost)
        u64s(s.errors)
        intMap(s.upgradeStatuses)
        intMap(s.responseStatuses)
        textMap(s.hubErrorMessages)
        u64(s.rateLimitRemainingMin)
        u64(s.retryAfterMaxSeconds)
        let used = s.histograms.indices.filter { s.histograms[$0].totalCount > 0 }
        u32(UInt32(used.count))
        for i in used { u32(UInt32(i)); histogramBody(s.histograms[i]) }
        textMap(s.closeCodes)
        textMap(s.stepErrors)
        u32(UInt32(s.samples.count))
        for text in s.samples { string(text) }
        named(s.named)
        textMap(s.connectErrorMessages)
    }

    /// Names and all: a worker's shards carry their keys, so the coordinator adds by key.
    mutating func named(_ n: NamedMetrics) {
        u32(UInt32(n.latencyKeys.count))
        for (key, h) in zip(n.latencyKeys, n.histograms) { string(key); histogram(h) }
        u32(UInt32(n.counterKeys.count))
        for (key, v) in zip(n.counterKeys, n.counters) { string(key); u64(v) }
    }

    mutating func textMap(_ m: [String: UInt64]) {
        u32(UInt32(m.count))
        for (text, n) in m.sorted(by: { $0.key < $1.key }) { string(text); u64(n) }
    }

    public mutating func storm(_ s: StormShard) {
        u64(s.affected); u64(s.recovered); u64(s.gaveUp)
        histogram(s.recovery)
        histogram(s.attempts)
        // The curves are mostly zeros after the last active bucket: only that prefix travels.
        let n = s.lastActiveBucket + 1
        u64s(Array(s.attemptsPerBucket.prefix(n)))
        u64s(Array(s.successesPerBucket.prefix(n)))
    }

    mutating func histogram(_ h: LatencyHistogram) {
        bool(h.totalCount > 0)
        if h.totalCount > 0 { histogramBody(h) }
    }

    /// The encoding keeps buckets, not the exact highest value: it travels beside them, as an
    /// .hlog line's Interval_Max does, so percentiles that reach the top bucket come back exact.
    mutating func histogramBody(_ h: LatencyHistogram) {
        u64(h.maxRecorded)
        blob(HistogramCodec.encodeCompressed(h))
    }

    mutating func intMap(_ m: [Int: UInt64]) {
        u32(UInt32(m.count))
        for (k, v) in m.sorted(by: { $0.key < $1.key }) { i64(Int64(k)); u64(v) }
    }
}

extension FleetReader {
    public mutating func shard() throws(FleetError) -> MetricsShard {
        var s = MetricsShard()
        s.counters = try exactly(s.counters.count, "counters")
        s.lost = try exactly(s.lost.count, "loss reasons")
        s.errors = try exactly(s.errors.count, "error classes")
        s.upgradeStatuses = try intMap()
        s.responseStatuses = try intMap()
        for (text, n) in try textMap("hub error texts") { s.countHubError(text, n) }
        s.rateLimitRemainingMin = try u64()
        s.retryAfterMaxSeconds = try u64()
        let used = Int(try u32())
        guard used <= s.histograms.count else { throw .malformed("\(used) histograms") }
        for _ in 0..<used {
            let i = Int(try u32())
            guard i < s.histograms.count else { throw .malformed("histogram index \(i)") }
            s.histograms[i].add(try histogramBody())
        }
        for (key, n) in try textMap("close codes") { s.countCloseKey(key, n) }
        for (key, n) in try textMap("step errors") { s.countStepError(key, n) }
        let samples = Int(try u32())
        guard samples <= MetricsShard.maxSamples else { throw .malformed("\(samples) samples") }
        for _ in 0..<samples { s.samples.append(MetricsShard.cut(try string(), to: MetricsShard.maxSampleBytes)) }
        s.named = try named()
        for (key, n) in try textMap("connect errors") { s.countConnectError(key, n) }
        return s
    }

    /// At most this many names of each kind: a scenario declares a handful.
    static let maxNamedKeys = 10_000

    mutating func named() throws(FleetError) -> NamedMetrics {
        var n = NamedMetrics()
        let latencies = Int(try u32())
        guard latencies <= Self.maxNamedKeys else { throw .malformed("\(latencies) named latencies") }
        for _ in 0..<latencies {
            let i = n.addLatency(try string())
            if try bool() { n.histograms[i].add(try histogramBody()) }
        }
        let counters = Int(try u32())
        guard counters <= Self.maxNamedKeys else { throw .malformed("\(counters) named counters") }
        for _ in 0..<counters {
            let i = n.addCounter(try string())
            n.counters[i] &+= try u64()
        }
        return n
    }

    mutating func textMap(_ what: String) throws(FleetError) -> [(String, UInt64)] {
        let n = Int(try u32())
        guard n <= MetricsShard.maxDistinctHubErrors + 1 else { throw .malformed("\(n) \(what)") }
        var out: [(String, UInt64)] = []
        for _ in 0..<n { out.append((try string(), try u64())) }
        return out
    }

    public mutating func storm() throws(FleetError) -> StormShard {
        var s = StormShard()
        s.affected = try u64(); s.recovered = try u64(); s.gaveUp = try u64()
        if try bool() { s.recovery.add(try histogramBody()) }
        if try bool() { s.attempts.add(try histogramBody()) }
        let attempts = try u64s(limit: StormShard.buckets)
        let successes = try u64s(limit: StormShard.buckets)
        for (i, v) in attempts.enumerated() { s.attemptsPerBucket[i] = v }
        for (i, v) in successes.enumerated() { s.successesPerBucket[i] = v }
        return s
    }

    /// A list that must have exactly `count` numbers (this build's counters, reasons or classes).
    mutating func exactly(_ count: Int, _ what: String) throws(FleetError) -> [UInt64] {
        let v = try u64s(limit: count)
        guard v.count == count else { throw .malformed("\(v.count) \(what), this build has \(count): coordinator and worker versions differ") }
        return v
    }

    mutating func intMap() throws(FleetError) -> [Int: UInt64] {
        let n = Int(try u32())
        guard n <= 1000 else { throw .malformed("a map of \(n) statuses") }
        var m: [Int: UInt64] = [:]
        for _ in 0..<n {
            let k = try i64()
            guard let key = Int(exactly: k) else { throw .malformed("status \(k)") }
            m[key, default: 0] &+= try u64()
        }
        return m
    }

    mutating func histogramBody() throws(FleetError) -> LatencyHistogram {
        let max = try u64()
        let bytes = try blob()
        do { return try HistogramCodec.decodeCompressed(bytes, maxValue: max) } catch {
            throw .malformed("histogram: \(error)")
        }
    }
}
