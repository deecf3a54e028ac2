import Foundation
import StampedeLoop
import Testing

/// A bounded libFuzzer run of every fuzz target (Fuzz/): `Fuzz/build.sh` builds the one
/// binary (skipped when its sources are unchanged), then each target replays its seed corpus
/// (Tests/Fuzz/corpus/<target>, saved crash inputs included) and fuzzes for a few seconds,
/// one process at a time. Long runs: `Fuzz/run.sh TARGET SECONDS` (README "Fuzzing").
@Suite(.serialized)
struct FuzzSmokeTests {
    static let targets = ["websocket", "json-hub", "msgpack-hub", "sse", "http-response", "http-request", "http-exchange", "hub-session",
                          "websocket-session", "flow", "flow-session", "socketio-server", "socketio-session"]
    /// Seconds of fuzzing per target after the seeds.
    static let seconds = 4

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test(.timeLimit(.minutes(5)))
    func everyTargetSurvivesItsSeedsAndAShortRun() throws {
        let build = try fuzzProcess("/bin/bash", [Self.root.appendingPathComponent("Fuzz/build.sh").path], timeout: 600)
        try #require(build.status == 0, """
            Fuzz/build.sh failed (exit \(build.status)); the fuzz targets need swiftc -sanitize=fuzzer,address \
            (libFuzzer ships with the Linux Swift toolchain):
            \(build.output.suffix(3000))
            """)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("stampede-fuzz-\(getpid())")
        defer { try? FileManager.default.removeItem(at: scratch) }
        for target in Self.targets {
            let binary = Self.root.appendingPathComponent(".build-fuzz/fuzz-\(target)").path
            let seeds = Self.root.appendingPathComponent("Tests/Fuzz/corpus/\(target)").path
            let work = scratch.appendingPathComponent(target)
            try FileManager.default.createDirectory(at: work.appendingPathComponent("corpus"), withIntermediateDirectories: true)
            var args = ["-max_total_time=\(Self.seconds)", "-seed=1", "-timeout=10", "-rss_limit_mb=2048",
                        "-artifact_prefix=\(work.path)/"]
            let dict = Self.root.appendingPathComponent("Fuzz/dict/\(target).dict").path
            if FileManager.default.fileExists(atPath: dict) { args.append("-dict=\(dict)") }
            // New inputs go to the scratch corpus (the first directory); the seeds stay as they are.
            args += [work.appendingPathComponent("corpus").path, seeds]
            let run = try fuzzProcess(binary, args, timeout: Double(Self.seconds) + 60)
            let artifacts = (try? FileManager.default.contentsOfDirectory(atPath: work.path).filter { $0 != "corpus" }) ?? []
            #expect(run.status == 0 && run.output.contains("Done "), """
                fuzz-\(target) failed (exit \(run.status)); artifacts: \(artifacts); replay with \
                .build-fuzz/fuzz-\(target) <file>. Output:
                \(run.output.suffix(4000))
                """)
            if run.status != 0 {
                // Keep the crash input where the message says, past the scratch folder's removal.
                for a in artifacts {
                    let keep = Self.root.appendingPathComponent(".build-fuzz/artifacts/\(target)")
                    try? FileManager.default.createDirectory(at: keep, withIntermediateDirectories: true)
                    try? FileManager.default.copyItem(at: work.appendingPathComponent(a), to: keep.appendingPathComponent(a))
                }
            }
        }
    }
}

/// Runs a process with stdout and stderr merged into one pipe; kills it after `timeout` seconds.
private func fuzzProcess(_ executable: String, _ arguments: [String], timeout: Double) throws -> (status: Int32, output: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = arguments
    p.currentDirectoryURL = FuzzSmokeTests.root
    var env = ProcessInfo.processInfo.environment
    // ASan reports a crash; the Swift runtime's backtracer would race it for the signal.
    env["SWIFT_BACKTRACE"] = "enable=no"
    p.environment = env
    let pipe = Pipe()
    p.standardOutput = pipe
    p.standardError = pipe
    p.standardInput = FileHandle.nullDevice
    try p.run()
    let output = OutputBox()
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        output.data = Data(PipeRead.toEnd(pipe.fileHandleForReading.fileDescriptor))
        done.signal()
    }
    let deadline = Date().addingTimeInterval(timeout)
    while p.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
    if p.isRunning { p.terminate(); Thread.sleep(forTimeInterval: 0.5); if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
    p.waitUntilExit()
    done.wait()
    return (p.terminationStatus, String(decoding: output.data, as: UTF8.self))
}

private final class OutputBox: @unchecked Sendable {
    var data = Data()
}
