import StampedeWire

/// What an HTTP request to the Engine.IO path asks for (engine.io's `verify`): the query's
/// `EIO`, `transport` and `sid`, the method and the Upgrade header. The runtime checks the path
/// and looks the sid up; everything else about the request is decided here.
public enum EngineIORequest: Sendable, Equatable {
    /// No sid: a new session over `transport` (a GET poll answered with the open packet, or a
    /// WebSocket whose first frame is the open packet).
    case handshake(SocketIOServerSession.Transport)
    /// A GET poll of the session `sid` (the raw, percent-encoded query value).
    case poll(sid: Range<Int>)
    /// A POST of packets for the session `sid`.
    case post(sid: Range<Int>)
    /// A WebSocket upgrade of the polling session `sid`.
    case upgrade(sid: Range<Int>)
    /// Refused: 400 with `error.body`.
    case refused(EngineIOError)

    /// Classifies `head` (parsed from `buffer`).
    public static func classify(_ head: HTTPRequestHead, in buffer: UnsafeRawBufferPointer) -> EngineIORequest {
        let t = head.target
        guard let eio = HTTPQuery.value(of: "EIO", inTarget: t, of: buffer), equals(buffer, eio, "4") else {
            return .refused(.unsupportedProtocolVersion)
        }
        guard let transport = HTTPQuery.value(of: "transport", inTarget: t, of: buffer) else { return .refused(.unknownTransport) }
        let isWebSocket = equals(buffer, transport, "websocket")
        guard isWebSocket || equals(buffer, transport, "polling") else { return .refused(.unknownTransport) }
        let sid = HTTPQuery.value(of: "sid", inTarget: t, of: buffer).flatMap { $0.isEmpty ? nil : $0 }
        let upgrade = head.value(forHeader: "Upgrade", in: buffer).map { HTTPFieldValue.containsToken("websocket", in: buffer, $0) } ?? false
        switch head.method {
        case .get?:
            if isWebSocket {
                // A WebSocket transport is only reached by an upgrade (engine.io: "Bad request").
                guard upgrade else { return .refused(.badRequest) }
                return sid.map { .upgrade(sid: $0) } ?? .handshake(.webSocket)
            }
            return sid.map { .poll(sid: $0) } ?? .handshake(.polling)
        case .post?:
            guard !isWebSocket else { return .refused(.badRequest) }
            return sid.map { .post(sid: $0) } ?? .refused(.badHandshakeMethod)
        default:
            return .refused(sid == nil ? .badHandshakeMethod : .badRequest)
        }
    }

    static func equals(_ buffer: UnsafeRawBufferPointer, _ range: Range<Int>, _ text: StaticString) -> Bool {
        range.count == text.utf8CodeUnitCount && buffer[range].elementsEqual(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}

/// Engine.IO's request errors: a 400 whose JSON body is `{"code":N,"message":"…"}`.
public enum EngineIOError: Int, Sendable, Equatable {
    case unknownTransport = 0
    case unknownSid = 1
    case badHandshakeMethod = 2
    case badRequest = 3
    case forbidden = 4
    case unsupportedProtocolVersion = 5

    /// engine.io's message for the code.
    public var message: StaticString {
        switch self {
        case .unknownTransport: "Transport unknown"
        case .unknownSid: "Session ID unknown"
        case .badHandshakeMethod: "Bad handshake method"
        case .badRequest: "Bad request"
        case .forbidden: "Forbidden"
        case .unsupportedProtocolVersion: "Unsupported protocol version"
        }
    }

    /// The response body.
    public var body: [UInt8] {
        Array(#"{"code":"#.utf8) + Array(String(rawValue).utf8) + Array(#","message":""#.utf8)
            + Array(UnsafeRawBufferPointer(start: message.utf8Start, count: message.utf8CodeUnitCount)) + Array(#""}"#.utf8)
    }
}
