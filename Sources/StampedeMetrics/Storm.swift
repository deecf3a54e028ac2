/// What one loop saw of one connection storm: who was hit, how long each took to be connected
/// again, how many attempts that took, and the attempts and successes per 100 ms after the
/// event (the thundering-herd curve). Merged over loops like every other shard.
public struct StormShard: Sendable {
    /// Buckets of 100 ms after the event that the curve covers (10 minutes).
    public static let buckets = 6000
    public var affected: UInt64 = 0
    public var recovered: UInt64 = 0
    public var gaveUp: UInt64 = 0
    /// Event → connected again, microseconds.
    public var recovery = makeLatencyHistogram()
    /// Reconnect attempts each recovered client needed.
    public var attempts = makeLatencyHistogram()
    public var attemptsPerBucket = [UInt64](repeating: 0, count: StormShard.buckets)
    public var successesPerBucket = [UInt64](repeating: 0, count: StormShard.buckets)

    public init() {}

    @inline(__always) static func bucket(_ sinceEventNs: UInt64) -> Int { min(Int(sinceEventNs / 100_000_000), buckets - 1) }

    public mutating func recordAttempt(sinceEventNs: UInt64) { attemptsPerBucket[Self.bucket(sinceEventNs)] &+= 1 }

    public mutating func recordRecovery(sinceEventNs: UInt64, attempts n: Int) {
        recovered &+= 1
        successesPerBucket[Self.bucket(sinceEventNs)] &+= 1
        _ = recovery.record(max(1, sinceEventNs / 1000))
        _ = attempts.record(UInt64(max(1, n)))
    }

    public mutating func add(_ o: StormShard) {
        affected &+= o.affected; recovered &+= o.recovered; gaveUp &+= o.gaveUp
        if o.recovery.totalCount > 0 { recovery.add(o.recovery) }
        if o.attempts.totalCount > 0 { attempts.add(o.attempts) }
        for i in 0..<Self.buckets {
            attemptsPerBucket[i] &+= o.attemptsPerBucket[i]
            successesPerBucket[i] &+= o.successesPerBucket[i]
        }
    }

    /// Index of the last bucket with any attempt or success (for trimming the curve).
    public var lastActiveBucket: Int {
        var i = Self.buckets - 1
        while i > 0 && attemptsPerBucket[i] == 0 && successesPerBucket[i] == 0 { i -= 1 }
        return i
    }
}

/// Per-client bookkeeping for storms, kept by each workload: which storm hit a client, and the
/// attempts it has made since.
public struct StormClientTrack: Sendable {
    public var storm: Int32 = -1
    public var attempts: Int32 = 0
    public init() {}
}

/// The events one workload's clients live through, as the chat and hub clients both keep them:
/// each event's shard and instant, and the latest event that connection drops are put down to.
/// Every method takes the client's own `StormClientTrack`, so the book holds nothing per client.
public struct StormBook: Sendable {
    public private(set) var shards: [StormShard] = []
    var atNs: [UInt64] = []
    /// The latest event: a client that loses its connection from then on counts as affected
    /// by it (-1 before any event).
    public private(set) var watchIndex: Int32 = -1
    public init() {}

    /// Event `index` happens at `atNs`; drops from now until the next event belong to it.
    public mutating func watch(index: Int, atNs t: UInt64) {
        while shards.count <= index { shards.append(StormShard()); atNs.append(t) }
        atNs[index] = t
        watchIndex = Int32(index)
    }

    /// Storm `index` hits this client (`watch` has opened it).
    public mutating func hit(_ track: inout StormClientTrack, storm index: Int) {
        shards[index].affected &+= 1
        track = StormClientTrack()
        track.storm = Int32(index)
    }

    /// The client lost its connection without a storm hitting it: one of the clients the
    /// latest event affected, unless an event already counts it.
    public mutating func dropped(_ track: inout StormClientTrack) {
        guard track.storm < 0, watchIndex >= 0 else { return }
        shards[Int(watchIndex)].affected &+= 1
        track.storm = watchIndex
    }

    /// A reconnect attempt starts.
    public mutating func attempt(_ track: inout StormClientTrack, nowNs: UInt64) {
        guard track.storm >= 0 else { return }
        track.attempts += 1
        let s = Int(track.storm)
        shards[s].recordAttempt(sinceEventNs: nowNs &- atNs[s])
    }

    /// The client is connected again (or reads again, after a stall its connection survived).
    public mutating func recovered(_ track: inout StormClientTrack, nowNs: UInt64) {
        guard track.storm >= 0 else { return }
        let s = Int(track.storm)
        shards[s].recordRecovery(sinceEventNs: nowNs &- atNs[s], attempts: Int(track.attempts))
        track = StormClientTrack()
    }

    /// The client's reconnect policy gave up.
    public mutating func gaveUp(_ track: inout StormClientTrack) {
        guard track.storm >= 0 else { return }
        shards[Int(track.storm)].gaveUp &+= 1
        track = StormClientTrack()
    }
}
