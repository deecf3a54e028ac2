import Foundation
import StampedeMetrics

/// `stampede merge A B … -o OUT`: one results folder from several runs that ran side by side (other
/// processes or hosts against the same target). Exact where exactness is possible: each latency
/// metric's histograms are added (from the `.hlog` files, never by averaging percentiles), their
/// intervals aligned by wall time (StartTime + StartTimestamp) and merged when they start in the
/// same second; counters, errors and bytes are summed. What cannot be added is documented in
/// docs/results.md (a merged folder).
public enum ResultsMerge {
    /// One input folder, read.
    struct Input {
        var folder: URL
        var summary: RunSummary
        /// Metric key → the log's StartTime and intervals.
        var logs: [String: (startTime: Date, intervals: [HistogramLogInterval])]
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
        /// Metric key → the merged log's StartTime (the earliest input's) and its intervals.
        public var logs: [String: (startTime: Date, intervals: [HistogramLogInterval])]
    }

    /// Reads and merges the folders (nothing is written).
    public static func combine(_ folders: [URL], output: URL) throws(ResultsMergeError) -> Merged {
        guard folders.count >= 1 else { throw .badInput("no results folders to merge") }
        let inputs = try folders.map { folder throws(ResultsMergeError) in try read(folder) }
        let (summary, logs) = combine(inputs, output: output)
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
        var logs: [String: (startTime: Date, intervals: [HistogramLogInterval])] = [:]
        for (key, latency) in summary.latencyMicros where latency.count > 0 {
            let url = folder.appendingPathComponent(key + ".hlog")
            guard let text = try? String(contentsOf: url, encoding: .utf8) else {
                throw .badInput("\(url.path): missing or unreadable (summary.json has \(latency.count) \(key) samples)")
            }
            do {
                let log = try HistogramLog.parse(text)
                guard let start = log.startTime else { throw HistogramLogError(line: 1, field: "StartTime", reason: "missing") }
                logs[key] = (start, log.intervals)
            } catch {
                throw .badInput("\(url.path): \(error)")
            }
        }
        return Input(folder: folder, summary: summary, logs: logs)
    }

    /// The merged summary and each metric's merged log (StartTime: the earliest input's).
    static func combine(_ inputs: [Input], output: URL) -> (RunSummary, [String: (startTime: Date, intervals: [HistogramLogInterval])]) {
        var logs: [String: (startTime: Date, intervals: [HistogramLogInterval])] = [:]
        let keys = Set(inputs.flatMap { $0.logs.keys })
        for key in keys {
            let parts = inputs.compactMap { $0.logs[key] }
            guard let start = parts.map(\.startTime).min() else { continue }
            logs[key] = (start, alignIntervals(parts, startTime: start))
        }
        var s = inputs[0].summary
        for other in inputs.dropFirst().map(\.summary) { add(other, to: &s) }
        var latency: [String: RunSummary.Latency] = [:]
        for (key, log) in logs {
            var total = makeLatencyHistogram()
            for interval in log.intervals { total.add(interval.histogram) }
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
    /// after `startTime`, rounded down to the second, decides which merged interval it joins.
    public static func alignIntervals(_ parts: [(startTime: Date, intervals: [HistogramLogInterval])], startTime: Date) -> [HistogramLogInterval] {
        var bySecond: [Int: HistogramLogInterval] = [:]
        for part in parts {
            let offset = part.startTime.timeIntervalSince(startTime)
            for interval in part.intervals {
                let start = offset + interval.startSeconds
                let second = Int(max(0, min(start, 1e9)).rounded(.down))
                if var merged = bySecond[second] {
                    let end = max(merged.startSeconds + merged.lengthSeconds, start + interval.lengthSeconds)
                    merged.startSeconds = min(merged.startSeconds, start)
                    merged.lengthSeconds = end - merged.startSeconds
                    merged.histogram.add(interval.histogram)
                    bySecond[second] = merged
                } else {
                    var copy = interval
                    copy.startSeconds = start
                    bySecond[second] = copy
                }
            }
        }
        return bySecond.keys.sorted().compactMap { bySecond[$0] }
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
    static func write(_ summary: RunSummary, logs: [String: (startTime: Date, intervals: [HistogramLogInterval])], to output: URL,
                      besides: Set<String> = []) throws(ResultsMergeError) -> RunSummary {
        let fm = FileManager.default
        if let existing = try? fm.contentsOfDirectory(atPath: output.path), !existing.allSatisfy(besides.contains) {
            throw .badInput("\(output.path): exists and is not empty")
        }
        do {
            try fm.createDirectory(at: output, withIntermediateDirectories: true)
            var written: [String: Data] = [:]
            for (key, log) in logs {
                var total = makeLatencyHistogram()
                for interval in log.intervals { total.add(interval.histogram) }
                try AtomicFile.write(Data(ResultsWriter.hgrm(total).utf8), to: output.appendingPathComponent(key + ".hgrm"))
                let hlog = Data(HistogramLog.render(startTime: log.startTime, intervals: log.intervals).utf8)
                try AtomicFile.write(hlog, to: output.appendingPathComponent(key + ".hlog"))
                written[key + ".hlog"] = hlog
            }
            // report.html from the files above, before summary.json (the last file, as in a run's folder).
            var summary = summary
            written[ResultsWriter.summaryFileName] = try summary.jsonData()
            summary.generator.warnings += ResultsWriter.writeReport(files: written, folder: output, summary: &summary)
            try AtomicFile.write(try summary.jsonData(), to: output.appendingPathComponent(ResultsWriter.summaryFileName))
            AtomicFile.syncDirectory(output)
            return summary
        } catch {
            throw .writeFailed("\(output.path): \(error)")
        }
    }
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
