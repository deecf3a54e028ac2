import Foundation
import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeWire

/// Everything one loop's REST clients share: where the API is and what each client polls.
public struct RestPlan: Sendable {
    public var totalClients: Int
    /// Global indices of the clients on this loop.
    public var globalIndices: [Int]
    public var connectRate: Double
    public var spec: RestSpec
    public var address: SocketAddress
    /// The Host header value.
    public var host: String
    public var port: Int
    /// The target URL's path, prefixed to every resource path ("" for none).
    public var basePath: String
    /// Resolved bearer token (never logged).
    public var token: String?
    /// Extra request headers, rendered `Name: value\r\n`.
    public var extraHeaderLines: [UInt8]
    public var connectTimeoutNs: UInt64
    public var sourceAddresses: [UInt32]
    /// Closed model: each resource's next poll goes `thinkTimeNs` after its answer, not on the
    /// interval (as wrk does, with no think time).
    public var loadModel: LoadModel = .open
    public var thinkTimeNs: UInt64 = 0

    public init(totalClients: Int, globalIndices: [Int], connectRate: Double, spec: RestSpec, address: SocketAddress, host: String,
                port: Int, basePath: String, token: String?, extraHeaderLines: [UInt8], connectTimeoutNs: UInt64, sourceAddresses: [UInt32]) {
        self.totalClients = totalClients; self.globalIndices = globalIndices; self.connectRate = connectRate; self.spec = spec
        self.address = address; self.host = host; self.port = port; self.basePath = basePath; self.token = token
        self.extraHeaderLines = extraHeaderLines; self.connectTimeoutNs = connectTimeoutNs; self.sourceAddresses = sourceAddresses
    }
}

/// ETag-polling REST clients for one event loop.
///
/// Each client polls each resource on an open-model schedule: poll n of resource r is intended
/// at `start + offset + n × interval`, and its latency counts from then, however late it went
/// out. A client holds up to `pool` keep-alive connections, one request in flight on each; a
/// poll that falls due while they are all busy waits for the next one free. The last ETag of
/// every (client, resource) goes back as `If-None-Match`. Answers go to the resource's
/// processors by status, in order, as in the JSONSession model.
public final class RestClients: EventLoopHandler, LoopWorkload, @unchecked Sendable {
    enum ConnectionState: UInt8 { case none, connecting, idle, busy }

    /// One keep-alive connection of a client's pool.
    struct Connection {
        var id = ConnectionID(index: .max, generation: 0)
        var state = ConnectionState.none
        var epoch: UInt32 = 0
        var parser = HTTPResponseParser()
        var connectStartNs: UInt64 = 0
        /// The poll in flight: (client, resource) slot, its intended and actual send times.
        var slot = -1
        var intendedNs: UInt64 = 0
        var sentNs: UInt64 = 0
        var redirectsLeft = 0
        /// The answer so far: status, ETag, change time, Retry-After, the redirect target.
        var status = 0
        var etag: [UInt8] = []
        var changedAt: Double? = nil
        var retryAfterSeconds: Double? = nil
        var location: [UInt8] = []
        var closeAfter = false
        var responseBytes = 0
        /// Body bytes, kept only when a processor or the staleness field needs them.
        var body: [UInt8] = []
        var keepBody = false
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
    var phase: ChatWorkload.Phase = .idle
    var messagesEndNs: UInt64 = 0
    var stormBook = StormBook()
    public var storms: [StormShard] { stormBook.shards }
    public private(set) var openCount = 0
    public private(set) var inFlightConnects = 0
    public private(set) var notYetStarted: Int
    public private(set) var totalOutstanding: UInt64 = 0
    public var reconnectingCount: Int { 0 }

    enum TimerKind: UInt8 { case connect = 1, poll = 2, firstByte = 3, response = 4, stallEnd = 5 }

    public init(loop: EventLoop, plan: RestPlan, random: FastRandom) {
        self.loop = loop
        self.plan = plan
        self.random = random
        let n = plan.globalIndices.count
        resourceCount = plan.spec.resources.count
        poolSize = plan.spec.poolSize
        clients = Array(repeating: Client(), count: n)
        connections = Array(repeating: Connection(), count: n * poolSize)
        polls = Array(repeating: Poll(), count: n * resourceCount)
        etags = Array(repeating: 0, count: n * resourceCount * Self.maxETagBytes)
        notYetStarted = n
        requestLines = plan.spec.resources.map { Array("GET \(plan.basePath)\($0.path) HTTP/1.1\r\n".utf8) }
        let host = HTTPClientRequest.hostValue(host: plan.host, port: plan.port, defaultPort: 80)
        var headers = Array("Host: ".utf8) + host + Array("\r\nAccept: application/json\r\nUser-Agent: stampede\r\n".utf8)
        if let token = plan.token { headers += Array("Authorization: Bearer \(token)\r\n".utf8) }
        commonHeaders = headers + plan.extraHeaderLines
        if case .header(let h)? = plan.spec.staleness { stalenessHeader = Array(h.utf8) } else { stalenessHeader = nil }
        if case .field(let f)? = plan.spec.staleness { stalenessField = Array(f.utf8) } else { stalenessField = nil }
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

    public func dropConnections(fraction: Double) {
        storm(index: -1, atNs: EventLoop.now(), fraction: fraction, mode: .reset, stallNs: 0)
    }

    public func watch(index: Int, atNs: UInt64) { stormBook.watch(index: index, atNs: atNs) }

    /// A storm drops every connection of `fraction` of the clients that have one; they are
    /// back when their next poll has a connection again.
    public func storm(index: Int, atNs: UInt64, fraction: Double, mode: StormMode, stallNs: UInt64) {
        if index >= 0 { watch(index: index, atNs: atNs) }
        for k in clients.indices where clients[k].openConnections > 0 && !clients[k].stopped {
            guard random.unit() < fraction else { continue }
            if index >= 0 { stormBook.hit(&clients[k].storm, storm: index) }
            for c in k * poolSize..<(k + 1) * poolSize where connections[c].state == .idle || connections[c].state == .busy {
                switch mode {
                case .reset, .close:
                    if connections[c].state == .busy { loseInFlight(c, .connectionClosed) }
                    closeConnection(c, reset: mode == .reset)
                case .stall:
                    loop.pauseReading(connections[c].id, true)
                    loop.schedule(at: atNs + stallNs, token: token(.stallEnd, c, epoch: connections[c].epoch))
                }
            }
        }
    }

    /// Churn does not apply: a REST client holds no session to leave.
    public func churn(count: Int) -> Int { 0 }

    // MARK: Scheduling

    @inline(__always) func token(_ kind: TimerKind, _ index: Int, epoch: UInt32 = 0) -> TimerToken {
        TimerToken(kind, slot: index, epoch: epoch)
    }

    func schedulePoll(_ q: Int, at t: UInt64) {
        guard t < messagesEndNs else { return }
        loop.schedule(at: t, token: token(.poll, q, epoch: UInt32(polls[q].epoch)))
    }

    @inline(__always) func intended(_ q: Int, _ sequence: UInt32) -> UInt64 {
        polls[q].scheduleStartNs + UInt64(sequence) * polls[q].intervalNs
    }

    /// Restarts resource `q`'s schedule at `t` with its current interval (a processor changed
    /// it, or a rate limit ends): what was due and not sent is dropped from the schedule.
    func restartSchedule(_ q: Int, at t: UInt64) {
        polls[q].epoch &+= 1
        polls[q].scheduleStartNs = t
        polls[q].nextSequence = 0
        polls[q].dueSequence = 0
        if phase == .messages { schedulePoll(q, at: t) }
    }

    public func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {
        let index = token.index
        let epoch = token.epoch
        let kind = token.kind(as: TimerKind.self)
        switch kind {
        case .connect:
            notYetStarted -= 1
            guard phase == .rampUp else { return }
            clients[index].started = true
            openConnection(index * poolSize)
        case .poll:
            let q = index
            guard UInt32(polls[q].epoch) == epoch, phase == .messages, !polls[q].stopped else { return }
            let k = q / resourceCount
            // A schedule this far behind has long stopped meaning anything; end it rather than trap.
            guard !clients[k].stopped, polls[q].dueSequence < UInt32.max else { return }
            polls[q].dueSequence += 1
            if plan.loadModel == .open { schedulePoll(q, at: intended(q, polls[q].dueSequence)) }
            dispatch(k)
        case .firstByte, .response:
            let c = index
            guard connections[c].epoch == epoch, connections[c].state == .busy else { return }
            if kind == .firstByte && connections[c].status != 0 {
                let wholeDeadline = connections[c].sentNs + nanoseconds(plan.spec.responseTimeoutSeconds)
                if deadline < wholeDeadline {
                    loop.schedule(at: wholeDeadline, token: self.token(.response, c, epoch: connections[c].epoch))
                    return
                }
            }
            metrics.error(.responseTimeout)
            loseInFlight(c, .timedOut)
            closeConnection(c, reset: true)
            dispatch(c / poolSize)
        case .stallEnd:
            let c = index
            guard connections[c].epoch == epoch, connections[c].state != .none, loop.isReadingPaused(connections[c].id) else { return }
            loop.pauseReading(connections[c].id, false)
            stormBook.recovered(&clients[c / poolSize].storm, nowNs: EventLoop.now())
        case nil:
            break
        }
    }

    /// Sends what is due for client `k` on its idle connections, oldest intended time first,
    /// opening another pooled connection when every open one is busy.
    func dispatch(_ k: Int) {
        guard !clients[k].stopped, phase == .messages || phase == .draining else { return }
        let now = EventLoop.now()
        while true {
            var best = -1
            var bestAt = UInt64.max
            for r in 0..<resourceCount {
                let q = k * resourceCount + r
                let p = polls[q]
                guard !p.inFlight, !p.stopped, p.dueSequence > p.nextSequence, p.resumeAtNs <= now else { continue }
                let at = intended(q, p.nextSequence)
                if at < bestAt { best = q; bestAt = at }
            }
            guard best >= 0 else { return }
            var idle = -1
            var free = -1
            for c in k * poolSize..<(k + 1) * poolSize {
                if connections[c].state == .idle { idle = c; break }
                if connections[c].state == .none && free < 0 { free = c }
            }
            if idle < 0 {
                let connecting = (k * poolSize..<(k + 1) * poolSize).contains { connections[$0].state == .connecting }
                if free >= 0 && !connecting { openConnection(free) }
                return
            }
            send(best, on: idle, intendedNs: bestAt, target: nil)
        }
    }

    // MARK: Requests

    func send(_ q: Int, on c: Int, intendedNs: UInt64, target: [UInt8]?) {
        let r = q % resourceCount
        let etagLength = Int(polls[q].etagLength)
        let line = requestLines[r]
        let total = (target.map { $0.count + 16 } ?? line.count) + commonHeaders.count + (etagLength > 0 ? etagLength + 17 : 0) + 2
        loop.write(connections[c].id, reserving: total) { out in
            var n = 0
            @inline(__always) func put(_ bytes: UnsafeRawBufferPointer) {
                (out + n).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
                n += bytes.count
            }
            if let target {
                Self.get.withUnsafeBytes(put)
                target.withUnsafeBytes(put)
                Self.http11.withUnsafeBytes(put)
            } else {
                line.withUnsafeBytes(put)
            }
            commonHeaders.withUnsafeBytes(put)
            if etagLength > 0 {
                Self.ifNoneMatch.withUnsafeBytes(put)
                etags.withUnsafeBytes { put(UnsafeRawBufferPointer(rebasing: $0[q * Self.maxETagBytes..<q * Self.maxETagBytes + etagLength])) }
                out.storeBytes(of: 0x0A0D, toByteOffset: n, as: UInt16.self); n += 2
            }
            out.storeBytes(of: 0x0A0D, toByteOffset: n, as: UInt16.self); n += 2
            metrics.count(.bytesSent, UInt64(n))
            return n
        }
        let now = EventLoop.now()
        if target == nil {
            polls[q].nextSequence += 1
            polls[q].inFlight = true
            metrics.count(.messagesSent)
            totalOutstanding += 1
            connections[c].redirectsLeft = plan.spec.maxRedirects
        }
        connections[c].state = .busy
        connections[c].slot = q
        connections[c].intendedNs = intendedNs
        connections[c].sentNs = now
        connections[c].status = 0
        connections[c].responseBytes = 0
        connections[c].changedAt = nil
        connections[c].retryAfterSeconds = nil
        connections[c].etag.removeAll(keepingCapacity: true)
        connections[c].body.removeAll(keepingCapacity: true)
        connections[c].location.removeAll(keepingCapacity: true)
        // One timer per request: the first-byte deadline, which becomes the whole-response
        // deadline if the head has arrived by then (a heap entry costs as much as the rest).
        let firstByte = nanoseconds(plan.spec.firstByteTimeoutSeconds), whole = nanoseconds(plan.spec.responseTimeoutSeconds)
        loop.schedule(at: now + min(firstByte, whole), token: token(.firstByte, c, epoch: connections[c].epoch))
    }

    // MARK: Connections

    func openConnection(_ c: Int) {
        let k = c / poolSize
        connections[c].epoch &+= 1
        connections[c].parser.reset()
        metrics.count(.connectAttempts)
        stormBook.attempt(&clients[k].storm, nowNs: EventLoop.now())
        let source = plan.sourceAddresses.isEmpty ? nil : plan.sourceAddresses[c % plan.sourceAddresses.count]
        switch loop.connect(to: plan.address, from: source, timeoutNs: plan.connectTimeoutNs) {
        case .success(let id):
            connections[c].id = id
            connections[c].state = .connecting
            connections[c].connectStartNs = EventLoop.now()
            inFlightConnects += 1
            bind(id, c)
        case .failure(let e):
            metrics.count(.connectFailed)
            metrics.error(.connectFailure(e.errno))
        }
    }

    func bind(_ id: ConnectionID, _ c: Int) {
        let i = Int(id.index)
        if i >= slotConnection.count { slotConnection.append(contentsOf: repeatElement(-1, count: i + 1 - slotConnection.count + 64)) }
        slotConnection[i] = Int32(c)
    }

    @inline(__always) func owner(_ id: ConnectionID) -> Int? {
        let i = Int(id.index)
        guard i < slotConnection.count, slotConnection[i] >= 0 else { return nil }
        let c = Int(slotConnection[i])
        return connections[c].id == id && connections[c].state != .none ? c : nil
    }

    public func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {
        guard let c = owner(id) else { return }
        let k = c / poolSize
        inFlightConnects -= 1
        guard error == 0 else {
            connections[c].state = .none
            metrics.count(.connectFailed)
            metrics.error(.connectFailure(error))
            return
        }
        metrics.record(.tcpConnect, nanoseconds: EventLoop.now() - connections[c].connectStartNs)
        metrics.count(.connected)
        connections[c].state = .idle
        if clients[k].openConnections == 0 { openCount += 1 }
        clients[k].openConnections += 1
        stormBook.recovered(&clients[k].storm, nowNs: EventLoop.now())
        dispatch(k)
    }

    public func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) { loop.close(id) }

    /// Closes connection `c` (its request, if any, already accounted for).
    func closeConnection(_ c: Int, reset: Bool) {
        guard connections[c].state != .none else { return }
        loop.close(connections[c].id, reset: reset)
        connectionGone(c)
    }

    func connectionGone(_ c: Int) {
        let k = c / poolSize
        if connections[c].state == .connecting { inFlightConnects -= 1 }
        if connections[c].state == .idle || connections[c].state == .busy {
            clients[k].openConnections -= 1
            if clients[k].openConnections == 0 { openCount -= 1 }
            metrics.count(.disconnected)
            if phase == .messages || phase == .draining { stormBook.dropped(&clients[k].storm) }
        }
        connections[c].state = .none
        connections[c].epoch &+= 1
        connections[c].slot = -1
    }

    func loseInFlight(_ c: Int, _ reason: LossReason) {
        let q = connections[c].slot
        guard q >= 0, connections[c].state == .busy else { return }
        polls[q].inFlight = false
        metrics.lose(reason)
        totalOutstanding -= 1
        connections[c].slot = -1
    }

    public func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {
        guard let c = owner(id) else { return }
        if connections[c].state == .busy {
            if let event = connections[c].parser.endOfStream(), event == .end {
                // A read-until-close body ended with the connection: the answer is complete.
                connections[c].closeAfter = true
                finish(c)
                if connections[c].state == .none { return }
            } else {
                metrics.error(reason == .endOfFile ? .unexpectedEOF : .connectionReset)
                loseInFlight(c, .connectionClosed)
            }
        }
        connectionGone(c)
        dispatch(c / poolSize)
    }

    public func writable(_ id: ConnectionID, loop: EventLoop) {}

    // MARK: Responses

    public func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        guard let c = owner(id) else { return buffer.count }
        metrics.count(.bytesReceived, UInt64(buffer.count))
        let bytes = UnsafeRawBufferPointer(buffer)
        guard connections[c].state == .busy else {
            // Bytes with no request outstanding: the server is not speaking HTTP to us.
            metrics.error(.protocolError)
            closeConnection(c, reset: true)
            return bytes.count
        }
        var offset = 0
        while true {
            let (event, used) = connections[c].parser.next(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            let view = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            offset += used
            connections[c].responseBytes += used
            if connections[c].responseBytes > plan.spec.maxResponseBytes {
                metrics.error(.messageTooBig)
                loseInFlight(c, .connectionClosed)
                closeConnection(c, reset: true)
                dispatch(c / poolSize)
                return bytes.count
            }
            switch event {
            case .needMore:
                return offset
            case .error:
                metrics.error(.protocolError)
                loseInFlight(c, .connectionClosed)
                closeConnection(c, reset: true)
                dispatch(c / poolSize)
                return bytes.count
            case .head(let head):
                readHead(c, head, view)
            case .body(let r):
                if connections[c].keepBody { connections[c].body.append(contentsOf: view[r]) }
            case .end:
                finish(c)
                // `finish` may have closed this connection, or sent the next request on it (whose
                // answer cannot be in these bytes yet).
                guard connections[c].id == id, connections[c].state != .none else { return bytes.count }
                if connections[c].state != .busy { return offset }
            }
        }
    }

    /// Reads the fields the client acts on, in one walk over the header lines (a lookup per
    /// field would scan the head five times per answer).
    func readHead(_ c: Int, _ head: HTTPResponseHead, _ buffer: UnsafeRawBufferPointer) {
        connections[c].status = head.status
        connections[c].closeAfter = head.connectionClose
        let q = connections[c].slot
        let wantsLocation = isRedirect(head.status) && connections[c].redirectsLeft > 0
        for field in head.headerFields(in: buffer) {
            let value = UnsafeRawBufferPointer(rebasing: buffer[field.value])
            if let name = stalenessHeader, name.withUnsafeBytes({ HTTPFieldValue.equalsIgnoringCase($0, in: buffer, field.name) }) {
                connections[c].changedAt = JSONFields.decimal(value)
                continue
            }
            switch field.name.count {
            case 4 where HTTPFieldValue.equalsIgnoringCase("ETag", in: buffer, field.name):
                if field.value.count <= Self.maxETagBytes { connections[c].etag.append(contentsOf: value) }
            case 8 where wantsLocation && HTTPFieldValue.equalsIgnoringCase("Location", in: buffer, field.name):
                connections[c].location.append(contentsOf: value)
            case 11 where HTTPFieldValue.equalsIgnoringCase("Retry-After", in: buffer, field.name):
                metrics.count(.retryAfterSeen)
                // Seconds only: the HTTP-date form waits one interval instead.
                if let s = JSONFields.decimal(value), s >= 0 {
                    connections[c].retryAfterSeconds = s
                    metrics.retryAfterMaxSeconds = max(metrics.retryAfterMaxSeconds, UInt64(s.rounded(.up)))
                }
            case 21 where HTTPFieldValue.equalsIgnoringCase("X-RateLimit-Remaining", in: buffer, field.name):
                metrics.count(.rateLimitHeadersSeen)
                if let v = JSONFields.decimal(value), v >= 0 { metrics.rateLimitRemainingMin = min(metrics.rateLimitRemainingMin, UInt64(v)) }
            default:
                break
            }
        }
        // Keep the body only when something will read it.
        let r = q >= 0 ? q % resourceCount : 0
        connections[c].keepBody = head.status / 100 == 2 && (stalenessField != nil || needsBody[r])
    }

    @inline(__always) func isRedirect(_ status: Int) -> Bool {
        status == 301 || status == 302 || status == 303 || status == 307 || status == 308
    }

    /// The same-server path a Location names (an absolute path, or an http URL of this host and
    /// port), or nil.
    func sameOriginPath(_ location: [UInt8]) -> [UInt8]? {
        if location.first == UInt8(ascii: "/") { return location }
        let prefix = Array("http://\(plan.host):\(plan.port)".utf8)
        let prefixDefault = plan.port == 80 ? Array("http://\(plan.host)".utf8) : prefix
        for p in [prefix, prefixDefault] where location.count > p.count && location.starts(with: p) {
            let rest = Array(location[p.count...])
            if rest.first == UInt8(ascii: "/") { return rest }
        }
        return nil
    }

    /// A whole answer arrived: follow a redirect, or offer it to the processors.
    func finish(_ c: Int) {
        let q = connections[c].slot
        let k = c / poolSize
        guard q >= 0 else { return }
        let status = connections[c].status
        let now = EventLoop.now()
        if isRedirect(status), connections[c].redirectsLeft > 0, let path = sameOriginPath(connections[c].location) {
            metrics.count(.redirectsFollowed)
            metrics.responseStatuses[status, default: 0] &+= 1
            connections[c].redirectsLeft -= 1
            let left = connections[c].redirectsLeft
            if connections[c].closeAfter {
                // The follow-up needs a new connection: count this poll lost rather than stall it.
                metrics.error(.httpStatus)
                loseInFlight(c, .connectionClosed)
                closeConnection(c, reset: false)
                dispatch(k)
                return
            }
            send(q, on: c, intendedNs: connections[c].intendedNs, target: path)
            connections[c].redirectsLeft = left
            return
        }
        let metric: LatencyMetric = switch status / 100 {
        case 2: .http2xx
        case 3: .http3xx
        case 4: .http4xx
        default: .http5xx
        }
        metrics.record(metric, nanoseconds: now &- connections[c].intendedNs)
        metrics.record(.httpUncorrected, nanoseconds: now &- connections[c].sentNs)
        metrics.responseStatuses[status, default: 0] &+= 1
        polls[q].inFlight = false
        totalOutstanding -= 1
        connections[c].slot = -1
        connections[c].state = .idle
        connections[c].epoch &+= 1  // the request's timeouts no longer apply
        process(q, c, status: status, now: now)
        if plan.loadModel == .closed && !polls[q].stopped && !clients[k].stopped && polls[q].resumeAtNs <= now {
            restartSchedule(q, at: now + plan.thinkTimeNs)
        }
        if (connections[c].closeAfter || clients[k].stopped) && connections[c].state != .none { closeConnection(c, reset: false) }
        dispatch(k)
    }

    /// Offers the answer to the resource's processors whose statuses include it, in order.
    func process(_ q: Int, _ c: Int, status: Int, now: UInt64) {
        let k = q / resourceCount
        let r = q % resourceCount
        let processors = plan.spec.resources[r].processors
        for (i, p) in processors.enumerated() where p.statuses.contains(status) {
            if p.meaning == .changed && !fieldKeys[r][i].isEmpty {
                let ok = connections[c].body.withUnsafeBytes { JSONFields.objectHasKeys($0, fieldKeys[r][i]) }
                guard ok else { continue }
            }
            switch p.meaning {
            case .changed:
                metrics.count(.messagesDelivered)
                metrics.count(.changed)
                changed(q, c)
            case .unchanged:
                metrics.count(.messagesDelivered)
                if status == 304 { metrics.count(.notModified) }
            case .rateLimited:
                metrics.count(.messagesFailed)
                let wait = connections[c].retryAfterSeconds ?? Double(polls[q].intervalNs) / 1e9
                polls[q].resumeAtNs = now + nanoseconds(wait)
                restartSchedule(q, at: polls[q].resumeAtNs)
            case .authFailure:
                metrics.count(.messagesFailed)
                stopClient(k)
                return
            }
            if let interval = p.newIntervalSeconds, nanoseconds(interval) != polls[q].intervalNs {
                polls[q].intervalNs = nanoseconds(interval)
                restartSchedule(q, at: now + polls[q].intervalNs)
            }
            if p.stops {
                polls[q].stopped = true
                if (0..<resourceCount).allSatisfy({ polls[k * resourceCount + $0].stopped }) { stopClient(k) }
            }
            return
        }
        metrics.count(.messagesFailed)
        metrics.count(.unprocessed)
    }

    /// A new representation: remember its ETag; if it replaces one seen before, how long the
    /// change took to reach this client is its staleness.
    func changed(_ q: Int, _ c: Int) {
        var changedAt = connections[c].changedAt
        if let field = stalenessField {
            changedAt = connections[c].body.withUnsafeBytes { JSONFields.number($0, key: field) }
        }
        let etag = connections[c].etag
        let base = q * Self.maxETagBytes
        let old = Int(polls[q].etagLength)
        let same = old == etag.count && etags.withUnsafeBytes { e in etag.withUnsafeBytes { n in memcmp(e.baseAddress! + base, n.baseAddress!, old) == 0 } }
        if polls[q].seenRepresentation && !same, let changedAt {
            var ts = timespec()
            clock_gettime(CLOCK_REALTIME, &ts)
            let wall = Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
            if wall >= changedAt { metrics.record(.staleness, nanoseconds: nanoseconds((wall - changedAt))) }
        }
        polls[q].seenRepresentation = true
        if !etag.isEmpty {
            for (i, b) in etag.enumerated() { etags[base + i] = b }
        }
        polls[q].etagLength = UInt8(etag.count)
    }

    /// Auth failure (or every resource stopped): the client polls no more and lets go of its
    /// connections.
    func stopClient(_ k: Int) {
        guard !clients[k].stopped else { return }
        clients[k].stopped = true
        metrics.count(.clientsStopped)
        for r in 0..<resourceCount { polls[k * resourceCount + r].stopped = true }
        for c in k * poolSize..<(k + 1) * poolSize where connections[c].state != .none {
            if connections[c].state == .busy { continue }  // its answer is still counted when it comes
            closeConnection(c, reset: false)
        }
    }
}
