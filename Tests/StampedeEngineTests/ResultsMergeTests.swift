import Foundation
import StampedeEngine
import StampedeMetrics
import StampedeReport
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
