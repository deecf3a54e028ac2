import Foundation
import StampedeMetrics
import StampedeScenario

/// Writes a run's results folder: summary.json, one `.hgrm` and one `.hlog` per latency metric with samples, and
/// timeseries.csv.
///
/// The layout and every field are documented for users in `docs/results.md`.
public enum ResultsWriter {
    public static let summaryFileName = "summary.json"
    public static let timeseriesFileName = "timeseries.csv"
    /// The columns of timeseries.csv; `errors_<class>` (one per error class, in `ErrorClass`
    /// order) and then `target_rate` were added at the end, so readers that take columns by
    /// position still work.
    public static let timeseriesHeader = "elapsed_s,connections_open,messages_sent,messages_received,errors,p50_us,p99_us,connections_connecting,connections_reconnecting"
        + ErrorClass.allCases.map { ",errors_" + $0.key }.joined() + ",target_rate"
    /// `outputPercentileDistribution` reporting points per half distance in .hgrm files (HdrHistogram's usual 5).
    public static let hgrmTicksPerHalfDistance = 5

    /// Creates `<resultsRoot>/<scenario.name>-<UTC yyyyMMdd'T'HHmmss'Z'>/` (add -2, -3 … if it exists) and writes
    /// summary.json, one `<metric.key>.hgrm` and `<metric.key>.hlog` per latency metric that has samples, and timeseries.csv.
    /// Each file is written atomically (temp file in the same folder + rename). Returns the folder URL.
    ///
    /// summary.json is written last, so a folder that has it is complete.
    /// `folderName` replaces `<name>-<timestamp>` (a capacity run's `step-03-4000`).
    public static func write(_ record: RunRecord, resultsRoot: URL, folderName givenName: String? = nil) throws -> URL {
        var summary = summary(of: record)
        let folder = try makeRunFolder(in: resultsRoot, baseName: givenName.map(safeName) ?? folderName(scenarioName: record.scenario.name, startedAt: record.startedAt))
        func put(_ data: Data, _ name: String) throws { try AtomicFile.write(data, to: folder.appendingPathComponent(name)) }
        // The engine's interval files are moved in as they are; the spool goes either way (a
        // record's spooled intervals are written once).
        let spooled = record.spooledIntervals
        defer { spooled?.discard() }
        func moveOrPut(_ name: String, _ render: () -> String) throws {
            if try spooled?.move(name, into: folder) != true { try put(Data(render().utf8), name) }
        }
        for metric in metricsWithSamples(record.totals) {
            let text = hgrm(record.totals.histograms[metric.rawValue])
            try AtomicFile.write(Data(text.utf8), to: folder.appendingPathComponent(hgrmFileName(metric)))
            try moveOrPut(hlogFileName(metric)) { hlog(record, metric) }
        }
        for key in namedLatenciesWithSamples(record.totals) {
            let text = hgrm(record.totals.named.histogram(key)!)
            try AtomicFile.write(Data(text.utf8), to: folder.appendingPathComponent(hgrmFileName(named: key)))
            try moveOrPut(hlogFileName(named: key)) { hlog(record, named: key) }
        }
        try moveOrPut(timeseriesFileName) { timeseriesCSV(record.intervals) }
        for storm in record.storms {
            try put(Data(stormCSV(storm).utf8), stormFileName(storm.number))
            if let command = storm.command {
                try AtomicFile.write(Data(command.output.utf8), to: folder.appendingPathComponent(commandLogFileName(storm.number)))
            }
        }
        // report.html is rendered from the folder's files and the summary.json about to be
        // written (summary.json stays the last file of a complete folder).
        summary.generator.warnings += writeReport(files: [summaryFileName: try summary.jsonData()], folder: folder, summary: &summary)
        try AtomicFile.write(try summary.jsonData(), to: folder.appendingPathComponent(summaryFileName))
        AtomicFile.syncDirectory(folder)
        return folder
    }

    /// Writes report.html from the folder's files, `files` (summary.json's text) in place of
    /// its own, and lists it in `summary.files`. A report that cannot be made must not cost the run its
    /// results: the reason goes to stderr and is returned, to be added to the warnings.
    static func writeReport(files: [String: Data], folder: URL, summary: inout RunSummary) -> [String] {
        if let problem = HTMLReport.write(files: files, folder: folder) {
            FileHandle.standardError.write(Data("warning: \(problem)\n".utf8))
            return ["report: \(problem)"]
        }
        summary.files.append(HTMLReport.fileName)
        return []
    }

    /// The summary as a Codable value (also used by the CLI to print the end-of-run table and by tests).
    public static func summary(of record: RunRecord) -> RunSummary {
        let t = record.totals
        let scenario = record.scenario

        let sent = t[.messagesSent], delivered = t[.messagesDelivered], failed = t[.messagesFailed], lost = t[.messagesLost]
        let fated = delivered &+ failed &+ lost
        let unaccounted = sent >= fated ? Int64(clamping: sent - fated) : -Int64(clamping: fated - sent)
        let expected = t[.fanoutExpected], received = t[.fanoutReceived]
        let messagePhase = finite(record.phaseSeconds.messages)
        func perSecond(_ n: UInt64) -> Double { messagePhase > 0 ? rounded(Double(n) / messagePhase) : 0 }

        var latency: [String: RunSummary.Latency] = [:]
        for metric in metricsWithSamples(t) {
            latency[metric.key] = latencySummary(t.histograms[metric.rawValue])
        }
        for key in namedLatenciesWithSamples(t) { latency[key] = latencySummary(t.named.histogram(key)!) }
        var counters = Dictionary(uniqueKeysWithValues: Counter.allCases.map { ($0.key, t[$0]) })
        // Named counters beside the built-in ones; a built-in key keeps its own value.
        for (key, n) in zip(t.named.counterKeys, t.named.counters) where counters[key] == nil { counters[key] = n }

        var errors: [String: UInt64] = [:]
        var errorsTotal: UInt64 = 0
        for e in ErrorClass.allCases {
            errors[e.key] = t.errorCount(e)
            errorsTotal &+= t.errorCount(e)
        }
        var statuses: [String: UInt64] = [:]
        for (status, n) in t.upgradeStatuses { statuses[String(status), default: 0] &+= n }

        // Per message the client loops had to process: own echoes plus broadcasts of others.
        let handled = delivered &+ received
        let g = record.generator
        let cpuPerMessage: Double? = handled > 0 ? rounded(finite(g.clientLoopCPUSeconds) * 1_000_000 / Double(handled)) : nil

        let env = record.environment
        var summary = RunSummary(
            partial: record.partial,
            partialReason: record.partialReason,
            fatalError: record.fatalError,
            scenario: RunSummary.ScenarioInfo(
                name: scenario.name, file: scenario.file, workload: scenario.workload.rawValue,
                target: scenario.target.description, clients: scenario.clients,
                connectRate: finite(scenario.connectRate), durationSeconds: finite(scenario.durationSeconds),
                messageRate: finite(scenario.message.ratePerSecond), messageSize: scenario.message.size,
                loadModel: scenario.loadModel.rawValue, latencyModel: latencyModelNote(scenario.loadModel),
                thinkTimeSeconds: finite(scenario.thinkTimeSeconds), seed: scenario.seed, drainSeconds: finite(scenario.drainSeconds)),
            environment: RunSummary.EnvironmentInfo(
                stampedeVersion: env.stampedeVersion, hostname: env.hostname, cores: env.cores, loops: env.loops,
                os: env.os, clock: env.clock, commandLine: env.commandLine,
                startedAt: iso8601(record.startedAt), endedAt: iso8601(record.endedAt),
                wallSeconds: rounded(Swift.max(0, record.endedAt.timeIntervalSince(record.startedAt)))),
            phasesSeconds: RunSummary.Phases(
                rampUp: rounded(record.phaseSeconds.rampUp), messages: rounded(messagePhase), drain: rounded(record.phaseSeconds.drain)),
            connections: RunSummary.Connections(
                attempted: t[.connectAttempts], connected: t[.connected], failed: t[.connectFailed],
                disconnected: t[.disconnected], peakOpen: record.peakOpenConnections, openAtEnd: record.openConnectionsAtEnd),
            messages: RunSummary.Messages(
                sent: sent, delivered: delivered, failed: failed, lost: lost,
                lostByReason: Dictionary(uniqueKeysWithValues: LossReason.allCases.map { ($0.key, t.lostCount($0)) }),
                fanoutExpected: expected, fanoutReceived: received, fanoutMissing: expected > received ? expected - received : 0,
                sendsDeferred: t[.sendsDeferred], unparsed: t[.unparsedMessages],
                accountingClosed: unaccounted == 0, unaccounted: unaccounted,
                throughputPerSecond: RunSummary.Throughput(sent: perSecond(sent), delivered: perSecond(delivered), fanoutReceived: perSecond(received))),
            bytes: RunSummary.Bytes(sent: t[.bytesSent], received: t[.bytesReceived]),
            latencyMicros: latency,
            latencyCorrection: latencyCorrection(latency),
            errors: errors,
            errorsTotal: errorsTotal,
            upgradeStatuses: statuses,
            generator: RunSummary.Generator(
                processCPUSeconds: rounded(g.processCPUSeconds), clientLoopCPUSeconds: rounded(g.clientLoopCPUSeconds),
                cpuMicrosPerDeliveredMessage: cpuPerMessage, maxTimerLagMicros: g.maxTimerLagMicros,
                saturated: g.saturated, warnings: g.warnings, rssBeforeConnectBytes: g.residentBytesBeforeConnect,
                rssConnectedBytes: g.residentBytesConnected, rssPeakBytes: g.peakResidentBytes,
                rssPerConnectionBytes: rssPerConnection(record), peakCPUPercent: rounded(g.peakProcessCPUPercent),
                peakClientLoopCPUPercent: rounded(g.peakClientLoopCPUPercent)),
            files: fileNames(for: t) + record.storms.flatMap { [stormFileName($0.number)] + ($0.command != nil ? [commandLogFileName($0.number)] : []) },
            counters: counters,
            hubErrors: t.hubErrorMessages,
            storms: record.storms.map { stormSummary($0, baseline: record.baselineConnectPhase) }, rest: restSummary(record),
            tls: record.tlsFailureReasons.map { reasons in
                RunSummary.TLS(handshakes: t[.tlsHandshakes], resumed: t[.tlsResumed],
                               failureReasons: reasons.mapValues { UInt64($0) })
            })
        summary.thresholds = record.thresholds
        summary.workers = record.workers
        summary.closeCodes = t.closeCodes
        summary.connectErrors = t.connectErrorMessages.isEmpty ? nil : t.connectErrorMessages
        summary.flow = flowSummary(t)
        return summary
    }

    /// The flow's figures; nil when the workload named nothing and saw no step error or sample.
    static func flowSummary(_ t: MetricsShard) -> RunSummary.Flow? {
        guard !t.named.isEmpty || !t.stepErrors.isEmpty || !t.samples.isEmpty else { return nil }
        var counters: [String: UInt64] = [:]
        for (key, n) in zip(t.named.counterKeys, t.named.counters) { counters[key, default: 0] &+= n }
        return RunSummary.Flow(counters: counters, stepErrors: t.stepErrors, unrecognisedSamples: t.samples)
    }

    static func restSummary(_ record: RunRecord) -> RunSummary.Rest? {
        guard record.scenario.workload == .rest else { return nil }
        let t = record.totals
        let statuses = t.responseStatuses.filter { $0.value > 0 }
        let answered = statuses.values.reduce(0, +)
        let ok = statuses.filter { $0.key / 100 == 2 }.values.reduce(0, +)
        let notModified = statuses[304] ?? 0
        let phase = record.phaseSeconds.messages
        return RunSummary.Rest(
            requests: t[.messagesSent], byStatus: Dictionary(uniqueKeysWithValues: statuses.map { (String($0.key), $0.value) }),
            notModifiedRatio: ok + notModified > 0 ? rounded(Double(notModified) / Double(ok + notModified)) : nil,
            changed: t[.changed], unprocessed: t[.unprocessed], clientsStopped: t[.clientsStopped], redirectsFollowed: t[.redirectsFollowed],
            rateLimitHeadersSeen: t[.rateLimitHeadersSeen], rateLimitRemainingMin: t.rateLimitRemainingMin == .max ? nil : t.rateLimitRemainingMin,
            retryAfterSeen: t[.retryAfterSeen], retryAfterMaxSeconds: t[.retryAfterSeen] > 0 ? t.retryAfterMaxSeconds : nil,
            responsesPerSecond: phase > 0 ? rounded(Double(answered) / phase) : 0,
            cpuMicrosPerResponse: answered > 0 ? rounded(finite(record.generator.clientLoopCPUSeconds) * 1e6 / Double(answered)) : nil)
    }

    static func rssPerConnection(_ record: RunRecord) -> Double? {
        let g = record.generator
        guard g.residentBytesConnected > g.residentBytesBeforeConnect, g.residentBytesBeforeConnect > 0, record.peakOpenConnections > 0 else { return nil }
        return rounded(Double(g.residentBytesConnected - g.residentBytesBeforeConnect) / Double(record.peakOpenConnections))
    }

    static func stormSummary(_ s: StormRecord, baseline: EventWindow) -> RunSummary.Storm {
        let shard = s.shard
        var recovery: [String: Double?] = [:]
        for (key, share) in [("p50", 0.5), ("p95", 0.95), ("p99", 0.99), ("p100", 1.0)] {
            // The share of *affected* clients: a storm where some never came back has no p100.
            let needed = UInt64((Double(shard.affected) * share).rounded(.up))
            if shard.affected == 0 || shard.recovered < needed {
                recovery[key] = .some(nil)
            } else {
                let percentile = Double(needed) / Double(shard.recovered) * 100
                recovery[key] = .some(rounded(Double(shard.recovery.latencyValue(atPercentile: min(100, percentile))) / 1000))
            }
        }
        let a = shard.attempts
        var summary = RunSummary.Storm(
            number: s.number, atSeconds: rounded(s.atSeconds), kind: s.kind, fraction: s.fraction, mode: s.mode,
            affected: shard.affected, recovered: shard.recovered, gaveUp: shard.gaveUp, recoveryMs: recovery,
            attempts: a.totalCount > 0 ? ["p50": a.latencyValue(atPercentile: 50), "p99": a.latencyValue(atPercentile: 99), "max": a.max] : [:],
            file: stormFileName(s.number))
        var phases: [String: RunSummary.ConnectPhase] = [:]
        for m in EventWindow.connectMetrics where s.window.connectPhase[m] != nil || baseline.connectPhase[m] != nil {
            phases[m.key] = RunSummary.ConnectPhase(during: s.window.connectPhase[m].map(latencySummary),
                                                    baseline: baseline.connectPhase[m].map(latencySummary))
        }
        summary.connectPhaseMicros = phases
        summary.messagesLost = s.window.messagesLost
        summary.generatorPeakCPUPercent = rounded(s.window.peakProcessCPUPercent)
        summary.generatorPeakClientLoopCPUPercent = rounded(s.window.peakClientLoopCPUPercent)
        summary.generatorPeakRSSBytes = s.window.peakResidentBytes
        summary.faultError = s.faultError
        if let c = s.command {
            summary.command = RunSummary.Command(run: c.command, exitStatus: c.exitStatus, signal: c.signal, timedOut: c.timedOut,
                                                 durationSeconds: rounded(c.durationSeconds), launchError: c.launchError,
                                                 outputFile: commandLogFileName(s.number), outputTruncated: c.outputTruncated)
        }
        return summary
    }

    /// `event-<n>-command.log`: what an event's command printed.
    public static func commandLogFileName(_ number: Int) -> String { "event-\(number)-command.log" }

    public static func stormFileName(_ number: Int) -> String { "storm-\(number).csv" }

    /// Attempts and successes per 100 ms after a storm, up to the last bucket with either.
    public static func stormCSV(_ s: StormRecord) -> String {
        var csv = "offset_ms,attempts,successes,recovered_total\n"
        var total: UInt64 = 0
        for i in 0...s.shard.lastActiveBucket {
            total += s.shard.successesPerBucket[i]
            csv += "\(i * 100),\(s.shard.attemptsPerBucket[i]),\(s.shard.successesPerBucket[i]),\(total)\n"
        }
        return csv
    }

    // MARK: Pieces, public for the CLI and tests.

    /// `<name>-<UTC yyyyMMdd'T'HHmmss'Z'>`, with characters unsafe in a folder name replaced by `_`.
    public static func folderName(scenarioName: String, startedAt: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: startedAt)
        func pad(_ v: Int?, _ width: Int) -> String {
            let s = String(v ?? 0)
            return String(repeating: "0", count: Swift.max(0, width - s.count)) + s
        }
        let stamp = pad(c.year, 4) + pad(c.month, 2) + pad(c.day, 2) + "T" + pad(c.hour, 2) + pad(c.minute, 2) + pad(c.second, 2) + "Z"
        return safeName(scenarioName) + "-" + stamp
    }

    /// `<metric.key>.hgrm`.
    public static func hgrmFileName(_ metric: LatencyMetric) -> String { metric.key + ".hgrm" }

    /// `<metric.key>.hlog`.
    public static func hlogFileName(_ metric: LatencyMetric) -> String { metric.key + ".hlog" }

    /// `<key>.hgrm` for a named latency (characters unsafe in a file name replaced by `_`).
    public static func hgrmFileName(named key: String) -> String { safeName(key) + ".hgrm" }

    /// `<key>.hlog` for a named latency.
    public static func hlogFileName(named key: String) -> String { safeName(key) + ".hlog" }

    /// As `hlog(_:_:)`, for a named latency.
    public static func hlog(_ record: RunRecord, named key: String) -> String {
        let start = record.histogramLogStartTime ?? record.startedAt
        if let lines = record.namedHistogramLogLines[key], !lines.isEmpty {
            return HistogramLog.render(startTime: start, lines: lines)
        }
        let whole = HistogramLogInterval(startSeconds: 0, lengthSeconds: max(0, record.endedAt.timeIntervalSince(start)),
                                         histogram: record.totals.named.histogram(key) ?? makeLatencyHistogram())
        return HistogramLog.render(startTime: start, intervals: [whole])
    }

    /// The metric's HdrHistogram interval log: the engine's interval lines, or (a record made
    /// without them) one interval spanning the run with the metric's totals.
    public static func hlog(_ record: RunRecord, _ metric: LatencyMetric) -> String {
        let start = record.histogramLogStartTime ?? record.startedAt
        if let lines = record.histogramLogLines[metric], !lines.isEmpty {
            return HistogramLog.render(startTime: start, lines: lines)
        }
        let whole = HistogramLogInterval(startSeconds: 0, lengthSeconds: max(0, record.endedAt.timeIntervalSince(start)),
                                         histogram: record.totals.histograms[metric.rawValue])
        return HistogramLog.render(startTime: start, intervals: [whole])
    }

    /// HdrHistogram's percentile-distribution text for one histogram, values in microseconds (no
    /// scaling): byte for byte what the package's `outputPercentileDistribution` writes, but
    /// compiled here for `UInt64` counts (the package's is generic and not inlinable, and walked
    /// the buckets through value witnesses).
    public static func hgrm(_ histogram: LatencyHistogram) -> String {
        func padded(_ s: String, _ width: Int) -> String { String(repeating: " ", count: Swift.max(0, width - s.count)) + s }
        let layout = HistogramLayout.latency
        let digits = layout.significantDigits
        var text = "\(padded("Value", 12)) \(padded("Percentile", 14)) \(padded("TotalCount", 10)) \(padded("1/(1-Percentile)", 14))\n\n"
        for v in histogram.percentiles(ticksPerHalfDistance: hgrmTicksPerHalfDistance) {
            let level = v.percentileLevelIteratedTo / 100
            if v.percentileLevelIteratedTo != 100 {
                text += String(format: "%12.\(digits)f %2.12f %10d %14.2f\n", Double(v.value), level, v.totalCountToThisValue, 1 / (1 - level))
            } else {
                text += String(format: "%12.\(digits)f %2.12f %10d\n", Double(v.value), level, v.totalCountToThisValue)
            }
        }
        text += String(format: "#[Mean    = %12.\(digits)f, StdDeviation   = %12.\(digits)f]\n", histogram.latencyMean, histogram.latencyStandardDeviation)
        text += String(format: "#[Max     = %12.\(digits)f, Total count    = %12d]\n", Double(histogram.max), histogram.totalCount)
        text += String(format: "#[Buckets = %12d, SubBuckets     = %12d]\n", layout.bucketCount, layout.subBucketCount)
        return text
    }

    /// timeseries.csv: the header, then one row per interval.
    public static func timeseriesCSV(_ intervals: [IntervalSample]) -> String {
        var csv = timeseriesHeader + "\n"
        for s in intervals { csv += timeseriesRow(s) }
        return csv
    }

    /// One row of timeseries.csv, with its newline.
    public static func timeseriesRow(_ s: IntervalSample) -> String {
        var row = "\(fixed3(s.elapsedSeconds)),\(s.openConnections),\(s.messagesSent),\(s.messagesReceived),\(s.errors),\(s.p50Micros),\(s.p99Micros),\(s.connecting),\(s.reconnecting)"
        for e in ErrorClass.allCases { row += ",\(e.rawValue < s.errorsByClass.count ? s.errorsByClass[e.rawValue] : 0)" }
        row += ",\(fixed3(s.targetRate))\n"
        return row
    }

    /// Names of the files `write` puts beside summary.json, in the order it writes them.
    public static func fileNames(for totals: MetricsShard) -> [String] {
        metricsWithSamples(totals).flatMap { [hgrmFileName($0), hlogFileName($0)] }
            + namedLatenciesWithSamples(totals).flatMap { [hgrmFileName(named: $0), hlogFileName(named: $0)] } + [timeseriesFileName]
    }

    /// The `latency_model` note for a load model.
    public static func latencyModelNote(_ model: LoadModel) -> String {
        switch model {
        case .open:
            "open model: latency from intended send time (coordinated omission corrected)"
        case .closed:
            "closed model: each client sends after its own echo plus think time; latency is one client's request loop, not the latency traffic at a fixed rate would see"
        }
    }

    // MARK: Internals

    static func metricsWithSamples(_ totals: MetricsShard) -> [LatencyMetric] {
        LatencyMetric.allCases.filter { totals.histograms[$0.rawValue].totalCount > 0 }
    }

    /// The named latencies with samples, in declared order (a name equal to a built-in key is
    /// left out: the scenario loader refuses it, and the built-in file must not be overwritten).
    static func namedLatenciesWithSamples(_ totals: MetricsShard) -> [String] {
        zip(totals.named.latencyKeys, totals.named.histograms).compactMap { key, h in
            h.totalCount > 0 && !totals.builtInHasSamples(key) ? key : nil
        }
    }

    /// count, min, p50, p90, p99, p99.9, max and mean of a histogram, as summary.json has them.
    public static func latencySummary(_ h: LatencyHistogram) -> RunSummary.Latency {
        RunSummary.Latency(
            count: h.totalCount, min: h.min,
            p50: h.latencyValue(atPercentile: 50), p90: h.latencyValue(atPercentile: 90), p99: h.latencyValue(atPercentile: 99),
            p99_9: h.latencyValue(atPercentile: 99.9), max: h.maxRecorded, mean: rounded(h.latencyMean))
    }

    static func latencyCorrection(_ latency: [String: RunSummary.Latency]) -> RunSummary.LatencyCorrection {
        let present = LatencyMetric.allCases.filter { latency[$0.key] != nil }
        // Named latencies after the built-in ones, in a stable order.
        let named = latency.keys.filter { LatencyMetric(key: $0) == nil }.sorted()
        var pairs: [RunSummary.LatencyCorrection.Pair] = []
        var corrected = present.filter { $0.correction == .corrected }.map(\.key)
        var uncorrected = present.filter { $0.correction == .uncorrected }.map(\.key)
        var notApplicable = present.filter { $0.correction == .notApplicable }.map(\.key)
        var twins: [(String, String)] = present.compactMap { m in m.uncorrectedTwin.map { (m.key, $0.key) } }
        for key in named {
            switch LatencyCorrectionKind(namedKey: key, among: latency.keys) {
            case .corrected: corrected.append(key); twins.append((key, key + LatencyCorrectionKind.uncorrectedSuffix))
            case .uncorrected: uncorrected.append(key)
            case .notApplicable: notApplicable.append(key)
            }
        }
        for (c, u) in twins {
            guard let cl = latency[c], let ul = latency[u] else { continue }
            pairs.append(.init(corrected: c, uncorrected: u, p50Ratio: ratio(cl.p50, ul.p50), p99Ratio: ratio(cl.p99, ul.p99)))
        }
        return RunSummary.LatencyCorrection(corrected: corrected, uncorrected: uncorrected, notApplicable: notApplicable, pairs: pairs)
    }

    /// Creates the first free `<base>`, `<base>-2`, `<base>-3` … with mkdir, which fails if the folder exists,
    /// so two writers in the same second can never share a folder.
    public static func makeRunFolder(in root: URL, baseName: String) throws -> URL {
        try makeRoot(root)
        var suffix = 1
        while true {
            let name = suffix == 1 ? baseName : "\(baseName)-\(suffix)"
            let url = root.appendingPathComponent(name, isDirectory: true)
            switch AtomicFile.makeDirectory(url) {
            case .created: return url
            case .exists where suffix < 100_000: suffix += 1
            case .exists: throw ResultsWriterError.cannotCreateFolder(path: url.path, reason: "too many folders with this name")
            case .failed(let reason): throw ResultsWriterError.cannotCreateFolder(path: url.path, reason: reason)
            }
        }
    }

    /// Checks, before a run starts, that its results can be written under `root`: creates the
    /// folder (and its parents) and a probe folder inside it, then removes the probe. A run that
    /// could not keep its results fails here, not after the load was sent.
    public static func checkWritable(resultsRoot root: URL) throws(ResultsWriterError) {
        try makeRoot(root)
        let probe = root.appendingPathComponent(".stampede-write-check-\(getpid())", isDirectory: true)
        switch AtomicFile.makeDirectory(probe) {
        case .created, .exists: rmdir(probe.path)
        case .failed(let reason): throw .cannotCreateFolder(path: root.path, reason: reason)
        }
    }

    /// `mkdir -p`, with the system's reason (not Foundation's error dump) when it fails.
    static func makeRoot(_ root: URL) throws(ResultsWriterError) {
        var path = ""
        for part in root.standardizedFileURL.path.split(separator: "/") {
            path += "/" + part
            switch AtomicFile.makeDirectory(URL(fileURLWithPath: path)) {
            case .created: continue
            case .exists:
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
                    throw .cannotCreateFolder(path: root.path, reason: "\(path) is not a folder")
                }
            case .failed(let reason): throw .cannotCreateFolder(path: root.path, reason: reason)
            }
        }
    }

    static func safeName(_ name: String) -> String {
        var out = String(name.unicodeScalars.map { s -> Character in
            switch s {
            case "a"..."z", "A"..."Z", "0"..."9", "-", "_", ".": Character(s)
            default: "_"
            }
        })
        // A leading dot would hide the folder.
        if out.hasPrefix(".") { out = "_" + out.dropFirst() }
        return out.isEmpty ? "run" : out
    }

    static func iso8601(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// JSONEncoder refuses NaN and infinity; a run's results must never be lost to one bad gauge.
    static func finite(_ x: Double) -> Double { x.isFinite ? x : 0 }

    /// Three decimals: enough for µs means and per-second rates, and keeps the JSON readable.
    static func rounded(_ x: Double) -> Double { x.isFinite ? (x * 1000).rounded() / 1000 : 0 }

    static func ratio(_ a: UInt64, _ b: UInt64) -> Double { b == 0 ? 0 : rounded(Double(a) / Double(b)) }

    static func fixed3(_ x: Double) -> String {
        let millis = Int64(exactly: (finite(x) * 1000).rounded()) ?? 0
        let sign = millis < 0 ? "-" : ""
        let m = millis.magnitude
        let frac = String(m % 1000)
        return sign + String(m / 1000) + "." + String(repeating: "0", count: 3 - frac.count) + frac
    }
}

/// Why a results folder could not be written.
public enum ResultsWriterError: Error, CustomStringConvertible, Equatable {
    case cannotCreateFolder(path: String, reason: String)
    case cannotWriteFile(path: String, reason: String)

    public var description: String {
        switch self {
        case .cannotCreateFolder(let path, let reason): "cannot create results folder \(path): \(reason)"
        case .cannotWriteFile(let path, let reason): "cannot write \(path): \(reason)"
        }
    }
}

/// Whether a latency is measured from the intended send time (coordinated omission corrected) or not.
public enum LatencyCorrectionKind: String, Sendable {
    case corrected
    case uncorrected
    /// Connection set-up times: nothing was scheduled, so there is nothing to correct.
    case notApplicable = "not_applicable"
}

extension LatencyCorrectionKind {
    /// What a named latency's uncorrected twin is called: `ack` and `ack_uncorrected`.
    public static let uncorrectedSuffix = "_uncorrected"

    /// A named latency's kind, by the naming rule flows follow: `<name>_uncorrected` is
    /// uncorrected; a name with such a twin among `keys` is corrected; any other (`connect_flow`)
    /// measures no scheduled send.
    public init<Keys: Sequence>(namedKey key: String, among keys: Keys) where Keys.Element == String {
        if key.hasSuffix(Self.uncorrectedSuffix) { self = .uncorrected; return }
        let twin = key + Self.uncorrectedSuffix
        self = keys.contains(twin) ? .corrected : .notApplicable
    }
}

extension LatencyMetric {
    /// How this metric relates to coordinated omission (the exhaustive switch forces a decision for new metrics).
    public var correction: LatencyCorrectionKind {
        switch self {
        case .roundTrip, .fanout, .streamItem, .http2xx, .http3xx, .http4xx, .http5xx, .ack: .corrected
        case .roundTripUncorrected, .fanoutUncorrected, .httpUncorrected, .ackUncorrected: .uncorrected
        case .tcpConnect, .tlsHandshake, .upgrade, .negotiate, .handshake, .pingRoundTrip, .staleness,
             .eioHandshake, .namespaceConnect: .notApplicable
        }
    }

    /// The same measurement taken from the actual send time, for corrected metrics.
    public var uncorrectedTwin: LatencyMetric? {
        switch self {
        case .roundTrip: .roundTripUncorrected
        case .fanout: .fanoutUncorrected
        case .http2xx: .httpUncorrected
        case .ack: .ackUncorrected
        default: nil
        }
    }
}
