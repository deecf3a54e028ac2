// swift-tools-version: 6.1
import PackageDescription

// Micro-benchmarks of Stampede's hot-path codecs (package-benchmark). A separate package so the
// root package never gains the benchmark or NIO dependencies: CI builds the root from a clean
// clone on every run. Run with `./run-codec-benchmarks.sh` (or `swift package benchmark`) here.
let package = Package(
    name: "StampedeBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "stampede", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-nio", "2.101.2"..<"2.102.0"),
    ],
    targets: [
        .executableTarget(
            name: "CodecBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "StampedeWire", package: "stampede"),
                .product(name: "StampedeSession", package: "stampede"),
                .product(name: "StampedeMetrics", package: "stampede"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            path: "Benchmarks/CodecBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
