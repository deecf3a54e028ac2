import CStampedeLinux
#if canImport(Glibc)
import Glibc
#endif

/// Outcome of a non-blocking system call.
public enum IOResult: Equatable, Sendable {
    case done(Int)
    /// EAGAIN / EWOULDBLOCK: try again when epoll says so.
    case wouldBlock
    case failed(Int32)
}

/// Runs a system call, retrying EINTR and turning EAGAIN into `.wouldBlock`, so no caller
/// has to remember either (the shape of swift-nio's `syscall` helper).
@inline(__always)
public func syscall(_ body: () -> Int) -> IOResult {
    while true {
        let r = body()
        if r >= 0 { return .done(r) }
        let e = cs_errno()
        if e == EINTR { continue }
        if e == EAGAIN || e == EWOULDBLOCK || e == EINPROGRESS { return .wouldBlock }
        return .failed(e)
    }
}

/// Runs a system call that only succeeds or fails (`epoll_ctl`, `timerfd_settime`), retrying
/// EINTR. Returns 0 on success, else the errno (EAGAIN included: such calls have no "try later").
@inline(__always)
public func syscallStatus(_ body: () -> Int32) -> Int32 {
    while true {
        if body() >= 0 { return 0 }
        let e = cs_errno()
        if e != EINTR { return e }
    }
}

/// errno as text, for error messages.
public func errnoDescription(_ e: Int32) -> String {
    guard let p = strerror(e) else { return "errno \(e)" }
    return String(cString: p)
}
