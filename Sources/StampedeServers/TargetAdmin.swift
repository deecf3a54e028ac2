import StampedeLoop
import StampedeWire
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Why a `TargetAdmin` could not start.
public enum TargetAdminError: Error, Sendable, CustomStringConvertible {
    /// The admin endpoint listens on 127.0.0.1 only: anyone who reaches it can break the server.
    case notLocalhost(SocketAddress)
    case listen(LoopError)

    public var description: String {
        switch self {
        case .notLocalhost(let a): "the admin endpoint listens on 127.0.0.1 only, not \(a.description)"
        case .listen(let e): "admin endpoint: \(e)"
        }
    }
}

/// The fault switch of a reference server: a small HTTP/1.1 endpoint on 127.0.0.1 only.
///
/// - `POST /fault/drop?mode=reset|close` (default reset): drop every connection.
/// - `POST /fault/reject?seconds=S`: answer new connections 503 for S seconds.
/// - `POST /fault/stall?seconds=S`: hang the server for S seconds.
/// - `POST /fault/delay?us=N` or `?ms=N` (exactly one): hold every relayed message N µs (0 to
///   10000000) or N ms (0 to 10000); 0 turns it off; chat and REST servers.
/// - `GET /status`: the server's statistics as JSON.
///
/// S is plain decimal (`5`, `0.25`: no sign, exponent, hex, `nan` or `inf`) from 0.001 to 3600.
/// Queries are strict: a key the endpoint does not take, a key given twice, or a pair without
/// `=` is a 400, so a typo never silently means the default.
///
/// Replies are one-line JSON, each on its own connection (`Connection: close`): 200 once the
/// fault is applied, 400 for a bad query, 404 for an unknown path, 405 for a wrong method.
///
/// It runs on its own loop and thread, so it answers even while the server it drives is
/// stalled; but a request made during a stall is answered when the stall ends, since the
/// stalled server can neither act on it nor report. A stall's own reply goes out first.
///
/// A client cannot hold a connection open by sending slowly or not at all (slowloris): its
/// request head must arrive whole within `Limits.headerTimeoutNs` of the connect, and the
/// request may go no longer than `Limits.idleTimeoutNs` without a byte; either closes the
/// connection, counted in `timedOut` and in /status as `adminConnectionsTimedOut`.
public final class TargetAdmin: EventLoopHandler, @unchecked Sendable {
    /// How long a client may take to send its request.
    public struct Limits: Sendable {
        /// From the connect until the request head (request line and headers) is complete.
        public var headerTimeoutNs: UInt64 = 10_000_000_000
        /// Between two reads of the request, until it is complete.
        public var idleTimeoutNs: UInt64 = 5_000_000_000
        public init() {}
    }

    /// Which timeout closed a connection (the loop's deadline tag).
    public enum Timeout: UInt8, Sendable {
        case header = 1
        case idle = 2
    }

    /// The bound port (useful with port 0).
    public let port: UInt16
    /// The admin's own loop.
    public let loop: EventLoop
    public let limits: Limits
    let target: any FaultTarget
    let headerTimeouts = Atomic<Int>(0)
    let idleTimeouts = Atomic<Int>(0)

    /// Connections closed because their request did not arrive in time (any thread).
    public var timedOut: (header: Int, idle: Int) { (headerTimeouts.load(ordering: .relaxed), idleTimeouts.load(ordering: .relaxed)) }

    struct Request {
        var method: HTTPMethod?
        var path = ""
        /// The query's `key=value` pairs, percent-decoded, in order; nil when it is malformed
        /// (an empty pair, a key without `=`, an encoding that is not UTF-8 or percent-valid).
        var query: [(key: String, value: String)]? = []
    }

    struct Client {
        var parser = HTTPRequestParser(maxHeadBytes: 8 * 1024)
        var request = Request()
        /// The request is complete and its answer is on the way: ignore anything else sent.
        var answered = false
        /// When the head must be complete (`Limits.headerTimeoutNs` after the connect); nil once it is.
        var headerDeadline: UInt64?
    }

    var clients: [ConnectionID: Client] = [:]

    /// Starts the endpoint on `address`, which must be 127.0.0.1 (port 0 picks a free port),
    /// on a new loop thread, driving `target`.
    public init(target: any FaultTarget, address: SocketAddress = .ipv4(0x7F00_0001, port: 0),
                limits: Limits = Limits()) throws(TargetAdminError) {
        guard case .ipv4(0x7F00_0001, let requestedPort) = address else { throw .notLocalhost(address) }
        self.target = target
        self.limits = limits
        do {
            loop = try EventLoop(index: 0)
        } catch {
            throw .listen(error)
        }
        switch loop.listen(on: .ipv4(0x7F00_0001, port: requestedPort), backlog: 64) {
        case .success(let (_, p)): port = p
        case .failure(let e): throw .listen(e)
        }
        // Deadlines need the loop's sweep (every 100 ms: their precision); a reply is a few
        // hundred bytes, and a client that never reads it is closed after the send timeout.
        loop.limits = ConnectionLimits(maxQueuedBytes: 64 * 1024, sendTimeoutNs: 10_000_000_000, sweepIntervalNs: 100_000_000)
        loop.handler = self
        loop.start(name: "stampede-admin")
    }

    /// Stops the endpoint's loop and waits for its thread (any thread but that loop's).
    public func stop() {
        loop.stop()
        loop.join()
    }

    // MARK: EventLoopHandler

    public func accepted(_ id: ConnectionID, listener: ConnectionID, loop: EventLoop) {
        var client = Client()
        client.headerDeadline = loop.wakeTime &+ limits.headerTimeoutNs
        clients[id] = client
        armDeadline(id, client, loop: loop)
    }

    /// The sooner of the head's deadline (while the head is incomplete) and the idle one, from now.
    func armDeadline(_ id: ConnectionID, _ client: Client, loop: EventLoop) {
        let idle = loop.wakeTime &+ limits.idleTimeoutNs
        if let header = client.headerDeadline, header <= idle {
            loop.setDeadline(id, at: header, tag: Timeout.header.rawValue)
        } else {
            loop.setDeadline(id, at: idle, tag: Timeout.idle.rawValue)
        }
    }

    public func connectCompleted(_ id: ConnectionID, error: Int32, loop: EventLoop) {}

    public func received(_ id: ConnectionID, buffer: UnsafeMutableRawBufferPointer, loop: EventLoop) -> Int {
        guard var client = clients[id], !client.answered else { return buffer.count }
        let all = UnsafeRawBufferPointer(buffer)
        var offset = 0
        defer { if clients[id] != nil { clients[id] = client } }
        while offset <= all.count {
            let rest = UnsafeRawBufferPointer(rebasing: all[offset...])
            let (event, consumed) = client.parser.next(rest)
            offset += consumed
            switch event {
            case .needMore:
                armDeadline(id, client, loop: loop)
                return offset
            case .head(let head):
                client.request = Self.request(head, rest)
                client.headerDeadline = nil
            case .body:
                break  // no endpoint takes a body
            case .end:
                client.answered = true
                clients[id] = client
                // Answered now, or once the server has acted (a stalled one may take its
                // stall's length): no deadline but the send timeout from here on.
                loop.setDeadline(id, at: .max, tag: 0)
                handle(id, client.request)
                return all.count
            case .error:
                client.answered = true
                loop.setDeadline(id, at: .max, tag: 0)
                reply(id, status: 400, reason: "Bad Request", body: #"{"ok":false,"error":"malformed HTTP request"}"#)
                return all.count
            }
        }
        return offset
    }

    public func closed(_ id: ConnectionID, reason: CloseReason, loop: EventLoop) {
        clients[id] = nil
        if case .timedOut(let tag) = reason {
            switch Timeout(rawValue: tag) {
            case .header: headerTimeouts.add(1, ordering: .relaxed)
            case .idle: idleTimeouts.add(1, ordering: .relaxed)
            case nil: break
            }
        }
    }

    public func writable(_ id: ConnectionID, loop: EventLoop) {}
    public func timerFired(_ token: TimerToken, deadline: UInt64, loop: EventLoop) {}

    // MARK: Requests

    /// What the endpoints need from a head, copied out (the admin is not a hot path).
    static func request(_ head: HTTPRequestHead, _ buf: UnsafeRawBufferPointer) -> Request {
        var r = Request()
        r.method = head.method
        let t = head.target
        let path = head.path(in: buf)
        let pathEnd = path.upperBound
        r.path = String(decoding: UnsafeRawBufferPointer(rebasing: buf[path]), as: UTF8.self)
        func decoded(_ raw: ArraySlice<UInt8>) -> String? {
            var out = [UInt8](repeating: 0, count: raw.count)
            let n = raw.withUnsafeBytes { raw in out.withUnsafeMutableBytes { HTTPPercentEncoding.decode(raw, into: $0, plusIsSpace: true) } }
            guard let n else { return nil }
            return String(validating: out[0..<n], as: UTF8.self)
        }
        let query = pathEnd < t.upperBound && buf[pathEnd] == 0x3F
            ? Array(UnsafeRawBufferPointer(rebasing: buf[(pathEnd + 1)..<t.upperBound])) : []
        guard !query.isEmpty else { return r }
        var pairs: [(key: String, value: String)] = []
        for part in query.split(separator: 0x26, omittingEmptySubsequences: false) {  // '&'
            guard let eq = part.firstIndex(of: 0x3D), eq > part.startIndex,  // '='
                  let key = decoded(part[..<eq]), let value = decoded(part[(eq + 1)...]) else { r.query = nil; return r }
            pairs.append((key, value))
        }
        r.query = pairs
        return r
    }

    /// The query's values for `allowed` keys, or why the query is refused: malformed, a key
    /// the endpoint does not take, or a key given twice.
    static func parameters(_ r: Request, allowed: [String]) -> (values: [String: String]?, problem: String) {
        guard let query = r.query else { return (nil, "malformed query: use key=value pairs joined by &") }
        var values: [String: String] = [:]
        for (key, value) in query {
            guard allowed.contains(key) else {
                let shown = String(key.unicodeScalars.prefix(32).filter { $0.value >= 0x20 && $0 != "\"" && $0 != "\\" })
                let takes = allowed.isEmpty ? "no query" : allowed.joined(separator: ", ")
                return (nil, "unknown query key '\(shown)' (\(r.path) takes \(takes))")
            }
            guard values[key] == nil else { return (nil, "\(key) given twice") }
            values[key] = value
        }
        return (values, "")
    }

    /// Shortest reject or stall accepted (s).
    static let minSeconds = 0.001

    /// Seconds for reject and stall: plain decimal digits with at most one fraction part
    /// ("5", "0.25"; no sign, exponent, hex, "nan" or "inf"), from 1 ms to 3600 s, else why not.
    static func seconds(_ text: String?) -> (seconds: Double?, problem: String) {
        let rule = "seconds must be a plain decimal number (like 5 or 0.25) from 0.001 to 3600"
        guard let text else { return (nil, "missing seconds: add ?seconds=N, \(rule)") }
        let bytes = Array(text.utf8)
        let dot = bytes.firstIndex(of: 0x2E)
        let whole = bytes[..<(dot ?? bytes.endIndex)]
        let fraction = dot.map { bytes[($0 + 1)...] } ?? []
        func digits(_ s: ArraySlice<UInt8>) -> Bool { s.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        guard bytes.count <= 32, !whole.isEmpty, digits(whole), dot == nil || (!fraction.isEmpty && digits(fraction)),
              let s = Double(text), s >= minSeconds, s <= TargetFault.maxSeconds else { return (nil, rule) }
        return (s, "")
    }

    /// The delay from `/fault/delay`'s query: exactly one of `us` (whole µs, 0 to 10000000) and
    /// `ms` (whole ms, 0 to 10000, as before µs were taken), plain digits only; else why not.
    static func delayMicroseconds(us: String?, ms: String?) -> (microseconds: Int?, problem: String) {
        let maxMs = TargetFault.maxDelayMicroseconds / 1000
        let rule = "give exactly one of us (whole microseconds from 0 to \(TargetFault.maxDelayMicroseconds), like ?us=300) "
            + "or ms (whole milliseconds from 0 to \(maxMs), like ?ms=2); 0 turns the delay off"
        let (text, scale, limit): (String, Int, Int)
        switch (us, ms) {
        case (let u?, nil): (text, scale, limit) = (u, 1, TargetFault.maxDelayMicroseconds)
        case (nil, let m?): (text, scale, limit) = (m, 1000, maxMs)
        case (nil, nil): return (nil, "missing delay: \(rule)")
        case (_?, _?): return (nil, "both us and ms given: \(rule)")
        }
        // At most 8 digits: no overflow, and no sign, dot or exponent can slip through Int().
        guard !text.isEmpty, text.utf8.count <= 8, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let n = Int(text), n <= limit else { return (nil, rule) }
        return (n * scale, "")
    }

    func handle(_ id: ConnectionID, _ r: Request) {
        let fault: TargetFault
        let allowed: [String]
        switch r.path {
        case "/status": allowed = []
        case "/fault/drop": allowed = ["mode"]
        case "/fault/reject", "/fault/stall": allowed = ["seconds"]
        case "/fault/delay": allowed = ["us", "ms"]
        default: allowed = []
        }
        let (values, problem) = Self.parameters(r, allowed: allowed)
        switch r.path {
        case "/status":
            guard r.method == .get else { return wrongMethod(id, allowed: "GET") }
            guard values != nil else { return badRequest(id, problem) }
            let target = self.target
            target.loop.execute { [self] _ in
                target.status { [self] json in
                    loop.execute { [self] _ in reply(id, status: 200, reason: "OK", body: withAdminCounts(json)) }
                }
            }
            return
        case "/fault/drop":
            guard r.method == .post else { return wrongMethod(id, allowed: "POST") }
            guard let values else { return badRequest(id, problem) }
            switch values["mode"] {
            case nil, "reset": fault = .drop(reset: true)
            case "close": fault = .drop(reset: false)
            default: return badRequest(id, "mode must be reset or close")
            }
        case "/fault/reject", "/fault/stall":
            guard r.method == .post else { return wrongMethod(id, allowed: "POST") }
            guard let values else { return badRequest(id, problem) }
            let parsed = Self.seconds(values["seconds"])
            guard let s = parsed.seconds else { return badRequest(id, parsed.problem) }
            fault = r.path == "/fault/reject" ? .reject(seconds: s) : .stall(seconds: s)
        case "/fault/delay":
            guard r.method == .post else { return wrongMethod(id, allowed: "POST") }
            guard let values else { return badRequest(id, problem) }
            guard target.supportsDelay else { return badRequest(id, "this server does not act out a delay (the chat and REST servers do)") }
            let parsed = Self.delayMicroseconds(us: values["us"], ms: values["ms"])
            guard let us = parsed.microseconds else { return badRequest(id, parsed.problem) }
            fault = .delay(microseconds: us)
        default:
            reply(id, status: 404, reason: "Not Found",
                  body: #"{"ok":false,"error":"unknown path; try POST /fault/drop, /fault/reject, /fault/stall, /fault/delay or GET /status"}"#)
            return
        }
        let body: String
        switch fault {
        case .drop(let reset): body = #"{"ok":true,"fault":"drop","mode":"\#(reset ? "reset" : "close")"}"#
        case .reject(let s), .stall(let s): body = #"{"ok":true,"fault":"\#(fault.name)","seconds":\#(s)}"#
        case .delay(let us): body = #"{"ok":true,"fault":"delay","us":\#(us)}"#
        }
        // Answered from the server's loop once applied; a stall only starts after this task
        // (it is queued behind it), so its reply is on its way before the server hangs.
        let target = self.target
        target.loop.execute { [self] _ in
            target.apply(fault) { [self] in
                loop.execute { [self] _ in reply(id, status: 200, reason: "OK", body: body) }
            }
        }
    }

    /// The target's status object with the admin's own count of timed-out connections first.
    func withAdminCounts(_ json: String) -> String {
        guard json.hasPrefix("{") else { return json }
        let t = timedOut
        let rest = json.dropFirst()
        return "{\"adminConnectionsTimedOut\":\(t.header + t.idle)" + (rest.hasPrefix("}") ? "" : ",") + rest
    }

    func badRequest(_ id: ConnectionID, _ message: String) {
        reply(id, status: 400, reason: "Bad Request", body: #"{"ok":false,"error":"\#(message)"}"#)
    }

    func wrongMethod(_ id: ConnectionID, allowed: StaticString) {
        reply(id, status: 405, reason: "Method Not Allowed", body: #"{"ok":false,"error":"use \#(allowed)"}"#,
              allow: allowed)
    }

    /// Writes a JSON reply and closes after it. Call on the admin loop.
    func reply(_ id: ConnectionID, status: Int, reason: StaticString, body: String, allow: StaticString? = nil) {
        let text = body + "\n"
        var extra = allow.map { "Allow: \($0)\r\n" } ?? ""
        extra += "Cache-Control: no-store\r\n"
        let room = 256 + extra.utf8.count + text.utf8.count
        let bodyBytes = Array(text.utf8)
        let extraBytes = Array(extra.utf8)
        loop.write(id, reserving: room) { p in
            let out = UnsafeMutableRawBufferPointer(start: p, count: room)
            guard let n = extraBytes.withUnsafeBytes({
                HTTPResponseWriter.writeHead(into: out, status: status, reason: reason, contentType: "application/json",
                                             body: .length(bodyBytes.count), connectionClose: true, extraHeaderLines: $0)
            }) else { return 0 }
            bodyBytes.withUnsafeBytes { (p + n).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            return n + bodyBytes.count
        }
        loop.closeAfterFlush(id)
        clients[id] = nil
    }
}
