/// A binary min-heap of (deadline, token), FIFO among equal deadlines. Holds 100,000 timers
/// in 2.4 MB with O(log n) push and pop and no per-timer allocation.
struct TimerHeap {
    /// 24 bytes: the sequence is 32 bits so that an entry stays three words (the heap moves
    /// entries on every push and pop), compared with wrapping arithmetic.
    struct Entry { var deadline: UInt64; var sequence: UInt32; var token: TimerToken }
    var entries: [Entry] = []
    var nextSequence: UInt32 = 0

    var count: Int { entries.count }

    /// Deadline order, then push order. The sequence wraps after 2^32 pushes; ties compare by
    /// the wrapping difference, right for timers pushed fewer than 2^31 pushes apart (a tie of
    /// timers further apart may come out of push order, which nothing depends on).
    @inline(__always) static func less(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && Int32(bitPattern: a.sequence &- b.sequence) < 0)
    }

    func peekDeadline() -> UInt64? { entries.first?.deadline }

    mutating func push(deadline: UInt64, token: TimerToken) {
        nextSequence &+= 1
        entries.append(Entry(deadline: deadline, sequence: nextSequence, token: token))
        var i = entries.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            if !Self.less(entries[i], entries[parent]) { break }
            entries.swapAt(i, parent)
            i = parent
        }
    }

    mutating func pop() -> Entry {
        let top = entries[0]
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            var i = 0
            let n = entries.count
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < n && Self.less(entries[l], entries[m]) { m = l }
                if r < n && Self.less(entries[r], entries[m]) { m = r }
                if m == i { break }
                entries.swapAt(i, m)
                i = m
            }
        }
        return top
    }
}
