import Benchmark
import StampedeWire

/// `count` hub messages back to back as a chat hub sends them: Completions of the client's own
/// invocations (id and result: the stamp) and `ReceiveMessage` broadcasts (user, stamped text).
final class HubState<Codec: HubProtocolCodec>: @unchecked Sendable {
    let buffer: UnsafeMutableRawBufferPointer
    let used: Int
    let messages: Int

    init(count: Int) {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { scratch.deallocate() }
        var at = 0
        var stampBytes = [UInt8](repeating: 0, count: 64)
        for i in 0..<count {
            let stamp = MessageStamp(sender: UInt32(i % 7), sequence: UInt32(i), intendedNs: 1_763_779_200_000_000_000 &+ UInt64(i) * 1_000_000,
                                  actualNs: 1_763_779_200_000_000_000 &+ UInt64(i) * 1_000_000 + 1_234)
            let n = stampBytes.withUnsafeMutableBytes { ChatCodec.writeStamp(stamp, into: $0.baseAddress!) }
            let out = UnsafeMutableRawBufferPointer(rebasing: scratch[at...])
            let written: Int? = stampBytes.withUnsafeBytes { raw in
                let s = UnsafeRawBufferPointer(rebasing: raw[0..<n])
                if i % 2 == 0 {
                    return Codec.writeCompletion(into: out, invocationId: .utf8(s), result: { w in w.string(s) })
                } else {
                    return Codec.writeInvocation(into: out, invocationId: nil, target: "ReceiveMessage", streamIds: nil) { w in
                        w.string("user-3")
                        w.paddedString(prefix: s, totalLength: 64, pad: UInt8(ascii: "x"))
                    }
                }
            }
            at += written!
        }
        buffer = .allocate(byteCount: at, alignment: 16)
        buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: scratch[0..<at]))
        used = at
        messages = count
    }
    deinit { buffer.deallocate() }
}

/// What a hub client does with a message (HubClients.handle): Completion → the stamp from the
/// id and the echoed stamp in the result; Invocation → target check, then each string
/// argument's stamp. Returns 1 per stamp found.
@inline(__always)
func handleHubMessage<Codec: HubProtocolCodec>(_: Codec.Type, _ m: HubMessage, _ b: UnsafeRawBufferPointer) -> Int {
    switch m.messageType {
    case .completion:
        guard let idRange = m.invocationId, let stamp = ChatCodec.parseStamp(UnsafeRawBufferPointer(rebasing: b[idRange])),
              let r = m.result, let contents = Codec.stringContents(b, value: r),
              let echoed = ChatCodec.parseStamp(UnsafeRawBufferPointer(rebasing: b[contents])), echoed == stamp else { return 0 }
        return 1
    case .invocation:
        guard let target = m.target, UnsafeRawBufferPointer(rebasing: b[target]).elementsEqual("ReceiveMessage".utf8),
              let args = m.arguments, let count = Codec.arrayCount(b, array: args) else { return 0 }
        var found = 0
        for i in 0..<count {
            guard let element = Codec.arrayElement(b, array: args, at: i),
                  let contents = Codec.stringContents(b, value: element),
                  ChatCodec.parseStamp(UnsafeRawBufferPointer(rebasing: b[contents])) != nil else { continue }
            found += 1
        }
        return found
    default:
        return 0
    }
}

func hubRecordsBenchmark<Codec: HubProtocolCodec>(_ name: String, _ codec: Codec.Type, configuration: Benchmark.Configuration) {
    Benchmark(name, configuration: configuration) { benchmark, state in
        let b = UnsafeRawBufferPointer(rebasing: state.buffer[0..<state.used])
        var at = 0
        var stamps = 0
        for _ in benchmark.scaledIterations {
            if at == b.count { at = 0 }
            let rest = UnsafeRawBufferPointer(rebasing: b[at...])
            guard case .message(let m, let consumed) = Codec.parse(rest, maxMessageLength: 1 << 20) else {
                benchmark.error("parse failed")
                return
            }
            stamps &+= handleHubMessage(Codec.self, m, rest)
            at += consumed
        }
        if stamps != benchmark.scaledIterations.count { benchmark.error("stamps missing: \(stamps)") }
        blackHole(stamps)
    } setup: { HubState<Codec>(count: 100) }
}

func hubBenchmarks() {
    let configuration = Benchmark.Configuration(metrics: codecMetrics, scalingFactor: scalingFactor, thresholds: noMallocs)
    hubRecordsBenchmark("Hub JSON records (split on 0x1E + parse + handle)", JSONHubProtocol.self, configuration: configuration)
    hubRecordsBenchmark("Hub MessagePack messages (VarInt + decode + handle)", MessagePackHubProtocol.self, configuration: configuration)

    Benchmark("Hub JSON record split only (0x1E scan)", configuration: configuration) { benchmark, state in
        let b = UnsafeRawBufferPointer(rebasing: state.buffer[0..<state.used])
        var at = 0
        for _ in benchmark.scaledIterations {
            if at == b.count { at = 0 }
            at += JSONHubProtocol.recordLength(UnsafeRawBufferPointer(rebasing: b[at...]))!
        }
        blackHole(at)
    } setup: { HubState<JSONHubProtocol>(count: 100) }
}
