import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import StampedeMetrics
@testable import StampedeReport
import StampedeScenario
import Testing

/// report.html: what a run's, a capacity run's and a comparison's page shows, that every text
/// from the inputs is escaped, that nothing could load (no script, no URL), and that the page
/// (its SVG included) is well-formed XML. The browser test (ReportBrowserTests) opens real ones.
@Suite struct HTMLReportTests {
    @Test func runReportShowsTheHeadlineChartsAndNumbers() throws {
        try withTempDir { root in
            let folder = try ResultsWriter.write(record(), resultsRoot: root)
            let html = try String(contentsOf: folder.appendingPathComponent("report.html"), encoding: .utf8)
            for id in ["headline", "facts", "accounting", "latency-table", "latency-over-time", "percentile-spectrum", "rates", "errors",
                       "chart-latency-round_trip", "chart-spectrum-round_trip", "chart-messages", "chart-connections", "chart-errors", "storms", "chart-storm-1"] {
                #expect(html.contains("id=\"\(id)\""), "\(id)")
            }
            #expect(html.contains("sent 1,204 = delivered 1,200 + failed 0 + lost 4"))
            #expect(html.contains("Thresholds: 1 of 2 failed."))
            #expect(html.contains("✗ fail") && html.contains("63.2ms"))
            #expect(html.contains("2 ms"), "max 2,000 µs shows as ms")
            #expect(html.contains("connection_reset"), "errors by class over time, from the errors_<class> columns")
            // The report rendered again from the folder is the one written with the run.
            #expect(try HTMLReport.render(folder: folder) == html)
            let summary = try RunSummary.decode(from: Data(contentsOf: folder.appendingPathComponent("summary.json")))
            #expect(summary.files.last == "report.html")
            try expectSafe(html)
        }
    }

    @Test func textFromTheInputsIsEscaped() throws {
        try withTempDir { root in
            var r = record()
            r.scenario.name = "<script>alert(1)</script>"
            r.fatalError = "target said <img src=x onerror=alert(2)> & \"quit\""
            r.environment.commandLine = ["stampede", "run", "x.yaml'><svg onload=alert(3)>"]
            let folder = try ResultsWriter.write(r, resultsRoot: root)
            let html = try String(contentsOf: folder.appendingPathComponent("report.html"), encoding: .utf8)
            #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
            #expect(html.contains("&lt;img src=x onerror=alert(2)&gt; &amp; &quot;quit&quot;"))
            #expect(!html.contains("<img") && !html.contains("<svg onload"))
            try expectSafe(html)
        }
        #expect(HTML.escape("a<b>&\"c'\u{1}") == "a&lt;b&gt;&amp;&quot;c&#39;\u{FFFD}")
    }

    @Test func numbersAreFormattedForPeople() {
        #expect(Fmt.int(1_234_567) == "1,234,567" && Fmt.int(-1000) == "-1,000" && Fmt.int(999) == "999")
        #expect(Fmt.micros(812) == "812 µs" && Fmt.micros(1234) == "1.23 ms" && Fmt.micros(45_600) == "45.6 ms" && Fmt.micros(2_500_000) == "2.5 s")
        #expect(Fmt.num(21000) == "21,000" && Fmt.num(.nan) == "–" && Fmt.num(1.5, decimals: 2) == "1.50")
        #expect(LineChart.percentileTick(0) == "0%" && LineChart.percentileTick(3) == "99.9%")
        #expect(LineChart.niceTicks(0, 47).ticks == [0, 10, 20, 30, 40, 50])
    }

    @Test func capacityReportShowsTheCurveTheSLOTheKneeAndEveryStep() throws {
        let html = try HTMLReport.render(folder: Self.capacityFixture)
        for id in ["headline", "chart-capacity", "chart-capacity-rates", "steps-table"] { #expect(html.contains("id=\"\(id)\""), "\(id)") }
        #expect(html.contains("SLO round_trip p(99) &lt; 50ms"))
        #expect(html.contains("knee 8,000") && html.contains("max sustainable 21,000"))
        #expect(html.contains("21,000 messages/s"))
        let table = try #require(html.components(separatedBy: "id=\"steps-table\"").last?.components(separatedBy: "</table>").first)
        #expect(table.components(separatedBy: "<tr class=").count - 1 == 12)
        #expect(table.contains("<tr class=\"invalid\">") && table.contains("<tr class=\"fail\">"))
        try expectSafe(html)
    }

    @Test func aConnectionSearchDrawsConnectionsALogLatencyAxisAndEachStepsSpread() throws {
        var r = try CapacityResult.read(Data(contentsOf: Self.capacityFixture.appendingPathComponent("capacity.json")))
        r.vary = "clients"
        r.unit = "clients"
        // The fixture's p99s run from 3.1 ms to 412 ms: more than 20×.
        for i in r.steps.indices {
            let figure = r.steps[i].slos.first?.observed ?? 1000
            r.steps[i].spread = CapacityResult.Spread(slo: "round_trip p(99) < 50ms", intervals: 10, min: figure / 2, median: figure, max: figure * 3,
                                                      low: figure * 0.8, high: figure * 1.5, confidence: 0.9, decision: "pass")
        }
        r.steps[0].outcome = "borderline"
        let html = CapacityHTML.page(r, location: "/tmp/x")
        let chart = try #require(html.components(separatedBy: "id=\"chart-capacity\"").dropFirst().first?.components(separatedBy: "</figure>").first)
        #expect(chart.contains("connections (clients)") && chart.contains("SLO latency by connections"))
        #expect(chart.components(separatedBy: "<g class=\"spread\"").count - 1 == r.steps.count, "one bar per step")
        #expect(chart.contains("per interval 1.55 ms … 9.3 ms"), "a bar's title names the step's spread")
        // Whole decades on the y axis: 1, 10, 100, 1,000 ms.
        #expect(chart.contains(">1</text>") && chart.contains(">10</text>") && chart.contains(">100</text>"))
        #expect(html.contains("Latency on a log scale") && html.contains("◆ borderline"))
        #expect(html.contains("1.55 ms … 9.3 ms</td>"), "the steps table shows each step's per-second spread")
        #expect(html.contains("<th>connections</th>") || html.contains(">connections</th>"))
        try expectSafe(html)

        // A flat curve stays linear.
        for i in r.steps.indices { r.steps[i].spread = nil; r.steps[i].slos[0].observed = 5000 }
        #expect(!CapacityHTML.page(r, location: "/tmp/x").contains("log scale"))
    }

    @Test func comparisonShowsVerdictsAndBothRunsOverlaid() throws {
        try withTempDir { root in
            let a = try ResultsWriter.write(record(), resultsRoot: root)
            let b = try ResultsWriter.write(record(), resultsRoot: root)
            let html = try HTMLReport.render(baseline: a, current: b)
            for id in ["verdicts", "percentiles", "figures", "chart-overlay-round_trip", "chart-overlay-spectrum-round_trip"] {
                #expect(html.contains("id=\"\(id)\""), "\(id)")
            }
            #expect(html.contains("baseline p99") && html.contains("current p50"))
            try expectSafe(html)
        }
    }

    @Test func aLongRunsChartsStayBounded() throws {
        try withTempDir { root in
            var r = record()
            let n = 700
            var lines: [String] = []
            var samples: [IntervalSample] = []
            for i in 0..<n {
                var h = makeLatencyHistogram()
                h.record(UInt64(100 + i % 50))
                lines.append(HistogramLog.line(HistogramLogInterval(startSeconds: Double(i), lengthSeconds: 1, histogram: h)))
                samples.append(IntervalSample(elapsedSeconds: Double(i + 1), openConnections: 10, messagesSent: 5, messagesReceived: 5, errors: 0, p50Micros: 100, p99Micros: 150))
            }
            r.histogramLogLines[.roundTrip] = lines
            r.intervals = samples
            let folder = try ResultsWriter.write(r, resultsRoot: root)
            let run = try RunData(.folder(folder))
            let grouped = try #require(run.intervals["round_trip"])
            #expect(grouped.count <= RunData.maxPoints && grouped.reduce(0) { $0 + $1.count } == UInt64(n))
            #expect(run.totals["round_trip"]?.totalCount == UInt64(n))
            #expect(grouped.first?.start == 0 && grouped.last?.end == Double(n))
            let html = try String(contentsOf: folder.appendingPathComponent("report.html"), encoding: .utf8)
            #expect(html.utf8.count < 1_000_000, "\(html.utf8.count) bytes")
            #expect(html.contains("id=\"chart-latency-round_trip\""))
        }
    }

    @Test func aReportThatCannotBeMadeIsAWarningNotAnError() throws {
        try withTempDir { root in
            // No summary.json among the files: the writer gets a reason back, nothing is thrown.
            let problem = HTMLReport.write(files: ["timeseries.csv": Data("elapsed_s\n".utf8)], folder: root)
            #expect(problem?.contains("summary.json") == true)
            #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("report.html").path))
            // A malformed interval log costs only its charts, with a note.
            let folder = try ResultsWriter.write(record(), resultsRoot: root)
            try Data("#[StartTime: 1 (seconds since epoch)]\n0.000,1.000,1.000,HISTFAAAnotbase64\n".utf8).write(to: folder.appendingPathComponent("round_trip.hlog"))
            let html = try HTMLReport.render(folder: folder)
            #expect(html.contains("id=\"notes\"") && html.contains("round_trip.hlog: line 2"))
            try expectSafe(html)
        }
    }

    @Test func aMissingFolderOrSummaryIsNamed() throws {
        #expect { try HTMLReport.render(folder: URL(fileURLWithPath: "/nonexistent/run-1")) } throws: { "\($0)".contains("/nonexistent/run-1") }
        try withTempDir { root in
            #expect { try HTMLReport.render(folder: root) } throws: { "\($0)".contains(root.appendingPathComponent("summary.json").path) }
            try Data("{".utf8).write(to: root.appendingPathComponent("capacity.json"))
            #expect { try HTMLReport.render(folder: root) } throws: { "\($0)".contains("capacity.json") }
        }
    }

    // MARK: helpers

    static let capacityFixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/capacity-example")

    /// Nothing that could run or load, the CSP in place, and well-formed XML throughout.
    func expectSafe(_ html: String) throws {
        #expect(!html.lowercased().contains("<script"))
        #expect(!html.contains("http://") && !html.contains("https://"))
        #expect(!html.contains("<link") && !html.contains("<img") && !html.contains("url("))
        #expect(html.contains("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\"/>"))
        let body = html.replacingOccurrences(of: "<!DOCTYPE html>", with: "")
        let parser = XMLParser(data: Data(body.utf8))
        let counter = ElementCounter()
        parser.delegate = counter
        #expect(parser.parse(), "not well-formed: \(parser.parserError.map { "\($0)" } ?? "") at line \(parser.lineNumber)")
        #expect(counter.svg > 0 && counter.svg == counter.figures)
    }

    final class ElementCounter: NSObject, XMLParserDelegate {
        var svg = 0, figures = 0
        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if name == "svg" { svg += 1 }
            if name == "figure" { figures += 1 }
        }
    }

    private func record() -> RunRecord {
        var totals = MetricsShard()
        for us: UInt64 in [100, 200, 300, 2000] { totals.record(.roundTrip, nanoseconds: us * 1000) }
        for us: UInt64 in [90, 180, 250, 400] { totals.record(.roundTripUncorrected, nanoseconds: us * 1000) }
        totals.count(.messagesSent, 1204)
        totals.count(.messagesDelivered, 1200)
        totals.lose(.timedOut, 4)
        let scenario = Scenario(
            name: "chat-smoke", file: "scenarios/chat-smoke.yaml", target: .embedded, clients: 10, connectRate: 100,
            durationSeconds: 2, message: MessageSpec(ratePerSecond: 50, size: 128), seed: 42, drainSeconds: 1)
        let started = Date(timeIntervalSince1970: 1_700_000_000.25)
        var errorsAt2 = IntervalSample(elapsedSeconds: 2.5, openConnections: 9, messagesSent: 95, messagesReceived: 170, errors: 2, p50Micros: 260, p99Micros: 1200)
        errorsAt2.errorsByClass = ErrorClass.allCases.map { $0 == .connectionReset ? 2 : 0 }
        var r = RunRecord(
            scenario: scenario, startedAt: started, endedAt: started.addingTimeInterval(3.125), partial: false,
            partialReason: nil, fatalError: nil, totals: totals,
            intervals: [
                IntervalSample(elapsedSeconds: 1, openConnections: 10, messagesSent: 100, messagesReceived: 180, errors: 0, p50Micros: 250, p99Micros: 900),
                errorsAt2,
                IntervalSample(elapsedSeconds: 3.125, openConnections: 0, messagesSent: 0, messagesReceived: 0, errors: 0, p50Micros: 0, p99Micros: 0),
            ],
            environment: RunEnvironment(stampedeVersion: "0.1.0", hostname: "test-host", cores: 2, loops: 1, os: "Linux",
                                        clock: "monotonic", commandLine: ["stampede", "run", "scenarios/chat-smoke.yaml"]),
            peakOpenConnections: 10, openConnectionsAtEnd: 0,
            phaseSeconds: PhaseSeconds(rampUp: 0.1, messages: 2, drain: 1),
            generator: GeneratorHealth(processCPUSeconds: 0.4, clientLoopCPUSeconds: 0.2, maxTimerLagMicros: 350, saturated: false, warnings: []))
        var storm = StormShard()
        storm.affected = 5
        storm.recovered = 5
        for (i, n) in [3, 2, 0, 1].enumerated() { storm.attemptsPerBucket[i] = UInt64(n + 1); storm.successesPerBucket[i] = UInt64(n) }
        for ms: UInt64 in [80, 120, 150, 160, 350] { storm.recovery.record(ms * 1000) }
        r.storms = [StormRecord(number: 1, atSeconds: 1, kind: "storm", mode: "reset", fraction: 0.5, shard: storm)]
        r.thresholds = [
            .init(metric: "round_trip", label: nil, condition: "p(99) < 50ms", observed: 2000, unit: "us", limit: 50000, observedText: "2ms", passed: true),
            .init(metric: "fanout", label: nil, condition: "p(99) < 50ms", observed: 63200, unit: "us", limit: 50000, observedText: "63.2ms", passed: false),
        ]
        return r
    }

    private func withTempDir(_ body: (URL) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stampede-html-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try body(dir)
    }
}
