import StampedeLoop
import StampedeSession
import StampedeWire

/// One TCP connection of the Socket.IO server: HTTP requests (handshakes, polls, POSTs), then
/// possibly a held poll or a WebSocket.
final class SocketIOSocket {
    enum Mode { case http, poll, webSocket, closed }
    /// What the request being received asks for, decided from its head.
    enum Route {
        case none
        case notFound
        case refused(EngineIOError)
        /// A reject fault: 503 with Retry-After, then close.
        case unavailable(retryAfter: Int)
        case shuttingDown
        case handshakePolling
        case handshakeWebSocket
        case poll(SocketIOClient)
        case post(SocketIOClient)
        case upgrade(SocketIOClient)
    }

    let id: ConnectionID
    var mode: Mode = .http
    var parser = HTTPRequestParser()
    /// Frames, pings and the close handshake once the socket is a WebSocket.
    var webSocket: WebSocketServerSession? = nil
    /// The Engine.IO session this socket polls for or carries.
    var client: SocketIOClient? = nil
    var route: Route = .none
    /// A POST's body, collected until the request ends (at most `maxPayload`).
    var body: [UInt8] = []
    var bodyTooLarge = false
    var closeAfterResponse = false
    var http10 = false
    var webSocketKey = ""

    init(id: ConnectionID) { self.id = id }
}

/// One Engine.IO session: its pure protocol session, the sockets carrying it, and the rooms
/// its namespaces joined.
final class SocketIOClient {
    let slot: Int
    let generation: UInt32
    var session: SocketIOServerSession
    /// The socket whose GET is held.
    var pollSocket: ConnectionID? = nil
    /// The WebSocket: the upgrading one, or the session's transport after the upgrade.
    var webSocket: ConnectionID? = nil
    /// Rooms joined (namespace-wide membership included), as `SocketIORooms` keys.
    var rooms: [[UInt8]] = []
    /// The timer deadline last armed (timers cannot be cancelled; a newer deadline arms another).
    var armed: UInt64 = .max
    var ended = false
    /// Holds a `--max-connections` slot, given back when the session is disposed.
    var holdsSlot = false

    init(slot: Int, generation: UInt32, session: SocketIOServerSession) {
        self.slot = slot
        self.generation = generation
        self.session = session
    }
}

/// Room membership by key: a namespace's members (`namespace` + 0x01) and its rooms
/// (`namespace` + 0x00 + room name as sent, JSON escapes and all).
struct SocketIORooms {
    var members: [[UInt8]: Set<Int>] = [:]

    static func namespaceKey(_ namespace: [UInt8]) -> [UInt8] { namespace + [1] }
    static func roomKey(_ namespace: [UInt8], _ room: UnsafeRawBufferPointer) -> [UInt8] { namespace + [0] + Array(room) }

    /// Adds `client` to `key`; false when it was in already.
    mutating func join(_ key: [UInt8], _ client: SocketIOClient) -> Bool {
        guard members[key, default: []].insert(client.slot).inserted else { return false }
        client.rooms.append(key)
        return true
    }

    mutating func leave(_ key: [UInt8], _ client: SocketIOClient) {
        members[key]?.remove(client.slot)
        if members[key]?.isEmpty == true { members[key] = nil }
        client.rooms.removeAll { $0 == key }
    }

    /// Leaves every room of `namespace` (nil: every room).
    mutating func leaveAll(_ client: SocketIOClient, namespace: [UInt8]? = nil) {
        for key in client.rooms where namespace.map({ key.count > $0.count && key.starts(with: $0) && key[$0.count] <= 1 }) ?? true {
            members[key]?.remove(client.slot)
            if members[key]?.isEmpty == true { members[key] = nil }
        }
        if let namespace {
            client.rooms.removeAll { $0.count > namespace.count && $0.starts(with: namespace) && $0[namespace.count] <= 1 }
        } else {
            client.rooms = []
        }
    }
}
