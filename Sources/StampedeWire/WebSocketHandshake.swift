/// The HTTP/1.1 upgrade that opens a WebSocket (RFC 6455 §4), both sides. Runs once per
/// connection, so it may allocate; it never does I/O.
public enum WebSocketHandshake {
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// Sec-WebSocket-Accept for a key (§4.2.2 step 5.4).
    public static func acceptValue(forKey key: String) -> String {
        Base64.encode(SHA1.hash(Array((key + guid).utf8)))
    }

    /// A fresh Sec-WebSocket-Key: 16 random bytes, base64.
    public static func makeKey<R: RandomNumberGenerator>(using rng: inout R) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<16 { bytes[i] = UInt8.random(in: 0...255, using: &rng) }
        return Base64.encode(bytes)
    }

    /// The client's upgrade request.
    public static func request(host: String, port: Int, path: String, key: String, subprotocol: String?, headers: [(String, String)]) -> [UInt8] {
        let hostHeader = (host.contains(":") ? "[\(host)]" : host) + (port == 80 ? "" : ":\(port)")
        var s = "GET \(path) HTTP/1.1\r\nHost: \(hostHeader)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        s += "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        if let p = subprotocol { s += "Sec-WebSocket-Protocol: \(p)\r\n" }
        for (n, v) in headers { s += "\(n): \(v)\r\n" }
        s += "\r\n"
        return Array(s.utf8)
    }

    /// A parsed HTTP/1.1 message head (status line or request line plus headers).
    public struct Head: Sendable, Equatable {
        /// Response: status code; request: 0.
        public var status: Int
        /// Request: method and target; response: empty.
        public var method: String
        public var target: String
        public var reason: String
        /// Header names lowercased, in order.
        public var headers: [(name: String, value: String)]
        /// Bytes up to and including the blank line.
        public var length: Int

        public func header(_ name: String) -> String? {
            let lower = name.lowercased()
            return headers.first { $0.name == lower }?.value
        }
        /// Whether a comma-separated header contains `token` (case-insensitive).
        public func header(_ name: String, containsToken token: String) -> Bool {
            guard let v = header(name) else { return false }
            return v.split(separator: ",").contains { $0.trimmingASCIISpaces().lowercased() == token.lowercased() }
        }
        public static func == (a: Head, b: Head) -> Bool {
            a.status == b.status && a.method == b.method && a.target == b.target && a.length == b.length
                && a.headers.map { $0.name + ":" + $0.value } == b.headers.map { $0.name + ":" + $0.value }
        }
    }

    public enum HeadParse: Sendable, Equatable {
        case needMore
        case head(Head)
        case invalid(String)
    }

    /// Largest head accepted before the peer is considered broken.
    public static let maxHeadBytes = 16 * 1024

    /// Parses an HTTP/1.1 head at the start of `bytes`.
    public static func parseHead(_ bytes: UnsafeRawBufferPointer, isResponse: Bool) -> HeadParse {
        guard let end = findHeadEnd(bytes) else {
            return bytes.count > maxHeadBytes ? .invalid("HTTP head over \(maxHeadBytes) bytes") : .needMore
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<end]), as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        while lines.last == "" { lines.removeLast() }
        guard let first = lines.first else { return .invalid("empty HTTP head") }
        var head = Head(status: 0, method: "", target: "", reason: "", headers: [], length: end)
        let parts = first.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        if isResponse {
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let code = Int(parts[1]), (100...599).contains(code) else {
                return .invalid("bad status line: \(first.prefix(80))")
            }
            head.status = code
            head.reason = parts.count > 2 ? parts[2] : ""
        } else {
            guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return .invalid("bad request line: \(first.prefix(80))") }
            head.method = parts[0]
            head.target = parts[1]
        }
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { return .invalid("bad header line: \(line.prefix(80))") }
            let name = String(line[..<colon]).lowercased()
            let value = line[line.index(after: colon)...].trimmingASCIISpaces()
            head.headers.append((name, String(value)))
        }
        return .head(head)
    }

    /// Offset just past "\r\n\r\n", if present.
    static func findHeadEnd(_ bytes: UnsafeRawBufferPointer) -> Int? {
        let n = bytes.count
        guard n >= 4 else { return nil }
        var i = 3
        while i < n {
            if bytes[i] == 0x0A && bytes[i - 1] == 0x0D && bytes[i - 2] == 0x0A && bytes[i - 3] == 0x0D { return i + 1 }
            i += 1
        }
        return nil
    }

    /// What a client makes of the server's answer to its upgrade.
    public enum UpgradeOutcome: Sendable, Equatable {
        case accepted(subprotocol: String?)
        /// Any status but 101.
        case rejected(status: Int)
        /// 101 that breaks §4.1's checks.
        case invalid(String)
    }

    /// Checks a response head against the key that was sent (§4.1, client requirements 1–6).
    public static func validateResponse(_ head: Head, key: String, requestedSubprotocol: String?) -> UpgradeOutcome {
        guard head.status == 101 else { return .rejected(status: head.status) }
        guard head.header("upgrade")?.lowercased() == "websocket" else { return .invalid("missing Upgrade: websocket") }
        guard head.header("connection", containsToken: "upgrade") else { return .invalid("missing Connection: Upgrade") }
        guard head.header("sec-websocket-accept") == acceptValue(forKey: key) else { return .invalid("wrong Sec-WebSocket-Accept") }
        if head.header("sec-websocket-extensions") != nil { return .invalid("server chose an extension we did not offer") }
        let proto = head.header("sec-websocket-protocol")
        if let p = proto, p != requestedSubprotocol { return .invalid("server chose a subprotocol we did not offer: \(p)") }
        return .accepted(subprotocol: proto)
    }

    /// Server side: checks an upgrade request; returns the key or why it is not an upgrade.
    public static func validateRequest(_ head: Head) -> Result<String, UpgradeRequestError> {
        guard head.method == "GET" else { return .failure(.init(status: 405, reason: "method must be GET")) }
        guard head.header("upgrade")?.lowercased() == "websocket", head.header("connection", containsToken: "upgrade") else {
            return .failure(.init(status: 426, reason: "not a WebSocket upgrade"))
        }
        guard head.header("sec-websocket-version") == "13" else { return .failure(.init(status: 426, reason: "unsupported version")) }
        guard let key = head.header("sec-websocket-key"), !key.isEmpty else { return .failure(.init(status: 400, reason: "missing Sec-WebSocket-Key")) }
        return .success(key)
    }

    public struct UpgradeRequestError: Error, Sendable, Equatable {
        public var status: Int
        public var reason: String
    }

    /// The server's 101 answer.
    public static func switchingProtocols(key: String, subprotocol: String? = nil) -> [UInt8] {
        var s = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(acceptValue(forKey: key))\r\n"
        if let p = subprotocol { s += "Sec-WebSocket-Protocol: \(p)\r\n" }
        s += "\r\n"
        return Array(s.utf8)
    }

    /// A plain HTTP error answer that closes the connection.
    public static func errorResponse(status: Int, reason: String) -> [UInt8] {
        let body = reason + "\n"
        return Array("HTTP/1.1 \(status) \(reason)\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8)
    }
}

extension StringProtocol {
    func trimmingASCIISpaces() -> Substring {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return s
    }
}
