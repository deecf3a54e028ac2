import StampedeMetrics

extension FleetMessage {
    /// The frame: length prefix, type byte, fields.
    public func frame() -> [UInt8] {
        var w = FleetWriter()
        w.u32(0)  // the length, filled in below
        encode(into: &w)
        var bytes = w.bytes
        let n = UInt32(bytes.count - 4)
        for i in 0..<4 { bytes[i] = UInt8(truncatingIfNeeded: n >> (8 * UInt32(i))) }
        return bytes
    }

    func encode(into w: inout FleetWriter) {
        switch self {
        case .hello(let v): w.u8(1); w.u32(v)
        case .clockProbe(let t): w.u8(2); w.u64(t)
        case .plan(let p):
            w.u8(3)
            w.string(p.scenarioYAML); w.string(p.scenarioFile)
            w.u32(UInt32(p.overrides.count))
            for o in p.overrides { w.u32(UInt32(o.count)); for s in o { w.string(s) } }
            w.i64(Int64(p.shardIndex)); w.i64(Int64(p.shardCount)); w.i64(Int64(p.loops))
            w.i64(Int64(p.embeddedPort)); w.string(p.embeddedCertificatePEM); w.i64(p.clockOffsetNs); w.string(p.population)
            if let s = p.steered {
                w.u8(1); w.i64(Int64(s.clients)); w.i64(Int64(s.connectedAtStart)); w.double(s.ratePerSecond); w.double(s.durationSeconds)
            } else {
                w.u8(0)
            }
        case .beginRampUp(let t): w.u8(4); w.u64(t)
        case .beginMessages(let a, let b): w.u8(5); w.u64(a); w.u64(b)
        case .dropConnections(let f): w.u8(6); w.double(f)
        case .storm(let index, let at, let fraction, let mode, let stall):
            w.u8(7); w.i64(Int64(index)); w.u64(at); w.double(fraction); w.string(mode); w.u64(stall)
        case .watch(let index, let at): w.u8(8); w.i64(Int64(index)); w.u64(at)
        case .churn(let n): w.u8(9); w.i64(Int64(n))
        case .beginDrain: w.u8(10)
        case .closeAll(let r): w.u8(11); w.u8(UInt8(r.rawValue))
        case .stateRequest: w.u8(12)
        case .intervalRequest: w.u8(13)
        case .liveRequest: w.u8(14)
        case .stormsRequest: w.u8(15)
        case .finish: w.u8(16)
        case .join(let n): w.u8(17); w.i64(Int64(n))
        case .leave(let n): w.u8(18); w.i64(Int64(n))
        case .changeRate(let rate, let at): w.u8(19); w.double(rate); w.u64(at)
        case .helloReply(let h):
            w.u8(64); w.u32(h.version); w.i64(Int64(h.index)); w.i64(Int64(h.count)); w.i64(Int64(h.pid))
            w.string(h.hostname); w.string(h.bootID)
        case .clockReply(let c, let t): w.u8(65); w.u64(c); w.u64(t)
        case .ready(let n, let rss): w.u8(66); w.i64(Int64(n)); w.u64(rss)
        case .refused(let why): w.u8(67); w.string(why)
        case .state(let s):
            w.u8(68)
            for v in [s.open, s.inFlight, s.notYetStarted] { w.i64(Int64(v)) }
            w.u64(s.outstanding); w.u64(s.sent); w.u64(s.fanout)
        case .interval(let i):
            w.u8(69)
            w.shard(i.metrics)
            for v in [i.open, i.connecting, i.reconnecting] { w.i64(Int64(v)) }
            w.u64(i.timerLagNs); w.u64(i.loopCPUNs); w.u64(i.processCPUNs); w.u64(i.residentBytes)
        case .live(let n): w.u8(70); w.i64(Int64(n))
        case .storms(let shards): w.u8(71); w.u32(UInt32(shards.count)); for s in shards { w.storm(s) }
        case .bye: w.u8(72)
        case .moved(let n): w.u8(73); w.i64(Int64(n))
        }
    }

    /// One frame's payload (after the length prefix).
    public static func decode(_ payload: [UInt8]) throws(FleetError) -> FleetMessage {
        var r = FleetReader(payload)
        let type = try r.u8()
        let m: FleetMessage
        switch type {
        case 1: m = .hello(version: try r.u32())
        case 2: m = .clockProbe(coordinatorNs: try r.u64())
        case 3:
            let yaml = try r.string(), file = try r.string()
            let n = Int(try r.u32())
            guard n <= 16 else { throw .malformed("\(n) overrides") }
            var overrides: [[String]] = []
            for _ in 0..<n {
                let k = Int(try r.u32())
                guard k <= 4 else { throw .malformed("an override of \(k) parts") }
                var o: [String] = []
                for _ in 0..<k { o.append(try r.string()) }
                overrides.append(o)
            }
            let index = try r.int(), count = try r.int(), loops = try r.int(), port = try r.int()
            var plan = WorkerPlan(scenarioYAML: yaml, scenarioFile: file, overrides: overrides, shardIndex: index, shardCount: count,
                                  loops: loops, embeddedPort: port, embeddedCertificatePEM: try r.string(), clockOffsetNs: try r.i64())
            plan.population = try r.string()
            if try r.u8() == 1 {
                plan.steered = SteeredLoad(clients: try r.int(), connectedAtStart: try r.int(), ratePerSecond: try r.double(), durationSeconds: try r.double())
            }
            m = .plan(plan)
        case 4: m = .beginRampUp(startNs: try r.u64())
        case 5: m = .beginMessages(startNs: try r.u64(), endNs: try r.u64())
        case 6: m = .dropConnections(fraction: try r.double())
        case 7: m = .storm(index: try r.int(), atNs: try r.u64(), fraction: try r.double(), mode: try r.string(), stallNs: try r.u64())
        case 8: m = .watch(index: try r.int(), atNs: try r.u64())
        case 9: m = .churn(count: try r.int())
        case 10: m = .beginDrain
        case 11:
            guard let reason = LossReason(rawValue: Int(try r.u8())) else { throw .malformed("unknown loss reason") }
            m = .closeAll(lostReason: reason)
        case 12: m = .stateRequest
        case 13: m = .intervalRequest
        case 14: m = .liveRequest
        case 15: m = .stormsRequest
        case 16: m = .finish
        case 17: m = .join(count: try r.int())
        case 18: m = .leave(count: try r.int())
        case 19: m = .changeRate(ratePerSecond: try r.double(), atNs: try r.u64())
        case 64:
            m = .helloReply(WorkerHello(version: try r.u32(), index: try r.int(), count: try r.int(), pid: try r.int(),
                                        hostname: try r.string(), bootID: try r.string()))
        case 65: m = .clockReply(coordinatorNs: try r.u64(), workerNs: try r.u64())
        case 66: m = .ready(loops: try r.int(), residentBytes: try r.u64())
        case 67: m = .refused(try r.string())
        case 68:
            var s = GroupState()
            s.open = try r.int(); s.inFlight = try r.int(); s.notYetStarted = try r.int()
            s.outstanding = try r.u64(); s.sent = try r.u64(); s.fanout = try r.u64()
            m = .state(s)
        case 69:
            var i = GroupInterval(metrics: try r.shard())
            i.open = try r.int(); i.connecting = try r.int(); i.reconnecting = try r.int()
            i.timerLagNs = try r.u64(); i.loopCPUNs = try r.u64(); i.processCPUNs = try r.u64(); i.residentBytes = try r.u64()
            m = .interval(i)
        case 70: m = .live(try r.int())
        case 73: m = .moved(try r.int())
        case 71:
            let n = Int(try r.u32())
            guard n <= 10_000 else { throw .malformed("\(n) storms") }
            var shards: [StormShard] = []
            for _ in 0..<n { shards.append(try r.storm()) }
            m = .storms(shards)
        case 72: m = .bye
        default: throw .malformed("unknown message type \(type)")
        }
        guard r.isAtEnd else { throw .malformed("\(payload.count - r.offset) bytes after message type \(type)") }
        return m
    }
}

extension FleetReader {
    /// A signed count that fits an `Int` (every count on the wire is one).
    mutating func int() throws(FleetError) -> Int {
        let v = try i64()
        guard let n = Int(exactly: v) else { throw .malformed("number \(v)") }
        return n
    }
}

/// Splits a byte stream into frames: feed it what a read returned, take whole frames out.
public struct FleetFrameReader: Sendable {
    var buffer: [UInt8] = []
    var start = 0
    public init() {}

    public mutating func feed(_ bytes: UnsafeRawBufferPointer) { buffer.append(contentsOf: bytes) }

    /// The next whole frame's payload, nil if it has not all arrived; an error for a length
    /// over `FleetMessage.maxFrameBytes` (a corrupt stream or not this protocol at all).
    public mutating func next() throws(FleetError) -> [UInt8]? {
        guard buffer.count - start >= 4 else { compact(); return nil }
        var n = 0
        for i in 0..<4 { n |= Int(buffer[start + i]) << (8 * i) }
        guard n >= 1, n <= FleetMessage.maxFrameBytes else { throw .malformed("a frame of \(n) bytes") }
        guard buffer.count - start - 4 >= n else { compact(); return nil }
        let payload = Array(buffer[(start + 4)..<(start + 4 + n)])
        start += 4 + n
        return payload
    }

    mutating func compact() {
        if start > 0 { buffer.removeFirst(start); start = 0 }
    }
}
