import StampedeLoop
import StampedeWire
#if canImport(Glibc)
import Glibc
#endif

/// The reference REST target for ETag polling (the `rest` workload) on Stampede's own event loop:
/// resources whose versions change at a steady rate, served with strong ETags, conditional GET,
/// optional bearer auth and an optional GitHub-style rate limit. Tests/peers/rest_server.py
/// implements the same contract in Python.
///
/// - Every path equal to or under `configuration.path` (`/api`, `/api/items`, `/api/users/7`) is
///   a resource; the query string is ignored. At most `maxResources` distinct paths are kept;
///   a new path beyond that, and any other path, gets 404. Methods other than GET/HEAD get 405.
/// - version = ⌊(now − start) × changeRate⌋ (0 when the rate is 0), ETag `"v<version>"`, and
///   `X-Changed-At` the Unix time (µs) the version began: start + version / changeRate.
/// - With a token, every request needs `Authorization: Bearer <token>` (scheme in any case),
///   else 401 with `WWW-Authenticate: Bearer`.
/// - `If-None-Match` naming the current ETag (or `*`; `W/` compares weakly) → 304, no body.
/// - With a rate limit of N: only would-be 200s count, in one-second windows on the server's
///   clock; the (N+1)-th gets 429 with Retry-After. 200, 304 and 429 carry `X-RateLimit-*`.
/// - 200: a JSON body `{"path","version","changed_at","data"}` padded to about `bodySize`
///   bytes, with Content-Length or (`chunked`) Transfer-Encoding: chunked.
///
/// Requests are answered in order as soon as their head is parsed (pipelining works; a request
/// body, unusual for GET, is read and ignored). Nothing is allocated per request once a path is
/// known: the head is built in a reused scratch buffer and the body straight into the write queue.
///
/// Faults (`apply(_:)`): drop every connection (RST or FIN), answer every request 503 for a
/// while, or hang the loop. Everything runs on the loop thread; `statisticsSnapshot()` and
/// `apply(_:)` (through `loop.execute`) are the ways in from other threads.
public final class RestServer: EventLoopHandler, FaultTarget, @unchecked Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Base path: itself and every path under it are resources.
        public var path: String = "/api"
        /// Version changes per second, for every resource (0: never changes).
        public var changeRate: Double = 1
        /// When set, requests need `Authorization: Bearer <token>`.
        public var token: String? = nil
        /// When set, at most this many 200s per one-second window, whole server.
        public var rateLimit: Int? = nil
        /// About how large a 200's JSON body is (0…`RestServer.maxBodySize`).
        public var bodySize: Int = 256
        /// Frame 200 bodies with Transfer-Encoding: chunked instead of Content-Length.
        public var chunked: Bool = false
        /// Output limit and timeouts (see `ServerLimits`).
        public var limits = ServerLimits()
        /// The Unix time versions count from (nil: when the server starts). The server
        /// processes of `stampede serve --processes` share their supervisor's, so a client
        /// whose connections land on different processes sees one version sequence.
        public var versionEpoch: Double? = nil

        public init(path: String = "/api", changeRate: Double = 1, token: String? = nil, rateLimit: Int? = nil,
                    bodySize: Int = 256, chunked: Bool = false, limits: ServerLimits = ServerLimits()) {
            self.limits = limits
            self.path = path
            self.changeRate = changeRate
            self.token = token
            self.rateLimit = rateLimit
            self.bodySize = bodySize
            self.chunked = chunked
        }
    }

    public struct Statistics: Sendable, Equatable {
        /// TCP connections accepted, and those open now.
        public var accepted = 0
        public var open = 0
        /// Request heads parsed, and their answers by status.
        public var requests = 0
        public var ok = 0
        public var notModified = 0
        public var unauthorized = 0
        public var rateLimited = 0
        public var notFound = 0
        public var methodNotAllowed = 0
        /// Malformed requests (answered 400, connection closed).
        public var badRequests = 0
        /// Distinct resource paths seen.
        public var resources = 0
        /// Faults applied (`apply(_:)`), connections a drop fault ended, and requests a reject
        /// fault answered with 503.
        public var faultsApplied = 0
        public var connectionsDropped = 0
        public var requestsRejected = 0
        /// Connections the limits closed: slow consumers, header and idle timeouts.
        public var limits = LimitStatistics()
    }

    /// Most distinct resource paths kept; new ones beyond it get 404 (memory stays bounded).
    public static let maxResources = 10_000
    /// Largest `bodySize` accepted (larger is clamped).
    public static let maxBodySize = 16 << 20

    /// The system's wall clock, in Unix seconds.
    public static let systemClock: @Sendable () -> Double = {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    public let loop: EventLoop
    public let configuration: Configuration
    /// The limits in force: the configured ones, with room for the largest answer.
    public let limits: ServerLimits
    public private(set) var port: UInt16 = 0
    public private(set) var statistics = Statistics()

    struct Connection {
        let id: ConnectionID
        var parser = HTTPRequestParser()
    }

    let clock: @Sendable () -> Double
    /// Unix time the versions count from.
    let start: Double
    let changeRate: Double
    let rateLimit: Int?
    let bodySize: Int
    /// The base path without a trailing slash ("" for "/": every path is a resource).
    let basePath: [UInt8]
    let token: [UInt8]?
    /// `bodySize` bytes of padding, copied into bodies.
    let padding: [UInt8]
    var connections: [Connection?] = []
    var resourcePaths: [[UInt8]] = []
    var resourcesByHash: [UInt64: [Int]] = [:]
    var faults = FaultState()
    /// Responses held back by a `delay` fault.
    var delayLine = DelayLine()

    /// Rate-limit window (a Unix second) and the 200s counted in it.
    var window = 0
    var countedInWindow = 0

    /// `"v<version>"` and the changed-at text of `renderedVersion`, re-rendered when it changes.
    var renderedVersion = -1
    let etag = RenderedField()
    let changedAt = RenderedField()
    /// Where a response's extra header lines are built before the head is written.
    let headerLines = UnsafeMutableRawBufferPointer.allocate(byteCount: 1024, alignment: 8)

    /// Creates the server and starts listening on `address` (port 0 picks a free port).
    /// `clock` is the wall clock in Unix seconds; tests pass their own to step versions.
    /// With `tls`, every connection speaks TLS first (https://).
    public init(loop: EventLoop, address: SocketAddress, configuration: Configuration = Configuration(),
                clock: @escaping @Sendable () -> Double = RestServer.systemClock, tls: TLSContext? = nil) throws(LoopError) {
        self.loop = loop
        self.configuration = configuration
        self.clock = clock
        start = configuration.versionEpoch ?? clock()
        changeRate = configuration.changeRate.isFinite && configuration.changeRate > 0 ? configuration.changeRate : 0
        rateLimit = configuration.rateLimit.map { max(1, $0) }
        bodySize = min(max(0, configuration.bodySize), Self.maxBodySize)
        var base = Array(configuration.path.utf8)
        while base.last == 0x2F { base.removeLast() }
        if base.first != 0x2F && !base.isEmpty { base.insert(0x2F, at: 0) }
        basePath = base
        token = configuration.token.map { Array($0.utf8) }
        padding = [UInt8](repeating: 0x78, count: bodySize)
        // Pipelined requests are answered only while the connection is under the high-water
        // mark (see `received`), so its queue never holds more than that plus one answer: a
        // body, its escaped path (≤ 6 × a 16 KiB head) and a head.
        limits = configuration.limits.effective(forLargestWrite: bodySize + 128 * 1024, highWaterMark: loop.configuration.highWaterMark)
        limits.install(on: loop)
        loop.handler = self
        switch loop.listen(on: address, tls: tls) {
        case .success(let (_, p)): port = p
        case .failure(let e):
            headerLines.deallocate()
            throw e
        }
    }

    deinit { headerLines.deallocate() }

    /// Reads the statistics from another thread (via the loop).
    public func statisticsSnapshot() -> Statistics {
        loop.submitAndWait { [self] _ in statisticsNow() }
    }

    /// `statistics` with what the loop counts itself (it does the accepting). On the loop thread.
    func statisticsNow() -> Statistics {
        var s = statistics
        s.limits.acceptRefusals = loop.acceptRefusals
        return s
    }

    /// The version every resource has at Unix time `now`.
    public func version(at now: Double) -> Int {
        guard changeRate > 0 else { return 0 }
        let v = ((now - start) * changeRate).rounded(.down)
        // Clamped so a clock far off (or a huge rate) cannot trap the conversion.
        return v <= 0 ? 0 : Int(min(v, 1e15))
    }

    /// Acts out `fault` (see `TargetFault`). Call on the loop thread: `loop.execute { _ in server.apply(f) }`.
    ///
    /// A drop closes every connection, with RST (`reset`) or FIN after what is queued; a reject
    /// answers every request 503 with Retry-After and closes its connection; a stall blocks the
    /// loop thread, starting after this iteration's output is written. A delay holds every
    /// response (not the 503s of a reject) for its milliseconds, in order.
    public func apply(_ fault: TargetFault) {
        statistics.faultsApplied += 1
        switch fault {
        case .drop(let reset):
            for case let c? in connections {
                statistics.connectionsDropped += 1
                if reset { loop.close(c.id, reset: true) } else { loop.closeAfterFlush(c.id) }
                forget(c.id)
            }
        case .reject(let seconds):
            faults.startRejecting(seconds: seconds)
        case .stall(let seconds):
            FaultState.stall(loop, seconds: seconds)
        case .delay(let microseconds):
            delayLine.set(microseconds: microseconds)
        }
    }

    /// The statistics, the configuration (never the token) and the fault state as one JSON line.
    /// Call on the loop thread.
    public var supportsDelay: Bool { true }

    public func statusJSON() -> String {
        let path = String(decoding: basePath, as: UTF8.self)
        return "{\"server\":\"rest\",\"path\":\"\(path.isEmpty ? "/" : path)\",\"port\":\(port),"
            + "\"rejectingSeconds\":\(faults.rejectingSecondsLeft() ?? 0),"
            // delayMs too (whole ms, rounded down), as the chat server gives it for older readers.
            + "\"delayMs\":\(delayLine.delayNs / 1_000_000),\"delayUs\":\(delayLine.delayNs / 1_000),\"changeRate\":\(changeRate),"
            + "\"rateLimit\":\(rateLimit.map(String.init) ?? "null"),\"auth\":\(token != nil),\"chunked\":\(configuration.chunked),"
            + "\"bodySize\":\(bodySize),\"version\":\(version(at: clock())),"
            + statisticsJSONMembers(statisticsNow()) + "}"
    }

    // MARK: EventLoopHandler

    public func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) {
        let i = Int(id.index)
        if i >= connections.count { connections.append(contentsOf: repeatElement(nil, count: i + 1 - connections.count + 64)) }
        connections[i] = Connection(id: id)
        statistics.accepted += 1
        statistics.open += 1
        limits.awaitRequest(id, loop)
    }

    public func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {}

    public func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {
        statistics.limits.count(reason)
        forget(id)
    }

    public func writable(_ id: ConnectionID, loop: EventLoop) {}

    public func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {
        guard token == Self.delayTimer else { return }
        for action in delayLine.release(loop, token: Self.delayTimer) { action() }
    }

    public func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        let i = Int(id.index)
        guard i < connections.count, connections[i]?.id == id else { return buffer.count }
        var offset = 0
        while true {
            let rest = UnsafeRawBufferPointer(rebasing: buffer[offset...])
            let (event, consumed) = connections[i]!.parser.next(rest)
            switch event {
            case .needMore:
                if connections[i]!.parser.isInsideMessage { limits.requestStarted(id, loop) } else { limits.awaitRequest(id, loop) }
                return offset + consumed
            case .head(let head):
                offset += consumed
                limits.noDeadline(id, loop)
                guard answer(id, head, rest) else { return buffer.count }
                // Like nginx, stop taking pipelined requests while the answers are backed up:
                // the rest waits (then in the kernel, then in the client) and is offered again
                // once they drain. A client that never reads is then dropped by the send timeout.
                if loop.isBackedUp(id) { return offset }
            case .body, .end:
                offset += consumed
            case .error:
                statistics.badRequests += 1
                writeError(id, status: 400, reason: "Bad Request", body: #"{"error":"bad request"}"#, close: true)
                finish(id)
                return buffer.count
            }
        }
    }

    // MARK: Requests

    /// Answers one request; false when its connection is closing (nothing more is read from it).
    func answer(_ id: ConnectionID, _ head: HTTPRequestHead, _ buf: UnsafeRawBufferPointer) -> Bool {
        statistics.requests += 1
        let close = head.connectionClose
        if faults.rejectingUntil != 0, let retryAfter = faults.rejectingSecondsLeft() {
            statistics.requestsRejected += 1
            FaultState.writeUnavailable(loop, id, retryAfter: retryAfter)
            forget(id)
            return false
        }
        let headOnly = head.method == .head
        if let token, !Self.hasBearer(token, head, buf) {
            statistics.unauthorized += 1
            writeError(id, status: 401, reason: "Unauthorized", body: #"{"error":"unauthorized"}"#, headOnly: headOnly,
                       lines: "WWW-Authenticate: Bearer\r\n", close: close)
            return finishIf(close, id)
        }
        let path = UnsafeRawBufferPointer(rebasing: buf[head.path(in: buf)])
        guard isUnderBasePath(path) else {
            statistics.notFound += 1
            writeError(id, status: 404, reason: "Not Found", body: #"{"error":"not found"}"#, headOnly: headOnly, close: close)
            return finishIf(close, id)
        }
        guard head.method == .get || headOnly else {
            statistics.methodNotAllowed += 1
            writeError(id, status: 405, reason: "Method Not Allowed", body: #"{"error":"method not allowed"}"#,
                       lines: "Allow: GET, HEAD\r\n", close: close)
            return finishIf(close, id)
        }
        guard knowResource(path) else {
            statistics.notFound += 1
            writeError(id, status: 404, reason: "Not Found", body: #"{"error":"too many resources"}"#, headOnly: headOnly, close: close)
            return finishIf(close, id)
        }
        let now = clock()
        let version = version(at: now)
        if version != renderedVersion { render(version) }
        if rateLimit != nil { rollWindow(now) }

        if let match = head.value(forHeader: "If-None-Match", in: buf), matchesETag(buf, match) {
            statistics.notModified += 1
            let lines = buildLines { w in
                validatorLines(&w)
                rateLimitLines(&w)
            }
            writeHead(id, status: 304, reason: "Not Modified", contentType: nil, body: .none, close: close, lines: lines)
            return finishIf(close, id)
        }
        if let limit = rateLimit {
            guard countedInWindow < limit else {
                statistics.rateLimited += 1
                let retryAfter = max(1, Int((Double(window + 1) - now).rounded(.up)))
                writeError(id, status: 429, reason: "Too Many Requests", body: #"{"error":"rate limited"}"#, headOnly: headOnly,
                           lines: buildLines { w in
                               w.append("Retry-After: ")
                               w.appendDecimal(retryAfter)
                               w.append("\r\n")
                               rateLimitLines(&w)
                           }, close: close)
                return finishIf(close, id)
            }
            countedInWindow += 1
        }
        statistics.ok += 1
        writeResource(id, path: path, version: version, headOnly: headOnly, chunked: configuration.chunked && head.versionMinor > 0, close: close)
        return finishIf(close, id)
    }

    /// Whether the Authorization field is `Bearer <token>` (scheme in any case, token exact).
    static func hasBearer(_ token: [UInt8], _ head: HTTPRequestHead, _ buf: UnsafeRawBufferPointer) -> Bool {
        guard let v = head.value(forHeader: "Authorization", in: buf), v.count > 7,
              HTTPFieldValue.equalsIgnoringCase("bearer", in: buf, v.lowerBound..<(v.lowerBound + 6)),
              buf[v.lowerBound + 6] == 0x20 || buf[v.lowerBound + 6] == 0x09 else { return false }
        var i = v.lowerBound + 7
        while i < v.upperBound && (buf[i] == 0x20 || buf[i] == 0x09) { i += 1 }
        return HubBytes.equals(UnsafeRawBufferPointer(rebasing: buf[i..<v.upperBound]), token)
    }

    func isUnderBasePath(_ path: UnsafeRawBufferPointer) -> Bool {
        guard path.count >= basePath.count,
              HubBytes.equals(UnsafeRawBufferPointer(rebasing: path[0..<basePath.count]), basePath) else { return false }
        if path.count == basePath.count { return !path.isEmpty }
        return path[basePath.count] == 0x2F
    }

    /// Whether `path` is a known resource, adding it while there is room.
    func knowResource(_ path: UnsafeRawBufferPointer) -> Bool {
        let h = HubBytes.hash(path)
        if let bucket = resourcesByHash[h] {
            for k in bucket where HubBytes.equals(path, resourcePaths[k]) { return true }
        }
        guard resourcePaths.count < Self.maxResources else { return false }
        resourcesByHash[h, default: []].append(resourcePaths.count)
        resourcePaths.append(Array(path))
        statistics.resources = resourcePaths.count
        return true
    }

    /// If-None-Match (RFC 9110 §13.1.2, weak comparison): `*`, or any listed entity-tag whose
    /// opaque part is the current ETag's, `W/` or not.
    func matchesETag(_ buf: UnsafeRawBufferPointer, _ value: Range<Int>) -> Bool {
        var i = value.lowerBound
        let end = value.upperBound
        while i < end {
            let b = buf[i]
            if b == 0x20 || b == 0x09 || b == 0x2C { i += 1; continue }
            if b == 0x2A { return true }  // '*'
            if b == 0x57 && i + 2 < end && buf[i + 1] == 0x2F && buf[i + 2] == 0x22 { i += 2 }  // W/"
            if buf[i] == 0x22 {
                var close = i + 1
                while close < end && buf[close] != 0x22 { close += 1 }
                guard close < end else { return false }
                if etag.equals(UnsafeRawBufferPointer(rebasing: buf[i...close])) { return true }
                i = close + 1
            }
            // Anything else up to the next comma is not an entity-tag.
            while i < end && buf[i] != 0x2C { i += 1 }
        }
        return false
    }

    func rollWindow(_ now: Double) {
        let second = Int(now.rounded(.down))
        if second != window {
            window = second
            countedInWindow = 0
        }
    }

    func render(_ version: Int) {
        renderedVersion = version
        etag.write { w in
            w.append("\"v")
            w.appendDecimal(version)
            w.append("\"")
        }
        let t = changeRate > 0 ? start + Double(version) / changeRate : start
        let micros = max(0, Int((t * 1e6).rounded()))
        changedAt.write { w in
            w.appendDecimal(micros / 1_000_000)
            w.append(".")
            var fraction = micros % 1_000_000
            var divisor = 100_000
            for _ in 0..<6 {
                w.append(byte: UInt8(0x30 + fraction / divisor))
                fraction %= divisor
                divisor /= 10
            }
        }
    }

    // MARK: Connections

    /// After a response: closes the connection once it is written when the request asked to.
    /// Returns whether the connection goes on.
    func finishIf(_ close: Bool, _ id: ConnectionID) -> Bool {
        guard close else { return true }
        finish(id)
        return false
    }

    func finish(_ id: ConnectionID) {
        closeAfterResponses(id)
        forget(id)
    }

    func forget(_ id: ConnectionID) {
        let i = Int(id.index)
        guard i < connections.count, connections[i]?.id == id else { return }
        connections[i] = nil
        statistics.open -= 1
    }
}
