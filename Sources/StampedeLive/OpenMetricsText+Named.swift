import StampedeMetrics

// What a scenario names (a WebSocket flow's latencies and counters) and the Closes servers
// started: one family each, the name in a label, as the built-in families cannot list names
// the scenario makes up.
extension OpenMetricsText {
    static func named(_ t: MetricsShard, into w: inout Writer) {
        let latencies = zip(t.named.latencyKeys, t.named.histograms).filter { $0.1.totalCount > 0 && !t.builtInHasSamples($0.0) }
        if !latencies.isEmpty {
            let name = "stampede_latency_seconds"
            w.family(name, .histogram, help: "Latencies the scenario names (summary.json latency_us), by metric, from the run's HdrHistograms.",
                     unit: "seconds")
            for (key, h) in latencies {
                let buckets = cumulativeBuckets(h)
                for (i, le) in latencyBounds.enumerated() { w.sample(name + "_bucket", labels: [("metric", key), ("le", le)], value: String(buckets[i])) }
                w.sample(name + "_bucket", labels: [("metric", key), ("le", "+Inf")], value: String(buckets[buckets.count - 1]))
                w.sample(name + "_count", labels: [("metric", key)], value: String(h.totalCount))
                w.sample(name + "_sum", labels: [("metric", key)], value: number(h.latencyMean * Double(h.totalCount) / 1e6))
            }
        }
        if !t.named.counterKeys.isEmpty {
            w.family("stampede_flow_events", .counter, help: "Counters the scenario names (summary.json flow.counters), by counter.")
            for (key, n) in zip(t.named.counterKeys, t.named.counters) {
                w.sample("stampede_flow_events_total", labels: [("counter", key)], value: String(n))
            }
        }
        if !t.connectErrorMessages.isEmpty {
            w.family("stampede_connect_errors", .counter, help: "Socket.IO CONNECT_ERROR answers, by the server's message (summary.json connect_errors).")
            for (key, n) in t.connectErrorMessages.sorted(by: { $0.key < $1.key }) {
                w.sample("stampede_connect_errors_total", labels: [("message", key)], value: String(n))
            }
        }
        if !t.closeCodes.isEmpty {
            w.family("stampede_server_closes", .counter, help: "WebSocket Closes the server started, by code and reason (summary.json close_codes).")
            for (key, n) in t.closeCodes.sorted(by: { $0.key < $1.key }) {
                w.sample("stampede_server_closes_total", labels: [("close", key)], value: String(n))
            }
        }
    }
}
