import StampedeMetrics
import StampedeScenario
import StampedeSession
import StampedeWire

/// A declared flow (`workload: websocket`) as a loop's clients run it: the scenario's compiled
/// spec, the secrets' values, and the slots of its named metrics, fixed for the run. Shared by
/// every client of a loop and never changed, so the hot path only reads it.
final class FlowProgram: @unchecked Sendable {
    let spec: WebSocketFlowSpec
    /// Each secret's value, in `spec.namedSlots` order after the captures.
    let secrets: [[UInt8]]
    /// The secrets as every client's `FlowValueTable` borrows them (owned here, freed at deinit).
    let secretBuffers: UnsafeMutableBufferPointer<UnsafeRawBufferPointer>
    /// Running totals of the send entries' weights, to pick one per message.
    let cumulativeWeights: [Int]
    /// Per reply rule: its latency slots (`<name>`, then `<name>_uncorrected` right after), or nil.
    let replyLatencySlot: [Int?]
    /// The `connect_flow` latency slot (nil: a flow without connect steps).
    let connectFlowSlot: Int?
    /// Per reply rule: its counter slot, or nil (a rule without metrics of its own).
    let replyCounterSlot: [Int?]
    /// Where the respond rules' counters start (the ignore rules' follow).
    let respondCounterBase: Int
    /// nil: messages wait for their replies until the drain ends.
    let replyTimeoutNs: UInt64?
    /// Whether the flow has named latencies or counters (the built-in chat flow has none).
    let hasNamedMetrics: Bool
    /// Per connect step: its expect timeout (0 for a send step).
    let stepTimeoutNs: [UInt64]

    init(spec: WebSocketFlowSpec, secretValues: [String: String]) {
        self.spec = spec
        secrets = spec.secrets.map { Array((secretValues[$0.name] ?? "").utf8) }
        secretBuffers = .allocate(capacity: secrets.count)
        for (i, secret) in secrets.enumerated() {
            let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: secret.count, alignment: 1)
            copy.copyBytes(from: secret)
            secretBuffers[i] = UnsafeRawBufferPointer(copy)
        }
        var total = 0
        cumulativeWeights = spec.sends.map { total += $0.weight; return total }
        var slot = 0
        replyLatencySlot = spec.replies.map { rule in
            guard rule.measure != .none, rule.hasOwnMetrics else { return nil }
            defer { slot += 2 }
            return slot
        }
        connectFlowSlot = spec.connect.isEmpty ? nil : slot
        var counter = 0
        replyCounterSlot = spec.replies.map { rule in
            guard rule.hasOwnMetrics else { return nil }
            defer { counter += 1 }
            return counter
        }
        respondCounterBase = counter
        replyTimeoutNs = spec.replyTimeoutSeconds.map { UInt64($0 * 1e9) }
        hasNamedMetrics = !spec.latencyKeys.isEmpty || !spec.counterKeys.isEmpty
        stepTimeoutNs = spec.connect.map { step in
            if case .expect(let e) = step { UInt64(e.timeoutSeconds * 1e9) } else { 0 }
        }
    }

    deinit {
        for b in secretBuffers { UnsafeMutableRawBufferPointer(mutating: b).deallocate() }
        secretBuffers.deallocate()
    }

    /// `fanout: {same: …}`: for each of `clients` (global indices), how many other clients of the
    /// whole run share its group, the fan-out each of its messages is due. Empty for other rules.
    func fanoutPeers(of clients: [Int], totalClients: Int, runTag: String) -> [UInt32] {
        guard case .same(let template) = spec.fanout else { return [] }
        func group(_ g: Int) -> [UInt8] {
            let user = Array("\(runTag)-user-\(g)".utf8)
            return user.withUnsafeBytes { u in
                var values = TemplateValues(stamp: MessageStamp(sender: 0, sequence: 0, intendedNs: 0, actualNs: 0), client: g, sequence: 0, user: u)
                var out = [UInt8](repeating: 0, count: template.length(values))
                _ = out.withUnsafeMutableBytes { template.render(into: $0.baseAddress!, &values) }
                return out
            }
        }
        var sizes: [[UInt8]: UInt32] = [:]
        for g in 0..<totalClients { sizes[group(g), default: 0] += 1 }
        return clients.map { (sizes[group($0)] ?? 1) - 1 }
    }

    /// The flow's named latencies and counters, in slot order.
    func namedMetrics() -> NamedMetrics { NamedMetrics(latencyKeys: spec.latencyKeys, counterKeys: spec.counterKeys) }

    /// A client's table of `{name}` values, its secrets filled in.
    func makeValueTable() -> FlowValueTable {
        FlowValueTable(captureCount: spec.captures.count, secrets: UnsafeBufferPointer(secretBuffers))
    }

    /// Counter slots: replies (those with metrics of their own), then respond rules, then ignore rules.
    func respondCounter(_ i: Int) -> Int { respondCounterBase + i }
    func ignoreCounter(_ i: Int) -> Int { respondCounterBase + spec.responds.count + i }

    /// The send entry for a uniform draw in [0, 1).
    @inline(__always)
    func pickSend(_ unit: Double) -> Int {
        guard cumulativeWeights.count > 1, let total = cumulativeWeights.last else { return 0 }
        let r = Int(unit * Double(total))
        var i = 0
        while i < cumulativeWeights.count - 1 && r >= cumulativeWeights[i] { i += 1 }
        return i
    }

    /// The first bytes of an unrecognised frame (enough for a sample), each secret's value masked.
    func masked(_ payload: UnsafeRawBufferPointer) -> [UInt8] {
        // Past the sample's length by the longest secret, so one cut there is still masked.
        var bytes = Array(payload.prefix(MetricsShard.maxSampleBytes + (secrets.map(\.count).max() ?? 0)))
        for secret in secrets where !secret.isEmpty {
            var i = 0
            while i + secret.count <= bytes.count {
                if bytes[i..<(i + secret.count)].elementsEqual(secret) {
                    bytes.replaceSubrange(i..<(i + secret.count), with: Array("***".utf8))
                    i += 3
                } else {
                    i += 1
                }
            }
        }
        return bytes
    }
}

/// One client's flow state: its connection's `MessageFlowSession`, and what it needs to act on it.
struct FlowConnection {
    var session = MessageFlowSession()
    /// Bumped on every connection and finished step, so a stale step timer is ignored.
    var epoch: UInt32 = 0
    /// When the upgrade completed (`connect_flow` is measured from here).
    var upgradedNs: UInt64 = 0
    /// Captured values (this connection's) and secrets, by slot; made at the first connection.
    var values: FlowValueTable? = nil
}
