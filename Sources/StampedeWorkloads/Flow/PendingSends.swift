/// One client's scheduled messages of a declared flow that await their reply, by `{sequence}`:
/// a ring indexed by sequence, so a correlated reply finds its message's send times in O(1)
/// and in any order, and a reply to a message that is not (or no longer) awaited is told apart.
///
/// Pure and allocation-free once it has grown to the client's largest number of messages in
/// flight (it starts empty: a client that never sends holds nothing).
struct PendingSends {
    struct Entry {
        var sequence: UInt32 = 0
        var intendedNs: UInt64 = 0
        var actualNs: UInt64 = 0
        var delivered = true
    }

    private var ring: [Entry] = []
    /// The lowest sequence not yet delivered or lost.
    private(set) var oldest: UInt32 = 1
    /// The next sequence to send (sequences start at 1, as `{sequence}` does).
    private(set) var next: UInt32 = 1

    /// Messages awaiting their reply.
    var count: Int { Int(next &- oldest) - skipped }
    /// Delivered messages between `oldest` and `next` (replies out of order).
    private var skipped = 0

    /// Records the send of message `sequence` (always `next`).
    mutating func sent(_ sequence: UInt32, intendedNs: UInt64, actualNs: UInt64) {
        if Int(sequence &- oldest) >= ring.count { grow(to: Int(sequence &- oldest) + 1) }
        ring[Int(sequence) & (ring.count - 1)] = Entry(sequence: sequence, intendedNs: intendedNs, actualNs: actualNs, delivered: false)
        next = sequence &+ 1
    }

    /// The send times of message `sequence` if the ring still holds it (delivered or not).
    func entry(_ sequence: UInt32) -> Entry? {
        guard !ring.isEmpty else { return nil }
        let e = ring[Int(sequence) & (ring.count - 1)]
        return e.sequence == sequence && sequence != 0 ? e : nil
    }

    /// Marks message `sequence` delivered; false when it is not awaited (unknown, already
    /// delivered, or lost).
    mutating func deliver(_ sequence: UInt32) -> Bool {
        guard sequence &- oldest < next &- oldest, !ring.isEmpty else { return false }
        let i = Int(sequence) & (ring.count - 1)
        guard ring[i].sequence == sequence, !ring[i].delivered else { return false }
        ring[i].delivered = true
        if sequence == oldest { advance() } else { skipped += 1 }
        return true
    }

    /// Counts as lost every awaited message sent at or before `cutoffNs` (the reply timeout),
    /// oldest first; returns how many.
    mutating func expire(sentAtOrBefore cutoffNs: UInt64) -> Int {
        var lost = 0
        while oldest != next {
            let i = Int(oldest) & (ring.count - 1)
            guard ring[i].actualNs <= cutoffNs else { break }
            ring[i].delivered = true
            lost += 1
            advance()
        }
        return lost
    }

    /// Forgets every awaited message (they were counted lost by the caller); returns how many.
    mutating func dropAll() -> Int {
        let n = count
        for k in 0..<ring.count { ring[k].delivered = true }
        oldest = next
        skipped = 0
        return n
    }

    /// Moves `oldest` past delivered messages.
    private mutating func advance() {
        oldest &+= 1
        while oldest != next {
            let i = Int(oldest) & (ring.count - 1)
            guard ring[i].delivered else { return }
            skipped -= 1
            oldest &+= 1
        }
    }

    private mutating func grow(to needed: Int) {
        var size = max(8, ring.count)
        while size < needed { size *= 2 }
        var bigger = [Entry](repeating: Entry(), count: size)
        // Only the awaited window moves: an older entry could take an awaited one's new slot.
        for e in ring where e.sequence != 0 && e.sequence &- oldest < next &- oldest { bigger[Int(e.sequence) & (size - 1)] = e }
        ring = bigger
    }
}
