/// The HTTP/1.1 upgrade that opens a WebSocket (RFC 6455 §4), both sides. It is HTTP like any
/// other exchange, so it goes through the HTTP codec in `HTTP/`: the client's request is an
/// `HTTPClientRequest`, the 101 is parsed by `HTTPResponseParser` and the request by
/// `HTTPRequestParser`, and answers are written by `HTTPResponseWriter`. This type adds only
/// the WebSocket fields and §4's checks. Runs once per connection, so it may allocate; it never
/// does I/O.
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

    /// Largest head accepted either way (request or answer) before the peer is considered broken.
    public static let maxHeadBytes = 16 * 1024

    // MARK: Client

    /// The client's upgrade request (§4.1): GET `path` with Upgrade, Connection, the key, the
    /// version, the subprotocol when one is asked for, then `headers` in order and the
    /// pre-rendered `headerLines` (checked by `HTTPClientRequest.validate()`). The Host field
    /// leaves out port 80 and brackets IPv6 literals (`HTTPClientRequest.hostValue`). nil when a
    /// field cannot be written as one line: a name that is not a token, or a CR, LF or NUL in a
    /// value (a header can carry a server's access token, and a line break there would inject
    /// lines that `HTTPClientRequest.validate()` cannot tell from ours).
    public static func request(host: String, port: Int, path: String, key: String, subprotocol: String?,
                               headers: [(String, String)], headerLines: [UInt8] = []) -> HTTPClientRequest? {
        func oneLine(_ value: String) -> Bool { !value.utf8.contains { $0 == HTTPBytes.cr || $0 == HTTPBytes.lf || $0 == 0 } }
        guard oneLine(key), subprotocol.map(oneLine) ?? true,
              headers.allSatisfy({ !$0.0.isEmpty && $0.0.utf8.allSatisfy(HTTPBytes.isTokenChar) && oneLine($0.1) }) else { return nil }
        var lines = "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        if let p = subprotocol { lines += "Sec-WebSocket-Protocol: \(p)\r\n" }
        for (n, v) in headers { lines += "\(n): \(v)\r\n" }
        var r = HTTPClientRequest(method: .get, target: Array(path.utf8), host: HTTPClientRequest.hostValue(host: host, port: port, defaultPort: 80),
                                  extraHeaderLines: Array(lines.utf8) + headerLines)
        r.upgrade = .webSocket
        return r
    }

    /// What a client makes of the server's answer to its upgrade.
    public enum UpgradeOutcome: Sendable, Equatable {
        case accepted(subprotocol: String?)
        /// Any final status but 101.
        case rejected(status: Int)
        /// Not HTTP, or a 101 that breaks §4.1's checks.
        case invalid(ResponseProblem)
    }

    /// Why an answer to the upgrade request is not one a client may accept.
    public enum ResponseProblem: Sendable, Equatable {
        /// Not an HTTP/1.1 response head (or over `maxHeadBytes`).
        case malformed(HTTPParseError)
        /// No `Upgrade: websocket` (§4.1 client requirement 2).
        case missingUpgrade
        /// No `upgrade` token in Connection (requirement 3).
        case missingConnectionUpgrade
        /// Sec-WebSocket-Accept absent or not the key's (requirement 4).
        case wrongAccept
        /// The server chose an extension we did not offer (requirement 5).
        case unofferedExtension
        /// The server chose a subprotocol we did not offer (requirement 6).
        case unofferedSubprotocol
    }

    /// One step of reading the answer.
    public enum ResponseParse: Sendable, Equatable {
        /// The head is not complete; drop `consumed` bytes (1xx interim answers the HTTP parser
        /// skips, RFC 9110 §15.2) and call again with more input.
        case needMore(consumed: Int)
        /// The answer is decided; when accepted, `length` bytes (interim answers and the 101's
        /// head) are the handshake's and frames follow them.
        case answer(UpgradeOutcome, length: Int)
    }

    /// Parses and checks the answer at the start of `buffer` against the key that was sent.
    /// Keeps no state: a head arriving in pieces is parsed again from its start, as the whole
    /// head stays in the caller's buffer until it is complete.
    public static func parseResponse(_ buffer: UnsafeRawBufferPointer, key: String, requestedSubprotocol: String?) -> ResponseParse {
        var parser = HTTPResponseParser(maxHeadBytes: maxHeadBytes)
        let (event, consumed) = parser.next(buffer)
        switch event {
        case .needMore:
            return .needMore(consumed: consumed)
        case .head(let head):
            return .answer(validateResponse(head, in: buffer, key: key, requestedSubprotocol: requestedSubprotocol), length: consumed)
        case .error(let e):
            return .answer(.invalid(.malformed(e)), length: buffer.count)
        case .body, .end:
            // A parser's first event is never a body: only a head starts a message.
            return .answer(.invalid(.malformed(.malformedStatusLine)), length: buffer.count)
        }
    }

    /// Checks a parsed response head against the key that was sent (§4.1, client requirements 1–6).
    public static func validateResponse(_ head: HTTPResponseHead, in buffer: UnsafeRawBufferPointer, key: String,
                                        requestedSubprotocol: String?) -> UpgradeOutcome {
        guard head.status == 101 else { return .rejected(status: head.status) }
        guard let upgrade = head.value(forHeader: "Upgrade", in: buffer), HTTPFieldValue.equalsIgnoringCase("websocket", in: buffer, upgrade) else {
            return .invalid(.missingUpgrade)
        }
        guard let connection = head.value(forHeader: "Connection", in: buffer), HTTPFieldValue.containsToken("upgrade", in: buffer, connection) else {
            return .invalid(.missingConnectionUpgrade)
        }
        guard let accept = head.value(forHeader: "Sec-WebSocket-Accept", in: buffer),
              UnsafeRawBufferPointer(rebasing: buffer[accept]).elementsEqual(acceptValue(forKey: key).utf8) else {
            return .invalid(.wrongAccept)
        }
        if head.value(forHeader: "Sec-WebSocket-Extensions", in: buffer) != nil { return .invalid(.unofferedExtension) }
        guard let chosen = head.value(forHeader: "Sec-WebSocket-Protocol", in: buffer) else { return .accepted(subprotocol: nil) }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: buffer[chosen]), as: UTF8.self)
        return text == requestedSubprotocol ? .accepted(subprotocol: text) : .invalid(.unofferedSubprotocol)
    }

    // MARK: Server

    /// Why a request is not a WebSocket upgrade a server can accept (§4.2.1).
    public enum RequestProblem: UInt8, Sendable, Error {
        /// Not GET (§4.2.1 item 1).
        case methodNotGET
        /// No `websocket` in Upgrade or no `upgrade` in Connection (items 3–4).
        case notAnUpgrade
        /// Sec-WebSocket-Version is not 13 (item 6).
        case unsupportedVersion
        /// No Sec-WebSocket-Key, or an empty one (item 5).
        case missingKey

        /// The status a server answers with (405 for the method, 426 Upgrade Required where a
        /// WebSocket client could succeed with another request, §4.2.2 item 4 and RFC 9110 §15.5.22).
        public var status: Int {
            switch self {
            case .methodNotGET: 405
            case .notAnUpgrade, .unsupportedVersion: 426
            case .missingKey: 400
            }
        }

        /// The reason phrase and text body of that answer.
        public var reason: StaticString {
            switch self {
            case .methodNotGET: "method must be GET"
            case .notAnUpgrade: "not a WebSocket upgrade"
            case .unsupportedVersion: "unsupported version"
            case .missingKey: "missing Sec-WebSocket-Key"
            }
        }
    }

    /// Server side: checks a parsed upgrade request; returns the key's range in `buffer`.
    public static func validateRequest(_ head: HTTPRequestHead, in buffer: UnsafeRawBufferPointer) -> Result<Range<Int>, RequestProblem> {
        guard head.method == .get else { return .failure(.methodNotGET) }
        guard let upgrade = head.value(forHeader: "Upgrade", in: buffer), HTTPFieldValue.containsToken("websocket", in: buffer, upgrade),
              let connection = head.value(forHeader: "Connection", in: buffer), HTTPFieldValue.containsToken("upgrade", in: buffer, connection) else {
            return .failure(.notAnUpgrade)
        }
        guard let version = head.value(forHeader: "Sec-WebSocket-Version", in: buffer), HTTPFieldValue.equalsIgnoringCase("13", in: buffer, version) else {
            return .failure(.unsupportedVersion)
        }
        guard let key = head.value(forHeader: "Sec-WebSocket-Key", in: buffer), !key.isEmpty else { return .failure(.missingKey) }
        return .success(key)
    }

    /// The server's 101 answer, written by `HTTPResponseWriter`.
    public static func switchingProtocols(key: String, subprotocol: String? = nil) -> [UInt8] {
        var lines = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(acceptValue(forKey: key))\r\n"
        if let p = subprotocol { lines += "Sec-WebSocket-Protocol: \(p)\r\n" }
        return lines.withUTF8 { extra in
            written(capacity: 64 + extra.count) {
                HTTPResponseWriter.writeHead(into: $0, status: 101, reason: "Switching Protocols", body: .none,
                                             extraHeaderLines: UnsafeRawBufferPointer(extra))
            }
        }
    }

    /// A plain-text HTTP error answer (the reason is also the body) that closes the connection.
    public static func errorResponse(status: Int, reason: StaticString) -> [UInt8] {
        let bodyCount = reason.utf8CodeUnitCount + 1
        return written(capacity: 128 + 2 * bodyCount) { out in
            guard let n = HTTPResponseWriter.writeHead(into: out, status: status, reason: reason, contentType: "text/plain",
                                                       body: .length(bodyCount), connectionClose: true) else { return nil }
            var w = HTTPByteWriter(UnsafeMutableRawBufferPointer(rebasing: out[n...]))
            w.append(reason)
            w.append(byte: HTTPBytes.lf)
            return w.result.map { n + $0 }
        }
    }

    /// What `write` put into a buffer of `capacity` bytes (empty if it did not fit).
    static func written(capacity: Int, _ write: (UnsafeMutableRawBufferPointer) -> Int?) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: capacity) { buf, n in
            n = write(UnsafeMutableRawBufferPointer(buf)) ?? 0
        }
    }
}
