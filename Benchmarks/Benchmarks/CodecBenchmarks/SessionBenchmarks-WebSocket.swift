import Benchmark
import StampedeSession
import StampedeWire

/// The WebSocket sessions' receive path: a 64-byte chat message through
/// `WebSocketClientSession` (unmasked server frames) and `WebSocketServerSession` (a masked
/// client frame, built each time since the session unmasks it in place). One message, one
/// `next` call, no malloc.
final class WebSocketSessionState: @unchecked Sendable {
    let frames = FrameState()
    var client: WebSocketClientSession
    var server = WebSocketServerSession(maxMessageBytes: 1 << 20, closeTimeoutNs: 2_000_000_000)

    init() {
        let key = "dGhlIHNhbXBsZSBub25jZQ=="
        client = WebSocketClientSession(configuration: .init(host: "127.0.0.1", port: 8080, path: "/chat", upgradeTimeoutNs: 10_000_000_000,
                                                             closeTimeoutNs: 2_000_000_000, maxMessageBytes: 1 << 20))
        _ = client.connected(now: 1, key: key)
        var answer = WebSocketHandshake.switchingProtocols(key: key)
        let (action, _) = answer.withUnsafeMutableBytes { client.next($0, now: 1) }
        precondition(action == .opened, "the client session did not open")
    }
}

func webSocketSessionBenchmarks() {
    let configuration = Benchmark.Configuration(metrics: codecMetrics, scalingFactor: scalingFactor, thresholds: noMallocs)

    Benchmark("WebSocket session: message received, client (64 B)", configuration: configuration) { benchmark, state in
        var delivered = 0
        var at = 0
        let stream = state.frames.stream
        for _ in benchmark.scaledIterations {
            if at == stream.count { at = 0 }
            let (action, consumed) = state.client.next(UnsafeMutableRawBufferPointer(rebasing: stream[at...]), now: 2)
            if case .message(_, let payload) = action { delivered &+= payload.count }
            at += consumed
        }
        if delivered != benchmark.scaledIterations.count * framePayload.count { benchmark.error("messages not delivered") }
        blackHole(delivered)
    } setup: { WebSocketSessionState() }

    Benchmark("WebSocket session: message received, server (64 B, masked)", configuration: configuration) { benchmark, state in
        var delivered = 0
        let frame = state.frames.frame
        let payload = UnsafeRawBufferPointer(state.frames.payload)
        for i in benchmark.scaledIterations {
            let n = FrameState.buildMasked(into: frame.baseAddress!, payload: payload, key: exampleKey &+ UInt32(truncatingIfNeeded: i))
            let (action, consumed) = state.server.next(UnsafeMutableRawBufferPointer(rebasing: frame[0..<n]), now: 2)
            if case .message(_, let p) = action, consumed == n { delivered &+= p.count }
        }
        if delivered != benchmark.scaledIterations.count * framePayload.count { benchmark.error("messages not delivered") }
        blackHole(delivered)
    } setup: { WebSocketSessionState() }
}
