/// Latencies and counters a scenario names (a WebSocket flow's `ack` reply, its rules'
/// counters), beside the fixed `LatencyMetric`s and `Counter`s. The workload resolves each name
/// to an index once, when it compiles the scenario; recording by index never allocates.
///
/// Shards of one run share the same keys in the same order, so adding them goes by position;
/// shards with other keys (a coordinator's empty total, another build) are added by key.
public struct NamedMetrics: Sendable {
    /// Latency names, in the order the scenario declares them; `histograms[i]` is `latencyKeys[i]`'s.
    public private(set) var latencyKeys: [String]
    public var histograms: [LatencyHistogram]
    /// Counter names; `counters[i]` is `counterKeys[i]`'s.
    public private(set) var counterKeys: [String]
    public var counters: [UInt64]

    public init(latencyKeys: [String] = [], counterKeys: [String] = []) {
        self.latencyKeys = latencyKeys
        self.counterKeys = counterKeys
        histograms = latencyKeys.map { _ in makeLatencyHistogram() }
        counters = Array(repeating: 0, count: counterKeys.count)
    }

    /// No names at all (every workload but a WebSocket flow).
    public var isEmpty: Bool { latencyKeys.isEmpty && counterKeys.isEmpty }

    /// Records a latency in nanoseconds under `latencyKeys[index]`, stored as microseconds
    /// (at least 1), as `MetricsShard.record` does.
    @inline(__always) public mutating func record(_ index: Int, nanoseconds: UInt64) {
        let us = max(1, min(nanoseconds / 1000, 3_600_000_000))
        _ = histograms[index].record(us)
    }

    @inline(__always) public mutating func count(_ index: Int, _ n: UInt64 = 1) { counters[index] &+= n }

    public func latencyIndex(_ key: String) -> Int? { latencyKeys.firstIndex(of: key) }
    public func counterIndex(_ key: String) -> Int? { counterKeys.firstIndex(of: key) }

    /// The histogram named `key`, if the scenario declares it.
    public func histogram(_ key: String) -> LatencyHistogram? { latencyIndex(key).map { histograms[$0] } }
    /// The counter named `key`, if the scenario declares it.
    public func counter(_ key: String) -> UInt64? { counterIndex(key).map { counters[$0] } }

    /// Adds `other`: by position when the keys are the same (the hot case: shards of one run),
    /// otherwise by key, adopting keys this one does not have yet (appended in `other`'s order).
    public mutating func add(_ other: NamedMetrics) {
        if latencyKeys == other.latencyKeys {
            for i in histograms.indices where other.histograms[i].totalCount > 0 { histograms[i].add(other.histograms[i]) }
        } else {
            for (j, key) in other.latencyKeys.enumerated() {
                let i = latencyIndex(key) ?? addLatency(key)
                if other.histograms[j].totalCount > 0 { histograms[i].add(other.histograms[j]) }
            }
        }
        if counterKeys == other.counterKeys {
            for i in counters.indices { counters[i] &+= other.counters[i] }
        } else {
            for (j, key) in other.counterKeys.enumerated() {
                let i = counterIndex(key) ?? addCounter(key)
                counters[i] &+= other.counters[j]
            }
        }
    }

    /// Clears every value, keeping the keys (histograms as `clearLatencyHistogram` does).
    public mutating func reset() {
        for i in histograms.indices { clearLatencyHistogram(&histograms[i]) }
        for i in counters.indices { counters[i] = 0 }
    }

    /// A new latency key (empty histogram); its index.
    @discardableResult
    public mutating func addLatency(_ key: String) -> Int {
        if let i = latencyIndex(key) { return i }
        latencyKeys.append(key)
        histograms.append(makeLatencyHistogram())
        return latencyKeys.count - 1
    }

    /// A new counter key (at 0); its index.
    @discardableResult
    public mutating func addCounter(_ key: String) -> Int {
        if let i = counterIndex(key) { return i }
        counterKeys.append(key)
        counters.append(0)
        return counterKeys.count - 1
    }
}

extension MetricsShard {
    /// Every latency with samples under its results key: the built-in metrics in `LatencyMetric`
    /// order, then the named ones in the order the scenario declares them. A named key equal to
    /// a built-in one with samples is left out (the loader allows such names only for built-ins
    /// the workload never records: a flow's `ack`).
    public var latenciesWithSamples: [(key: String, histogram: LatencyHistogram)] {
        var out: [(key: String, histogram: LatencyHistogram)] = []
        for m in LatencyMetric.allCases where histograms[m.rawValue].totalCount > 0 { out.append((m.key, histograms[m.rawValue])) }
        for (key, h) in zip(named.latencyKeys, named.histograms) where h.totalCount > 0 && !builtInHasSamples(key) {
            out.append((key, h))
        }
        return out
    }

    /// Whether `key` is a built-in latency with samples (a named one of that key then stays out of the results).
    public func builtInHasSamples(_ key: String) -> Bool {
        LatencyMetric(key: key).map { histograms[$0.rawValue].totalCount > 0 } ?? false
    }

    /// The histogram under a results key, built-in or named; nil when there is none.
    /// A name the scenario declared wins over a built-in key of the same name (a flow's `ack`
    /// reply, where only Socket.IO clients record the built-in `ack`).
    public func latencyHistogram(key: String) -> LatencyHistogram? {
        if let h = named.histogram(key) { return h }
        if let m = LatencyMetric(key: key) { return histograms[m.rawValue] }
        return nil
    }
}

extension LatencyMetric {
    /// The metric whose `key` this is.
    public init?(key: String) {
        guard let m = LatencyMetric.allCases.first(where: { $0.key == key }) else { return nil }
        self = m
    }
}
