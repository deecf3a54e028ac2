import Foundation
import StampedeMetrics
import StampedeReport
import StampedeScenario
import Testing

/// What a WebSocket flow adds to a results folder: named latencies as files and `latency_us`
/// keys, named counters, close codes, step errors and samples.
@Suite struct NamedResultsTests {
    static func flowRecord() -> RunRecord {
        var totals = MetricsShard()
        totals.named = NamedMetrics(latencyKeys: ["ack", "ack_uncorrected", "connect_flow"], counterKeys: ["flow.ack.matched", "flow.ignore.presence"])
        for us: UInt64 in [100, 200, 300] { totals.named.record(0, nanoseconds: us * 1000) }
        for us: UInt64 in [90, 180, 250] { totals.named.record(1, nanoseconds: us * 1000) }
        totals.named.count(0, 3)
        totals.count(.messagesSent, 3)
        totals.count(.messagesDelivered, 3)
        totals.countClose(code: 4401, reason: "auth first", 20)
        totals.countClose(code: nil, reason: "")
        totals.countStepError("expect_timeout: connect step 2 ($.op = auth_ok)")
        "{\"type\":\"presence\"}".utf8CString.withUnsafeBytes { totals.keepSample(UnsafeRawBufferPointer(rebasing: $0.dropLast()), isText: true) }
        let scenario = Scenario(
            name: "flow", file: "", target: .embedded, clients: 1, connectRate: 10,
            durationSeconds: 1, message: MessageSpec(ratePerSecond: 3, size: 16), seed: 1, drainSeconds: 1)
        let started = Date(timeIntervalSince1970: 1_700_000_000)
        return RunRecord(
            scenario: scenario, startedAt: started, endedAt: started.addingTimeInterval(2), partial: false,
            partialReason: nil, fatalError: nil, totals: totals, intervals: [],
            environment: RunEnvironment(stampedeVersion: "0.1.0", hostname: "h", cores: 1, loops: 1, os: "Linux",
                                        clock: "monotonic", commandLine: ["stampede"]),
            peakOpenConnections: 1, openConnectionsAtEnd: 0, phaseSeconds: PhaseSeconds(rampUp: 0, messages: 1, drain: 1),
            generator: GeneratorHealth(processCPUSeconds: 0, clientLoopCPUSeconds: 0, maxTimerLagMicros: 0, saturated: false, warnings: []))
    }

    @Test func namedLatenciesAndCloseCodesAreInSummaryJson() throws {
        let s = ResultsWriter.summary(of: Self.flowRecord())
        #expect(s.latencyMicros["ack"]?.count == 3)
        #expect(s.latencyMicros["ack_uncorrected"]?.count == 3)
        #expect(s.latencyMicros["connect_flow"] == nil)  // no samples, as for built-in metrics
        #expect(s.latencyCorrection.corrected.contains("ack") && s.latencyCorrection.uncorrected.contains("ack_uncorrected"))
        #expect(s.latencyCorrection.pairs.contains { $0.corrected == "ack" && $0.uncorrected == "ack_uncorrected" })
        #expect(s.closeCodes == ["4401 auth first": 20, "no code": 1])
        #expect(s.counters["flow.ack.matched"] == 3 && s.counters["flow.ignore.presence"] == 0)
        #expect(s.flow == RunSummary.Flow(counters: ["flow.ack.matched": 3, "flow.ignore.presence": 0],
                                          stepErrors: ["expect_timeout: connect step 2 ($.op = auth_ok)": 1],
                                          unrecognisedSamples: ["{\"type\":\"presence\"}"]))
        let back = try RunSummary.decode(from: s.jsonData())
        #expect(back == s)
    }

    @Test func resultsWriterWritesNamedHgrmAndHlogFiles() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("stampede-named-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = try ResultsWriter.write(Self.flowRecord(), resultsRoot: root)
        let files = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
        #expect(files.isSuperset(of: ["ack.hgrm", "ack.hlog", "ack_uncorrected.hgrm", "ack_uncorrected.hlog", "summary.json"]))
        let log = try HistogramLog.parse(String(contentsOf: folder.appendingPathComponent("ack.hlog"), encoding: .utf8))
        #expect(log.intervals.map(\.histogram.totalCount).reduce(0, +) == 3)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("summary.json"))) as? [String: Any])
        let latency = try #require(json["latency_us"] as? [String: Any])
        #expect(latency["ack"] != nil)
        #expect((json["close_codes"] as? [String: Any])?["4401 auth first"] as? Int == 20)
        #expect((json["files"] as? [String])?.contains("ack.hgrm") == true)
    }

    @Test func aRunWithoutFlowWritesEmptyCloseCodesAndNullFlow() throws {
        var r = Self.flowRecord()
        r.totals = MetricsShard()
        let json = try #require(try JSONSerialization.jsonObject(with: ResultsWriter.summary(of: r).jsonData()) as? [String: Any])
        #expect((json["close_codes"] as? [String: Any])?.isEmpty == true)
        #expect(json["flow"] is NSNull)
    }

    @Test func mergingFoldersAddsNamedLatenciesCloseCodesAndFlow() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("stampede-named-merge-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let a = try ResultsWriter.write(Self.flowRecord(), resultsRoot: root)
        let b = try ResultsWriter.write(Self.flowRecord(), resultsRoot: root)
        let merged = try ResultsMerge.merge([a, b], into: root.appendingPathComponent("merged"))
        #expect(merged.latencyMicros["ack"]?.count == 6)
        #expect(merged.closeCodes?["4401 auth first"] == 40)
        #expect(merged.flow?.counters["flow.ack.matched"] == 6)
        #expect(merged.flow?.unrecognisedSamples.count == 2)
        #expect(merged.files.contains("ack.hlog"))
    }
}
