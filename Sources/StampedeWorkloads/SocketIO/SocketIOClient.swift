import StampedeLoop
import StampedeSession
import StampedeWire

/// Where a Socket.IO client is in its connection's life.
enum SocketIOClientPhase: UInt8 {
    case idle
    /// Waiting for the Engine.IO open packet.
    case opening
    /// The namespace CONNECT is sent; its answer is due.
    case connecting
    /// The namespace is connected; the connect emits are running.
    case joining
    case connected, waitingToReconnect, closing, ended
}

/// The up to three TCP connections of one client: `poll` carries the long-polling GETs, `post`
/// the POSTs, `ws` the WebSocket (the only one with `[websocket]`, the upgrade's otherwise).
struct SocketIOConnections {
    enum PollState: UInt8 { case none, tcp, waiting, idle }
    enum PostState: UInt8 { case none, tcp, idle, posting }
    enum WSState: UInt8 { case none, tcp, upgrading, open }
    /// Which of the three a connection is (kept per loop slot to find its client).
    enum Role: UInt8 { case poll = 1, post = 2, ws = 3 }

    static var closedID: ConnectionID { ConnectionID(index: .max, generation: 0) }

    var poll = Self.closedID
    var post = Self.closedID
    var ws = Self.closedID
    var pollState = PollState.none
    var postState = PostState.none
    var wsState = WSState.none
    /// What only long polling needs, made on use: a WebSocket client holds none of it.
    var http: SocketIOHTTPState? = nil
    /// The WebSocket (upgrade, frames, close handshake), made when its TCP connect completes.
    var webSocket = SocketIOConnections.idleWebSocket

    static var idleWebSocket: WebSocketClientSession {
        WebSocketClientSession(configuration: .init(host: "", port: 0, path: "", upgradeTimeoutNs: 0, closeTimeoutNs: 0, maxMessageBytes: 0))
    }

    var httpState: SocketIOHTTPState {
        mutating get {
            if let http { return http }
            let made = SocketIOHTTPState()
            http = made
            return made
        }
    }

    /// The connection `role` is, if it is open.
    func id(_ role: Role) -> ConnectionID? {
        switch role {
        case .poll: pollState != .none ? poll : nil
        case .post: postState != .none ? post : nil
        case .ws: wsState != .none ? ws : nil
        }
    }

    /// Forgets connection `role`; returns its id if it was open, for the caller to close.
    mutating func release(_ role: Role) -> ConnectionID? {
        let open = id(role)
        switch role {
        case .poll: pollState = .none; poll = Self.closedID
        case .post: postState = .none; post = Self.closedID
        case .ws: wsState = .none; ws = Self.closedID; webSocket = Self.idleWebSocket
        }
        return open
    }
}

/// The long-polling side of one client: the GET's and the POST's exchanges, the packets waiting
/// for a POST (a polling payload: records separated by 0x1E), the requests built once per session.
final class SocketIOHTTPState {
    var pollExchange: HTTPClientExchange
    var postExchange = HTTPClientExchange()
    var postQueue: [UInt8] = []
    var pollRequest: HTTPClientRequest? = nil
    var postRequest: HTTPClientRequest? = nil

    init(maxResponseBytes: Int = .max) {
        pollExchange = HTTPClientExchange(configuration: .init(maxResponseBytes: maxResponseBytes))
    }
}

/// One simulated Socket.IO client.
struct SocketIOClient {
    var phase = SocketIOClientPhase.idle
    /// Bumped at every start, end and close: the timers of an older epoch find nothing to do.
    var epoch: UInt32 = 0
    /// When the step being timed began (Engine.IO handshake, upgrade probe, namespace CONNECT).
    var phaseStartNs: UInt64 = 0
    var probeStartNs: UInt64 = 0
    /// The connect emit running (`spec.connect`), while joining.
    var connectStep = 0
    var session: SocketIOClientSession
    var connections = SocketIOConnections()
    /// The send schedule (open and closed models), shared with the hub client.
    var calls = HubCalls()
    /// Emits awaiting their ack (or echo), by emit id: `pending.next` is the next one's, also
    /// its ack id and its stamp's sequence.
    var pending = PendingSends()
    var reconnect = HubReconnectState()

    init(session: SocketIOClientSession) { self.session = session }
}
