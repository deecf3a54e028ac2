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
    /// What only HTTP needs (negotiate, SSE, long polling), allocated on use: a client whose
    /// WebSocket is open holds none of it (`releaseHTTP`).
    var http: HubHTTPState? = nil
    /// The WebSocket of the main connection (upgrade, frames, close handshake), made when
    /// its TCP connect completes.
    var webSocket = HubConnections.idleWebSocket
    /// Hub bytes received but not yet a complete message (no storage while there are none).
    var inbound: [UInt8] = []

    /// The HTTP exchanges of the two connections: the SSE stream or the polls on `main`,
    /// negotiate, the POSTs and the DELETE on `side` (`HubHTTPState`, made by `needHTTP`).
    var mainExchange: HTTPClientExchange {
        get { http?.mainExchange ?? HTTPClientExchange() }
        _modify { yield &httpState.mainExchange }
    }
    var sideExchange: HTTPClientExchange {
        get { http?.sideExchange ?? HTTPClientExchange() }
        _modify { yield &httpState.sideExchange }
    }
    /// Framed hub messages waiting for the side connection (SSE and long polling).
    var postQueue: [UInt8] {
        get { http?.postQueue ?? [] }
        _modify { yield &httpState.postQueue }
    }
    /// The POST and poll requests of this connection, built once (they are sent per message).
    var postRequest: HTTPClientRequest? {
        get { http?.postRequest }
        _modify { yield &httpState.postRequest }
    }
    var pollRequest: HTTPClientRequest? {
        get { http?.pollRequest }
        _modify { yield &httpState.pollRequest }
    }

    /// The HTTP state, made now if there is none (`needHTTP` makes it with the run's limits first).
    var httpState: HubHTTPState {
        mutating get {
            if let http { return http }
            let made = HubHTTPState(maxEventBytes: HTTPClientExchange.Configuration().maxEventBytes)
            http = made
            return made
        }
    }

    /// HTTP is about to be used (negotiate, SSE, long polling): the state exists from now on.
    mutating func needHTTP(maxEventBytes: Int) {
        if http == nil { http = HubHTTPState(maxEventBytes: maxEventBytes) }
    }

    /// The WebSocket transport is chosen and the side connection closed: negotiate's exchange and
    /// body, and everything SSE and long polling would use, are freed.
    mutating func releaseHTTP() { http = nil }

    /// A placeholder for clients whose main connection is not a WebSocket (yet).
    static var idleWebSocket: WebSocketClientSession {
        WebSocketClientSession(configuration: .init(host: "", port: 0, path: "", upgradeTimeoutNs: 0, closeTimeoutNs: 0, maxMessageBytes: 0))
    }

    /// The main connection is gone: a hub message it carried in part can never be completed,
    /// and what comes next (a resumed connection's Sequence and replay, or a new connection's
    /// handshake) starts at a message boundary of its own, so the part goes now. Kept, it would
    /// be read as the start of the new connection's first message. True when there was a part.
    mutating func dropPartialInbound() -> Bool {
        defer { inbound = [] }
        return !inbound.isEmpty
    }

    /// A (re)start: nothing queued or half received, requests to be built for the new connection id.
    mutating func restart() {
        inbound = []
        if let http {
            http.postQueue = []
            http.postRequest = nil
            http.pollRequest = nil
        }
    }

    /// Connection `id` was opened as `role`: TCP is connecting, its HTTP exchange starts afresh.
    mutating func opened(_ id: ConnectionID, as role: Role) {
        switch role {
        case .main:
            main = id
            mainState = .tcp
            http?.mainExchange.reset()
        case .side:
            side = id
            sideState = .tcp
            http?.sideExchange.reset()
        }
    }

    /// The id of the connection in `role` (`closedID` when it is not open).
    func id(_ role: Role) -> ConnectionID { role == .main ? main : side }

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

/// The HTTP side of one hub client (docs/protocols.md §1, §2): the exchanges of its two
/// connections, the messages waiting for a POST and the requests built once per connection. A
/// class so that clients that never use HTTP, or stopped using it, carry one nil reference.
final class HubHTTPState {
    var mainExchange: HTTPClientExchange
    var sideExchange = HTTPClientExchange()
    var postQueue: [UInt8] = []
    var postRequest: HTTPClientRequest? = nil
    var pollRequest: HTTPClientRequest? = nil

    init(maxEventBytes: Int) {
        mainExchange = HTTPClientExchange(configuration: .init(maxEventBytes: maxEventBytes))
    }
}
