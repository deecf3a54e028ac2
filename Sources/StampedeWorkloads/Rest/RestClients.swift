import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeSession
import StampedeWire

/// ETag-polling REST clients for one event loop.
///
/// Each client polls each resource on an open-model schedule: poll n of resource r is intended
/// at `start + offset + n × interval`, and its latency counts from then, however late it went
/// out. A client holds up to `pool` keep-alive connections, one request in flight on each; a
/// poll that falls due while they are all busy waits for the next one free. The last ETag of
/// every (client, resource) goes back as `If-None-Match`. Answers go to the resource's
/// processors by status, in order, as in the JSONSession model.
///
/// Files: this one holds the state and the run's phases; `+Schedule` when polls fall due and
/// which connection sends them; `+Connections` the pool as the runtime of each connection's
/// `HTTPClientExchange` (the response's parsing, size limit and timeouts live there, in
/// StampedeSession); `+Answers` what an answer means (latency, processors, staleness);
/// `+Storms` dropping and stalling connections.
public final class RestClients: EventLoopHandler, LoopWorkload, @unchecked Sendable {
    enum ConnectionState: UInt8 { case none, connecting, idle, busy }

    /// One keep-alive connection of a client's pool.
    struct Connection {
        var id = ConnectionID(index: .max, generation: 0)
        var state = ConnectionState.none
        var epoch: UInt32 = 0
        /// The request in flight and its response (status, framing, size, timeouts; the body
        /// when a processor or the staleness field reads it).
        var exchange: HTTPClientExchange
        var connectStartNs: UInt64 = 0
        /// The poll in flight: (client, resource) slot, its intended and actual send times.
        var slot = -1
        var intendedNs: UInt64 = 0
        var sentNs: UInt64 = 0
        var redirectsLeft = 0
        /// What the answer's head said: ETag, change time, Retry-After, the redirect target.
        var etag: [UInt8] = []
        var changedAt: Double? = nil
        var retryAfterSeconds: Double? = nil
        var location: [UInt8] = []
        var closeAfter = false

        init(exchange: HTTPClientExchange) { self.exchange = exchange }
    }

    struct Client {
        var started = false
        var stopped = false
        var openConnections = 0
        var storm = StormClientTrack()
    }

    /// Per (client, resource): the schedule and the remembered ETag.
    struct Poll {
        var intervalNs: UInt64 = 0
        var scheduleStartNs: UInt64 = 0
        /// Polls sent, and polls whose intended time has come, since `scheduleStartNs`.
        var nextSequence: UInt32 = 0
        var dueSequence: UInt32 = 0
        var epoch: UInt16 = 0
        var inFlight = false
        var stopped = false
        /// Rate limited: no poll goes out before this.
        var resumeAtNs: UInt64 = 0
        var etagLength: UInt8 = 0
        var seenRepresentation = false
    }

    static let maxETagBytes = 120
    static let get = Array("GET ".utf8)
    static let http11 = Array(" HTTP/1.1\r\n".utf8)
    static let ifNoneMatch = Array("If-None-Match: ".utf8)

    public let loop: EventLoop
    public let plan: RestPlan
    public var metrics = MetricsShard()
    var random: FastRandom
    var clients: [Client]
    var connections: [Connection]
    var polls: [Poll]
    var etags: [UInt8]
    let resourceCount: Int
    let poolSize: Int
    var slotConnection: [Int32] = []
    /// "GET <path> HTTP/1.1\r\n" per resource, and the header lines every request carries.
    let requestLines: [[UInt8]]
    let commonHeaders: [UInt8]
    let stalenessHeader: [UInt8]?
    let stalenessField: [UInt8]?
    var phase: WorkloadPhase = .idle
    var messagesEndNs: UInt64 = 0
    var stormBook = StormBook()
    public var storms: [StormShard] { stormBook.shards }
    public internal(set) var openCount = 0
    public internal(set) var inFlightConnects = 0
    public internal(set) var notYetStarted: Int
    public internal(set) var totalOutstanding: UInt64 = 0
    public var reconnectingCount: Int { 0 }

    /// `response`: the deadline the connection's exchange asked for (first byte, then whole response).
    enum TimerKind: UInt8 { case connect = 1, poll = 2, response = 4, stallEnd = 5 }

    public init(loop: EventLoop, plan: RestPlan, random: FastRandom) {
        self.loop = loop
        self.plan = plan
        self.random = random
        let n = plan.globalIndices.count
        resourceCount = plan.spec.resources.count
        poolSize = plan.spec.poolSize
        clients = Array(repeating: Client(), count: n)
        if case .header(let h)? = plan.spec.staleness { stalenessHeader = Array(h.utf8) } else { stalenessHeader = nil }
        if case .field(let f)? = plan.spec.staleness { stalenessField = Array(f.utf8) } else { stalenessField = nil }
        let exchange = HTTPClientExchange(configuration: .init(
            firstByteTimeoutNs: nanoseconds(plan.spec.firstByteTimeoutSeconds), responseTimeoutNs: nanoseconds(plan.spec.responseTimeoutSeconds),
            maxResponseBytes: plan.spec.maxResponseBytes, watchedField: stalenessHeader))
        connections = Array(repeating: Connection(exchange: exchange), count: n * poolSize)
        polls = Array(repeating: Poll(), count: n * resourceCount)
        etags = Array(repeating: 0, count: n * resourceCount * Self.maxETagBytes)
        notYetStarted = n
        requestLines = plan.spec.resources.map { Array("GET \(plan.basePath)\($0.path) HTTP/1.1\r\n".utf8) }
        let host = HTTPClientRequest.hostValue(host: plan.host, port: plan.port, defaultPort: 80)
        var headers = Array("Host: ".utf8) + host + Array("\r\nAccept: application/json\r\nUser-Agent: stampede\r\n".utf8)
        if let token = plan.token { headers += Array("Authorization: Bearer \(token)\r\n".utf8) }
        commonHeaders = headers + plan.extraHeaderLines
        fieldKeys = plan.spec.resources.map { r in r.processors.map { p in p.requiredFields.map { Array($0.utf8) } } }
        needsBody = plan.spec.resources.map { r in r.processors.contains { !$0.requiredFields.isEmpty } }
        loop.handler = self
    }

    /// Required JSON keys per resource and processor, and whether any processor of a resource
    /// reads its body.
    let fieldKeys: [[[[UInt8]]]]
    let needsBody: [Bool]

    // MARK: LoopWorkload

    public var liveClients: Int { connections.reduce(0) { $0 + ($1.state == .none ? 0 : 1) } }

    public func beginRampUp(startNs: UInt64) {
        phase = .rampUp
        for (k, g) in plan.globalIndices.enumerated() {
            let at = startNs + nanoseconds(Double(g) / plan.connectRate)
            loop.schedule(at: at, token: token(.connect, k))
        }
    }

    /// Starts every client's polls: resource r of global client g first at
    /// `start + (g × resources + r) / (clients × resources) × interval`, evenly spread.
    public func beginMessages(startNs: UInt64, endNs: UInt64) {
        phase = .messages
        messagesEndNs = endNs
        let interval = nanoseconds(plan.spec.intervalSeconds)
        let spread = Double(plan.totalClients * resourceCount)
        for (k, g) in plan.globalIndices.enumerated() where !clients[k].stopped {
            for r in 0..<resourceCount {
                let q = k * resourceCount + r
                let offset = UInt64(Double(g * resourceCount + r) / spread * Double(interval))
                polls[q].intervalNs = interval
                polls[q].scheduleStartNs = startNs + offset
                schedulePoll(q, at: polls[q].scheduleStartNs)
            }
        }
    }

    public func beginDrain() { if phase == .messages || phase == .rampUp { phase = .draining } }

    public func closeAll(lostReason: LossReason) {
        phase = .closing
        for q in polls.indices where polls[q].dueSequence > polls[q].nextSequence {
            // Polls that fell due and never went out (no connection to be had): sent and lost.
            let n = UInt64(polls[q].dueSequence - polls[q].nextSequence)
            metrics.count(.messagesSent, n)
            metrics.lose(.droppedWhileDisconnected, n)
            polls[q].nextSequence = polls[q].dueSequence
        }
        for c in connections.indices where connections[c].state != .none {
            // A connect or a request cut off by the end of the run: `interrupted`, not a timeout.
            switch connections[c].state {
            case .busy:
                loseInFlight(c, lostReason)
                metrics.error(.interrupted)
            case .connecting:
                metrics.count(.connectFailed)
                metrics.error(.interrupted)
            case .idle, .none:
                break
            }
            closeConnection(c, reset: false)
        }
    }

    /// Churn does not apply: a REST client holds no session to leave.
    public func churn(count: Int) -> Int { 0 }
}
