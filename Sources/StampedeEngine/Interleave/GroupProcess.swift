import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How a child process ended.
public enum ChildExit: Sendable, Equatable, CustomStringConvertible {
    case exited(Int32)
    case signalled(Int32)

    /// Decodes a `waitpid` status (WIFEXITED / WTERMSIG spelled out: the C macros are not imported).
    init(waitStatus status: Int32) {
        self = status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signalled(status & 0x7F)
    }

    public var description: String {
        switch self {
        case .exited(let code): "exit \(code)"
        case .signalled(let s): "killed by signal \(s)"
        }
    }
}

/// A child process that leads a process group of its own, so that everything it starts can be
/// signalled at once, and so that a Ctrl-C on the terminal reaches only us (we decide what the
/// child gets: a `stampede run` that received two SIGINTs would quit without writing results).
final class GroupProcess {
    let pid: pid_t
    private(set) var exit: ChildExit?

    /// Starts `argv` with stdin from /dev/null, stdout to `output` and stderr to `errors` (each
    /// created or truncated; the same path for both shares one file). `environment` entries are
    /// added to (or replace) ours. Throws a message naming the program when it cannot start.
    init(_ argv: [String], output: String, errors: String, environment: [String: String] = [:]) throws(InterleaveFailure) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        if errors == output {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        }

        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        let envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        let args: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for p in envp + args { free(p) } }
        var child: pid_t = 0
        let error = ChildSpawn.withAttributes { posix_spawn(&child, argv[0], &actions, &$0, args, envp) }
        guard error == 0 else { throw InterleaveFailure("cannot start \(argv[0]): \(String(cString: strerror(error)))") }
        pid = child
    }

    /// The exit once the child has ended (reaped here), else nil; never blocks.
    func poll() -> ChildExit? {
        if let exit { return exit }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid { exit = ChildExit(waitStatus: status) }
        // ECHILD: reaped elsewhere; nothing more will be learnt about it.
        if r < 0 && errno == ECHILD { exit = .signalled(0) }
        return exit
    }

    /// Sends `signal` to the child only.
    func send(_ signal: Int32) { if poll() == nil { kill(pid, signal) } }

    /// Whether any process of the group is still there.
    var groupAlive: Bool { kill(-pid, 0) == 0 }

    /// Stops the whole group: SIGTERM, up to `grace` seconds for it to go, then SIGKILL; the
    /// child is reaped. Processes of the group that outlive their parent are orphans the
    /// system reaps; they are waited for as long as the grace lasts.
    func stopGroup(grace: Double = 5) {
        kill(-pid, SIGTERM)
        let deadline = Date().addingTimeInterval(grace)
        while Date() < deadline {
            _ = poll()
            if exit != nil && !groupAlive { return }
            usleep(20_000)
        }
        kill(-pid, SIGKILL)
        // After SIGKILL the child ends at once; a bounded wait for the kernel to deliver it.
        let killDeadline = Date().addingTimeInterval(2)
        while poll() == nil && Date() < killDeadline { usleep(10_000) }
    }
}

/// Why an interleaved set stopped early: a message naming the run or the side.
public struct InterleaveFailure: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
