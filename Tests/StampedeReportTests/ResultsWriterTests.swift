import Foundation
import StampedeMetrics
import StampedeReport
import StampedeScenario
import Testing

@Suite struct ResultsWriterTests {
    // MARK: summary.json

    @Test func summaryJsonHasTheDocumentedTopLevelKeys() throws {
        let json = try jsonObject(ResultsWriter.summary(of: record()).jsonData())
        #expect(Set(json.keys) == [
            "schema", "partial", "partial_reason", "fatal_error", "scenario", "environment", "phases_s", "connections",
            "messages", "bytes", "latency_us", "latency_correction", "errors", "errors_total", "upgrade_statuses",
            "generator", "files", "counters", "hub_errors", "storms", "rest", "tls", "thresholds", "workers",
            "close_codes", "flow", "connect_errors",
        ])
        #expect(json["schema"] as? String == "stampede.summary/1")
    }

    @Test func nestedObjectsHaveTheDocumentedKeys() throws {
        let json = try jsonObject(ResultsWriter.summary(of: record()).jsonData())
        func keys(_ name: String) -> Set<String> { Set((json[name] as? [String: Any])?.keys.map { $0 } ?? []) }
        #expect(keys("scenario") == [
            "name", "file", "workload", "target", "clients", "connect_rate", "duration_s", "message_rate", "message_size",
            "load_model", "latency_model", "think_time_s", "seed", "drain_s",
        ])
        #expect(keys("environment") == [
            "stampede_version", "hostname", "cores", "loops", "os", "clock", "command_line", "started_at", "ended_at", "wall_seconds",
        ])
        #expect(keys("phases_s") == ["ramp_up", "messages", "drain"])
        #expect(keys("connections") == ["attempted", "connected", "failed", "disconnected", "peak_open", "open_at_end"])
        #expect(keys("messages") == [
            "sent", "delivered", "failed", "lost", "lost_by_reason", "fanout_expected", "fanout_received", "fanout_missing",
            "sends_deferred", "unparsed", "accounting_closed", "unaccounted", "throughput_per_s",
        ])
        #expect(keys("bytes") == ["sent", "received"])
        #expect(keys("latency_correction") == ["corrected", "uncorrected", "not_applicable", "pairs"])
        #expect(keys("generator") == [
            "process_cpu_s", "client_loop_cpu_s", "cpu_us_per_delivered_message", "max_timer_lag_us", "saturated", "warnings",
            "rss_before_connect_bytes", "rss_connected_bytes", "rss_peak_bytes", "rss_per_connection_bytes",
            "peak_cpu_percent", "peak_client_loop_cpu_percent",
        ])
        let messages = try #require(json["messages"] as? [String: Any])
        #expect(Set((messages["lost_by_reason"] as? [String: Any])?.keys.map { $0 } ?? []) == ["connection_closed", "timed_out", "interrupted", "dropped_while_disconnected", "worker_lost", "no_reply"])
        #expect(Set((messages["throughput_per_s"] as? [String: Any])?.keys.map { $0 } ?? []) == ["sent", "delivered", "fanout_received"])
        let latency = try #require(json["latency_us"] as? [String: Any])
        let roundTrip = try #require(latency["round_trip"] as? [String: Any])
        #expect(Set(roundTrip.keys) == ["count", "min", "p50", "p90", "p99", "p99_9", "max", "mean"])
    }

    @Test func missingOptionalsAreWrittenAsNullNotLeftOut() throws {
        var r = record()
        r.partialReason = nil
        r.fatalError = nil
        r.totals = MetricsShard() // nothing received: CPU per message is undefined
        let json = try jsonObject(ResultsWriter.summary(of: r).jsonData())
        #expect(json["partial_reason"] is NSNull)
        #expect(json["fatal_error"] is NSNull)
        let generator = try #require(json["generator"] as? [String: Any])
        #expect(generator["cpu_us_per_delivered_message"] is NSNull)
    }

    @Test func summaryRoundTripsThroughJson() throws {
        var r = record()
        r.partial = true
        r.partialReason = "interrupted (SIGINT)"
        let summary = ResultsWriter.summary(of: r)
        #expect(try RunSummary.decode(from: summary.jsonData()) == summary)
    }

    @Test func scenarioTargetAndTimesAreReadable() throws {
        var r = record()
        r.scenario.target = .webSocket(url: WebSocketURL(host: "::1", port: 9001, path: "/chat"))
        r.startedAt = Date(timeIntervalSince1970: 1_700_000_000.25)
        r.endedAt = Date(timeIntervalSince1970: 1_700_000_012.75)
        let summary = ResultsWriter.summary(of: r)
        #expect(summary.scenario.target == "ws://[::1]:9001/chat")
        #expect(summary.environment.startedAt == "2023-11-14T22:13:20.250Z")
        #expect(summary.environment.endedAt == "2023-11-14T22:13:32.750Z")
        #expect(summary.environment.wallSeconds == 12.5)
        // Slashes stay readable in the file.
        #expect(String(decoding: try summary.jsonData(), as: UTF8.self).contains("\"ws://[::1]:9001/chat\""))
        #expect(ResultsWriter.summary(of: record()).scenario.target == "embedded")
    }

    @Test(arguments: [LoadModel.open, .closed])
    func latencyModelNoteNamesTheLoadModel(_ model: LoadModel) {
        var r = record()
        r.scenario.loadModel = model
        let scenario = ResultsWriter.summary(of: r).scenario
        #expect(scenario.loadModel == model.rawValue)
        #expect(scenario.latencyModel.hasPrefix("\(model.rawValue) model:"))
        if model == .open { #expect(scenario.latencyModel.contains("coordinated omission corrected")) }
    }

    // MARK: latency

    @Test func percentilesComeFromMergedHistograms() {
        var a = MetricsShard()
        var b = MetricsShard()
        // Below 2048 µs the histogram is exact, so the expected percentiles are exact too.
        for us in UInt64(1) ... 1000 { a.record(.roundTrip, nanoseconds: us * 1000) }
        for us in UInt64(1001) ... 2000 { b.record(.roundTrip, nanoseconds: us * 1000) }
        var merged = a
        merged.add(b)
        var r = record()
        r.totals = merged
        let rt = ResultsWriter.summary(of: r).latencyMicros["round_trip"]
        #expect(rt?.count == 2000)
        #expect(rt?.min == 1)
        #expect(rt?.p50 == 1000)
        #expect(rt?.p90 == 1800)
        #expect(rt?.p99 == 1980) // averaging the shards' p99 (990, 1990) would give 1490
        #expect(rt?.p99_9 == 1998)
        #expect(rt?.max == 2000)
        #expect(rt?.mean == 1000.5)
    }

    @Test func onlyMetricsWithSamplesAppearInLatencyAndFiles() {
        var shard = MetricsShard()
        shard.record(.roundTrip, nanoseconds: 5_000)
        shard.record(.tcpConnect, nanoseconds: 80_000)
        var r = record()
        r.totals = shard
        let summary = ResultsWriter.summary(of: r)
        #expect(Set(summary.latencyMicros.keys) == ["round_trip", "tcp_connect"])
        #expect(summary.files == ["round_trip.hgrm", "round_trip.hlog", "tcp_connect.hgrm", "tcp_connect.hlog", "timeseries.csv"])
    }

    @Test func correctedAndUncorrectedMetricsAreListedByKeyWithTheirRatio() {
        var shard = MetricsShard()
        for _ in 0 ..< 100 {
            shard.record(.roundTrip, nanoseconds: 400_000)
            shard.record(.roundTripUncorrected, nanoseconds: 100_000)
            shard.record(.fanout, nanoseconds: 300_000)
            shard.record(.upgrade, nanoseconds: 50_000)
        }
        var r = record()
        r.totals = shard
        let correction = ResultsWriter.summary(of: r).latencyCorrection
        #expect(correction.corrected == ["round_trip", "fanout"])
        #expect(correction.uncorrected == ["round_trip_uncorrected"])
        #expect(correction.notApplicable == ["ws_upgrade"])
        // fanout has no uncorrected twin in this run, so only round_trip is paired.
        #expect(correction.pairs == [.init(corrected: "round_trip", uncorrected: "round_trip_uncorrected", p50Ratio: 4, p99Ratio: 4)])
    }

    // MARK: accounting and derived figures

    @Test(arguments: [
        (sent: UInt64(10), delivered: UInt64(7), failed: UInt64(1), lost: UInt64(2), closed: true, unaccounted: Int64(0)),
        (sent: 10, delivered: 7, failed: 1, lost: 1, closed: false, unaccounted: 1),
        (sent: 10, delivered: 9, failed: 1, lost: 1, closed: false, unaccounted: -1),
        (sent: 0, delivered: 0, failed: 0, lost: 0, closed: true, unaccounted: 0),
    ])
    func accountingClosedFlagReflectsCounts(
        _ c: (sent: UInt64, delivered: UInt64, failed: UInt64, lost: UInt64, closed: Bool, unaccounted: Int64)
    ) {
        var shard = MetricsShard()
        shard.count(.messagesSent, c.sent)
        shard.count(.messagesDelivered, c.delivered)
        shard.count(.messagesFailed, c.failed)
        shard.lose(.timedOut, c.lost)
        var r = record()
        r.totals = shard
        let messages = ResultsWriter.summary(of: r).messages
        #expect(messages.accountingClosed == c.closed)
        #expect(messages.unaccounted == c.unaccounted)
        #expect(messages.lostByReason == ["connection_closed": 0, "timed_out": c.lost, "interrupted": 0, "dropped_while_disconnected": 0, "worker_lost": 0, "no_reply": 0])
    }

    @Test func fanoutMissingIsFlooredAtZero() {
        var shard = MetricsShard()
        shard.count(.fanoutExpected, 10)
        shard.count(.fanoutReceived, 7)
        var r = record()
        r.totals = shard
        #expect(ResultsWriter.summary(of: r).messages.fanoutMissing == 3)
        r.totals.count(.fanoutReceived, 5) // duplicates or late joiners can push received past expected
        #expect(ResultsWriter.summary(of: r).messages.fanoutMissing == 0)
    }

    @Test func throughputIsAveragedOverTheMessagePhase() {
        var shard = MetricsShard()
        shard.count(.messagesSent, 1000)
        shard.count(.messagesDelivered, 900)
        shard.count(.fanoutReceived, 4500)
        var r = record()
        r.totals = shard
        r.phaseSeconds = PhaseSeconds(rampUp: 2, messages: 4, drain: 1)
        #expect(ResultsWriter.summary(of: r).messages.throughputPerSecond == .init(sent: 250, delivered: 225, fanoutReceived: 1125))
        r.phaseSeconds.messages = 0
        #expect(ResultsWriter.summary(of: r).messages.throughputPerSecond == .init(sent: 0, delivered: 0, fanoutReceived: 0))
    }

    @Test func cpuPerMessageCountsEchoesAndBroadcasts() {
        var shard = MetricsShard()
        shard.count(.messagesDelivered, 1000)
        shard.count(.fanoutReceived, 3000)
        var r = record()
        r.totals = shard
        r.generator.clientLoopCPUSeconds = 0.5
        #expect(ResultsWriter.summary(of: r).generator.cpuMicrosPerDeliveredMessage == 125)
    }

    @Test func errorsListEveryClassIncludingZerosAndStatusesByCode() {
        var shard = MetricsShard()
        shard.error(.connectRefused)
        shard.error(.connectRefused)
        shard.error(.upgradeRejected)
        shard.upgradeStatuses[503] = 1
        var r = record()
        r.totals = shard
        let summary = ResultsWriter.summary(of: r)
        #expect(Set(summary.errors.keys) == Set(ErrorClass.allCases.map(\.key)))
        #expect(summary.errors["connect_refused"] == 2)
        #expect(summary.errors["upgrade_rejected"] == 1)
        #expect(summary.errors["io_error"] == 0)
        #expect(summary.errorsTotal == 3)
        #expect(summary.upgradeStatuses == ["503": 1])
    }

    @Test func nonFiniteGaugesDoNotStopTheSummaryFromBeingWritten() throws {
        var r = record()
        r.phaseSeconds.messages = .nan
        r.generator.processCPUSeconds = .infinity
        let summary = ResultsWriter.summary(of: r)
        #expect(summary.phasesSeconds.messages == 0)
        #expect(summary.generator.processCPUSeconds == 0)
        _ = try summary.jsonData()
    }

    // MARK: files on disk

    @Test func writesEveryListedFileAndNothingElse() throws {
        try withTempDir { root in
            let folder = try ResultsWriter.write(record(), resultsRoot: root)
            let summary = try RunSummary.decode(from: Data(contentsOf: folder.appendingPathComponent("summary.json")))
            #expect(summary.files == ["round_trip.hgrm", "round_trip.hlog", "round_trip_uncorrected.hgrm", "round_trip_uncorrected.hlog", "timeseries.csv", "report.html"])
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)) == Set(summary.files + ["summary.json"]))
        }
    }

    @Test func filesAreWrittenAtomicallyWithNoTempFilesLeft() throws {
        try withTempDir { root in
            var folders: [URL] = []
            for _ in 0 ..< 3 { folders.append(try ResultsWriter.write(record(), resultsRoot: root)) }
            for folder in folders {
                let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
                #expect(!names.contains { $0.hasPrefix(".") || $0.contains(".tmp") }, "left behind: \(names)")
            }
            // Nothing stray in the results root either.
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: root.path)) == Set(folders.map(\.lastPathComponent)))
        }
    }

    @Test func aFailedWriteReportsThePathAndLeavesNoTempFile() throws {
        try withTempDir { root in
            // A file where the results root should be: the folder cannot be created.
            let blocker = root.appendingPathComponent("results")
            try Data("x".utf8).write(to: blocker)
            #expect(throws: ResultsWriterError.self) { try ResultsWriter.write(record(), resultsRoot: blocker) }
            #expect(try FileManager.default.contentsOfDirectory(atPath: root.path) == ["results"])
        }
    }

    @Test func sameSecondRunsGetDistinctFolders() throws {
        try withTempDir { root in
            let r = record()
            let names = try (0 ..< 3).map { _ in try ResultsWriter.write(r, resultsRoot: root).lastPathComponent }
            #expect(names == ["chat-smoke-20231114T221320Z", "chat-smoke-20231114T221320Z-2", "chat-smoke-20231114T221320Z-3"])
        }
    }

    @Test func missingResultsRootIsCreated() throws {
        try withTempDir { root in
            let nested = root.appendingPathComponent("a/b/results")
            let folder = try ResultsWriter.write(record(), resultsRoot: nested)
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("summary.json").path))
        }
    }

    @Test func folderNameUsesUTCAndAFolderSafeScenarioName() {
        let epoch = Date(timeIntervalSince1970: 0.999)
        #expect(ResultsWriter.folderName(scenarioName: "chat-1k", startedAt: epoch) == "chat-1k-19700101T000000Z")
        #expect(ResultsWriter.folderName(scenarioName: "../a b/c", startedAt: epoch) == "_._a_b_c-19700101T000000Z")
        #expect(ResultsWriter.folderName(scenarioName: "", startedAt: epoch) == "run-19700101T000000Z")
    }

    @Test func hgrmFilesAreHdrHistogramPercentileDistributionsInMicroseconds() throws {
        try withTempDir { root in
            let r = record()
            let folder = try ResultsWriter.write(r, resultsRoot: root)
            let text = try String(contentsOf: folder.appendingPathComponent("round_trip.hgrm"), encoding: .utf8)
            var expected = ""
            r.totals.histograms[LatencyMetric.roundTrip.rawValue].outputPercentileDistribution(
                to: &expected, outputValueUnitScalingRatio: 1.0, percentileTicksPerHalfDistance: 5)
            #expect(text == expected)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.first?.split(separator: " ") == ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"])
            #expect(text.contains("#[Max     =     2000.000, Total count    =            4]"))
        }
    }

    @Test func hgrmTextIsByteForByteThePackagesForEveryShape() {
        var random = SystemRandomNumberGenerator()
        var tail = makeLatencyHistogram()
        for _ in 0..<20_000 { _ = tail.record(UInt64.random(in: 1...900, using: &random)) }
        for _ in 0..<40 { _ = tail.record(UInt64.random(in: 50_000...3_000_000_000, using: &random)) }
        var one = makeLatencyHistogram(); _ = one.record(7)
        var top = makeLatencyHistogram(); _ = top.record(3_599_999_999); _ = top.record(1)
        for h in [tail, one, top] {
            var expected = ""
            h.outputPercentileDistribution(to: &expected, outputValueUnitScalingRatio: 1.0, percentileTicksPerHalfDistance: 5)
            #expect(ResultsWriter.hgrm(h) == expected)
        }
    }

    @Test func timeseriesCsvHasOneRowPerInterval() throws {
        try withTempDir { root in
            let folder = try ResultsWriter.write(record(), resultsRoot: root)
            let csv = try String(contentsOf: folder.appendingPathComponent("timeseries.csv"), encoding: .utf8)
            // The errors_<class> columns (one per class, in ErrorClass order) and then target_rate
            // come last (added later).
            let classes = ErrorClass.allCases.map { ",errors_" + $0.key }.joined() + ",target_rate"
            let zeros = String(repeating: ",0", count: ErrorClass.allCases.count)
            let two = ErrorClass.allCases.map { $0 == .connectionReset ? ",2" : ",0" }.joined()
            #expect(csv == """
                elapsed_s,connections_open,messages_sent,messages_received,errors,p50_us,p99_us,connections_connecting,connections_reconnecting\(classes)
                1.000,10,100,180,0,250,900,0,0\(zeros),100.000
                2.500,9,95,170,2,260,1200,0,0\(two),0.000
                3.125,0,0,0,0,0,0,0,0\(zeros),0.000

                """)
        }
    }

    @Test func timeseriesCsvWithNoIntervalsIsJustTheHeader() {
        #expect(ResultsWriter.timeseriesCSV([]) == ResultsWriter.timeseriesHeader + "\n")
    }

    // MARK: fixtures

    private func record() -> RunRecord {
        var totals = MetricsShard()
        for us: UInt64 in [100, 200, 300, 2000] { totals.record(.roundTrip, nanoseconds: us * 1000) }
        for us: UInt64 in [90, 180, 250, 400] { totals.record(.roundTripUncorrected, nanoseconds: us * 1000) }
        totals.count(.messagesSent, 4)
        totals.count(.messagesDelivered, 4)
        let scenario = Scenario(
            name: "chat-smoke", file: "scenarios/chat-smoke.yaml", target: .embedded, clients: 10, connectRate: 100,
            durationSeconds: 2, message: MessageSpec(ratePerSecond: 50, size: 128), seed: 42, drainSeconds: 1)
        let started = Date(timeIntervalSince1970: 1_700_000_000.25)
        return RunRecord(
            scenario: scenario, startedAt: started, endedAt: started.addingTimeInterval(3.125), partial: false,
            partialReason: nil, fatalError: nil, totals: totals,
            intervals: [
                {
                    var s = IntervalSample(elapsedSeconds: 1, openConnections: 10, messagesSent: 100, messagesReceived: 180, errors: 0, p50Micros: 250, p99Micros: 900)
                    s.targetRate = 100
                    return s
                }(),
                {
                    var s = IntervalSample(elapsedSeconds: 2.5, openConnections: 9, messagesSent: 95, messagesReceived: 170, errors: 2, p50Micros: 260, p99Micros: 1200)
                    s.errorsByClass = ErrorClass.allCases.map { $0 == .connectionReset ? 2 : 0 }
                    return s
                }(),
                IntervalSample(elapsedSeconds: 3.125, openConnections: 0, messagesSent: 0, messagesReceived: 0, errors: 0, p50Micros: 0, p99Micros: 0),
            ],
            environment: RunEnvironment(stampedeVersion: "0.1.0", hostname: "test-host", cores: 2, loops: 1, os: "Linux",
                                        clock: "monotonic", commandLine: ["stampede", "run", "scenarios/chat-smoke.yaml"]),
            peakOpenConnections: 10, openConnectionsAtEnd: 0,
            phaseSeconds: PhaseSeconds(rampUp: 0.1, messages: 2, drain: 1),
            generator: GeneratorHealth(processCPUSeconds: 0.4, clientLoopCPUSeconds: 0.2, maxTimerLagMicros: 350, saturated: false, warnings: []))
    }

    private func jsonObject(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    private func withTempDir(_ body: (URL) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stampede-report-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try body(dir)
    }
}
