/// Limits a server's loop puts on every connection so that no client, however it behaves, makes
/// the process buffer without bound (see `EventLoop.limits`).
///
/// - A connection over the high-water mark is not read from until it drops below the low-water
///   mark: its peer's requests wait in the kernel and then in the peer, as with nginx, which stops
///   reading a connection whose answers cannot go out (TCP backpressure).
/// - A write that would take a connection's queue past `maxQueuedBytes` is dropped, and the
///   connection is closed (a TCP close) at the end of the iteration with `.slowConsumer`: what
///   NATS or Centrifugo do to a slow consumer. Queued output therefore never exceeds
///   `maxQueuedBytes` per connection.
/// - A connection whose output waits for the socket and that accepts no byte of it for
///   `sendTimeoutNs` is closed with `.slowConsumer` too (nginx's `send_timeout`), so a peer that
///   never reads cannot hold its slot and its queue forever, even under the limit.
public struct ConnectionLimits: Sendable, Equatable {
    public var maxQueuedBytes: Int
    public var sendTimeoutNs: UInt64
    /// How often the loop looks for send timeouts and passed deadlines: their precision.
    public var sweepIntervalNs: UInt64

    public init(maxQueuedBytes: Int, sendTimeoutNs: UInt64, sweepIntervalNs: UInt64) {
        self.maxQueuedBytes = maxQueuedBytes
        self.sendTimeoutNs = sendTimeoutNs
        self.sweepIntervalNs = max(1_000_000, sweepIntervalNs)
    }
}

extension EventLoop {
    // MARK: Limits

    /// Whether `n` more bytes stay within `limits.maxQueuedBytes`; if not, the connection is
    /// marked to be closed as a slow consumer once this iteration's handlers are done (closing
    /// it here would call its handler back in the middle of the write).
    @inline(__always)
    func fits(_ i: Int, _ n: Int) -> Bool {
        guard let limits, !slots[i].exempt else { return true }
        if slots[i].overLimit { return false }
        guard (slots[i].out?.count ?? 0) + n > limits.maxQueuedBytes else { return true }
        slots[i].overLimit = true
        markDirty(i)
        return false
    }

    /// Closes `id` with `.timedOut(tag)` (and a `closed` callback) once `deadline` (monotonic ns,
    /// compare `wakeTime`) passes, unless set again first; `.max` clears it. Needs `limits`,
    /// whose sweep interval is its precision. Setting it is two stores: cheap per request.
    public func setDeadline(_ id: ConnectionID, at deadline: UInt64, tag: UInt8) {
        guard let i = slotIndex(id) else { return }
        slots[i].deadline = deadline
        slots[i].deadlineTag = deadline == .max ? 0 : tag
    }

    /// The tag of the deadline set on `id` (0: none).
    public func deadlineTag(_ id: ConnectionID) -> UInt8 {
        guard let i = slotIndex(id) else { return 0 }
        return slots[i].deadlineTag
    }

    func scheduleSweep() {
        guard let limits else { sweepScheduled = false; return }
        sweepScheduled = true
        timers.push(deadline: Self.now() + limits.sweepIntervalNs, token: TimerToken(layer: .loop, LoopTimer.limitsSweep, slot: 0))
    }

    /// Closes connections past their deadline or their send timeout. One pass over the slot
    /// table per interval rather than a timer per connection: deadlines move with every request,
    /// and stale timers would pile up in the heap.
    func sweep() {
        guard let limits else { sweepScheduled = false; return }
        let now = Self.now()
        for i in slots.indices where slots[i].state == .stream && !slots[i].exempt {
            let id = ConnectionID(index: UInt32(i), generation: slots[i].generation)
            if slots[i].pollingOut && now &- slots[i].lastProgress > limits.sendTimeoutNs {
                peerClosed(i, id: id, reason: .slowConsumer)
            } else if slots[i].deadline <= now {
                peerClosed(i, id: id, reason: .timedOut(tag: slots[i].deadlineTag))
            }
        }
        scheduleSweep()
    }
}
