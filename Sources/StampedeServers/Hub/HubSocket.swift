import StampedeLoop
import StampedeSession
import StampedeWire

/// One TCP connection: HTTP requests, then possibly a WebSocket, an SSE stream or an open poll.
final class HubSocket {
    enum Mode { case http, webSocket, serverSentEvents, poll, closed }
    enum Route {
        case none
        case reject(Int, StaticString, String)
        /// Refused by a reject fault: 503 with Retry-After, then close.
        case unavailable(retryAfter: Int)
        case negotiate
        case webSocket
        case webSocketWithoutNegotiate
        case serverSentEvents
        case poll
        case send
        case delete
    }

    let id: ConnectionID
    var mode: Mode = .http
    var parser = HTTPRequestParser()
    /// Frames, pings and the close handshake once the socket is a WebSocket.
    var webSocket: WebSocketServerSession? = nil
    /// The hub connection this socket carries (WebSocket, SSE) or polls for.
    var connection: HubConnection? = nil
    // The request being received.
    var route: Route = .none
    var target: HubConnection? = nil
    var closeAfterResponse = false
    var http10 = false
    var webSocketKey = ""
    var negotiateVersion = 0
    var wantsStatefulReconnect = false

    init(id: ConnectionID) { self.id = id }
}
