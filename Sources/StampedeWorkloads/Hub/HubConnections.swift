import StampedeLoop
import StampedeSession
import StampedeWire

/// The two TCP connections of one hub client and what runs on them: `main` carries the
/// WebSocket, the SSE stream or the long polls; `side` carries negotiate, and the POSTs (and
/// the closing DELETE) of SSE and long polling (docs/protocols.md §2). Also the bytes waiting
/// on either side of them: hub messages queued for a POST, hub bytes received but incomplete.
struct HubConnections {
    enum MainState: UInt8 { case none, tcp, wsUpgrade, wsOpen, sseHead, sseStream, pollFirst, pollWaiting, pollIdle }
    enum SideState: UInt8 { case none, tcp, idle, negotiate, post, delete }
    /// Which of the two a connection is (kept per loop slot to find its client).
    enum Role: UInt8 { case main = 1, side = 2 }

    /// The id a closed connection is left with (no loop slot has it).
    static var closedID: ConnectionID { ConnectionID(index: .max, generation: 0) }

    var main = HubConnections.closedID
    var side = HubConnections.closedID
    var mainState = MainState.none
    var sideState = SideState.none
    /// The HTTP exchanges of the two connections: the SSE stream or the polls on `main`,
    /// negotiate, the POSTs and the DELETE on `side`.
    var mainExchange = HTTPClientExchange()
    var sideExchange = HTTPClientExchange()
    /// The WebSocket of the main connection (upgrade, frames, close handshake), made when
    /// its TCP connect completes.
    var webSocket = HubConnections.idleWebSocket
    /// Framed hub messages waiting for the side connection (SSE and long polling).
    var postQueue: [UInt8] = []
    /// The POST and poll requests of this connection, built once (they are sent per message).
    var postRequest: HTTPClientRequest? = nil
    var pollRequest: HTTPClientRequest? = nil
    /// Hub bytes received but not yet a complete message.
    var inbound: [UInt8] = []

    /// A placeholder for clients whose main connection is not a WebSocket (yet).
    static var idleWebSocket: WebSocketClientSession {
        WebSocketClientSession(configuration: .init(host: "", port: 0, path: "", upgradeTimeoutNs: 0, closeTimeoutNs: 0, maxMessageBytes: 0))
    }

    /// A (re)start: nothing queued or half received, requests to be built for the new connection id.
    mutating func restart() {
        inbound.removeAll(keepingCapacity: true)
        postQueue.removeAll(keepingCapacity: true)
        postRequest = nil
        pollRequest = nil
    }

    /// Connection `id` was opened as `role`: TCP is connecting, its HTTP exchange starts afresh.
    mutating func opened(_ id: ConnectionID, as role: Role) {
        switch role {
        case .main:
            main = id
            mainState = .tcp
            mainExchange.reset()
        case .side:
            side = id
            sideState = .tcp
            sideExchange.reset()
        }
    }

    /// Forgets the main connection; returns its id if it was open, for the caller to close.
    mutating func releaseMain() -> ConnectionID? {
        let open = mainState != .none ? main : nil
        mainState = .none
        main = Self.closedID
        return open
    }

    /// Forgets the side connection; returns its id if it was open, for the caller to close.
    mutating func releaseSide() -> ConnectionID? {
        let open = sideState != .none ? side : nil
        sideState = .none
        side = Self.closedID
        return open
    }
}
