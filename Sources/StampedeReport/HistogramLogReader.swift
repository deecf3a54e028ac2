import Foundation

/// Reads a file line by line in fixed-size chunks, so a reader's memory does not grow with the
/// file: a long run's .hlog files and timeseries.csv are read this way.
public final class LineReader {
    /// The chunk read at a time.
    static let chunkBytes = 1 << 16
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false

    /// nil when the file cannot be opened.
    public init?(url: URL) {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return nil }
        self.handle = handle
    }

    deinit { try? handle.close() }

    /// The next line, without its "\n" or "\r\n"; nil at the end of the file (or when it can no
    /// longer be read).
    public func next() -> Substring? {
        while true {
            if let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                defer { start = newline + 1 }
                return line(buffer[start..<newline])
            }
            if atEnd {
                guard start < buffer.count else { return nil }
                defer { start = buffer.count }
                return line(buffer[start...])
            }
            buffer.removeSubrange(..<start)
            start = 0
            if let chunk = try? handle.read(upToCount: Self.chunkBytes), !chunk.isEmpty { buffer += chunk } else { atEnd = true }
        }
    }

    private func line(_ bytes: ArraySlice<UInt8>) -> Substring {
        var line = bytes
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        return Substring(decoding: line, as: UTF8.self)
    }

    /// Calls `body` with each line of `url`; false when the file cannot be opened.
    public static func forEachLine<E: Error>(of url: URL, _ body: (Substring) throws(E) -> Void) throws(E) -> Bool {
        guard let reader = LineReader(url: url) else { return false }
        while let line = reader.next() { try body(line) }
        return true
    }
}

/// An .hlog file read one interval at a time (`HistogramLogParser` over `LineReader`): what
/// `HistogramLog.parse` gives, without the file or its intervals in memory.
public final class HistogramLogStream {
    private let lines: LineReader
    private var parser = HistogramLogParser()

    /// nil when the file cannot be opened.
    public init?(url: URL) {
        guard let lines = LineReader(url: url) else { return nil }
        self.lines = lines
    }

    /// The file's StartTime, once the header has been read (after the first `next()`).
    public var startTime: Date? { parser.startTime.map { Date(timeIntervalSince1970: $0) } }

    /// The next interval; nil at the end. A malformed line throws, naming it and the field.
    public func next() throws(HistogramLogError) -> HistogramLogInterval? {
        while let line = lines.next() {
            if let interval = try parser.take(line) { return interval }
        }
        return nil
    }

    /// As `next()`, the histogram as the values to record (`HistogramLogParser.takeRecords`).
    public func nextRecords() throws(HistogramLogError) -> (startSeconds: Double, lengthSeconds: Double, records: [(value: UInt64, count: UInt64)])? {
        while let line = lines.next() {
            if let r = try parser.takeRecords(line) { return r }
        }
        return nil
    }
}

/// Reads an .hlog file one interval at a time.
public enum HistogramLogReader {
    /// Calls `body` with each interval of the file at `url` in order; false when the file cannot
    /// be opened. A malformed line throws `HistogramLogError`.
    public static func forEachInterval(in url: URL, _ body: (HistogramLogInterval) -> Void) throws(HistogramLogError) -> Bool {
        guard let stream = HistogramLogStream(url: url) else { return false }
        while let interval = try stream.next() { body(interval) }
        return true
    }
}
