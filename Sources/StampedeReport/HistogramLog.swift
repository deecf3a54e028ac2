import Foundation
import StampedeMetrics

/// One interval of a latency metric, as an .hlog line holds it.
public struct HistogramLogInterval: Sendable {
    /// Seconds from the log's StartTime (the run's start) to the interval's start.
    public var startSeconds: Double
    public var lengthSeconds: Double
    /// Microseconds, as in `MetricsShard`.
    public var histogram: LatencyHistogram

    public init(startSeconds: Double, lengthSeconds: Double, histogram: LatencyHistogram) {
        self.startSeconds = startSeconds
        self.lengthSeconds = lengthSeconds
        self.histogram = histogram
    }
}

/// HdrHistogram interval logs, format 1.3 (the HdrHistogram log format spec; Java
/// `HistogramLogWriter` and `HistogramLogReader`):
///
/// ```
/// #[Histogram log format version 1.3]
/// #[StartTime: 1764000000.000 (seconds since epoch), 2025-11-24T16:00:00.000Z]
/// #[BaseTime: 1764000000.000 (seconds since epoch)]
/// "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
/// 0.000,1.000,1.234,HISTFAAAA…
/// ```
///
/// Interval start times are seconds after BaseTime, which we set to StartTime (the run's start),
/// so every reader places them the same way. Interval_Max is the interval's highest value in
/// milliseconds (our values are microseconds; Java's writers divide nanoseconds by 10^6 for the
/// same column). Lines are untagged, so readers that take only untagged lines (Java's
/// `HistogramLogProcessor` by default) see them all.
public enum HistogramLog {
    public static let formatVersion = "1.3"
    public static let legend = #""StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram""#
    /// Interval_Max = the interval's max / this: microseconds to milliseconds.
    public static let maxValueUnitRatio = 1000.0

    /// The text of an .hlog file (format 1.3, V2 compressed, StartTime/BaseTime header, an
    /// untagged line per interval).
    public static func render(startTime: Date, intervals: [HistogramLogInterval]) -> String {
        render(startTime: startTime, lines: intervals.map(line))
    }

    /// The file's text from lines that `line(_:)` made earlier (the engine keeps the encoded lines,
    /// not the histograms, in memory for the length of a run).
    public static func render(startTime: Date, lines: [String]) -> String {
        var text = header(startTime: startTime)
        for l in lines { text += l + "\n" }
        return text
    }

    /// The header: format version, a comment naming the unit, StartTime, BaseTime, legend.
    public static func header(startTime: Date) -> String {
        let seconds = String(format: "%.3f", startTime.timeIntervalSince1970)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return """
            #[Histogram log format version \(formatVersion)]
            #[Stampede latency histograms: values in microseconds]
            #[StartTime: \(seconds) (seconds since epoch), \(formatter.string(from: startTime))]
            #[BaseTime: \(seconds) (seconds since epoch)]
            \(legend)

            """
    }

    /// One untagged interval line, without its newline.
    public static func line(_ interval: HistogramLogInterval) -> String {
        // The exact highest value (microseconds, so 3 decimals of milliseconds hold it): parse
        // restores it, and with it percentiles that reach the highest bucket.
        let max = Double(interval.histogram.maxRecorded) / maxValueUnitRatio
        let start = Swift.max(0, interval.startSeconds), length = Swift.max(0, interval.lengthSeconds)
        return String(format: "%.3f,%.3f,%.3f,", start, length, max) + HistogramCodec.encodeBase64(interval.histogram)
    }

    /// Reads an .hlog file's untagged intervals (tagged lines are skipped, as Java's
    /// `HistogramLogProcessor` does by default). `startTime` is the file's StartTime, nil when it
    /// has none; each interval's `startSeconds` is then relative to the first interval's start
    /// (as HdrHistogram's readers do). Timestamps are read as the readers do: after BaseTime when
    /// the file gives one; without it, after StartTime when they are more than a year before it
    /// (relative), else absolute. Any malformed line throws, naming the line and field.
    public static func parse(_ text: String) throws(HistogramLogError) -> (startTime: Date?, intervals: [HistogramLogInterval]) {
        var parser = HistogramLogParser()
        var intervals: [HistogramLogInterval] = []
        // Character.isNewline: "\r\n" is one Character, so splitting on "\n" alone would miss it.
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            if let interval = try parser.take(line) { intervals.append(interval) }
        }
        return (parser.startTime.map { Date(timeIntervalSince1970: $0) }, intervals)
    }

    /// The seconds of a `#[StartTime: …` or `#[BaseTime: …` comment, nil for other comments.
    static func headerSeconds(_ line: Substring, key: String, lineNumber: Int) throws(HistogramLogError) -> Double? {
        guard line.hasPrefix(key) else { return nil }
        let rest = line.dropFirst(key.count).drop(while: { $0 == " " })
        let token = rest.prefix(while: { $0 != " " && $0 != "]" && $0 != "," })
        return try number(token, field: String(key.dropFirst(2).dropLast()), lineNumber: lineNumber)
    }

    /// `text` without ASCII spaces, tabs and line ends around it (Foundation's trimming goes
    /// through UTF-16, which cost a reader most of its time on long logs).
    static func trimmed(_ text: Substring) -> Substring {
        func blank(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
        let u = text.utf8
        var start = u.startIndex, end = u.endIndex
        while start < end, blank(u[start]) { start = u.index(after: start) }
        while end > start, blank(u[u.index(before: end)]) { end = u.index(before: end) }
        return Substring(u[start..<end])
    }

    static func number(_ text: Substring, field: String, lineNumber: Int) throws(HistogramLogError) -> Double {
        let trimmed = trimmed(text)
        guard let value = Double(trimmed), value.isFinite, abs(value) < 1e15 else {
            throw HistogramLogError(line: lineNumber, field: field, reason: "not a number: \"\(trimmed.prefix(40))\"")
        }
        return value
    }
}

/// A malformed .hlog file: the line (from 1), the field, and what is wrong with it.
public struct HistogramLogError: Error, CustomStringConvertible {
    public var line: Int
    public var field: String
    public var reason: String

    public init(line: Int, field: String, reason: String) {
        self.line = line
        self.field = field
        self.reason = reason
    }

    public var description: String { "line \(line), \(field): \(reason)" }
}

/// `HistogramLog.parse` one line at a time, so a file can be read as it streams by
/// (`HistogramLogReader`) with one interval in memory at a time.
public struct HistogramLogParser {
    /// The file's StartTime (seconds since the epoch) once its header has given it.
    public private(set) var startTime: Double?
    private var baseTime: Double?
    private var firstAbsolute: Double?
    /// Lines taken so far (the current line's number, from 1).
    public private(set) var lineNumber = 0

    public init() {}

    /// Takes the next line (without its newline): its interval, or nil for a header, legend,
    /// blank or tagged line. Throws for a malformed line, naming it and the field.
    public mutating func take(_ line: Substring) throws(HistogramLogError) -> HistogramLogInterval? {
        guard let r = try takeRecords(line) else { return nil }
        return HistogramLogInterval(startSeconds: r.startSeconds, lengthSeconds: r.lengthSeconds, histogram: HistogramCodec.histogram(r.records))
    }

    /// As `take`, with the interval's histogram as the values to record
    /// (`HistogramCodec.decodeRecordsBase64`): a reader that keeps only buckets never makes the
    /// 184 KiB histogram.
    public mutating func takeRecords(_ line: Substring) throws(HistogramLogError)
        -> (startSeconds: Double, lengthSeconds: Double, records: [(value: UInt64, count: UInt64)])? {
        lineNumber += 1
        if line.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\r" }) { return nil }
        if line.hasPrefix("#") {
            if let value = try HistogramLog.headerSeconds(line, key: "#[StartTime:", lineNumber: lineNumber) { startTime = value }
            if let value = try HistogramLog.headerSeconds(line, key: "#[BaseTime:", lineNumber: lineNumber) { baseTime = value }
            return nil
        }
        if line.hasPrefix("\"StartTimestamp\"") { return nil }
        if line.hasPrefix("Tag=") { return nil }
        let fields = line.split(separator: ",", omittingEmptySubsequences: false)
        guard fields.count == 4 else {
            throw HistogramLogError(line: lineNumber, field: "line", reason: "expected 4 comma-separated fields, found \(fields.count)")
        }
        let timestamp = try HistogramLog.number(fields[0], field: "StartTimestamp", lineNumber: lineNumber)
        let length = try HistogramLog.number(fields[1], field: "Interval_Length", lineNumber: lineNumber)
        let max = try HistogramLog.number(fields[2], field: "Interval_Max", lineNumber: lineNumber)
        let records: [(value: UInt64, count: UInt64)]
        do {
            let maxValue = max >= 0 && max * HistogramLog.maxValueUnitRatio < 1e15 ? UInt64((max * HistogramLog.maxValueUnitRatio).rounded()) : nil
            records = try HistogramCodec.decodeRecordsBase64(HistogramLog.trimmed(fields[3]), maxValue: maxValue)
        } catch {
            throw HistogramLogError(line: lineNumber, field: "Interval_Compressed_Histogram", reason: error.description)
        }
        if baseTime == nil {
            // Java/Python `HistogramLogReader`: no BaseTime, so deduce it from the first line.
            if let start = startTime, timestamp < start - 365 * 24 * 3600 { baseTime = start } else { baseTime = 0 }
        }
        let absolute = timestamp + (baseTime ?? 0)
        if firstAbsolute == nil { firstAbsolute = absolute }
        let origin = startTime ?? firstAbsolute ?? absolute
        return (absolute - origin, length, records)
    }
}

extension HistogramLog {
    /// One interval line per latency metric with samples in `shard` (empty ones are left out,
    /// as the .hlog files leave them out): the run's logs and a worker's kept intervals alike.
    public static func lines(of shard: MetricsShard, startSeconds: Double, lengthSeconds: Double) -> [(metric: LatencyMetric, line: String)] {
        LatencyMetric.allCases.compactMap { m in
            let h = shard.histograms[m.rawValue]
            guard h.totalCount > 0 else { return nil }
            return (m, line(HistogramLogInterval(startSeconds: startSeconds, lengthSeconds: lengthSeconds, histogram: h)))
        }
    }

    /// As `lines(of:)`, for the shard's named latencies (`MetricsShard.named`), by key.
    public static func namedLines(of shard: MetricsShard, startSeconds: Double, lengthSeconds: Double) -> [(key: String, line: String)] {
        zip(shard.named.latencyKeys, shard.named.histograms).compactMap { key, h in
            guard h.totalCount > 0 else { return nil }
            return (key, line(HistogramLogInterval(startSeconds: startSeconds, lengthSeconds: lengthSeconds, histogram: h)))
        }
    }
}
