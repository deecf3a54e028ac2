import Foundation
import StampedeMetrics
@testable import StampedeReport
import Testing

/// The .hlog codec: round trips, the Python `hdrhistogram` writer's file (Fixtures/, made by
/// Tests/peers/hlog_fixture.py), and malformed input (throws, never traps).
@Suite struct HistogramLogCodecTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// The values Tests/peers/hlog_fixture.py records in interval `interval`.
    static func fixtureValues(_ interval: Int) -> [UInt64] {
        var out: [UInt64] = (1...2000).map { i in UInt64((i * i * 37 + interval * 7919) % 5_000_000 + 1) }
        out.append(UInt64(3_000_000_000 - interval))
        return out
    }

    static func histogram(_ values: [UInt64]) -> LatencyHistogram {
        var h = makeLatencyHistogram()
        for v in values { h.record(v) }
        return h
    }

    /// Bucket value and count of every recorded bucket: equal lists mean equal histograms.
    static func buckets(_ h: LatencyHistogram) -> [[UInt64]] {
        h.recordedValues().map { [$0.value, $0.count] }
    }

    /// Same buckets, counts, max and percentiles. `exactMax`: the highest value itself came along
    /// (our files carry it in Interval_Max; other writers' files only its bucket), so p99.99 and
    /// p100, which are clamped to it, must be equal too.
    static func expectSame(_ a: LatencyHistogram, _ b: LatencyHistogram, exactMax: Bool = true) {
        #expect(buckets(a) == buckets(b))
        #expect(a.totalCount == b.totalCount)
        #expect(a.max == b.max)
        #expect(a.minNonZero == b.minNonZero)
        let percentiles = exactMax ? [50.0, 90.0, 99.0, 99.9, 99.99, 100.0] : [50.0, 90.0, 99.0, 99.9]
        for p in percentiles { #expect(a.valueAtPercentile(p) == b.valueAtPercentile(p), "p\(p)") }
        if exactMax { #expect(a.maxRecorded == b.maxRecorded) }
    }

    @Test func roundTripKeepsEveryBucketAndPercentile() throws {
        var rng = SystemRandomNumberGenerator()
        var intervals: [HistogramLogInterval] = []
        for i in 0..<4 {
            var h = makeLatencyHistogram()
            for _ in 0..<5000 { h.record(UInt64.random(in: 1...2_000_000, using: &rng)) }
            h.record(1)
            h.record(3_600_000_000)
            h.record(1234, count: 1 << 40)  // a count past 7 bytes of LEB128
            intervals.append(HistogramLogInterval(startSeconds: Double(i) * 1.001, lengthSeconds: 1.0, histogram: h))
        }
        intervals.append(HistogramLogInterval(startSeconds: 9, lengthSeconds: 0.5, histogram: makeLatencyHistogram()))
        let start = Date(timeIntervalSince1970: 1_764_000_000.25)
        let parsed = try HistogramLog.parse(HistogramLog.render(startTime: start, intervals: intervals))
        #expect(parsed.startTime == start)
        #expect(parsed.intervals.count == intervals.count)
        for (a, b) in zip(parsed.intervals, intervals) {
            #expect(abs(a.startSeconds - b.startSeconds) < 0.0005)
            #expect(a.lengthSeconds == b.lengthSeconds)
            Self.expectSame(a.histogram, b.histogram)
        }
    }

    @Test func readsThePythonWritersFile() throws {
        let text = try String(contentsOf: Self.fixtures.appendingPathComponent("python-writer.hlog"), encoding: .utf8)
        let parsed = try HistogramLog.parse(text)
        #expect(parsed.startTime == Date(timeIntervalSince1970: 1_764_000_000))
        #expect(parsed.intervals.map(\.startSeconds) == [0, 1, 2])
        #expect(parsed.intervals.map(\.lengthSeconds) == [1, 1, 1])
        for (i, interval) in parsed.intervals.enumerated() {
            Self.expectSame(interval.histogram, Self.histogram(Self.fixtureValues(i)), exactMax: false)
        }
    }

    /// Our encoder writes the V2 payload the Python package writes: the same header and the same
    /// counts at the same indexes (a lone zero is 0 in Java's encoding, -1 in Python's).
    @Test func encodesThePayloadThePythonWriterEncodes() throws {
        let text = try String(contentsOf: Self.fixtures.appendingPathComponent("python-writer.hlog"), encoding: .utf8)
        let lines = text.split(separator: "\n").filter { $0.first?.isNumber == true }
        #expect(lines.count == 3)
        for (i, line) in lines.enumerated() {
            let theirs = try #require(Data(base64Encoded: String(line.split(separator: ",")[3])))
            let payload = try HistogramCodec.inflate(Array(theirs.dropFirst(8)))
            let ours = HistogramCodec.encodePayload(Self.histogram(Self.fixtureValues(i)))
            #expect(Array(ours[0..<4] + ours[8..<40]) == Array(payload[0..<4] + payload[8..<40]))
            let (theirLayout, theirCounts) = try HistogramCodec.decodeEntries(payload)
            let (ourLayout, ourCounts) = try HistogramCodec.decodeEntries(ours)
            #expect(theirLayout == ourLayout)
            #expect(theirCounts.map { [UInt64($0.index), $0.count] } == ourCounts.map { [UInt64($0.index), $0.count] })
            #expect(ourCounts.count > 1000)
        }
    }

    @Test func zigZagMatchesJavaForEdgeValues() throws {
        for v: Int64 in [0, 1, -1, 63, -64, 64, 1 << 55, (1 << 56) - 1, 1 << 56, .max, .min + 1, .min] {
            var bytes: [UInt8] = []
            ZigZag.append(&bytes, v)
            #expect(bytes.count <= 9)
            var reader = ByteReader(bytes: bytes)
            #expect(try ZigZag.read(&reader, end: bytes.count) == v)
        }
    }

    @Test func malformedHistogramsThrow() throws {
        let valid = HistogramCodec.encodePayload(Self.histogram(Self.fixtureValues(0)))
        func payload(_ edit: (inout [UInt8]) -> Void) -> [UInt8] {
            var p = valid
            edit(&p)
            return p
        }
        func withHeader(digits: UInt32 = 3, lowest: UInt64 = 1, highest: UInt64 = 3_600_000_000, counts: [Int64]) -> [UInt8] {
            var body: [UInt8] = []
            for c in counts { ZigZag.append(&body, c) }
            var p: [UInt8] = []
            HistogramCodec.appendBigEndian(&p, HistogramCodec.encodingCookie)
            HistogramCodec.appendBigEndian(&p, UInt32(body.count))
            HistogramCodec.appendBigEndian(&p, UInt32(0))
            HistogramCodec.appendBigEndian(&p, digits)
            HistogramCodec.appendBigEndian(&p, lowest)
            HistogramCodec.appendBigEndian(&p, highest)
            HistogramCodec.appendBigEndian(&p, (1.0 as Double).bitPattern)
            return p + body
        }
        let bad: [[UInt8]] = [
            [], Array(valid.prefix(39)),
            payload { $0[3] = 0x02 },  // V1 cookie
            payload { $0[7] = $0[7] &+ 1 },  // payload length past the end
            payload { $0[11] = 1 },  // normalizingIndexOffset
            payload { $0.append(0xff) },  // not used by the declared length: fine … but see below
            withHeader(digits: 9, counts: [1]),
            withHeader(lowest: 0, counts: [1]),
            withHeader(highest: 1, counts: [1]),
            withHeader(lowest: 1 << 62, highest: .max, counts: [1]),
            withHeader(counts: [-1_000_000, 1]),  // zero run beyond the counts array
            withHeader(counts: [.min]),
            withHeader(counts: [-Int64.max]),
            withHeader(lowest: 1, highest: 1 << 40, counts: [-(30 << 10), 5]),  // value past 1 h
            Array(withHeader(counts: [1]).dropLast()) + [0x80],  // a LEB128 number cut short
        ]
        for (i, bytes) in bad.enumerated() where i != 5 {
            #expect(throws: HistogramCodecError.self, "case \(i)") { try HistogramCodec.decodePayload(bytes) }
        }
        #expect(try HistogramCodec.decodePayload(bad[5]).totalCount == 2001)
        // Envelope and base64.
        for text in ["", "!!!", "AAAA", Data(repeating: 0, count: 8).base64EncodedString(),
                     Data([0x1c, 0x84, 0x93, 0x14, 0, 0, 0, 3, 1, 2, 3]).base64EncodedString(),
                     Data([0x1c, 0x84, 0x93, 0x14, 0, 0, 0, 9, 1, 2, 3]).base64EncodedString()] {
            #expect(throws: HistogramCodecError.self) { try HistogramCodec.decodeBase64(text) }
        }
        // A zlib bomb: 64 MiB of zeros deflates to ~64 KiB; refused, not inflated.
        let zeros = [UInt8](repeating: 0, count: 64 << 20)
        let bomb = HistogramCodec.deflate(zeros)
        #expect(throws: HistogramCodecError.self) { try HistogramCodec.inflate(bomb) }
    }

    /// Random byte flips in payloads and envelopes: every outcome is a histogram or an error.
    @Test func mutatedEncodingsNeverTrap() {
        var rng = SystemRandomNumberGenerator()
        let payload = HistogramCodec.encodePayload(Self.histogram(Self.fixtureValues(1)))
        let envelope = HistogramCodec.encodeCompressed(Self.histogram(Self.fixtureValues(2)))
        for _ in 0..<3000 {
            var p = payload, e = envelope
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                p[Int.random(in: 0..<p.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                e[Int.random(in: 0..<e.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            if Bool.random(using: &rng) { p.removeLast(Int.random(in: 0..<p.count, using: &rng)) }
            _ = try? HistogramCodec.decodePayload(p)
            _ = try? HistogramCodec.decodeCompressed(e)
        }
    }

    @Test func malformedLogLinesNameTheLineAndField() throws {
        let good = HistogramLog.render(startTime: Date(timeIntervalSince1970: 1_764_000_000), intervals: [
            HistogramLogInterval(startSeconds: 0, lengthSeconds: 1, histogram: Self.histogram([5, 6])),
        ])
        let line = try #require(good.split(separator: "\n").last.map(String.init))
        let cases: [(String, String)] = [
            ("#[StartTime: abc (seconds since epoch)]\n", "StartTime"),
            ("#[BaseTime: nan (seconds since epoch)]\n", "BaseTime"),
            ("1.0,1.0,2.0\n", "line"),
            ("x,1.0,2.0,AAAA\n", "StartTimestamp"),
            ("1.0,inf,2.0,AAAA\n", "Interval_Length"),
            ("1.0,1.0,2.0,AAAA\n", "Interval_Compressed_Histogram"),
            (line.replacingOccurrences(of: "HISTF", with: "HISTG") + "\n", "Interval_Compressed_Histogram"),
        ]
        for (bad, field) in cases {
            let error = #expect(throws: HistogramLogError.self) { try HistogramLog.parse(good + bad) }
            #expect(error?.field == field)
            #expect(error?.line == good.split(separator: "\n", omittingEmptySubsequences: false).count)
        }
        // Tagged lines, other comments, blank lines and CRLF are fine.
        let parsed = try HistogramLog.parse(good.replacingOccurrences(of: "\n", with: "\r\n") + "\n#[other]\nTag=a,\(line)\n")
        #expect(parsed.intervals.count == 1)
    }
}
