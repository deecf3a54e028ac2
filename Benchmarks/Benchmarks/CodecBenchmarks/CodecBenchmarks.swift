// Micro-benchmarks of Stampede's hot-path codecs (issue 6). Every benchmark runs
// `scalingFactor` operations per iteration on state built once in `setup`, so the counters
// (throughput, malloc counts) are per operation in steady state.
import Benchmark

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Metrics for every benchmark: rate, time and the allocation counters of the malloc interposer.
var codecMetrics: [BenchmarkMetric] { [.throughput, .wallClock, .mallocCountTotal, .mallocBytesCount] }

/// The hot paths must not allocate: any malloc in a steady-state iteration fails
/// `swift package benchmark thresholds check`, whatever the machine.
var noMallocs: [BenchmarkMetric: BenchmarkThresholds] {
    [.mallocCountTotal: .init(absolute: [.p0: 0, .p25: 0, .p50: 0, .p75: 0, .p90: 0, .p99: 0, .p100: 0])]
}

/// `CODEC_BENCH_UNSCALED=1` runs one operation per iteration instead of 1,000, so the malloc
/// columns are raw counts per operation (plus the framework's own, see "Reference: empty body")
/// rather than per-operation averages rounded to an integer.
var scalingFactor: BenchmarkScalingFactor { getenv("CODEC_BENCH_UNSCALED") != nil ? .one : .kilo }

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: codecMetrics,
        warmupIterations: 3,
        scalingFactor: scalingFactor,
        maxDuration: .seconds(1),
        maxIterations: 10_000
    )
    maskingBenchmarks()
    frameBenchmarks()
    webSocketSessionBenchmarks()
    hubBenchmarks()
    hubSessionBenchmarks()
    httpBenchmarks()
    httpSessionBenchmarks()
    flowBenchmarks()
    histogramBenchmarks()
    referenceBenchmarks()
}

/// References for reading the malloc columns (no thresholds): the framework's own overhead with
/// an empty body, and one deliberate allocation per operation, which must show as 1.
func referenceBenchmarks() {
    Benchmark("Reference: empty body") { benchmark in
        for i in benchmark.scaledIterations { blackHole(i) }
    }
    Benchmark("Reference: one malloc per operation") { benchmark in
        for i in benchmark.scaledIterations {
            let p = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
            p.storeBytes(of: i, as: Int.self)
            blackHole(p.load(as: Int.self))
            p.deallocate()
        }
    }
}
