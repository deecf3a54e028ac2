import StampedeLoop
import StampedeWire
import Synchronization

/// Why a `MetricsEndpoint` could not start.
public enum MetricsEndpointError: Error, Sendable, CustomStringConvertible {
    case listen(LoopError)

    public var description: String {
        switch self {
        case .listen(let e): "metrics endpoint: \(e)"
        }
    }
}

/// The live metrics endpoint: `GET /metrics` answers the latest `LiveSnapshot` as OpenMetrics
/// text (or the 0.0.4 text format for a client that asks for text/plain only, see
/// `ExpositionFormat`); any other path is a 404, any other method a 405.
///
/// It runs on an event loop and thread of its own, so a scrape never waits for, or slows, the
/// client loops, and it is bounded in every way a client could push it, unlike a bare
/// accept-and-read server: at most `Limits.maxConnections` connections at once (more are
/// answered 503 and closed), request heads of at most `maxHeadBytes` (a larger one is a 400),
/// no request bodies (a 400), `requestTimeout` for a request to arrive whole after the
/// connection opened or its last answer went out (then the connection is closed), at most
/// `maxRequestsPerConnection` keep-alive requests, and the loop's send timeout and output cap
/// for a client that does not read its answers.
public final class MetricsEndpoint: EventLoopHandler, @unchecked Sendable {
    public struct Limits: Sendable {
        public var maxConnections = 16
        public var maxHeadBytes = 8 * 1024
        public var requestTimeoutNs: UInt64 = 10_000_000_000
        public var maxRequestsPerConnection = 1000
        public var sendTimeoutNs: UInt64 = 10_000_000_000
        public var maxQueuedBytes = 4 << 20
        public init() {}
    }

    /// The address the endpoint listens on, with the bound port (useful with port 0).
    public let address: SocketAddress
    public let limits: Limits
    let loop: EventLoop

    struct Shared {
        var snapshot: LiveSnapshot
        /// A run of several populations: the latest snapshot of each other series, by its key
        /// (`update(_:series:)`); `snapshot` is the first series'.
        var others: [String: LiveSnapshot] = [:]
        var firstSeries: String? = nil
        var version: UInt64 = 0

        /// Every series, the first first, the others by key.
        var all: [LiveSnapshot] { [snapshot] + others.keys.sorted().compactMap { others[$0] } }
    }
    let shared: Mutex<Shared>

    struct Client {
        var parser: HTTPRequestParser
        var method: HTTPMethod?
        var path = ""
        var format = ExpositionFormat.openMetrics
        var close = false
        var hasBody = false
        var requests = 0
    }
    /// Loop thread only.
    var clients: [ConnectionID: Client] = [:]
    /// The last rendering (loop thread only): scrapes between two updates reuse it.
    var cached: (version: UInt64, format: ExpositionFormat, body: [UInt8])?

    /// Deadline tag for `requestTimeoutNs`.
    static let requestTag: UInt8 = 1

    /// Starts listening on `address` (port 0 picks a free port) on a new loop thread, showing
    /// `snapshot` until `update(_:)` replaces it.
    public init(address: SocketAddress, snapshot: LiveSnapshot, limits: Limits = Limits()) throws(MetricsEndpointError) {
        self.limits = limits
        shared = Mutex(Shared(snapshot: snapshot))
        do { loop = try EventLoop(index: 0) } catch { throw .listen(error) }
        switch loop.listen(on: address, backlog: 64) {
        case .success(let (_, p)): self.address = address.with(port: p)
        case .failure(let e): throw .listen(e)
        }
        // The sweep that enforces deadlines and send timeouts runs every 100 ms.
        loop.limits = ConnectionLimits(maxQueuedBytes: limits.maxQueuedBytes, sendTimeoutNs: limits.sendTimeoutNs, sweepIntervalNs: 100_000_000)
        loop.handler = self
        loop.start(name: "stampede-metric")
    }

    /// `http://HOST:PORT/metrics` (an IPv6 host in brackets).
    public var url: String {
        let host = address.isIPv6 ? "[\(address.hostText)]" : address.hostText
        return "http://\(host):\(address.port)/metrics"
    }

    /// Replaces what scrapes see (any thread; cheap: the rendering happens at the next scrape).
    public func update(_ snapshot: LiveSnapshot) {
        shared.withLock {
            $0.snapshot = snapshot
            $0.version &+= 1
        }
    }

    /// Replaces one series of several (a population's): scrapes see every series' latest
    /// snapshot, each with its own labels.
    public func update(_ snapshot: LiveSnapshot, series: String) {
        shared.withLock {
            if $0.firstSeries == nil { $0.firstSeries = series }
            if $0.firstSeries == series { $0.snapshot = snapshot } else { $0.others[series] = snapshot }
            $0.version &+= 1
        }
    }

    /// The latest snapshot.
    public var snapshot: LiveSnapshot { shared.withLock { $0.snapshot } }

    /// Closes the listener and every connection and waits for the loop's thread (call once,
    /// from any thread but that loop's).
    public func stop() {
        loop.stop()
        loop.join()
    }

    // MARK: EventLoopHandler

    public func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) {
        guard clients.count < limits.maxConnections else {
            reply(id, status: 503, reason: "Service Unavailable", text: "too many connections to the metrics endpoint\n", close: true)
            return
        }
        clients[id] = Client(parser: HTTPRequestParser(maxHeadBytes: limits.maxHeadBytes))
        loop.setDeadline(id, at: loop.wakeTime &+ limits.requestTimeoutNs, tag: Self.requestTag)
    }

    public func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        guard var client = clients[id] else { return buffer.count }  // answered and closing
        let all = UnsafeRawBufferPointer(buffer)
        var offset = 0
        while offset <= all.count {
            let rest = UnsafeRawBufferPointer(rebasing: all[offset...])
            let (event, consumed) = client.parser.next(rest)
            offset += consumed
            switch event {
            case .needMore:
                clients[id] = client
                return offset
            case .head(let head):
                client.method = head.method
                client.path = String(decoding: UnsafeRawBufferPointer(rebasing: rest[head.path(in: rest)]), as: UTF8.self)
                let accept = head.value(forHeader: "accept", in: rest).map {
                    String(decoding: UnsafeRawBufferPointer(rebasing: rest[$0]), as: UTF8.self)
                }
                client.format = ExpositionFormat.negotiate(accept: accept)
                client.close = head.connectionClose
                switch head.body {
                case .none, .length(0): client.hasBody = false
                default: client.hasBody = true
                }
                if client.hasBody {
                    // No endpoint takes a body: answer before reading one, then close.
                    clients[id] = nil
                    reply(id, status: 400, reason: "Bad Request", text: "the metrics endpoint takes no request body\n", close: true)
                    return all.count
                }
            case .body:
                break
            case .end:
                client.requests += 1
                let close = client.close || client.requests >= limits.maxRequestsPerConnection
                answer(id, client, close: close)
                if close {
                    clients[id] = nil
                    return all.count
                }
                loop.setDeadline(id, at: loop.wakeTime &+ limits.requestTimeoutNs, tag: Self.requestTag)
            case .error:
                clients[id] = nil
                reply(id, status: 400, reason: "Bad Request", text: "malformed or oversized HTTP request\n", close: true)
                return all.count
            }
        }
        clients[id] = client
        return offset
    }

    public func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {
        clients[id] = nil
    }

    public func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {}
    public func writable(_ id: ConnectionID, loop: EventLoop) {}
    public func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {}

    // MARK: Answers

    func answer(_ id: ConnectionID, _ client: Client, close: Bool) {
        guard client.path == "/metrics" else {
            return reply(id, status: 404, reason: "Not Found", text: "not found; the metrics are at /metrics\n", close: close)
        }
        guard client.method == .get || client.method == .head else {
            return reply(id, status: 405, reason: "Method Not Allowed", text: "use GET\n", close: close, allow: true)
        }
        let (snapshots, version) = shared.withLock { ($0.all, $0.version) }
        let body: [UInt8]
        if let c = cached, c.version == version, c.format == client.format {
            body = c.body
        } else {
            body = Array(OpenMetricsText.render(snapshots, format: client.format).utf8)
            cached = (version, client.format, body)
        }
        write(id, status: 200, reason: "OK", contentType: client.format.contentType, body: body,
              sendBody: client.method != .head, close: close, allow: false)
    }

    func reply(_ id: ConnectionID, status: Int, reason: StaticString, text: String, close: Bool, allow: Bool = false) {
        write(id, status: status, reason: reason, contentType: "text/plain; charset=utf-8", body: Array(text.utf8),
              sendBody: true, close: close, allow: allow)
    }

    func write(_ id: ConnectionID, status: Int, reason: StaticString, contentType: StaticString, body: [UInt8],
               sendBody: Bool, close: Bool, allow: Bool) {
        let extra = Array(((allow ? "Allow: GET, HEAD\r\n" : "") + "Cache-Control: no-store\r\n").utf8)
        let room = 512 + extra.count + body.count
        loop.write(id, reserving: room) { p in
            let out = UnsafeMutableRawBufferPointer(start: p, count: room)
            guard let n = extra.withUnsafeBytes({
                HTTPResponseWriter.writeHead(into: out, status: status, reason: reason, contentType: contentType,
                                             body: .length(body.count), connectionClose: close, extraHeaderLines: $0)
            }) else { return 0 }
            guard sendBody, !body.isEmpty else { return n }
            body.withUnsafeBytes { (p + n).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            return n + body.count
        }
        if close { loop.closeAfterFlush(id) }
    }
}
