import StampedeMetrics

/// Reads an `.hlog` interval log into one histogram per interval (via `HistogramLog`).
enum CompareIntervalLog {
    static func histograms(_ text: String) throws -> [LatencyHistogram] {
        try HistogramLog.parse(text).intervals.map(\.histogram)
    }
}
