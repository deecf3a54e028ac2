import Foundation
import StampedeMetrics

/// Where the report reads a results folder's files from: the folder on disk, with some files
/// given in memory in their place (the summary.json a writer is about to write, so report.html
/// can be written before it: summary.json must stay the last file of a complete folder).
struct ReportFiles {
    /// The folder, for messages.
    var location: String
    var folder: URL?
    var given: [String: Data] = [:]

    static func folder(_ url: URL) -> ReportFiles { ReportFiles(location: url.path, folder: url) }

    /// `files` in place of the folder's own (the folder's others are read from it).
    static func memory(_ files: [String: Data], folder: URL) -> ReportFiles { ReportFiles(location: folder.path, folder: folder, given: files) }

    /// A whole (small) file: summary.json, storm-N.csv.
    func read(_ name: String) -> Data? {
        if let data = given[name] { return data }
        return folder.flatMap { FileManager.default.contents(atPath: $0.appendingPathComponent(name).path) }
    }

    /// Each line of a file that may be long (.hlog, timeseries.csv), read as it streams by;
    /// false when there is no such file.
    func forEachLine<E: Error>(_ name: String, _ body: (Substring) throws(E) -> Void) throws(E) -> Bool {
        if let data = given[name] {
            for line in String(decoding: data, as: UTF8.self).split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) { try body(line) }
            return true
        }
        guard let folder else { return false }
        return try LineReader.forEachLine(of: folder.appendingPathComponent(name), body)
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

    init(start: Double, end: Double, histogram h: SparseHistogram) {
        self.start = start; self.end = end; count = h.totalCount
        p50 = h.latencyValue(atPercentile: 50); p90 = h.latencyValue(atPercentile: 90); p99 = h.latencyValue(atPercentile: 99); max = h.max
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
/// An interval log is read one line at a time, as it streams from the file, and never held
/// whole: each histogram is 1 µs to 1 h at 3 digits (about 190 KB of counts), so an hour-long
/// run's 3,600 intervals of six metrics would take 4 GB. Consecutive intervals are added into
/// at most `maxPoints` groups (`IntervalBins`), and timeseries.csv's rows likewise.
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
            do {
                guard let (figures, total) = try Self.readLog(files, key + ".hlog") else { continue }
                if !figures.isEmpty { intervals[key] = figures }
                if total.totalCount > 0 { totals[key] = total }
            } catch {
                notes.append("\(key).hlog: \(error)")
            }
        }
        var table = CSVTable(maxRows: Self.maxPoints, levels: CSVTable.timeseriesLevels)
        if files.forEachLine(ResultsWriter.timeseriesFileName, { table.take($0) }) { timeseries = table }
        for storm in summary.storms {
            if let d = files.read(storm.file) { stormCurves[storm.number] = CSVTable(String(decoding: d, as: UTF8.self)) }
        }
    }

    /// An .hlog file's intervals, in at most `maxPoints` groups of consecutive ones, and their
    /// sum, read in one pass; nil when there is no such file.
    static func readLog(_ files: ReportFiles, _ name: String, maxPoints: Int = maxPoints) throws(HistogramLogError) -> ([IntervalFigures], LatencyHistogram)? {
        var parser = HistogramLogParser()
        var bins = IntervalBins(maxBins: maxPoints)
        let found = try files.forEachLine(name) { (line: Substring) throws(HistogramLogError) in
            if let r = try parser.takeRecords(line) { bins.add(records: r.records, startSeconds: r.startSeconds, lengthSeconds: r.lengthSeconds) }
        }
        guard found else { return nil }
        return (bins.bins.map { IntervalFigures(start: $0.start, end: $0.end, histogram: $0.histogram) }, bins.total)
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

    /// Streaming (`take`): at most this many rows, and the columns that are levels when rows are
    /// added together (see `downsampled`); nil keeps every row.
    var maxRows: Int? = nil
    var levels: Set<String> = []
    /// Streaming: file rows per kept row (the last may hold fewer), and how many each holds.
    private var rowsPerRow = 1
    private var taken: [Int] = []

    /// timeseries.csv's gauges and elapsed time: a group of rows shows the last one's.
    static let timeseriesLevels: Set<String> = ["elapsed_s", "connections_open", "connections_connecting", "connections_reconnecting", "p50_us", "p99_us", "target_rate"]

    init(_ text: String) {
        var lines = text.split(whereSeparator: \.isNewline).map(String.init)
        header = lines.isEmpty ? [] : lines.removeFirst().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        rows = lines.prefix(1_000_000).map { $0.split(separator: ",", omittingEmptySubsequences: false).map { Double($0.trimmingCharacters(in: .whitespaces)) ?? .nan } }
    }

    /// An empty table that `take` fills one line at a time, keeping at most `maxRows` rows:
    /// past that, neighbouring rows are added together (as `downsampled` does), so a long
    /// file takes as much memory as a short one.
    init(maxRows: Int, levels: Set<String>) {
        header = []; rows = []
        self.maxRows = Swift.max(2, maxRows); self.levels = levels
    }

    /// Takes the file's next line: the header first, then rows (blank lines are skipped).
    mutating func take(_ line: Substring) {
        if line.allSatisfy(\.isWhitespace) { return }
        if header.isEmpty { header = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }; return }
        let row = line.split(separator: ",", omittingEmptySubsequences: false).map { Double($0.trimmingCharacters(in: .whitespaces)) ?? .nan }
        if let last = taken.last, last < rowsPerRow {
            rows[rows.count - 1] = combined(rows[rows.count - 1], row)
            taken[taken.count - 1] += 1
        } else {
            rows.append(row)
            taken.append(1)
        }
        if let maxRows, rows.count > maxRows {
            rows = stride(from: 0, to: rows.count, by: 2).map { k in k + 1 < rows.count ? combined(rows[k], rows[k + 1]) : rows[k] }
            taken = stride(from: 0, to: taken.count, by: 2).map { k in k + 1 < taken.count ? taken[k] + taken[k + 1] : taken[k] }
            rowsPerRow *= 2
        }
    }

    /// Two consecutive rows as one: the later one's levels, the sum of the other columns.
    private func combined(_ a: [Double], _ b: [Double]) -> [Double] {
        header.indices.map { c in
            levels.contains(header[c]) ? (c < b.count ? b[c] : .nan)
                : (c < a.count && a[c].isFinite ? a[c] : 0) + (c < b.count && b[c].isFinite ? b[c] : 0)
        }
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
