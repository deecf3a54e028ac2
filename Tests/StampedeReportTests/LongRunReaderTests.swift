import Foundation
import StampedeMetrics
@testable import StampedeReport
import StampedeScenario
import Testing

/// `compare` and `report` of two one-hour results folders (3,600 one-second intervals of six
/// latency metrics, built synthetically through the writer's own spool) read every interval and
/// keep a bounded number of bins and chart points. Their time and memory are measured by
/// Benchmarks/long-run-readers.sh, never asserted here: that script sets
/// STAMPEDE_SYNTHETIC_RUNS to a folder where this test leaves the two folders it built, and
/// STAMPEDE_SYNTHETIC_SAMPLES to 1,000 samples per interval (realistic lines of ~900 bytes; the
/// test's own 12 keep it to seconds in a debug build).
@Suite struct LongRunReaderTests {
    static let seconds = 3600
    static let metrics: [LatencyMetric] = [.roundTrip, .roundTripUncorrected, .fanout, .fanoutUncorrected, .tcpConnect, .pingRoundTrip]

    @Test func compareAndReportOfTwoOneHourFoldersReadEveryIntervalIntoBoundedBins() throws {
        let kept = ProcessInfo.processInfo.environment["STAMPEDE_SYNTHETIC_RUNS"].map { URL(fileURLWithPath: $0) }
        let root = kept ?? FileManager.default.temporaryDirectory.appendingPathComponent("stampede-long-run-\(UUID().uuidString)", isDirectory: true)
        defer { if kept == nil { try? FileManager.default.removeItem(at: root) } }
        let samples = ProcessInfo.processInfo.environment["STAMPEDE_SYNTHETIC_SAMPLES"].flatMap(Int.init) ?? 12
        let (baseline, baseTotals) = try Self.oneHourFolder(in: root, name: "baseline", slowdown: 1, samples: samples)
        let (current, currentTotals) = try Self.oneHourFolder(in: root, name: "current", slowdown: 2, samples: samples)

        var settings = CompareSettings()
        settings.resamples = 100
        let report = try CompareReport.make(baseline: baseline, current: current, settings: settings, failOn: [.slower])
        #expect(report.metrics.map(\.metric) == Self.metrics.map(\.key))
        for m in report.metrics {
            let metric = try #require(LatencyMetric(key: m.metric))
            #expect(m.baseline.intervals == Self.seconds && m.current.intervals == Self.seconds, "\(m.metric)")
            #expect(m.baseline.count == baseTotals[metric]?.totalCount && m.current.count == currentTotals[metric]?.totalCount, "\(m.metric)")
            #expect(m.baseline.percentiles["p99"]?.value == baseTotals[metric]?.latencyValue(atPercentile: 99), "whole-run p99 is exact: \(m.metric)")
            #expect(m.current.percentiles["max"]?.value == currentTotals[metric]?.maxRecorded, "\(m.metric)")
        }
        #expect(report.metrics.first { $0.metric == "round_trip" }?.verdict == .slower)
        #expect(report.gateTripped)

        let run = try RunData(.folder(current))
        let chart = try #require(run.intervals["round_trip"])
        #expect(chart.count <= RunData.maxPoints && chart.count > RunData.maxPoints / 2)
        #expect(chart.reduce(0) { $0 + $1.count } == currentTotals[.roundTrip]?.totalCount)
        #expect(chart.first?.start == 0 && chart.last?.end == Double(Self.seconds))
        let rows = try #require(run.timeseries?.rows)
        #expect(rows.count <= RunData.maxPoints && rows.count > RunData.maxPoints / 2)
        let sent = try #require(run.timeseries?.column("messages_sent"))
        #expect(sent.reduce(0, +) == Double(Self.seconds * 1000), "rows added, not dropped")
        // The run's own report.html, written with it from the same streaming read.
        let html = try String(contentsOf: current.appendingPathComponent(HTMLReport.fileName), encoding: .utf8)
        #expect(html.contains("id=\"chart-latency-round_trip\"") && html.utf8.count < 2_000_000)
    }

    /// A results folder of a one-hour run: per second, `samples` samples of each metric drawn
    /// from a spread-out distribution (times `slowdown`), from a few dozen distinct interval
    /// histograms, so the lines are realistic without encoding 21,600 of them.
    static func oneHourFolder(in root: URL, name: String, slowdown: UInt64, samples: Int) throws -> (URL, [LatencyMetric: LatencyHistogram]) {
        let start = Date(timeIntervalSince1970: 1_764_000_000)
        let spool = try IntervalSpool.spool(in: root)
        spool.startTime = start
        var random = SplitMix64(seed: 42 &+ slowdown)
        var totals = MetricsShard()
        var histograms: [LatencyMetric: LatencyHistogram] = [:]
        for (k, metric) in metrics.enumerated() {
            // 24 interval shapes per metric, each of `samples` samples, log-spread from ~100 µs to ~50 ms.
            var shapes: [(records: [UInt64], payload: String)] = []
            for _ in 0 ..< 24 {
                var h = makeLatencyHistogram()
                var values: [UInt64] = []
                for _ in 0 ..< samples {
                    let u = Double(random.next() % 1_000_000) / 1_000_000
                    let v = UInt64(100 * pow(500, u * u)) * slowdown + UInt64(k)
                    values.append(v)
                    h.record(v)
                }
                shapes.append((values, HistogramLog.line(HistogramLogInterval(startSeconds: 0, lengthSeconds: 1, histogram: h))))
            }
            var uses = [Int](repeating: 0, count: shapes.count)
            for second in 0 ..< seconds {
                let pick = Int(random.next() % UInt64(shapes.count))
                uses[pick] += 1
                let payload = shapes[pick].payload.split(separator: ",", maxSplits: 2)[2]
                spool.append(line: String(format: "%.3f,%.3f,", Double(second), 1.0) + payload, toLog: ResultsWriter.hlogFileName(metric))
            }
            for (shape, n) in zip(shapes, uses) where n > 0 {
                for v in shape.records { totals.histograms[metric.rawValue].record(v, count: UInt64(n)) }
            }
            histograms[metric] = totals.histograms[metric.rawValue]
        }
        for second in 0 ..< seconds {
            var row = IntervalSample(elapsedSeconds: Double(second + 1), openConnections: 100, messagesSent: 1000, messagesReceived: 1000, errors: 0,
                                     p50Micros: 300 * slowdown, p99Micros: 9000 * slowdown)
            row.targetRate = 1000
            spool.append(row: row)
        }
        totals.count(.messagesSent, UInt64(seconds * 1000))
        totals.count(.messagesDelivered, UInt64(seconds * 1000))
        let scenario = Scenario(name: name, file: "scenarios/\(name).yaml", target: .embedded, clients: 100, connectRate: 100,
                                durationSeconds: Double(seconds), message: MessageSpec(ratePerSecond: 10, size: 64), seed: 1, drainSeconds: 1)
        var r = RunRecord(scenario: scenario, startedAt: start, endedAt: start.addingTimeInterval(Double(seconds)), partial: false, partialReason: nil,
                          fatalError: nil, totals: totals, intervals: [],
                          environment: RunEnvironment(stampedeVersion: "0.1.0", hostname: "synthetic", cores: 2, loops: 1, os: "Linux",
                                                      clock: "monotonic", commandLine: ["synthetic"]),
                          peakOpenConnections: 100, openConnectionsAtEnd: 0,
                          phaseSeconds: PhaseSeconds(rampUp: 0, messages: Double(seconds), drain: 0),
                          generator: GeneratorHealth(processCPUSeconds: 0, clientLoopCPUSeconds: 0, maxTimerLagMicros: 0, saturated: false, warnings: []))
        r.histogramLogStartTime = start
        r.spooledIntervals = spool.finish()
        return (try ResultsWriter.write(r, resultsRoot: root, folderName: name), histograms)
    }
}
