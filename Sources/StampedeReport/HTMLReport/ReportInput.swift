import Foundation
import StampedeMetrics

/// Where the report reads a results folder's files from: the folder on disk, or the files a
/// writer is about to write (so report.html can be written before summary.json, which must stay
/// the last file of a complete folder).
struct ReportFiles {
    /// The folder, for messages.
    var location: String
    var read: (String) -> Data?

    static func folder(_ url: URL) -> ReportFiles {
        ReportFiles(location: url.path) { name in FileManager.default.contents(atPath: url.appendingPathComponent(name).path) }
    }

    static func memory(_ files: [String: Data], location: String) -> ReportFiles {
        ReportFiles(location: location) { files[$0] }
    }

    func path(_ name: String) -> String { (location as NSString).appendingPathComponent(name) }
}

/// One interval (or a group of consecutive intervals) of a latency metric, reduced to the figures
/// the charts draw: its exact percentiles (µs) and where it lies (seconds since the run started).
struct IntervalFigures {
    var start: Double
    var end: Double
    var count: UInt64
    /// p50, p90, p99 and max.
    var p50: UInt64, p90: UInt64, p99: UInt64, max: UInt64

    init(start: Double, end: Double, histogram h: LatencyHistogram) {
        self.start = start; self.end = end; count = h.totalCount
        p50 = h.latencyValue(atPercentile: 50); p90 = h.latencyValue(atPercentile: 90); p99 = h.latencyValue(atPercentile: 99); max = h.maxRecorded
    }

    func value(_ percentile: Double) -> Double {
        guard count > 0 else { return .nan }
        let v: UInt64 = percentile >= 100 ? max : percentile >= 99 ? p99 : percentile >= 90 ? p90 : p50
        return Double(v)
    }
}

/// One run's results as the report needs them: summary.json, the interval logs, timeseries.csv
/// and the storm curves. Only summary.json is required; a missing or malformed optional file
/// leaves its chart out with a note.
///
/// An interval log is read one line at a time and never held whole: each histogram is 1 µs to
/// 1 h at 3 digits (about 190 KB of counts), so an hour-long run's 3,600 intervals of six
/// metrics would take 4 GB. Consecutive intervals are added into at most `maxPoints` groups.
struct RunData {
    static let maxPoints = 600
    /// The metrics drawn over time: those of the message phase. Connect-phase times (TCP, TLS,
    /// upgrade, negotiate, handshake) are in the tables only; their logs are not read.
    static let charted = Set(LatencyMetric.allCases.filter { $0.correction != .notApplicable || $0 == .pingRoundTrip || $0 == .staleness }.map(\.key))
    /// A latency the scenario names is charted when it measures scheduled sends (`ack` and
    /// `ack_uncorrected`, not `connect_flow`).
    static func chartedNamed(_ key: String, _ summary: RunSummary) -> Bool {
        LatencyMetric(key: key) == nil && LatencyCorrectionKind(namedKey: key, among: summary.latencyMicros.keys) != .notApplicable
    }
    var summary: RunSummary
    /// Per latency metric key, from `<metric>.hlog`: its intervals (grouped) and their sum.
    var intervals: [String: [IntervalFigures]] = [:]
    var totals: [String: LatencyHistogram] = [:]
    var timeseries: CSVTable?
    var stormCurves: [Int: CSVTable] = [:]
    /// What could not be read, for the report's notes.
    var notes: [String] = []

    init(_ files: ReportFiles) throws(HTMLReportError) {
        guard let data = files.read(ResultsWriter.summaryFileName) else {
            throw HTMLReportError("\(files.path(ResultsWriter.summaryFileName)): missing or unreadable (a results folder has summary.json once its run has finished)")
        }
        do { summary = try RunSummary.decode(from: data) } catch {
            throw HTMLReportError("\(files.path(ResultsWriter.summaryFileName)): not a Stampede summary.json (\(error))")
        }
        for key in summary.latencyMicros.keys.sorted() where Self.charted.contains(key) || Self.chartedNamed(key, summary) {
            guard let d = files.read(key + ".hlog") else { continue }
            do {
                let (figures, total) = try Self.readLog(String(decoding: d, as: UTF8.self))
                if !figures.isEmpty { intervals[key] = figures }
                if total.totalCount > 0 { totals[key] = total }
            } catch {
                notes.append("\(key).hlog: \(error)")
            }
        }
        if let d = files.read(ResultsWriter.timeseriesFileName) { timeseries = CSVTable(String(decoding: d, as: UTF8.self)) }
        for storm in summary.storms {
            if let d = files.read(storm.file) { stormCurves[storm.number] = CSVTable(String(decoding: d, as: UTF8.self)) }
        }
    }

    /// An .hlog file's intervals, in at most `maxPoints` groups of consecutive ones, and their
    /// sum. Each data line is parsed by `HistogramLog.parse` with the file's header before it,
    /// so its start is placed as the whole file's reader would (our files all have StartTime).
    static func readLog(_ text: String, maxPoints: Int = maxPoints) throws(HistogramLogError) -> ([IntervalFigures], LatencyHistogram) {
        var header = ""
        var data: [Substring] = []
        for line in text.split(whereSeparator: \.isNewline) {
            if line.hasPrefix("#") || line.hasPrefix("\"") { if data.isEmpty { header += line + "\n" } } else if !line.hasPrefix("Tag=") { data.append(line) }
        }
        let size = Swift.max(1, (data.count + maxPoints - 1) / Swift.max(1, maxPoints))
        var figures: [IntervalFigures] = []
        var total = makeLatencyHistogram()
        var group = makeLatencyHistogram()
        var groupStart = 0.0, groupEnd = 0.0, inGroup = 0
        for line in data {
            for i in try HistogramLog.parse(header + line).intervals {
                if inGroup == 0 { groupStart = i.startSeconds; clearLatencyHistogram(&group) }
                group.add(i.histogram)
                groupEnd = i.startSeconds + i.lengthSeconds
                inGroup += 1
            }
            if inGroup >= size {
                figures.append(IntervalFigures(start: groupStart, end: groupEnd, histogram: group))
                total.add(group)
                inGroup = 0
            }
        }
        if inGroup > 0 {
            figures.append(IntervalFigures(start: groupStart, end: groupEnd, histogram: group))
            total.add(group)
        }
        return (figures, total)
    }

    /// The whole run's histogram of a metric: its intervals added (exact).
    func merged(_ key: String) -> LatencyHistogram? { totals[key] }
}

/// A CSV file with a header row and numeric cells (timeseries.csv, storm-N.csv). Columns are
/// found by name, so columns added at the end of a header later are picked up, and old files
/// without them still read.
struct CSVTable {
    var header: [String]
    var rows: [[Double]]

    init(_ text: String) {
        var lines = text.split(whereSeparator: \.isNewline).map(String.init)
        header = lines.isEmpty ? [] : lines.removeFirst().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        rows = lines.prefix(1_000_000).map { $0.split(separator: ",", omittingEmptySubsequences: false).map { Double($0.trimmingCharacters(in: .whitespaces)) ?? .nan } }
    }

    /// At most `maxRows` rows: groups of consecutive rows become one, with the last row's
    /// `levels` columns (gauges, elapsed time) and the sum of the others (per-interval counts).
    func downsampled(maxRows: Int = 600, levels: Set<String>) -> CSVTable {
        guard rows.count > maxRows, maxRows > 0 else { return self }
        let size = (rows.count + maxRows - 1) / maxRows
        var out = self
        out.rows = stride(from: 0, to: rows.count, by: size).map { start in
            let group = rows[start..<min(rows.count, start + size)]
            return header.indices.map { c in
                levels.contains(header[c]) ? (group.last.map { c < $0.count ? $0[c] : .nan } ?? .nan)
                    : group.reduce(0.0) { $0 + (c < $1.count && $1[c].isFinite ? $1[c] : 0) }
            }
        }
        return out
    }

    func column(_ name: String) -> [Double]? {
        guard let i = header.firstIndex(of: name) else { return nil }
        return rows.map { i < $0.count ? $0[i] : .nan }
    }
}

/// Why a report could not be made: names the folder or file.
public struct HTMLReportError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
