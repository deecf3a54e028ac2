import Foundation
import StampedeEngine
import StampedeMetrics
import StampedeReport
import StampedeScenario
import Testing

/// `stampede merge`: two real runs merged give the counts added up and the percentiles of one
/// histogram holding both runs' samples; bad input exits 2 naming it.
@Suite(.serialized) struct ResultsMergeTests {
    @Test func mergingTwoRunsAddsCountsAndHistogramsExactly() throws {
        let a = try run(chatScenario(name: "merge-a", clients: 10, duration: 1.2, rate: 30))
        let b = try run(chatScenario(name: "merge-b", clients: 6, duration: 1.2, rate: 50))
        let out = temporaryFolder("merged").appendingPathComponent("out")
        let merged = try ResultsMerge.merge([try #require(a.resultsFolder), try #require(b.resultsFolder)], into: out)
        #expect(merged.messages.sent == a.summary.messages.sent + b.summary.messages.sent)
        #expect(merged.messages.delivered == a.summary.messages.delivered + b.summary.messages.delivered)
        #expect(merged.connections.connected == 16)
        #expect(merged.scenario.clients == 16)
        #expect(merged.counters["bytes_sent"] == a.summary.bytes.sent + b.summary.bytes.sent)
        #expect(merged.errorsTotal == a.summary.errorsTotal + b.summary.errorsTotal)
        #expect(merged.messages.accountingClosed)
        for m in LatencyMetric.allCases {
            var both = a.record.totals.histograms[m.rawValue]
            both.add(b.record.totals.histograms[m.rawValue])
            guard both.totalCount > 0 else {
                #expect(merged.latencyMicros[m.key] == nil)
                continue
            }
            let l = try #require(merged.latencyMicros[m.key], "\(m.key)")
            #expect(l.count == both.totalCount, "\(m.key)")
            #expect([l.p50, l.p90, l.p99, l.p99_9, l.max] == [50.0, 90, 99, 99.9, 100].map { both.valueAtPercentile($0) }, "\(m.key)")
            // The merged folder's files: the .hgrm of both, and an .hlog whose intervals add up to it.
            let hgrm = try String(contentsOf: out.appendingPathComponent(m.key + ".hgrm"), encoding: .utf8)
            #expect(hgrm == ResultsWriter.hgrm(both))
            let log = try HistogramLog.parse(String(contentsOf: out.appendingPathComponent(m.key + ".hlog"), encoding: .utf8))
            #expect(log.intervals.reduce(0) { $0 + $1.histogram.totalCount } == both.totalCount)
            #expect(zip(log.intervals, log.intervals.dropFirst()).allSatisfy { $0.startSeconds < $1.startSeconds })
        }
        let written = try RunSummary.decode(from: Data(contentsOf: out.appendingPathComponent("summary.json")))
        #expect(written == merged)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: out.path)) == Set(merged.files + ["summary.json"]))
        #expect(merged.files.contains("report.html"), "a merged folder has its report too")
    }

    /// Thresholds judged on the merge: totals, and a latency window from the merged per-second
    /// intervals; the binary exits 99 when one fails on the merge, 0 when all hold.
    @Test func thresholdsAreJudgedOnTheMerge() throws {
        let a = try run(chatScenario(name: "merge-thr-a", clients: 6, duration: 2.2, rate: 30))
        let b = try run(chatScenario(name: "merge-thr-b", clients: 6, duration: 2.2, rate: 30))
        let folders = [try #require(a.resultsFolder), try #require(b.resultsFolder)]
        let merged = try ResultsMerge.combine(folders, output: temporaryFolder("unused"))
        let sent = a.summary.messages.sent + b.summary.messages.sent
        let scenario = try ScenarioLoader.parse(yaml: """
            target: embedded
            clients: 12
            duration: 2s
            thresholds:
              counters.messages_sent: ["count == \(sent)", "count > \(sent)"]
              round_trip: ["p(50) < 60s"]
              round_trip@steady: {conditions: ["p(99) < 60s"], window: 1s}
            """, file: "gate.yaml")
        let results = try #require(MergedThresholds.judge(scenario.thresholds, merged))
        #expect(results.map(\.passed) == [true, false, true, true])
        #expect(results[3].windowsEvaluated ?? 0 >= 1)

        let file = temporaryFolder("merge-thr").appendingPathComponent("gate.yaml")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        // A count a saturated generator missed could be its own shortfall: unjudged (98), not failed.
        let saturated = a.summary.generator.saturated || b.summary.generator.saturated
        for (condition, status) in [("count == \(sent)", Int32(0)), ("count > \(sent)", saturated ? 98 : 99)] {
            try "target: embedded\nclients: 12\nduration: 2s\nthresholds:\n  counters.messages_sent: [\"\(condition)\"]\n".write(to: file, atomically: true, encoding: .utf8)
            let out = temporaryFolder("merge-thr-out-\(status)").appendingPathComponent("out")
            let r = try runProcess(stampedeBinary.path, ["merge"] + folders.map(\.path) + ["-o", out.path, "--scenario", file.path], timeout: 60)
            #expect(r.status == status, "\(r.stdout)\(r.stderr)")
            let written = try RunSummary.decode(from: Data(contentsOf: out.appendingPathComponent("summary.json")))
            #expect(written.thresholds?.first?.passed == (status == 0))
        }
    }

    @Test func sameSecondIntervalsOfSideBySideRunsBecomeOne() {
        var h = makeLatencyHistogram()
        h.record(100)
        let t0 = Date(timeIntervalSince1970: 1_764_000_000.2)
        let first = (startTime: t0, intervals: [0.0, 1.0, 2.0].map { HistogramLogInterval(startSeconds: $0, lengthSeconds: 1, histogram: h) })
        let second = (startTime: t0.addingTimeInterval(0.5), intervals: [0.0, 1.0].map { HistogramLogInterval(startSeconds: $0, lengthSeconds: 1, histogram: h) })
        let merged = ResultsMerge.alignIntervals([first, second], startTime: t0)
        #expect(merged.map(\.histogram.totalCount) == [2, 2, 1])
        #expect(merged.map(\.startSeconds) == [0, 1, 2])
        #expect(merged.map(\.lengthSeconds) == [1.5, 1.5, 1])
    }

    @Test func badInputExitsTwoNamingIt() throws {
        let root = temporaryFolder("merge-bad")
        let notResults = root.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: notResults, withIntermediateDirectories: true)
        let badSummary = root.appendingPathComponent("bad")
        try FileManager.default.createDirectory(at: badSummary, withIntermediateDirectories: true)
        try Data("{\"schema\": 1".utf8).write(to: badSummary.appendingPathComponent("summary.json"))
        for (folder, message) in [(root.appendingPathComponent("missing"), "no such folder"), (notResults, "not a results folder"),
                                  (badSummary, "summary.json: unreadable")] {
            let r = try runProcess(stampedeBinary.path, ["merge", folder.path, "-o", root.appendingPathComponent("out").path], timeout: 30)
            #expect(r.status == 2)
            #expect(r.stderr.contains(folder.path) && r.stderr.contains(message), "\(r.stderr)")
        }
    }
}
