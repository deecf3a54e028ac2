import Benchmark
import NIOCore
import NIOWebSocket
import StampedeWire

/// Bytes per second of one masking benchmark, as a custom metric (MB/s, 10^6 bytes).
var megabytesPerSecond: BenchmarkMetric { .custom("MB/s", polarity: .prefersLarger, useScalingFactor: false) }

/// RFC 6455 §5.7's example key 37 fa 21 3d, packed as `WebSocketFrameHeader.maskKey` packs it.
let exampleKey: UInt32 = 0x3D21_FA37

/// The baseline: one byte per step, the key rotated by a byte each time (the textbook loop).
@inline(never)
func maskByteAtATime(_ bytes: UnsafeMutableRawBufferPointer, maskKey: UInt32, keyOffset: Int) {
    let shift = UInt32((keyOffset & 3) * 8)
    var k = shift == 0 ? maskKey : (maskKey >> shift) | (maskKey << (32 - shift))
    for i in 0..<bytes.count {
        bytes[i] ^= UInt8(truncatingIfNeeded: k)
        k = (k >> 8) | (k << 24)
    }
}

/// Stampede's previous `applyMask` (before issue 6): four UInt64 XORs per 32 bytes.
@inline(never)
func maskWord64(_ bytes: UnsafeMutableRawBufferPointer, maskKey: UInt32, keyOffset: Int) {
    guard let base = bytes.baseAddress, bytes.count > 0 else { return }
    let count = bytes.count
    let shift = UInt32((keyOffset & 3) * 8)
    let key32 = shift == 0 ? maskKey : (maskKey >> shift) | (maskKey << (32 - shift))
    let key64 = UInt64(key32) | UInt64(key32) << 32
    var i = 0
    while i + 32 <= count {
        let p = base + i
        p.storeBytes(of: p.loadUnaligned(as: UInt64.self) ^ key64, as: UInt64.self)
        p.storeBytes(of: p.loadUnaligned(fromByteOffset: 8, as: UInt64.self) ^ key64, toByteOffset: 8, as: UInt64.self)
        p.storeBytes(of: p.loadUnaligned(fromByteOffset: 16, as: UInt64.self) ^ key64, toByteOffset: 16, as: UInt64.self)
        p.storeBytes(of: p.loadUnaligned(fromByteOffset: 24, as: UInt64.self) ^ key64, toByteOffset: 24, as: UInt64.self)
        i += 32
    }
    while i + 8 <= count {
        let p = base + i
        p.storeBytes(of: p.loadUnaligned(as: UInt64.self) ^ key64, as: UInt64.self)
        i += 8
    }
    var k = key32
    while i < count {
        let p = base + i
        p.storeBytes(of: p.load(as: UInt8.self) ^ UInt8(truncatingIfNeeded: k), as: UInt8.self)
        k = (k >> 8) | (k << 24)
        i += 1
    }
}

/// A payload buffer, allocated once per benchmark (16-byte aligned, as malloc returns).
final class PayloadState: @unchecked Sendable {
    let bytes: UnsafeMutableRawBufferPointer
    var nio: ByteBuffer
    init(size: Int) {
        bytes = .allocate(byteCount: size, alignment: 16)
        for i in 0..<size { bytes[i] = UInt8(truncatingIfNeeded: i &* 31 &+ 7) }
        nio = ByteBufferAllocator().buffer(capacity: size)
        nio.writeBytes(UnsafeRawBufferPointer(bytes))
    }
    deinit { bytes.deallocate() }
}

func maskingBenchmarks() {
    let sizes: [(Int, String)] = [(16, "16 B"), (125, "125 B"), (4096, "4 KiB"), (65_536, "64 KiB")]
    let nioKey: WebSocketMaskingKey = [0x37, 0xFA, 0x21, 0x3D]
    for (size, label) in sizes {
        let configuration = Benchmark.Configuration(metrics: codecMetrics + [megabytesPerSecond], scalingFactor: scalingFactor, thresholds: noMallocs)

        /// Times the inner loop itself for the MB/s metric, outside the measured region.
        func measured(_ benchmark: Benchmark, _ body: () -> Void) {
            let clock = ContinuousClock()
            let start = clock.now
            body()
            let elapsed = clock.now - start
            benchmark.stopMeasurement()
            let ns = elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
            let bytes = size * benchmark.scaledIterations.count
            benchmark.measurement(megabytesPerSecond, ns > 0 ? Int(Double(bytes) * 1_000 / Double(ns)) : 0)
        }

        Benchmark("Mask \(label) Stampede applyMask", configuration: configuration) { benchmark, state in
            measured(benchmark) {
                for i in benchmark.scaledIterations {
                    WebSocketFrameCodec.applyMask(state.bytes, maskKey: exampleKey, keyOffset: i & 3)
                }
            }
            blackHole(state.bytes[0])
        } setup: { PayloadState(size: size) }

        Benchmark("Mask \(label) previous UInt64 loop", configuration: configuration) { benchmark, state in
            measured(benchmark) {
                for i in benchmark.scaledIterations {
                    maskWord64(state.bytes, maskKey: exampleKey, keyOffset: i & 3)
                }
            }
            blackHole(state.bytes[0])
        } setup: { PayloadState(size: size) }

        Benchmark("Mask \(label) byte-at-a-time loop", configuration: configuration) { benchmark, state in
            measured(benchmark) {
                for i in benchmark.scaledIterations {
                    maskByteAtATime(state.bytes, maskKey: exampleKey, keyOffset: i & 3)
                }
            }
            blackHole(state.bytes[0])
        } setup: { PayloadState(size: size) }

        Benchmark("Mask \(label) NIOWebSocket webSocketMask", configuration: configuration) { benchmark, state in
            measured(benchmark) {
                for i in benchmark.scaledIterations {
                    state.nio.webSocketMask(nioKey, indexOffset: i & 3)
                }
            }
            blackHole(state.nio.readableBytes)
        } setup: { PayloadState(size: size) }
    }
}
