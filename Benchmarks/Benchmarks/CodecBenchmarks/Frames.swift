import Benchmark
import StampedeWire

/// A chat-sized text payload (64 bytes of JSON, valid UTF-8).
let framePayload: [UInt8] = Array(#"{"message":"s1:q2a:t18b2c3d4e5f6:a18b2c3d4e5f7:xxxx","user":"u1"}"#.utf8)

/// Buffers for frame building and parsing, allocated once.
final class FrameState: @unchecked Sendable {
    /// Scratch space for one frame at a time.
    let frame = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
    /// `frameCount` unmasked server frames back to back.
    let stream: UnsafeMutableRawBufferPointer
    var clientReceiver = WebSocketReceiver(role: .client, maxMessageBytes: 1 << 20)
    var serverReceiver = WebSocketReceiver(role: .server, maxMessageBytes: 1 << 20)
    let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: framePayload.count, alignment: 16)
    static let frameCount = 64

    init() {
        payload.copyBytes(from: framePayload)
        let one = WebSocketFrameCodec.headerLength(payloadLength: payload.count, masked: false) + payload.count
        stream = .allocate(byteCount: one * Self.frameCount, alignment: 16)
        var at = 0
        for _ in 0..<Self.frameCount {
            at += FrameState.buildUnmasked(into: stream.baseAddress! + at, payload: UnsafeRawBufferPointer(payload))
        }
    }
    deinit { frame.deallocate(); stream.deallocate(); payload.deallocate() }

    /// Server → client: header and payload, no mask.
    @inline(__always)
    static func buildUnmasked(into out: UnsafeMutableRawPointer, payload: UnsafeRawBufferPointer) -> Int {
        let h = WebSocketFrameCodec.writeHeader(into: out, fin: true, opcode: .text, payloadLength: payload.count, maskKey: nil)
        (out + h).copyMemory(from: payload.baseAddress!, byteCount: payload.count)
        return h + payload.count
    }

    /// Client → server: header with the key, then the payload masked in place.
    @inline(__always)
    static func buildMasked(into out: UnsafeMutableRawPointer, payload: UnsafeRawBufferPointer, key: UInt32) -> Int {
        let h = WebSocketFrameCodec.writeHeader(into: out, fin: true, opcode: .text, payloadLength: payload.count, maskKey: key)
        (out + h).copyMemory(from: payload.baseAddress!, byteCount: payload.count)
        WebSocketFrameCodec.applyMask(UnsafeMutableRawBufferPointer(start: out + h, count: payload.count), maskKey: key)
        return h + payload.count
    }
}

func frameBenchmarks() {
    let configuration = Benchmark.Configuration(metrics: codecMetrics, scalingFactor: scalingFactor, thresholds: noMallocs)

    Benchmark("Frame build masked 64 B (client send)", configuration: configuration) { benchmark, state in
        var total = 0
        for i in benchmark.scaledIterations {
            total &+= FrameState.buildMasked(into: state.frame.baseAddress!, payload: UnsafeRawBufferPointer(state.payload), key: exampleKey &+ UInt32(truncatingIfNeeded: i))
        }
        blackHole(total)
    } setup: { FrameState() }

    Benchmark("Frame build unmasked 64 B (server send)", configuration: configuration) { benchmark, state in
        var total = 0
        for _ in benchmark.scaledIterations {
            total &+= FrameState.buildUnmasked(into: state.frame.baseAddress!, payload: UnsafeRawBufferPointer(state.payload))
        }
        blackHole(total)
    } setup: { FrameState() }

    Benchmark("Frame parse masked 64 B, WebSocketReceiver server (built each time)", configuration: configuration) { benchmark, state in
        var delivered = 0
        for i in benchmark.scaledIterations {
            let n = FrameState.buildMasked(into: state.frame.baseAddress!, payload: UnsafeRawBufferPointer(state.payload), key: exampleKey &+ UInt32(truncatingIfNeeded: i))
            let (event, consumed) = state.serverReceiver.next(UnsafeMutableRawBufferPointer(rebasing: state.frame[0..<n]))
            if case .message(_, let payload) = event, consumed == n { delivered &+= payload.count }
        }
        if delivered != benchmark.scaledIterations.count * framePayload.count { benchmark.error("frames not delivered") }
        blackHole(delivered)
    } setup: { FrameState() }

    Benchmark("Frame parse unmasked 64 B, WebSocketReceiver client", configuration: configuration) { benchmark, state in
        var delivered = 0
        var at = 0
        let end = state.stream.count
        for _ in benchmark.scaledIterations {
            if at == end { at = 0 }
            let (event, consumed) = state.clientReceiver.next(UnsafeMutableRawBufferPointer(rebasing: state.stream[at..<end]))
            if case .message(_, let payload) = event { delivered &+= payload.count }
            at += consumed
        }
        if delivered != benchmark.scaledIterations.count * framePayload.count { benchmark.error("frames not delivered") }
        blackHole(delivered)
    } setup: { FrameState() }

    Benchmark("Frame parseHeader only (masked, 64 B)", configuration: configuration) { benchmark, state in
        let n = FrameState.buildMasked(into: state.frame.baseAddress!, payload: UnsafeRawBufferPointer(state.payload), key: exampleKey)
        let frame = UnsafeRawBufferPointer(rebasing: state.frame[0..<n])
        var total = 0
        for _ in benchmark.scaledIterations {
            if case .header(let h) = WebSocketFrameCodec.parseHeader(frame) { total &+= h.frameLength }
        }
        blackHole(total)
    } setup: { FrameState() }
}
