import StampedeMetrics

/// Reads an `.hlog` interval log into one histogram per interval (via `HistogramLog`).
enum CompareIntervalLog {
    static func histograms(_ text: String) throws -> [LatencyHistogram] {
        throw CompareError("reading .hlog files needs the hlog codec (not merged yet)")
    }
}
