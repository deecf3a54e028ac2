import Foundation
import StampedeMetrics

/// A run's interval files as the run goes: each latency metric's `.hlog` lines and the
/// timeseries.csv rows are appended to files, interval by interval, so a run's memory does not
/// grow with its length. The engine spools into a hidden folder of the results root
/// (`spool(in:)`); `finish()` closes the files and `ResultsWriter.write` moves them into the
/// results folder, byte for byte what it would have rendered from lines kept in memory.
///
/// Not thread-safe: one run's clock thread appends.
public final class IntervalSpool {
    /// Where the files grow.
    public let folder: URL
    /// The .hlog files' StartTime (the wall clock when the run's clock started); set before the
    /// first line, as each file's header is written with its first line.
    public var startTime: Date
    private var descriptors: [String: Int32] = [:]
    private var rowsWritten = false
    /// The first write that failed (the disk full, the folder gone): the run goes on, and
    /// writing its results then fails with this.
    public private(set) var failure: String?

    /// Spools into `folder` (created, with its parents, if missing): the file names are the
    /// ones the results use.
    public init(folder: URL, startTime: Date = Date()) throws(ResultsWriterError) {
        try ResultsWriter.makeRoot(folder)
        self.folder = folder
        self.startTime = startTime
    }

    /// A new hidden folder in the results root (`.stampede-spool-<pid>-<n>`), on the file system
    /// the results folder will be on, so moving the files there is a rename.
    public static func spool(in resultsRoot: URL) throws(ResultsWriterError) -> IntervalSpool {
        try ResultsWriter.makeRoot(resultsRoot)
        while true {
            let folder = resultsRoot.appendingPathComponent(".stampede-spool-\(getpid())-\(UInt32.random(in: 0 ... .max))", isDirectory: true)
            switch AtomicFile.makeDirectory(folder) {
            case .created: return try IntervalSpool(folder: folder)
            case .exists: continue
            case .failed(let reason): throw .cannotCreateFolder(path: folder.path, reason: reason)
            }
        }
    }

    /// Appends one interval line (`HistogramLog.line`) to the .hlog file `fileName`, its header first.
    public func append(line: String, toLog fileName: String) {
        if descriptors[fileName] == nil {
            guard open(fileName) else { return }
            write(HistogramLog.header(startTime: startTime), to: fileName)
        }
        write(line + "\n", to: fileName)
    }

    /// Appends one row to timeseries.csv, its header first.
    public func append(row sample: IntervalSample) {
        let name = ResultsWriter.timeseriesFileName
        if !rowsWritten {
            guard open(name) else { return }
            rowsWritten = true
            write(ResultsWriter.timeseriesHeader + "\n", to: name)
        }
        write(ResultsWriter.timeseriesRow(sample), to: name)
    }

    /// Flushes and closes every file; what the results writer needs to move them.
    public func finish() -> SpooledIntervals {
        for (name, fd) in descriptors.sorted(by: { $0.key < $1.key }) {
            if let problem = AtomicFile.syncAndClose(fd), failure == nil { failure = "\(folder.appendingPathComponent(name).path): \(problem)" }
        }
        let names = Set(descriptors.keys)
        descriptors = [:]
        return SpooledIntervals(folder: folder, fileNames: names, failure: failure)
    }

    private func open(_ name: String) -> Bool {
        guard failure == nil else { return false }
        switch AtomicFile.openForAppend(folder.appendingPathComponent(name)) {
        case .opened(let fd): descriptors[name] = fd; return true
        case .failed(let problem): failure = "\(folder.appendingPathComponent(name).path): \(problem)"; return false
        }
    }

    private func write(_ text: String, to name: String) {
        guard failure == nil, let fd = descriptors[name] else { return }
        if let problem = AtomicFile.appendAll(fd, Data(text.utf8)) { failure = "\(folder.appendingPathComponent(name).path): \(problem)" }
    }
}

/// A finished spool (`IntervalSpool.finish()`): the folder, the files in it, and the write that
/// failed, if one did.
public struct SpooledIntervals: Sendable, Equatable {
    public var folder: URL
    /// File names in `folder`: `<metric>.hlog` and `<key>.hlog` with at least one line,
    /// timeseries.csv with at least one row.
    public var fileNames: Set<String>
    public var failure: String?

    public init(folder: URL, fileNames: Set<String>, failure: String?) {
        self.folder = folder; self.fileNames = fileNames; self.failure = failure
    }

    /// Moves `name` into `destination` (a rename; a copy when the two are on different file
    /// systems); false when the spool does not have it. A spool that failed fails every move:
    /// the results would lack what it could not write.
    func move(_ name: String, into destination: URL) throws -> Bool {
        if let failure { throw ResultsWriterError.cannotWriteFile(path: destination.appendingPathComponent(name).path, reason: "its interval spool failed: \(failure)") }
        guard fileNames.contains(name) else { return false }
        let from = folder.appendingPathComponent(name), to = destination.appendingPathComponent(name)
        if let problem = AtomicFile.moveIn(from, to) { throw ResultsWriterError.cannotWriteFile(path: to.path, reason: problem) }
        return true
    }

    /// Removes the spool folder and whatever is left in it.
    public func discard() {
        try? FileManager.default.removeItem(at: folder)
    }
}
