import Benchmark
import StampedeMetrics
import StampedeWire

/// A buffer holding `text` repeated `count` times.
final class TextState: @unchecked Sendable {
    let buffer: UnsafeMutableRawBufferPointer
    var sse = SSEParser()
    var http = HTTPResponseParser()
    init(_ text: String, count: Int) {
        let one = Array(text.utf8)
        buffer = .allocate(byteCount: one.count * count, alignment: 16)
        for i in 0..<count { UnsafeMutableRawBufferPointer(rebasing: buffer[(i * one.count)...]).copyBytes(from: one) }
    }
    deinit { buffer.deallocate() }
}

/// An ASP.NET SignalR SSE frame: one hub record (with its 0x1E) per event, CRLF line ends.
let sseEvent = "data: {\"type\":1,\"target\":\"ReceiveMessage\",\"arguments\":[\"user-3\",\"s1:q2a:t18b2c3d4e5f6:a18b2c3d4e5f7:xxxx\"]}\u{1E}\r\n\r\n"

/// A REST poll's answers on a keep-alive connection: a 304 and a small JSON 200.
let notModified = "HTTP/1.1 304 Not Modified\r\nDate: Sun, 22 Nov 2026 03:09:15 GMT\r\nServer: Kestrel\r\nETag: \"7f3a-1763779200\"\r\nCache-Control: no-cache\r\n\r\n"
let okBody = #"{"id":7,"name":"room-7","changed_at":1763779200.5,"members":12,"tags":["a","b"]}"#
let okResponse = "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nDate: Sun, 22 Nov 2026 03:09:15 GMT\r\nServer: Kestrel\r\nContent-Length: \(okBody.utf8.count)\r\nETag: \"7f3b-1763779200\"\r\nX-RateLimit-Remaining: 99\r\nCache-Control: no-cache\r\n\r\n" + okBody

let rateLimitHeader: StaticString = "x-ratelimit-remaining"

func httpBenchmarks() {
    let configuration = Benchmark.Configuration(metrics: codecMetrics, scalingFactor: scalingFactor, thresholds: noMallocs)

    Benchmark("SSE events (SSEParser, single-line data)", configuration: configuration) { benchmark, state in
        let b = UnsafeRawBufferPointer(state.buffer)
        var at = 0
        var bytes = 0
        for _ in benchmark.scaledIterations {
            if at == b.count { at = 0 }
            let (event, consumed) = state.sse.next(UnsafeRawBufferPointer(rebasing: b[at...]))
            guard case .event(let data) = event else { benchmark.error("no event: \(event)"); return }
            bytes &+= data.count
            at += consumed
        }
        blackHole(bytes)
    } setup: { TextState(sseEvent, count: 100) }

    Benchmark("HTTP responses (HTTPResponseParser, keep-alive 304 + 200)", configuration: configuration) { benchmark, state in
        let b = UnsafeRawBufferPointer(state.buffer)
        var at = 0
        var seen = 0
        for _ in benchmark.scaledIterations {
            if at == b.count { at = 0 }
            // One response: head, body pieces (200 only), end.
            while true {
                let rest = UnsafeRawBufferPointer(rebasing: b[at...])
                let (event, consumed) = state.http.next(rest)
                switch event {
                case .head(let head):
                    seen &+= head.status
                    if let r = head.value(forHeader: rateLimitHeader, in: rest) { seen &+= r.count }
                case .body(let r):
                    seen &+= r.count
                case .end:
                    break
                case .needMore, .error:
                    benchmark.error("unexpected \(event)")
                    return
                }
                at += consumed
                if case .end = event { break }
            }
        }
        blackHole(seen)
    } setup: { TextState(notModified + okResponse, count: 50) }
}

/// Latencies from 50 µs to about 50 ms, spread over the histogram's buckets.
final class HistogramState: @unchecked Sendable {
    var shard = MetricsShard()
    let latencies: [UInt64] = (0..<1024).map { i in 50_000 &+ UInt64((i &* 2_654_435_761) % 50_000_000) }
}

func histogramBenchmarks() {
    let configuration = Benchmark.Configuration(metrics: codecMetrics, scalingFactor: scalingFactor, thresholds: noMallocs)
    Benchmark("Histogram records (MetricsShard.record)", configuration: configuration) { benchmark, state in
        state.latencies.withUnsafeBufferPointer { l in
            for i in benchmark.scaledIterations {
                state.shard.record(.roundTrip, nanoseconds: l[i & 1023])
            }
        }
        blackHole(state.shard.histograms[0].totalCount)
    } setup: { HistogramState() }
}
