/// The calls of one hub client: where its send schedule stands (open model: sequence numbers
/// due and sent; both models: the send chain's timers), the calls awaiting their answer, and
/// the streams it may cancel.
struct HubCalls {
    /// A stream in flight when cancelling after N items.
    struct StreamTrack {
        var sequence: UInt32 = .max
        var items = 0
        var cancelled = false
    }

    /// Open model: the next sequence number to send, and the first not yet due; the calls in
    /// between are due and not yet sent (deferred by backpressure, or queued while reconnecting).
    var nextSequence: UInt32 = 0
    var dueSequence: UInt32 = 0
    /// Open model: the client's place in the aggregate stream (`LoadSchedule.sendSlot`).
    var sendSlot: UInt32 = 0
    /// The send chain's own epoch (the connection's `epoch` changes with every restart, and the
    /// open-model chain goes on through a reconnect); replaced only when a chain is restarted.
    var sendEpoch: UInt32 = 0
    /// Open model: a send chain is running (a timer of `sendEpoch` is pending).
    var sendChain = false
    /// Calls sent and not yet answered.
    var outstanding: UInt32 = 0
    /// Streams in flight when cancelling after N items: a few slots per client; a stream that
    /// finds none is simply read to the end.
    var streams: [StreamTrack] = []

    /// Skips the calls that fell due and will not be sent — all but the newest `keeping`,
    /// oldest first; returns how many.
    mutating func skipDue(keeping: UInt32) -> UInt32 {
        let pending = dueSequence &- nextSequence
        guard dueSequence > nextSequence, pending > keeping else { return 0 }
        let n = pending - keeping
        nextSequence += n
        return n
    }

    /// An answer for one outstanding call; false when none is outstanding (it is then ignored).
    mutating func answered() -> Bool {
        guard outstanding > 0 else { return false }
        outstanding -= 1
        return true
    }

    /// Forgets every outstanding call; returns how many there were.
    mutating func takeOutstanding() -> UInt32 {
        defer { outstanding = 0 }
        return outstanding
    }

    /// Open model, after a gap without a send chain: the schedule resumes at `sequence` (or
    /// where it stands, if later), nothing is due yet, and a new chain epoch begins.
    mutating func rejoin(atSequence sequence: UInt32) {
        nextSequence = max(nextSequence, sequence)
        dueSequence = nextSequence
        sendEpoch &+= 1
    }

    /// After the schedule's rate changed: a running chain gets a new epoch (its pending timer was
    /// set from the old rate and ends where it fires) and the instant of its next call on the new
    /// rate; nil when no chain runs, or the next call falls outside the phase (the chain ends).
    mutating func rearm(on schedule: LoadSchedule) -> UInt64? {
        guard sendChain else { return nil }
        sendEpoch &+= 1
        let next = schedule.intended(slot: sendSlot, sequence: dueSequence)
        guard schedule.isInPhase(next) else { sendChain = false; return nil }
        return next
    }

    /// Stops the send chain: its pending timer (of the old epoch) ends where it fires.
    mutating func stopChain() {
        sendEpoch &+= 1
        sendChain = false
    }

    /// Tracks stream `sequence` in a free slot, if any (four slots, made at the first stream).
    mutating func track(stream sequence: UInt32) {
        if streams.isEmpty { streams = Array(repeating: StreamTrack(), count: 4) }
        if let slot = streams.firstIndex(where: { $0.sequence == .max }) {
            streams[slot] = StreamTrack(sequence: sequence, items: 0, cancelled: false)
        }
    }

    /// The slot tracking stream `sequence`, if any.
    func streamSlot(_ sequence: UInt32) -> Int? {
        streams.isEmpty ? nil : streams.firstIndex { $0.sequence == sequence }
    }

    /// The stream in `slot` completed: frees the slot; returns whether it had been cancelled.
    mutating func streamCompleted(slot: Int) -> Bool {
        let cancelled = streams[slot].cancelled
        streams[slot] = StreamTrack()
        return cancelled
    }
}
