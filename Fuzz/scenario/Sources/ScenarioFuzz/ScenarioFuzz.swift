// libFuzzer entry point: every input is a scenario file, with `#--flag value` lines at the top
// as command-line overrides (see ScenarioProbe). A Swift runtime trap on the way (an overflow, a
// Double that does not fit an integer, an index out of range) is the crash libFuzzer reports.
import StampedeEngine

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzScenario(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if case .rejected(let message) = ScenarioProbe.run(text) {
        // A refusal must say what is wrong: "file:line: field 'x': …" or "--flag: …".
        precondition(message.contains(": ") && message.count > 10, "a refusal without a message: \(message)")
    }
    return 0
}

// SwiftPM links an executable's entry point as `<module>_main` (it renames `main` so tests can
// link the module); that entry hands control to libFuzzer's driver, which parses the usual
// libFuzzer flags and calls `fuzzScenario` for every input.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt) -> CInt

@_cdecl("ScenarioFuzz_main")
public func scenarioFuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzScenario(data, size) }
}
