import Benchmark
import StampedeSession
import StampedeWire

/// A hub session past its handshake (stateful, so every message is also numbered) reading the
/// messages of `HubState`: what a hub client does per received message, session included.
final class HubSessionState<Codec: HubProtocolCodec>: @unchecked Sendable {
    let messages = HubState<Codec>(count: 100)
    var session = HubProtocolSession<Codec>(.init(maxMessageLength: 1 << 20))

    init() {
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 16)
        defer { out.deallocate() }
        _ = session.handshakeRequest(statefulReconnect: true, now: 1, into: out)
        let ok: [UInt8] = [0x7B, 0x7D, 0x1E]
        _ = ok.withUnsafeBytes { session.next($0) }
    }
}

func hubSessionReceiveBenchmark<Codec: HubProtocolCodec>(_ name: String, _ codec: Codec.Type, configuration: Benchmark.Configuration) {
    Benchmark(name, configuration: configuration) { benchmark, state in
        let b = UnsafeRawBufferPointer(rebasing: state.messages.buffer[0..<state.messages.used])
        var at = 0
        var stamps = 0
        for _ in benchmark.scaledIterations {
            if at == b.count { at = 0 }
            let rest = UnsafeRawBufferPointer(rebasing: b[at...])
            guard case (.message(let m), let consumed) = state.session.next(rest) else {
                benchmark.error("session did not deliver a message")
                return
            }
            stamps &+= handleHubMessage(Codec.self, m, rest)
            at += consumed
        }
        if stamps != benchmark.scaledIterations.count { benchmark.error("stamps missing: \(stamps)") }
        blackHole(stamps)
    } setup: { HubSessionState<Codec>() }
}

func hubSessionBenchmarks() {
    let configuration = Benchmark.Configuration(metrics: codecMetrics, scalingFactor: scalingFactor, thresholds: noMallocs)
    hubSessionReceiveBenchmark("Session hub JSON invocation received (HubProtocolSession.next + handle)", JSONHubProtocol.self,
                               configuration: configuration)
    hubSessionReceiveBenchmark("Session hub MessagePack invocation received (HubProtocolSession.next + handle)", MessagePackHubProtocol.self,
                               configuration: configuration)
}
