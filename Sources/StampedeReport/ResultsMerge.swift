import Foundation
import StampedeMetrics

/// `stampede merge A B … -o OUT`: one results folder from several runs that ran side by side (other
/// processes or hosts against the same target). Exact where exactness is possible: each latency
/// metric's histograms are added (from the `.hlog` files, never by averaging percentiles), their
/// intervals aligned by wall time (StartTime + StartTimestamp) and merged when they start in the
/// same second; counters, errors and bytes are summed. What cannot be added is documented in
/// docs/results.md (a merged folder).
///
/// The logs are streamed, never held: each walk of a merged log (`MergedLog.intervals()`) reads
/// its inputs again one interval at a time, so a merge's memory does not grow with the runs' length.
public enum ResultsMerge {
    /// One input folder, read.
    struct Input {
        var folder: URL
        var summary: RunSummary
        /// Metric key → its log (StartTime read from the header; intervals streamed when walked).
        var logs: [String: MergedLog.Part]
    }

    /// Reads the folders, writes the merged folder `output` (created; it must not exist or be
    /// empty) and returns its summary.
    public static func merge(_ folders: [URL], into output: URL) throws(ResultsMergeError) -> RunSummary {
        let merged = try combine(folders, output: output)
        return try write(merged.summary, logs: merged.logs, to: output)
    }

    /// The merged folder's contents before they are written, so that a caller can add to the
    /// summary (thresholds judged on the merge) first.
    public struct Merged {
        public var summary: RunSummary
        /// Metric key → the merged log: its StartTime (the earliest input's) and its inputs.
        public var logs: [String: MergedLog]
    }

    /// Reads and merges the folders (nothing is written). Every interval log is read through
    /// once here, so a malformed one is named now.
    public static func combine(_ folders: [URL], output: URL) throws(ResultsMergeError) -> Merged {
        guard folders.count >= 1 else { throw .badInput("no results folders to merge") }
        let inputs = try folders.map { folder throws(ResultsMergeError) in try read(folder) }
        let (summary, logs) = try combine(inputs, output: output)
        return Merged(summary: summary, logs: logs)
    }

    /// Writes a merged folder (created; it must not exist or be empty).
    /// - Parameter besides: Entries `output` may already hold (a run of populations keeps
    ///   theirs in `populations/`).
    @discardableResult
    public static func write(_ merged: Merged, to output: URL, besides: Set<String> = []) throws(ResultsMergeError) -> RunSummary {
        try write(merged.summary, logs: merged.logs, to: output, besides: besides)
    }

    /// One folder's summary.json and `.hlog` files; every problem names the folder or file.
    static func read(_ folder: URL) throws(ResultsMergeError) -> Input {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .badInput("\(folder.path): no such folder")
        }
        let summaryURL = folder.appendingPathComponent(ResultsWriter.summaryFileName)
        guard let data = FileManager.default.contents(atPath: summaryURL.path) else {
            throw .badInput("\(folder.path): not a results folder (no readable \(ResultsWriter.summaryFileName))")
        }
        let summary: RunSummary
        do { summary = try RunSummary.decode(from: data) } catch {
            throw .badInput("\(summaryURL.path): unreadable: \(error)")
        }
        var logs: [String: MergedLog.Part] = [:]
        for (key, latency) in summary.latencyMicros where latency.count > 0 {
            let url = folder.appendingPathComponent(key + ".hlog")
            guard let stream = HistogramLogStream(url: url) else {
                throw .badInput("\(url.path): missing or unreadable (summary.json has \(latency.count) \(key) samples)")
            }
            // The header comes before the first interval: reading that one gives the StartTime.
            do {
                _ = try stream.next()
                guard let start = stream.startTime else { throw HistogramLogError(line: 1, field: "StartTime", reason: "missing") }
                logs[key] = MergedLog.Part(startTime: start, url: url)
            } catch {
                throw .badInput("\(url.path): \(error)")
            }
        }
        return Input(folder: folder, summary: summary, logs: logs)
    }

    /// The merged summary and each metric's merged log (StartTime: the earliest input's).
    static func combine(_ inputs: [Input], output: URL) throws(ResultsMergeError) -> (RunSummary, [String: MergedLog]) {
        var logs: [String: MergedLog] = [:]
        let keys = Set(inputs.flatMap { $0.logs.keys })
        for key in keys {
            let parts = inputs.compactMap { $0.logs[key] }
            guard let start = parts.map(\.startTime).min() else { continue }
            logs[key] = MergedLog(startTime: start, parts: parts)
        }
        var s = inputs[0].summary
        for other in inputs.dropFirst().map(\.summary) { add(other, to: &s) }
        var latency: [String: RunSummary.Latency] = [:]
        for (key, log) in logs {
            var total = makeLatencyHistogram()
            let intervals = log.intervals()
            while let interval = try intervals.next() { total.add(interval.histogram) }
            if total.totalCount > 0 { latency[key] = ResultsWriter.latencySummary(total) }
        }
        s.latencyMicros = latency
        s.latencyCorrection = ResultsWriter.latencyCorrection(latency)
        s.messages.accountingClosed = s.messages.unaccounted == 0
        s.messages.fanoutMissing = s.messages.fanoutExpected > s.messages.fanoutReceived ? s.messages.fanoutExpected - s.messages.fanoutReceived : 0
        let handled = s.messages.delivered &+ s.messages.fanoutReceived
        s.generator.cpuMicrosPerDeliveredMessage = handled > 0 ? ResultsWriter.rounded(s.generator.clientLoopCPUSeconds * 1_000_000 / Double(handled)) : nil
        // Storm windows belong to one run's timeline; their files are not carried over.
        s.storms = []
        s.environment.commandLine = ["stampede", "merge"] + inputs.map(\.folder.path) + ["-o", output.path]
        s.environment.startedAt = inputs.map(\.summary.environment.startedAt).min() ?? s.environment.startedAt
        s.environment.endedAt = inputs.map(\.summary.environment.endedAt).max() ?? s.environment.endedAt
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let a = iso.date(from: s.environment.startedAt), let b = iso.date(from: s.environment.endedAt) {
            s.environment.wallSeconds = ResultsWriter.rounded(max(0, b.timeIntervalSince(a)))
        }
        s.files = logs.keys.sorted { metricOrder($0) < metricOrder($1) }.flatMap { [$0 + ".hgrm", $0 + ".hlog"] }
        return (s, logs)
    }

    /// Intervals of several logs on one timeline: each interval's wall-clock start, as seconds
    /// after `startTime`, rounded down to the second, decides which merged interval it joins
    /// (as `MergedIntervals` does for logs read from files).
    public static func alignIntervals(_ parts: [(startTime: Date, intervals: [HistogramLogInterval])], startTime: Date) -> [HistogramLogInterval] {
        let sources = parts.map { part -> MergedIntervals.Source in
            var sorted = part.intervals.sorted { $0.startSeconds < $1.startSeconds }.makeIterator()
            return MergedIntervals.Source(name: "", offset: part.startTime.timeIntervalSince(startTime)) { sorted.next() }
        }
        let merged = MergedIntervals(sources)
        var out: [HistogramLogInterval] = []
        while let interval = try? merged.next() { out.append(interval) }
        return out
    }

    /// Sums `other`'s counts into `s`; peaks and gauges of runs that ran side by side are summed
    /// too (an upper bound: the runs' peaks need not coincide), the worst timer lag is kept.
    static func add(_ o: RunSummary, to s: inout RunSummary) {
        s.partial = s.partial || o.partial
        if s.partialReason == nil { s.partialReason = o.partialReason }
        if s.fatalError == nil { s.fatalError = o.fatalError }
        s.scenario.clients += o.scenario.clients
        s.scenario.connectRate += o.scenario.connectRate
        s.environment.loops += o.environment.loops
        s.environment.cores = max(s.environment.cores, o.environment.cores)
        if !s.environment.hostname.split(separator: ",").contains(Substring(o.environment.hostname)) {
            s.environment.hostname += "," + o.environment.hostname
        }
        s.phasesSeconds.rampUp = max(s.phasesSeconds.rampUp, o.phasesSeconds.rampUp)
        s.phasesSeconds.messages = max(s.phasesSeconds.messages, o.phasesSeconds.messages)
        s.phasesSeconds.drain = max(s.phasesSeconds.drain, o.phasesSeconds.drain)
        let c = o.connections
        s.connections.attempted &+= c.attempted; s.connections.connected &+= c.connected; s.connections.failed &+= c.failed
        s.connections.disconnected &+= c.disconnected; s.connections.peakOpen += c.peakOpen; s.connections.openAtEnd += c.openAtEnd
        let m = o.messages
        s.messages.sent &+= m.sent; s.messages.delivered &+= m.delivered; s.messages.failed &+= m.failed; s.messages.lost &+= m.lost
        sum(&s.messages.lostByReason, m.lostByReason)
        s.messages.fanoutExpected &+= m.fanoutExpected; s.messages.fanoutReceived &+= m.fanoutReceived
        s.messages.sendsDeferred &+= m.sendsDeferred; s.messages.unparsed &+= m.unparsed; s.messages.unaccounted &+= m.unaccounted
        s.messages.throughputPerSecond.sent += m.throughputPerSecond.sent
        s.messages.throughputPerSecond.delivered += m.throughputPerSecond.delivered
        s.messages.throughputPerSecond.fanoutReceived += m.throughputPerSecond.fanoutReceived
        s.bytes.sent &+= o.bytes.sent; s.bytes.received &+= o.bytes.received
        sum(&s.errors, o.errors); s.errorsTotal &+= o.errorsTotal
        sum(&s.upgradeStatuses, o.upgradeStatuses); sum(&s.counters, o.counters); sum(&s.hubErrors, o.hubErrors)
        let g = o.generator
        s.generator.processCPUSeconds += g.processCPUSeconds; s.generator.clientLoopCPUSeconds += g.clientLoopCPUSeconds
        s.generator.maxTimerLagMicros = max(s.generator.maxTimerLagMicros, g.maxTimerLagMicros)
        s.generator.saturated = s.generator.saturated || g.saturated
        s.generator.warnings += g.warnings
        s.generator.peakCPUPercent = plus(s.generator.peakCPUPercent, g.peakCPUPercent)
        s.generator.peakClientLoopCPUPercent = plus(s.generator.peakClientLoopCPUPercent, g.peakClientLoopCPUPercent)
        s.generator.rssPerConnectionBytes = nil
        s.generator.rssBeforeConnectBytes &+= g.rssBeforeConnectBytes; s.generator.rssConnectedBytes &+= g.rssConnectedBytes
        s.generator.rssPeakBytes &+= g.rssPeakBytes
        if var r = s.rest, let q = o.rest {
            r.requests &+= q.requests; sum(&r.byStatus, q.byStatus); r.changed &+= q.changed; r.unprocessed &+= q.unprocessed
            r.clientsStopped &+= q.clientsStopped; r.redirectsFollowed &+= q.redirectsFollowed
            r.rateLimitHeadersSeen &+= q.rateLimitHeadersSeen; r.retryAfterSeen &+= q.retryAfterSeen
            if let a = q.rateLimitRemainingMin { r.rateLimitRemainingMin = min(r.rateLimitRemainingMin ?? a, a) }
            if let a = q.retryAfterMaxSeconds { r.retryAfterMaxSeconds = max(r.retryAfterMaxSeconds ?? a, a) }
            r.responsesPerSecond += q.responsesPerSecond
            let ok = r.byStatus.filter { $0.key.hasPrefix("2") }.values.reduce(0, +), notModified = r.byStatus["304"] ?? 0
            r.notModifiedRatio = ok + notModified > 0 ? ResultsWriter.rounded(Double(notModified) / Double(ok + notModified)) : nil
            r.cpuMicrosPerResponse = nil
            s.rest = r
        }
        if let c = o.closeCodes {
            var merged = s.closeCodes ?? [:]
            MetricsShard.addBounded(&merged, c)
            s.closeCodes = merged
        }
        if let c = o.connectErrors {
            var merged = s.connectErrors ?? [:]
            MetricsShard.addBounded(&merged, c)
            s.connectErrors = merged
        }
        if let f = o.flow {
            var merged = s.flow ?? RunSummary.Flow(counters: [:], stepErrors: [:], unrecognisedSamples: [])
            sum(&merged.counters, f.counters)
            MetricsShard.addBounded(&merged.stepErrors, f.stepErrors)
            for sample in f.unrecognisedSamples where merged.unrecognisedSamples.count < MetricsShard.maxSamples {
                merged.unrecognisedSamples.append(sample)
            }
            s.flow = merged
        }
        if var t = s.tls, let u = o.tls {
            t.handshakes &+= u.handshakes; t.resumed &+= u.resumed; sum(&t.failureReasons, u.failureReasons)
            s.tls = t
        } else if s.tls == nil {
            s.tls = o.tls
        }
    }

    static func plus(_ a: Double?, _ b: Double?) -> Double? {
        a == nil && b == nil ? nil : (a ?? 0) + (b ?? 0)
    }

    static func sum(_ a: inout [String: UInt64], _ b: [String: UInt64]) {
        for (k, v) in b { a[k, default: 0] &+= v }
    }

    static func metricOrder(_ key: String) -> Int {
        LatencyMetric.allCases.first { $0.key == key }?.rawValue ?? Int.max
    }

    /// Writes the merged folder: `.hgrm` and `.hlog` per metric, summary.json last.
    /// Writes the folder (report.html included) and returns the summary as written.
    static func write(_ summary: RunSummary, logs: [String: MergedLog], to output: URL,
                      besides: Set<String> = []) throws(ResultsMergeError) -> RunSummary {
        let fm = FileManager.default
        if let existing = try? fm.contentsOfDirectory(atPath: output.path), !existing.allSatisfy(besides.contains) {
            throw .badInput("\(output.path): exists and is not empty")
        }
        do {
            try fm.createDirectory(at: output, withIntermediateDirectories: true)
            for (key, log) in logs.sorted(by: { $0.key < $1.key }) {
                // Each merged interval onto the file as it is made; the file is moved in whole.
                let spool = try IntervalSpool.spool(in: output)
                spool.startTime = log.startTime
                var total = makeLatencyHistogram()
                let intervals = log.intervals()
                do {
                    while let interval = try intervals.next() {
                        total.add(interval.histogram)
                        spool.append(line: HistogramLog.line(interval), toLog: key + ".hlog")
                    }
                } catch {
                    spool.finish().discard()
                    throw error
                }
                let spooled = spool.finish()
                defer { spooled.discard() }
                if try !spooled.move(key + ".hlog", into: output) {
                    try AtomicFile.write(Data(HistogramLog.header(startTime: log.startTime).utf8), to: output.appendingPathComponent(key + ".hlog"))
                }
                try AtomicFile.write(Data(ResultsWriter.hgrm(total).utf8), to: output.appendingPathComponent(key + ".hgrm"))
            }
            // report.html from the files above, before summary.json (the last file, as in a run's folder).
            var summary = summary
            summary.generator.warnings += ResultsWriter.writeReport(files: [ResultsWriter.summaryFileName: try summary.jsonData()], folder: output, summary: &summary)
            try AtomicFile.write(try summary.jsonData(), to: output.appendingPathComponent(ResultsWriter.summaryFileName))
            AtomicFile.syncDirectory(output)
            return summary
        } catch let error as ResultsMergeError {
            throw error
        } catch {
            throw .writeFailed("\(output.path): \(error)")
        }
    }
}

/// One metric's merged log: its StartTime (the earliest input's) and the input logs it adds.
public struct MergedLog: Sendable {
    public struct Part: Sendable {
        public var startTime: Date
        public var url: URL
    }
    public var startTime: Date
    public var parts: [Part]

    /// The merged intervals, read from the inputs as they are walked (each call starts again).
    public func intervals() -> MergedIntervals {
        MergedIntervals(parts.map { part in
            let stream = HistogramLogStream(url: part.url)
            return MergedIntervals.Source(name: part.url.path, offset: part.startTime.timeIntervalSince(startTime)) { () throws(HistogramLogError) in
                try stream?.next()
            }
        })
    }
}

/// Several interval logs on one timeline, one merged interval at a time: the intervals of every
/// input that start in the same second (wall clock: each input's StartTime + StartTimestamp,
/// after the merged log's StartTime, rounded down) are added into one. Each input is read in
/// order, so it must be in time order (a log Stampede wrote is).
public final class MergedIntervals {
    public struct Source {
        var name: String
        /// The input's StartTime after the merged log's, seconds.
        var offset: Double
        var next: () throws(HistogramLogError) -> HistogramLogInterval?
    }
    private var sources: [Source]
    private var heads: [HistogramLogInterval?]
    private var started = false

    init(_ sources: [Source]) {
        self.sources = sources
        heads = sources.map { _ in nil }
    }

    /// The next merged interval; nil when every input is done. Throws for a malformed input, or
    /// one whose intervals go back in time, naming it.
    public func next() throws(ResultsMergeError) -> HistogramLogInterval? {
        if !started {
            started = true
            for i in sources.indices { heads[i] = try pull(i) }
        }
        guard let second = heads.indices.compactMap({ i in heads[i].map { self.second($0) } }).min() else { return nil }
        var merged: HistogramLogInterval?
        for i in sources.indices {
            while let head = heads[i], self.second(head) == second {
                if var m = merged {
                    let end = max(m.startSeconds + m.lengthSeconds, head.startSeconds + head.lengthSeconds)
                    m.startSeconds = min(m.startSeconds, head.startSeconds)
                    m.lengthSeconds = end - m.startSeconds
                    m.histogram.add(head.histogram)
                    merged = m
                } else {
                    merged = head
                }
                heads[i] = try pull(i)
                if let next = heads[i], self.second(next) < second {
                    throw .badInput("\(sources[i].name): intervals out of time order (one at \(next.startSeconds) s after one at \(head.startSeconds) s)")
                }
            }
        }
        return merged
    }

    /// The input's next interval, its start moved onto the merged timeline.
    private func pull(_ i: Int) throws(ResultsMergeError) -> HistogramLogInterval? {
        do {
            guard var interval = try sources[i].next() else { return nil }
            interval.startSeconds += sources[i].offset
            return interval
        } catch {
            throw .badInput("\(sources[i].name): \(error)")
        }
    }

    private func second(_ interval: HistogramLogInterval) -> Int { Int(max(0, min(interval.startSeconds, 1e9)).rounded(.down)) }
}

/// Why a merge failed: bad input (exit 2, naming the folder or file) or the output could not be written.
public enum ResultsMergeError: Error, CustomStringConvertible {
    case badInput(String)
    case writeFailed(String)

    public var description: String {
        switch self {
        case .badInput(let m): "stampede merge: \(m)"
        case .writeFailed(let m): "stampede merge: cannot write \(m)"
        }
    }
}
