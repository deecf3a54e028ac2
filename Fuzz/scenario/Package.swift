// swift-tools-version: 6.1
// The libFuzzer target for scenarios: arbitrary text through parsing, validation with
// command-line overrides, and the run plan (`ScenarioProbe` in StampedeEngine). A package of its
// own, because it links Yams and the engine with -sanitize=fuzzer; `Fuzz/build-scenario.sh`
// builds it. The root package, and so the test suite, never builds this.
import PackageDescription

let package = Package(
    name: "stampede-scenario-fuzz",
    dependencies: [.package(name: "stampede", path: "../..")],
    targets: [
        .executableTarget(name: "ScenarioFuzz", dependencies: [.product(name: "StampedeEngine", package: "stampede")]),
    ]
)
