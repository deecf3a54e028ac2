/// A binary min-heap of (deadline, token), FIFO among equal deadlines. Holds 100,000 timers
/// in 3.2 MB with O(log n) push and pop and no per-timer allocation.
struct TimerHeap {
    struct Entry { var deadline: UInt64; var sequence: UInt64; var token: TimerToken }
    var entries: [Entry] = []
    var nextSequence: UInt64 = 0

    var count: Int { entries.count }

    @inline(__always) static func less(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.sequence < b.sequence)
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
