import CStampedeLinux
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// One epoll event loop on its own thread, owning every connection it creates.
///
/// Everything except `execute(_:)`, `stop()` and `join()` must be called on the loop thread
/// (from a handler callback or an executed task). Connection state lives in a dense slot array
/// indexed by `ConnectionID.index`; output is queued per connection and flushed once per wake-up.
public final class EventLoop: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// Most bytes read from one connection per wake-up, so one busy peer cannot starve the rest.
        public var readCapPerWakeup = 256 * 1024
        /// Write queue size above which `isBackedUp` is true and the owner should defer sends.
        public var highWaterMark = 256 * 1024
        /// Queue size below which a backed-up connection gets `writable`.
        public var lowWaterMark = 64 * 1024
        public var maxEventsPerWait = 1024
        /// Most timers fired per wake-up. With the rule that only timers already in the heap when
        /// firing starts may fire, it bounds one iteration's timer work, so tasks (the engine's
        /// snapshots and stop requests), I/O and the stop flag are never starved by timers.
        public var maxTimersPerWakeup = 8192
        /// How the loop sleeps until its next timer.
        public var timerWait = TimerWait.automatic
        public init() {}
    }

    /// How a loop sleeps until its next timer.
    public enum TimerWait: Sendable {
        /// The next deadline as epoll_pwait2's own timeout where the kernel has it (Linux 5.11;
        /// a seccomp filter may refuse it): a timer costs no re-arm and no expiry read, two of
        /// the five system calls of a timer's wake-up. Else as `timerfd`.
        case automatic
        /// A timerfd in the epoll set, re-armed whenever the earliest deadline changes.
        case timerfd
    }

    struct Slot {
        var fd: Int32 = -1
        /// How the connection's bytes cross the socket (see `ByteStream`).
        var stream = ByteStream.plainTCP
        var generation: UInt32 = 0
        var state: State = .free
        var out: ByteBuffer? = nil
        var pending: ByteBuffer? = nil
        var pollingOut = false
        var dirty = false
        var backedUp = false
        var closeWhenFlushed = false
        var shutdownWhenFlushed = false
        /// Out of epoll while its owner has stopped reading (a simulated stall).
        var readPaused = false
        /// Not read from while backed up (only with `limits`).
        var throttled = false
        /// A write was refused for passing `limits.maxQueuedBytes`: closed at the end of the iteration.
        var overLimit = false
        /// Last time output waiting for the socket went out (`wakeTime` clock).
        var lastProgress: UInt64 = 0
        /// `setDeadline`: when the connection is closed with `.timedOut(tag)` (.max = none).
        var deadline: UInt64 = .max
        var deadlineTag: UInt8 = 0
        /// epoll refused a change to its registration (errno; 0 = none): closed at the next flush.
        var registrationErrno: Int32 = 0
        /// A listener's TLS context: connections it accepts speak TLS (nil: plain TCP).
        var tlsServer: TLSContext? = nil
        /// Not subject to `limits` (see `adopt(fd:exemptFromLimits:)`).
        var exempt = false
        /// A listener out of epoll's interest after `accept` ran out of descriptors (EventLoop+AcceptPause.swift).
        var acceptPaused = false
        /// `handshaking`: connected, the TLS handshake under way (see EventLoop+TLS.swift).
        enum State { case free, connecting, handshaking, stream, listener }
    }

    public let index: Int
    public let configuration: Configuration
    public unowned(unsafe) var handler: EventLoopHandler!

    let epfd: Int32
    let timerfd: Int32
    let wakefd: Int32
    var slots: [Slot] = []
    var freeSlots: [UInt32] = []
    var dirtySlots: [UInt32] = []
    var flushBatch: [UInt32] = []
    /// Drained queues kept for the next connection that needs one, and how many connections
    /// hold (`EventLoop+SpareBuffers`).
    var spareBuffers: [ByteBuffer] = []
    var heldBuffers = 0
    var heldBuffersPeak = 0
    var spareAllowance = EventLoop.minSpareBuffers
    var spareReviewNs: UInt64 = 0
    var timers = TimerHeap()
    var armedDeadline: UInt64 = .max
    /// The next timer's deadline is epoll_pwait2's timeout (`TimerWait.automatic`); else the timerfd.
    public private(set) var waitsWithTimeout = false
    let readBuffer: UnsafeMutableRawBufferPointer
    let events: UnsafeMutableRawPointer
    var running = false
    let tasks = Mutex<[@Sendable (EventLoop) -> Void]>([])
    let stopRequested = Atomic<Bool>(false)
    var thread: Thread?
    let finished = Mutex<Bool>(false)
    let finishedCondition = NSCondition()

    /// Worst timer lateness seen since the last `takeMaxTimerLag()`, ns.
    public internal(set) var maxTimerLagNs: UInt64 = 0
    /// Bytes in all write queues of this loop.
    public internal(set) var queuedBytes = 0
    /// Live connection slots (connecting, open or listening).
    public internal(set) var liveSlots = 0
    /// Accepts refused for want of descriptors or memory, each of which paused its listener.
    public internal(set) var acceptRefusals = AcceptRefusalCounts()
    /// Listeners paused now: a close on this loop resumes them.
    var pausedListeners = 0
    /// The monotonic clock read once per iteration, when epoll returns: coarse, but free to read.
    public private(set) var wakeTime: UInt64 = EventLoop.now()
    /// Per-connection limits (nil: none, as for clients). Servers set them before accepting;
    /// see `ConnectionLimits`.
    public var limits: ConnectionLimits? {
        didSet { if limits != nil && !sweepScheduled { scheduleSweep() } }
    }
    var sweepScheduled = false
    /// Listeners this loop opens from now on share their port with other sockets that set it too
    /// (SO_REUSEPORT): several server processes on one port, the kernel spreading new
    /// connections over them (`stampede serve --processes N`).
    public var reusePort = false

    /// epoll data of the timerfd and the eventfd: no connection slot's packed id (slots stay
    /// far below 2^32 - 2, and generations start at 0 for them).
    static let timerfdEpollData: UInt64 = UInt64(UInt32.max)
    static let wakeEpollData: UInt64 = UInt64(UInt32.max - 1)
    /// The loop's own timers (`TimerToken.Layer.loop`).
    enum LoopTimer: UInt8 { case connectTimeout, limitsSweep, resumeAccept }

    public init(index: Int = 0, configuration: Configuration = Configuration()) throws(LoopError) {
        self.index = index
        self.configuration = configuration
        epfd = epoll_create1(Int32(EPOLL_CLOEXEC))
        timerfd = cs_timerfd_create()
        wakefd = cs_eventfd_create()
        guard epfd >= 0, timerfd >= 0, wakefd >= 0 else {
            // Not every stored property is set, so deinit will not run: close what did open.
            let e = cs_errno()
            for fd in [epfd, timerfd, wakefd] where fd >= 0 { Glibc.close(fd) }
            throw LoopError(operation: "epoll/timerfd/eventfd", errno: e)
        }
        readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        events = UnsafeMutableRawPointer.allocate(byteCount: cs_epoll_event_size() * configuration.maxEventsPerWait, alignment: 16)
        let (ep, tfd, wfd) = (epfd, timerfd, wakefd)
        var e = syscallStatus { cs_epoll_ctl(ep, EPOLL_CTL_ADD, tfd, EPOLLIN.rawValue, Self.timerfdEpollData) }
        if e == 0 { e = syscallStatus { cs_epoll_ctl(ep, EPOLL_CTL_ADD, wfd, EPOLLIN.rawValue, Self.wakeEpollData) } }
        guard e == 0 else { throw LoopError(operation: "epoll_ctl (timerfd/eventfd)", errno: e) }
        // Asked once: a wait that returns at once tells whether epoll_pwait2 is there.
        waitsWithTimeout = configuration.timerWait == .automatic && cs_epoll_wait_ns(ep, events, 1, 0) >= 0
    }

    deinit {
        for s in slots where s.fd >= 0 { Glibc.close(s.fd) }
        Glibc.close(epfd); Glibc.close(timerfd); Glibc.close(wakefd)
        readBuffer.deallocate()
        events.deallocate()
    }

    // MARK: Threads

    /// Starts the loop on a new thread.
    public func start(name: String = "stampede-loop") {
        let t = Thread { [self] in
            // Foundation on Linux ignores a name set before start; name the thread from inside.
            // A name is for top -H and debuggers only: a failure changes nothing.
            _ = cs_set_thread_name(String(name.prefix(15)))
            run()
        }
        t.stackSize = 8 << 20
        thread = t
        t.start()
    }

    /// Runs a task on the loop thread (callable from any thread).
    public func execute(_ task: @escaping @Sendable (EventLoop) -> Void) {
        tasks.withLock { $0.append(task) }
        wake()
    }

    /// Asks the loop to finish its current iteration and return (any thread).
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        wake()
    }

    /// Waits until the loop thread has returned.
    public func join() {
        finishedCondition.lock()
        while !finished.withLock({ $0 }) { finishedCondition.wait() }
        finishedCondition.unlock()
    }

    func wake() {
        var one: UInt64 = 1
        let fd = wakefd
        let r = withUnsafeBytes(of: &one) { p in syscall { Glibc.write(fd, p.baseAddress, 8) } }
        // EAGAIN: the counter is at its maximum, so a wake-up is already pending. Anything else
        // (EBADF, EINVAL) means the eventfd is broken: a bug in the loop, not input.
        if case .failed(let e) = r { preconditionFailure("eventfd write on loop \(index): \(errnoDescription(e)) (errno \(e))") }
    }

    /// Runs the loop on the calling thread until `stop()`.
    public func run() {
        running = true
        // Timed waits end when due, not up to 50 µs later (the default slack): a late wake-up is a
        // late send. Only the timing changes if this fails.
        _ = cs_set_timer_slack_ns(1)
        while !stopRequested.load(ordering: .acquiring) {
            runOnce()
        }
        running = false
        closeAll()
        finishedCondition.lock()
        finished.withLock { $0 = true }
        finishedCondition.broadcast()
        finishedCondition.unlock()
    }

    func runOnce() {
        let (epfd, events, maxEvents) = (epfd, events, Int32(configuration.maxEventsPerWait))
        let n: Int
        // EINTR (a signal) waits again, inside `syscall`: `stop()` and `execute(_:)` always write
        // the eventfd, so a wait never sleeps through them. epoll_wait never reports EAGAIN; its
        // other errors (EBADF, EINVAL, EFAULT) mean the epoll fd or the event buffer is broken:
        // a bug in the loop, not input.
        let waited: IOResult
        if waitsWithTimeout {
            let timeout = nextTimerTimeoutNs()
            waited = syscall { Int(cs_epoll_wait_ns(epfd, events, maxEvents, timeout)) }
        } else {
            armTimer()
            waited = syscall { Int(cs_epoll_wait(epfd, events, maxEvents, -1)) }
        }
        switch waited {
        case .done(let count): n = count
        case .wouldBlock: n = 0
        case .failed(let e): preconditionFailure("epoll_wait on loop \(index): \(errnoDescription(e)) (errno \(e))")
        }
        wakeTime = Self.now()
        for i in 0..<n {
            let data = cs_epoll_event_data(events, Int32(i))
            let flags = cs_epoll_event_events(events, Int32(i))
            if data == Self.timerfdEpollData {
                drainCounter(timerfd, "timerfd")
                armedDeadline = .max
            } else if data == Self.wakeEpollData {
                drainCounter(wakefd, "eventfd")
                runTasks()
            } else {
                dispatch(ConnectionID(packed: data), flags: flags)
            }
        }
        fireTimers()
        flushDirty()
    }

    /// Reads the timerfd's or the eventfd's counter, so the level-triggered epoll stops reporting
    /// it. EAGAIN (a zero counter) is fine to ignore: the counter is only a doorbell. The timer
    /// heap says which timers are due and the task list which tasks wait, and both are looked at
    /// either way (re-arming a timerfd resets its expiry count, so a reported expiry may read as
    /// EAGAIN). Any other failure (EBADF, EINVAL) means the fd is broken: a bug, not input.
    @inline(__always)
    func drainCounter(_ fd: Int32, _ what: StaticString) {
        var count: UInt64 = 0
        let r = withUnsafeMutableBytes(of: &count) { p in syscall { Glibc.read(fd, p.baseAddress, 8) } }
        if case .failed(let e) = r { preconditionFailure("\(what) read on loop \(index): \(errnoDescription(e)) (errno \(e))") }
    }

    func runTasks() {
        let pending = tasks.withLock { t -> [@Sendable (EventLoop) -> Void] in
            let p = t
            t.removeAll(keepingCapacity: true)
            return p
        }
        for task in pending { task(self) }
    }

    // MARK: Events

    func dispatch(_ id: ConnectionID, flags: UInt32) {
        guard let i = slotIndex(id) else { return }  // stale event for a reused slot
        switch slots[i].state {
        case .free: return
        case .listener: acceptAll(i, listener: id)
        case .connecting:
            let err = cs_socket_error(slots[i].fd)
            if err == 0 && flags & (EPOLLERR.rawValue | EPOLLHUP.rawValue) == 0 {
                let (epfd, fd) = (epfd, slots[i].fd)
                let e = syscallStatus { cs_epoll_ctl(epfd, EPOLL_CTL_MOD, fd, EPOLLIN.rawValue | EPOLLRDHUP.rawValue, id.packed) }
                guard e == 0 else {
                    // Connected but not watchable: the connect fails with epoll's errno.
                    Glibc.close(fd)
                    releaseSlot(i)
                    handler.connectCompleted(id, error: e, loop: self)
                    return
                }
                slots[i].pollingOut = false
                if case .tls = slots[i].stream {
                    startHandshake(i, id: id)
                    return
                }
                slots[i].state = .stream
                handler.connectCompleted(id, error: 0, loop: self)
            } else {
                Glibc.close(slots[i].fd)
                releaseSlot(i)
                handler.connectCompleted(id, error: err > 0 ? Int32(err) : ECONNREFUSED, loop: self)
            }
        case .handshaking:
            advanceHandshake(i, id: id)
        case .stream:
            if flags & EPOLLOUT.rawValue != 0 {
                flush(i, id: id)
                guard slotIndex(id) != nil else { return }
            }
            // A throttled connection is read only to learn that it hung up or failed.
            if flags & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue | EPOLLRDHUP.rawValue) != 0
                && (!slots[i].throttled || flags & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0) {
                readAvailable(i, id: id)
            }
        }
    }
}

/// A system call that failed while setting up the loop or a connection.
public struct LoopError: Error, Sendable, CustomStringConvertible {
    public var operation: String
    public var errno: Int32
    public init(operation: String, errno: Int32) { self.operation = operation; self.errno = errno }
    public var description: String { "\(operation): \(errnoDescription(errno))" }
}
