// swift-tools-version: 6.1
import PackageDescription

// Layers, top to bottom. A target depends only on targets in rows below its own (it may skip
// rows), so dependencies point one way; each target declares exactly the modules it imports.
//   stampede (CLI)
//   StampedeEngine
//   StampedeFleet (the coordinator–worker protocol's frames)
//   StampedeWorkloads, StampedeServers, StampedeReport, StampedeLive (the live metrics endpoint)
//   StampedeSession (protocol sessions: pure over bytes and a clock), StampedeScenario (flows compile to StampedeWire's matchers)
//   StampedeLoop, StampedeWire, StampedeMetrics
//   CStampedeLinux, COpenSSL (system library: OpenSSL 3 via pkg-config), CStampedeTLS,
//   CZlib (system library: zlib via pkg-config, for .hlog files)
// The hot paths keep their state in class properties; Swift checks every access to one for
// exclusivity at run time (swift_beginAccess: about 7 % of a REST client's CPU in perf). Debug
// builds, which the tests run, keep the checks.
let hotPath: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "stampede",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "stampede", targets: ["stampede"]),
        .library(name: "StampedeWire", targets: ["StampedeWire"]),
        .library(name: "StampedeMetrics", targets: ["StampedeMetrics"]),
        .library(name: "StampedeSession", targets: ["StampedeSession"]),
        // For the scenario fuzz target (Fuzz/scenario), a package of its own.
        .library(name: "StampedeEngine", targets: ["StampedeEngine"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
    ],
    targets: [
        .target(name: "CStampedeLinux"),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // OpenSSL's macros as functions; its headers come from the system, its libraries through COpenSSL.
        .target(name: "CStampedeTLS"),
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .target(name: "StampedeWire", swiftSettings: hotPath),
        .target(name: "StampedeSession", dependencies: ["StampedeWire"], swiftSettings: hotPath),
        .target(name: "StampedeLoop", dependencies: ["CStampedeLinux", "COpenSSL", "CStampedeTLS"], swiftSettings: hotPath),
        .target(name: "StampedeMetrics", dependencies: [.product(name: "Histogram", package: "hdrhistogram-swift")]),
        .target(name: "StampedeScenario", dependencies: ["StampedeWire", "Yams"], resources: [.embedInCode("stampede.schema.json")]),
        .target(name: "StampedeWorkloads", dependencies: ["StampedeLoop", "StampedeSession", "StampedeWire", "StampedeMetrics", "StampedeScenario", "CStampedeLinux"], swiftSettings: hotPath),
        .target(name: "StampedeServers", dependencies: ["StampedeLoop", "StampedeSession", "StampedeWire", "CStampedeLinux"], swiftSettings: hotPath),
        .target(name: "StampedeReport", dependencies: ["StampedeMetrics", "StampedeScenario", "CZlib"]),
        .target(name: "StampedeLive", dependencies: ["StampedeMetrics", "StampedeLoop", "StampedeWire"]),
        // The coordinator–worker protocol: frames and their codec, pure over bytes.
        .target(name: "StampedeFleet", dependencies: ["StampedeMetrics", "StampedeReport"]),
        .target(name: "StampedeEngine", dependencies: ["StampedeWorkloads", "StampedeServers", "StampedeReport", "StampedeFleet", "StampedeScenario", "StampedeMetrics", "StampedeLoop", "StampedeWire", "CStampedeLinux"]),
        .executableTarget(name: "stampede", dependencies: ["StampedeEngine", "StampedeServers", "StampedeReport", "StampedeScenario", "StampedeLoop", "StampedeLive", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // Fixture helpers the test targets share (hex, a reference frame encoder, test certificates).
        .target(name: "StampedeTestSupport", path: "Tests/StampedeTestSupport"),
        .testTarget(name: "StampedeWireTests", dependencies: ["StampedeWire", "StampedeLoop", "StampedeTestSupport"]),
        .testTarget(name: "StampedeSessionTests", dependencies: ["StampedeSession", "StampedeWire", "StampedeTestSupport"]),
        .testTarget(name: "StampedeLoopTests", dependencies: ["StampedeLoop", "CStampedeLinux", "StampedeTestSupport"]),
        .testTarget(name: "StampedeMetricsTests", dependencies: ["StampedeMetrics"]),
        .testTarget(name: "StampedeScenarioTests", dependencies: ["StampedeScenario", "StampedeWire"]),
        .testTarget(name: "StampedeReportTests", dependencies: ["StampedeReport", "StampedeMetrics", "StampedeScenario"], exclude: ["Fixtures"]),
        .testTarget(name: "StampedeFleetTests", dependencies: ["StampedeFleet", "StampedeMetrics"]),
        .testTarget(name: "StampedeLiveTests", dependencies: ["StampedeLive", "StampedeMetrics", "StampedeLoop"], exclude: ["Fixtures"]),
        .testTarget(name: "StampedeEngineTests", dependencies: ["StampedeEngine", "StampedeWorkloads", "StampedeServers", "StampedeReport", "StampedeLoop", "StampedeScenario", "StampedeMetrics", "StampedeWire", "StampedeTestSupport", "Yams"]),
    ]
)
