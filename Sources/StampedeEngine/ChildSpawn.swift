#if canImport(Glibc)
import Glibc
#endif

/// The one way Stampede starts a child that must behave as if started from a fresh shell, in a
/// process group of its own (a scenario's `command` event, `stampede interleave`'s runs and
/// servers).
enum ChildSpawn {
    /// Calls `body` with spawn attributes that give the child an empty signal mask, the default
    /// action for SIGPIPE, SIGINT, SIGTERM and SIGHUP, and its own process group.
    ///
    /// Our own signal set-up (SIGPIPE ignored, SIGINT/SIGTERM handled or blocked, perhaps by a
    /// test runner) must not leak into the child: a server it starts has to stop on a plain
    /// SIGTERM. Its own group: a Ctrl-C on the terminal is ours to pass on (a `stampede run` that
    /// got two SIGINTs would quit without its results), and a child is stopped with everything it
    /// started.
    static func withAttributes<T>(_ body: (inout posix_spawnattr_t) throws -> T) rethrows -> T {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGPIPE, SIGINT, SIGTERM, SIGHUP] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
        return try body(&attributes)
    }
}
