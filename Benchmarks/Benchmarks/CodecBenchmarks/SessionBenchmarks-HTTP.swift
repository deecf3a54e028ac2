import Benchmark
import StampedeSession
import StampedeWire

/// A keep-alive connection's answers back to back, and the exchange that reads them.
final class ExchangeState: @unchecked Sendable {
    let text: TextState
    var exchange = HTTPClientExchange(configuration: .init(firstByteTimeoutNs: 10_000_000_000, responseTimeoutNs: 30_000_000_000,
                                                           maxResponseBytes: 1 << 20, watchedField: Array("X-Changed-At".utf8)))
    init(_ response: String) { text = TextState(response, count: 50) }
}

/// One REST poll's exchange per operation, as the REST workload runs it: `start` (which asks for
/// the deadline), then actions until the response is complete.
func httpSessionBenchmarks() {
    let configuration = Benchmark.Configuration(metrics: codecMetrics, scalingFactor: scalingFactor, thresholds: noMallocs)

    func run(_ benchmark: Benchmark, _ state: ExchangeState, body: HTTPExchangeBody) {
        let b = UnsafeRawBufferPointer(state.text.buffer)
        var at = 0
        var seen = 0
        var now: UInt64 = 1_000_000_000
        for _ in benchmark.scaledIterations {
            if at == b.count { at = 0 }
            now &+= 1_000
            seen &+= Int(truncatingIfNeeded: state.exchange.start(body: body, now: now) ?? 0)
            while true {
                let rest = UnsafeRawBufferPointer(rebasing: b[at...])
                let (action, consumed) = state.exchange.next(rest)
                at += consumed
                switch action {
                case .head(let head):
                    seen &+= head.status &+ (head.etag?.count ?? 0) &+ (head.rateLimitRemaining?.count ?? 0)
                case .body(let r):
                    seen &+= r.count
                case .complete(let reusable):
                    seen &+= reusable ? state.exchange.collectedBody.count : -1
                default:
                    benchmark.error("unexpected \(action)")
                    return
                }
                if case .complete = action { break }
            }
        }
        blackHole(seen)
    }

    Benchmark("HTTP exchange keep-alive 200 (HTTPClientExchange, body collected)", configuration: configuration) { benchmark, state in
        run(benchmark, state, body: .collect)
    } setup: { ExchangeState(okResponse) }

    Benchmark("HTTP exchange 304 (HTTPClientExchange)", configuration: configuration) { benchmark, state in
        run(benchmark, state, body: .discard)
    } setup: { ExchangeState(notModified) }
}
