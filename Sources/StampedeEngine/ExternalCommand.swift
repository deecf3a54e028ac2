import Foundation
import StampedeReport
import StampedeScenario
import Synchronization

/// Runs a scenario's `command` event (`/bin/sh -c …`) on its own thread, so the engine's ticks
/// and the clients' measurements go on while, say, the user's server restarts.
///
/// Output (stdout and stderr together) goes to a temporary file rather than a pipe: a command
/// that starts a server in the background leaves that server holding its stdout, and a pipe
/// would then never reach end-of-file. What the file holds when the command exits is captured.
final class ExternalCommandRun: Sendable {
    /// Most output kept for the results.
    static let outputLimit = 256 * 1024

    let number: Int
    let command: ExternalCommand
    let outcome = Mutex<CommandOutcome?>(nil)

    init(number: Int, command: ExternalCommand, workingDirectory: String) {
        self.number = number
        self.command = command
        let thread = Thread { [self] in
            let result = Self.run(command, number: number, workingDirectory: workingDirectory)
            outcome.withLock { $0 = result }
        }
        thread.name = "stampede-event-\(number)"
        thread.start()
    }

    var finished: CommandOutcome? { outcome.withLock { $0 } }

    /// Waits up to `seconds` for the command to end (it always ends: it is killed at its timeout).
    func wait(seconds: Double) -> CommandOutcome? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let done = finished { return done }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return finished
    }

    static func run(_ command: ExternalCommand, number: Int, workingDirectory: String) -> CommandOutcome {
        let started = Date()
        var result = CommandOutcome(number: number, command: command.command, exitStatus: nil, signal: nil, timedOut: false,
                                    durationSeconds: 0, output: "", outputTruncated: false, launchError: nil)
        let logPath = NSTemporaryDirectory() + "stampede-event-\(getpid())-\(number)-\(UInt32.random(in: 0...UInt32.max)).log"
        defer { unlink(logPath) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        var pid: pid_t = 0
        // `cd "$0" && eval "$1"`: the command runs in the scenario's folder, exactly as `sh -c` would run it.
        let script = workingDirectory.isEmpty ? "eval \"$1\"" : "cd -- \"$0\" && eval \"$1\""
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(script),
                                                   strdup(workingDirectory.isEmpty ? "sh" : workingDirectory), strdup(command.command), nil]
        defer { for p in argv { free(p) } }
        let spawnError = ChildSpawn.withAttributes { posix_spawn(&pid, "/bin/sh", &actions, &$0, argv, environ) }
        guard spawnError == 0 else {
            result.launchError = "cannot start /bin/sh: \(String(cString: strerror(spawnError)))"
            return result
        }

        let deadline = Date().addingTimeInterval(command.timeoutSeconds)
        var status: Int32 = 0
        var killedAt: Date? = nil
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { break }
            if r < 0 && errno != EINTR { break }
            let now = Date()
            if now >= deadline && killedAt == nil {
                result.timedOut = true
                killedAt = now
                kill(-pid, SIGTERM)
            } else if let k = killedAt, now.timeIntervalSince(k) > 2 {
                kill(-pid, SIGKILL)
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        result.durationSeconds = Date().timeIntervalSince(started)
        // WIFEXITED / WTERMSIG, spelled out: the C macros are not imported.
        if status & 0x7F == 0 { result.exitStatus = (status >> 8) & 0xFF } else { result.signal = status & 0x7F }

        if let handle = FileHandle(forReadingAtPath: logPath) {
            let data = (try? handle.read(upToCount: outputLimit + 1)) ?? Data()
            try? handle.close()
            result.outputTruncated = data.count > outputLimit
            result.output = String(decoding: data.prefix(outputLimit), as: UTF8.self)
        }
        return result
    }
}
