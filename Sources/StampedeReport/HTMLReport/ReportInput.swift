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

/// One run's results as the report needs them: summary.json, the interval logs, timeseries.csv
/// and the storm curves. Only summary.json is required; a missing or malformed optional file
/// leaves its chart out with a note.
struct RunData {
    var summary: RunSummary
    /// Interval histograms per latency metric key, from `<metric>.hlog`.
    var intervals: [String: [HistogramLogInterval]] = [:]
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
        for key in summary.latencyMicros.keys.sorted() {
            guard let d = files.read(key + ".hlog") else { continue }
            do {
                intervals[key] = try HistogramLog.parse(String(decoding: d, as: UTF8.self)).intervals
            } catch {
                notes.append("\(key).hlog: \(error)")
            }
        }
        if let d = files.read(ResultsWriter.timeseriesFileName) { timeseries = CSVTable(String(decoding: d, as: UTF8.self)) }
        for storm in summary.storms {
            if let d = files.read(storm.file) { stormCurves[storm.number] = CSVTable(String(decoding: d, as: UTF8.self)) }
        }
    }

    /// A metric's intervals, consecutive ones added together (exactly) when there are more than
    /// `maxPoints`, so a long run's chart stays a few hundred kilobytes: each point is then the
    /// exact percentile of its group of intervals.
    func grouped(_ key: String, maxPoints: Int = 600) -> [HistogramLogInterval] {
        guard let list = intervals[key], list.count > maxPoints, maxPoints > 0 else { return intervals[key] ?? [] }
        let size = (list.count + maxPoints - 1) / maxPoints
        return stride(from: 0, to: list.count, by: size).map { start in
            let group = list[start..<min(list.count, start + size)]
            var h = makeLatencyHistogram()
            for i in group { h.add(i.histogram) }
            let end = group.last.map { $0.startSeconds + $0.lengthSeconds } ?? group[start].startSeconds
            return HistogramLogInterval(startSeconds: group[start].startSeconds, lengthSeconds: end - group[start].startSeconds, histogram: h)
        }
    }

    /// The whole run's histogram of a metric: its intervals added (exact).
    func merged(_ key: String) -> LatencyHistogram? {
        guard let list = intervals[key], !list.isEmpty else { return nil }
        var total = makeLatencyHistogram()
        for i in list { total.add(i.histogram) }
        return total.totalCount > 0 ? total : nil
    }
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
