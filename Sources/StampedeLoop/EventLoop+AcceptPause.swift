import CStampedeLinux
#if canImport(Glibc)
import Glibc
#endif

/// Why `accept` refused a waiting connection for want of a resource. The listener stays readable
/// while such a connection waits, so trying again at once would spin: the loop pauses it instead.
public enum AcceptRefusal: Sendable, CaseIterable {
    /// EMFILE: the process is at its descriptor limit (RLIMIT_NOFILE).
    case processDescriptorLimit
    /// ENFILE: the system is at its descriptor limit.
    case systemDescriptorLimit
    /// ENOBUFS / ENOMEM: the kernel has no memory for the socket.
    case kernelMemory

    init?(errno e: Int32) {
        switch e {
        case EMFILE: self = .processDescriptorLimit
        case ENFILE: self = .systemDescriptorLimit
        case ENOBUFS, ENOMEM: self = .kernelMemory
        default: return nil
        }
    }
}

/// How often a loop's listeners ran out of a resource while accepting (`EventLoop.acceptRefusals`).
public struct AcceptRefusalCounts: Sendable, Equatable {
    /// Accepts refused, by cause (each one paused its listener).
    public var processDescriptorLimit = 0
    public var systemDescriptorLimit = 0
    public var kernelMemory = 0
    /// Times a paused listener was watched again (its retry timer, or a connection of the loop closed).
    public var resumes = 0

    public init() {}

    /// Every refusal, whatever its cause.
    public var total: Int { processDescriptorLimit + systemDescriptorLimit + kernelMemory }

    mutating func count(_ r: AcceptRefusal) {
        switch r {
        case .processDescriptorLimit: processDescriptorLimit += 1
        case .systemDescriptorLimit: systemDescriptorLimit += 1
        case .kernelMemory: kernelMemory += 1
        }
    }
}

extension EventLoop {
    /// How long a listener that ran out of descriptors rests before it accepts again, unless a
    /// connection of this loop closes first (libuv and nginx back off alike).
    static let acceptRetryNs: UInt64 = 100_000_000

    /// `accept` failed with `refusal`: the listener leaves epoll's interest until its retry timer
    /// or the next close on this loop, so a full descriptor table costs one failed accept per
    /// retry instead of a busy core.
    func pauseAccepting(_ i: Int, listener: ConnectionID, _ refusal: AcceptRefusal) {
        acceptRefusals.count(refusal)
        guard !slots[i].acceptPaused else { return }
        let (epfd, fd) = (epfd, slots[i].fd)
        let e = syscallStatus { cs_epoll_ctl(epfd, EPOLL_CTL_MOD, fd, 0, listener.packed) }
        // A listener epoll will not change stays watched: it is tried again on the next wake-up,
        // as before the pause existed (nothing to close: it is the server's own socket).
        guard e == 0 else { return }
        slots[i].acceptPaused = true
        pausedListeners += 1
        timers.push(deadline: Self.now() + Self.acceptRetryNs,
                    token: TimerToken(layer: .loop, LoopTimer.resumeAccept, slot: i, epoch: listener.generation))
    }

    /// Watches a paused listener again (its retry timer, or a descriptor freed on this loop).
    func resumeAccepting(_ listener: ConnectionID) {
        guard let i = slotIndex(listener), slots[i].state == .listener, slots[i].acceptPaused else { return }
        let (epfd, fd) = (epfd, slots[i].fd)
        let e = syscallStatus { cs_epoll_ctl(epfd, EPOLL_CTL_MOD, fd, EPOLLIN.rawValue, listener.packed) }
        guard e == 0 else {
            // Still unwatched: the next retry tries again.
            timers.push(deadline: Self.now() + Self.acceptRetryNs,
                        token: TimerToken(layer: .loop, LoopTimer.resumeAccept, slot: i, epoch: listener.generation))
            return
        }
        slots[i].acceptPaused = false
        pausedListeners -= 1
        acceptRefusals.resumes += 1
    }

    /// A connection of this loop closed, freeing a descriptor: paused listeners accept again.
    func resumeAllAccepting() {
        for i in slots.indices where slots[i].state == .listener && slots[i].acceptPaused {
            resumeAccepting(ConnectionID(index: UInt32(i), generation: slots[i].generation))
        }
    }
}
