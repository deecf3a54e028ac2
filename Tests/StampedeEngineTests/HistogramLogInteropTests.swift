import Foundation
import StampedeMetrics
import StampedeReport
import Testing

/// Our .hlog files through HdrHistogram's own readers: the Python package's `HistogramLogReader`
/// (Tests/peers/hlog_read.py, venv `hdrhistogram`) and Java's `HistogramLogProcessor` (Debian
/// `libhdrhistogram-java`, installed by scripts/ensure-packages.sh --tests) decode the same
/// histograms and give the same percentiles; and we read what the Python writer writes.
@Suite struct HistogramLogInteropTests {
    static let javaClassPath = "/usr/share/java/hdrhistogram.jar"
    static let start = Date(timeIntervalSince1970: 1_764_000_000.5)
    static let percentiles = [50.0, 90.0, 99.0, 99.9]

    /// Four one-second intervals of latency-like values (a body of 0.2–3 ms, a tail to 60 ms,
    /// one outlier per interval alone in the highest bucket), deterministic.
    static func intervals() -> [HistogramLogInterval] {
        var state: UInt64 = 0x9e37_79b9_7f4a_7c15
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        return (0..<4).map { i in
            var h = makeLatencyHistogram()
            for _ in 0..<5000 {
                let r = next()
                h.record(r % 100 < 97 ? 200 + r % 2800 + UInt64(i) * 50 : 3000 + r % 57_000)
            }
            h.record(250_000 + UInt64(i) * 1234)
            return HistogramLogInterval(startSeconds: Double(i) * 1.0 + 0.25, lengthSeconds: 1.0, histogram: h)
        }
    }

    static func total(_ intervals: [HistogramLogInterval]) -> LatencyHistogram {
        var sum = makeLatencyHistogram()
        for i in intervals { sum.add(i.histogram) }
        return sum
    }

    static func writeLog(_ intervals: [HistogramLogInterval], in folder: URL) throws -> URL {
        let url = folder.appendingPathComponent("round_trip.hlog")
        try Data(HistogramLog.render(startTime: start, intervals: intervals).utf8).write(to: url)
        return url
    }

    @Test func pythonReaderReproducesOurPercentilesPerIntervalAndInTotal() throws {
        let python = try peerPython("hdrhistogram")
        let folder = temporaryFolder("hlog-python")
        let ours = Self.intervals()
        let file = try Self.writeLog(ours, in: folder)
        let r = try runProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/hlog_read.py").path, file.path], timeout: 60)
        try #require(r.status == 0, "hlog_read.py: \(r.stderr.suffix(2000))")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(json["start_time"] as? Double == 1_764_000_000.5)
        let theirs = try #require(json["intervals"] as? [[String: Any]])
        #expect(theirs.count == ours.count)
        for (mine, decoded) in zip(ours, theirs) {
            #expect(abs((decoded["start"] as? Double ?? -1) - mine.startSeconds) < 0.0005)
            Self.expectSame(mine.histogram, decoded)
        }
        Self.expectSame(Self.total(ours), try #require(json["total"] as? [String: Any]))
    }

    /// One histogram as hlog_read.py printed it against ours: count, buckets, max, percentiles.
    static func expectSame(_ h: LatencyHistogram, _ decoded: [String: Any], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(decoded["total"] as? UInt64 == h.totalCount, sourceLocation: sourceLocation)
        // HdrHistogram reports the max as its bucket's highest equivalent value (`max`); the exact
        // value travels in Interval_Max, which the Python reader does not read.
        #expect(decoded["max"] as? UInt64 == h.max, sourceLocation: sourceLocation)
        let buckets = (decoded["buckets"] as? [[UInt64]]) ?? []
        #expect(buckets == h.recordedValues().map { [$0.value, $0.count] }, sourceLocation: sourceLocation)
        let p = decoded["p"] as? [String: UInt64] ?? [:]
        for q in percentiles {
            #expect(p[String(q)] == h.valueAtPercentile(q), "p\(q)", sourceLocation: sourceLocation)
        }
    }

    @Test func javaHistogramLogProcessorWritesOurPercentileTable() throws {
        try #require(FileManager.default.fileExists(atPath: Self.javaClassPath),
                     "\(Self.javaClassPath) missing: run scripts/ensure-packages.sh --tests (libhdrhistogram-java)")
        let folder = temporaryFolder("hlog-java")
        let ours = Self.intervals()
        let file = try Self.writeLog(ours, in: folder)
        let out = folder.appendingPathComponent("processed")
        let r = try runProcess("/usr/bin/env", ["java", "-cp", Self.javaClassPath, "org.HdrHistogram.HistogramLogProcessor",
                                                "-i", file.path, "-o", out.path, "-outputValueUnitRatio", "1"], timeout: 60)
        try #require(r.status == 0, "HistogramLogProcessor: \(r.stderr.suffix(2000))")
        // The whole log's percentile distribution is our .hgrm file of the summed histogram, line
        // for line (Java adds two comment lines naming the time range and StartTime).
        let theirTable = try String(contentsOf: URL(fileURLWithPath: out.path + ".hgrm"), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("#[Overall") && !$0.hasPrefix("#[StartTime") }
        let ourTable = ResultsWriter.hgrm(Self.total(ours)).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(theirTable.count == ourTable.count)
        #expect(ourTable.count > 40)
        for (theirs, mine) in zip(theirTable, ourTable) {
            let a = theirs.split(separator: " "), b = mine.split(separator: " ")
            if a.count == 4 || a.count == 3, let pa = Double(a[1]), let pb = b.count > 1 ? Double(b[1]) : nil {
                // Value, count and 1/(1-p) to the character; the percentile's 12th decimal may
                // round the other way (Java's decimal formatting against C's printf).
                #expect(a[0] == b[0] && a[2...] == b[2...] && abs(pa - pb) < 1e-11, "\(theirs) | \(mine)")
            } else {
                #expect(theirs == mine)
            }
        }
        // Per interval ("1.250: I:5001 ( 50% 90% Max ) T:5001 ( 50% 90% 99% 99.9% 99.99% Max )",
        // timestamps are interval ends): the interval's and the running total's figures.
        let rows = try String(contentsOf: out, encoding: .utf8).split(separator: "\n").filter { $0.first?.isNumber == true }.map { line in
            line.replacingOccurrences(of: "I:", with: " ").replacingOccurrences(of: "T:", with: " ").replacingOccurrences(of: ":", with: " ")
                .split(whereSeparator: { $0 == " " || $0 == "(" || $0 == ")" }).compactMap { Double($0) }
        }
        #expect(rows.count == ours.count)
        var running = makeLatencyHistogram()
        for (row, mine) in zip(rows, ours) {
            running.add(mine.histogram)
            let h = mine.histogram
            // Java reports the max (and a percentile in the highest bucket) as the bucket's highest
            // equivalent value: `max`; below the highest bucket the values are ours exactly.
            let expected: [Double] = [mine.startSeconds + mine.lengthSeconds] + [
                h.totalCount, h.valueAtPercentile(50), h.valueAtPercentile(90), h.max,
                running.totalCount, running.valueAtPercentile(50), running.valueAtPercentile(90), running.valueAtPercentile(99),
                running.valueAtPercentile(99.9), running.highestEquivalentForValue(running.valueAtPercentile(99.99)), running.max,
            ].map { Double($0) }
            #expect(row == expected)
        }
    }

    @Test func weReadWhatThePythonWriterWrites() throws {
        let python = try peerPython("hdrhistogram")
        let folder = temporaryFolder("hlog-python-writer")
        let file = folder.appendingPathComponent("python.hlog")
        let r = try runProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/hlog_fixture.py").path, file.path], timeout: 60)
        try #require(r.status == 0, "hlog_fixture.py: \(r.stderr.suffix(2000))")
        let parsed = try HistogramLog.parse(String(contentsOf: file, encoding: .utf8))
        #expect(parsed.startTime == Date(timeIntervalSince1970: 1_764_000_000))
        #expect(parsed.intervals.count == 3)
        for (i, interval) in parsed.intervals.enumerated() {
            // The values of Tests/peers/hlog_fixture.py.
            var h = makeLatencyHistogram()
            for n in 1...2000 { h.record(UInt64((n * n * 37 + i * 7919) % 5_000_000 + 1)) }
            h.record(UInt64(3_000_000_000 - i))
            #expect(interval.histogram.recordedValues().map { [$0.value, $0.count] } == h.recordedValues().map { [$0.value, $0.count] })
            for q in Self.percentiles { #expect(interval.histogram.valueAtPercentile(q) == h.valueAtPercentile(q)) }
            #expect(interval.startSeconds == Double(i))
        }
    }
}
