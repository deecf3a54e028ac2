import Foundation
import StampedeMetrics
@testable import StampedeReport
import StampedeScenario
import Testing

/// The run's interval files grow on disk as the run goes (`IntervalSpool`): the results folder
/// gets exactly the bytes it would have had from lines kept in memory, and no spool is left behind.
@Suite struct IntervalSpoolTests {
    @Test func spooledIntervalsAreWrittenByteForByteAsLinesKeptInMemory() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("stampede-spool-tests-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let start = Date(timeIntervalSince1970: 1_700_000_000.25)
        var totals = MetricsShard()
        var lines: [String] = []
        var samples: [IntervalSample] = []
        let spool = try IntervalSpool.spool(in: root)
        spool.startTime = start
        for second in 0 ..< 5 {
            var interval = MetricsShard()
            for us: UInt64 in [100, 200, UInt64(300 + second * 50)] { interval.record(.roundTrip, nanoseconds: us * 1000) }
            interval.count(.messagesSent, 3)
            interval.count(.messagesDelivered, 3)
            totals.add(interval)
            for (m, line) in HistogramLog.lines(of: interval, startSeconds: Double(second), lengthSeconds: 1) {
                lines.append(line)
                spool.append(line: line, toLog: ResultsWriter.hlogFileName(m))
            }
            let sample = IntervalSample(elapsedSeconds: Double(second + 1), openConnections: 3, messagesSent: 3, messagesReceived: 3, errors: 0,
                                        p50Micros: 200, p99Micros: UInt64(300 + second * 50))
            samples.append(sample)
            spool.append(row: sample)
        }
        var inMemory = Self.record(totals: totals, start: start)
        inMemory.histogramLogLines[.roundTrip] = lines
        inMemory.intervals = samples
        var spooled = Self.record(totals: totals, start: start)
        spooled.spooledIntervals = spool.finish()
        #expect(spooled.spooledIntervals?.fileNames == ["round_trip.hlog", "timeseries.csv"])

        let a = try ResultsWriter.write(inMemory, resultsRoot: root, folderName: "memory")
        let b = try ResultsWriter.write(spooled, resultsRoot: root, folderName: "spooled")
        for name in ["round_trip.hlog", "timeseries.csv", "round_trip.hgrm"] {
            let x = try Data(contentsOf: a.appendingPathComponent(name)), y = try Data(contentsOf: b.appendingPathComponent(name))
            #expect(x == y, "\(name)")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: root.path).sorted()
        #expect(left == ["memory", "spooled"], "the spool folder is gone once its files are moved")
    }

    @Test func aSpoolThatCouldNotWriteFailsTheResultsNamingTheFile() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("stampede-spool-tests-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let spool = try IntervalSpool.spool(in: root)
        try FileManager.default.removeItem(at: spool.folder)
        spool.append(line: "0.000,1.000,0.100,HISTFAAAAB", toLog: "round_trip.hlog")
        let finished = spool.finish()
        #expect(finished.failure?.contains("round_trip.hlog") == true)
        var totals = MetricsShard()
        totals.record(.roundTrip, nanoseconds: 100_000)
        var r = Self.record(totals: totals, start: Date())
        r.spooledIntervals = SpooledIntervals(folder: finished.folder, fileNames: ["round_trip.hlog"], failure: finished.failure)
        #expect(throws: ResultsWriterError.self) { try ResultsWriter.write(r, resultsRoot: root) }
    }

    static func record(totals: MetricsShard, start: Date) -> RunRecord {
        let scenario = Scenario(name: "spool", file: "scenarios/spool.yaml", target: .embedded, clients: 3, connectRate: 100,
                                durationSeconds: 5, message: MessageSpec(ratePerSecond: 3, size: 64), seed: 1, drainSeconds: 1)
        var r = RunRecord(scenario: scenario, startedAt: start, endedAt: start.addingTimeInterval(5), partial: false, partialReason: nil,
                          fatalError: nil, totals: totals, intervals: [],
                          environment: RunEnvironment(stampedeVersion: "0.1.0", hostname: "h", cores: 2, loops: 1, os: "Linux", clock: "monotonic",
                                                      commandLine: ["stampede"]),
                          peakOpenConnections: 3, openConnectionsAtEnd: 0, phaseSeconds: PhaseSeconds(rampUp: 0, messages: 5, drain: 0),
                          generator: GeneratorHealth(processCPUSeconds: 0, clientLoopCPUSeconds: 0, maxTimerLagMicros: 0, saturated: false, warnings: []))
        r.histogramLogStartTime = start
        return r
    }
}
