/// The hub's negotiated connections in the order they were made, so that the oldest one no
/// transport has claimed can be found when a negotiate needs room. Claimed and disposed ones
/// are not removed when that happens (that would be a search); they are skipped when met, and
/// swept out whenever they outnumber the live entries, so the queue stays within about twice
/// the unclaimed connections.
struct HubUnclaimedQueue {
    private var entries: [(index: Int, generation: UInt32)] = []
    private var head = 0

    /// Entries held, stale ones included.
    var count: Int { entries.count - head }

    /// `c` was just negotiated; `live` is how many are unclaimed now, this one included.
    mutating func append(_ c: HubConnection, live: Int, _ connections: [HubConnection?]) {
        if count >= 2 * live + 64 { compact(connections) }
        entries.append((c.index, c.generation))
    }

    /// The oldest connection still waiting for a transport, taken off the queue (nil: none).
    mutating func popOldest(_ connections: [HubConnection?]) -> HubConnection? {
        while head < entries.count {
            let e = entries[head]
            head += 1
            if let c = Self.waiting(e, connections) {
                if head > 1024 && head * 2 > entries.count { compact(connections) }
                return c
            }
        }
        entries.removeAll(keepingCapacity: true)
        head = 0
        return nil
    }

    private mutating func compact(_ connections: [HubConnection?]) {
        entries = entries[head...].filter { Self.waiting($0, connections) != nil }
        head = 0
    }

    /// The entry's connection, if it is the same one (not a later occupant of its slot) and unclaimed.
    private static func waiting(_ e: (index: Int, generation: UInt32), _ connections: [HubConnection?]) -> HubConnection? {
        guard e.index < connections.count, let c = connections[e.index], c.generation == e.generation,
              !c.disposed, c.phase == .negotiated else { return nil }
        return c
    }
}
