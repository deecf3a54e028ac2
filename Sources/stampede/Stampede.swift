import ArgumentParser
import Foundation
import StampedeEngine
import StampedeLoop
import StampedeReport
import StampedeScenario
import StampedeServers
#if canImport(Glibc)
import Glibc
#endif

/// Raised by SIGINT/SIGTERM; created before the handlers are installed so the handler only stores to it.
let interrupt = InterruptFlag()

@main
struct Stampede: ParsableCommand {
    /// ArgumentParser's own entry point, except that a bad flag or value exits with 2, the code
    /// for every kind of bad input (ArgumentParser would use 64).
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            if exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(ExitStatus.badInput)
            }
            exit(withError: error)
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "stampede",
        abstract: "Load generator and latency profiler for real-time (WebSocket) servers.",
        discussion: """
            Examples:
              stampede run scenarios/chat-broadcast.yaml
              stampede run scenarios/chat-local-server.yaml --target ws://127.0.0.1:8765/chat
              stampede validate scenarios/*.yaml
              stampede serve --port 8765
            """,
        version: RunEngine.version,
        subcommands: [Run.self, Capacity.self, Serve.self, Worker.self, Validate.self, Schema.self, Compare.self, Interleave.self, Merge.self, Report.self, Autobahn.self]
    )
}

/// Exit codes, for pipelines: 0 passed, 1 the run failed, 2 bad input (scenario or arguments),
/// 99 a threshold failed, 98 no verdict (the generator was saturated and its delay could have
/// decided a threshold), 130 interrupted. A run's own come from the engine (`RunExitStatus`).
enum ExitStatus {
    static let passed: Int32 = RunExitStatus.passed
    static let runFailed: Int32 = RunExitStatus.runFailed
    static let badInput: Int32 = 2
    /// `stampede compare --fail-on …` found a gated metric slower (or as asked).
    static let gateTripped: Int32 = 97
    static let thresholdFailed: Int32 = RunExitStatus.thresholdFailed
    static let saturated: Int32 = RunExitStatus.saturated
    static let interrupted: Int32 = RunExitStatus.interrupted
}

func installSignalHandlers() {
    _ = interrupt.isRaised
    installSignalHandlers { _ in
        if interrupt.isRaised { _exit(130) }  // a second Ctrl-C does not wait
        interrupt.raise()
    }
}

/// SIGINT and SIGTERM go to `handler` (unblocked, whatever a parent blocked); SIGPIPE is ignored.
func installSignalHandlers(_ handler: @convention(c) (Int32) -> Void) {
    signal(SIGINT, handler)
    signal(SIGTERM, handler)
    // A parent may have blocked these (test runners, some supervisors); the mask survives exec.
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGINT)
    sigaddset(&set, SIGTERM)
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
    signal(SIGPIPE, SIG_IGN)
}

func relativePath(_ url: URL) -> String {
    let cwd = FileManager.default.currentDirectoryPath
    let p = url.standardizedFileURL.path
    return p.hasPrefix(cwd + "/") ? String(p.dropFirst(cwd.count + 1)) : p
}
