import StampedeLoop
import StampedeScenario
import StampedeWire

/// Where one hub client connects and over which transport: the hub URL with its address and
/// Host header (a negotiate redirect replaces all three), negotiate's answer, and the transport
/// chosen from it (docs/protocols.md §1, §2).
struct HubEndpoint {
    /// The hub URL, its address and Host header, and the access token of the latest redirect:
    /// shared by every client that was not redirected (no per-client copy), replaced by a new
    /// one for a client a redirect moves.
    var place: HubPlace
    /// The hub URL; negotiate and every transport request go under it.
    var base: HubURL { place.base }
    /// Where `base` is, and its Host header value (both change with a negotiate redirect).
    var address: SocketAddress { place.address }
    var hostHeader: [UInt8] { place.hostHeader }
    var redirectToken: String? { place.token }
    /// Redirects followed since the client started.
    var redirects = 0
    /// Negotiate's answer, only what is used after it: the `id` every later request carries,
    /// the transports offered in this client's transfer format (a bit per transport), and
    /// whether stateful reconnect was agreed. `negotiated` is false when negotiation is skipped.
    var connectionID: String? = nil
    var offered: UInt8 = 0
    var negotiated = false
    var statefulReconnect = false
    /// The index, in the scenario's list of transports, of the one tried now, and its kind.
    var transportIndex = 0
    var transport: HubTransport = .webSockets

    init(place: HubPlace) { self.place = place }

    /// A (re)start: back to the configured hub (`home`), no redirect followed, the first transport.
    /// (negotiate's answer and `transport` stay until negotiate answers or negotiation is skipped.)
    mutating func restart(home: HubPlace) {
        place = home
        redirects = 0
        transportIndex = 0
    }

    /// A redirect names `next` as the hub (and `token` as the access token, if it gives one);
    /// the address and Host header stay until `move`.
    mutating func redirect(to next: HubURL, token: String?) {
        place = HubPlace(base: next, address: place.address, hostHeader: place.hostHeader, token: token ?? place.token,
                         serverName: place.serverName)
    }

    /// Negotiate answered with `connection`: keeps what the transports need of it.
    mutating func accept(_ connection: NegotiatedConnection, for protocolKind: HubProtocolKind) {
        negotiated = true
        connectionID = connection.idForRequests
        statefulReconnect = connection.useStatefulReconnect
        offered = 0
        for t in [HubTransport.webSockets, .serverSentEvents, .longPolling] where connection.offers(t, for: protocolKind) {
            offered |= Self.bit(t)
        }
    }

    /// Negotiation is skipped: WebSockets, no id.
    mutating func skipNegotiation() {
        negotiated = false
        connectionID = nil
        offered = 0
        statefulReconnect = false
        transport = .webSockets
    }

    static func bit(_ t: HubTransport) -> UInt8 {
        switch t {
        case .webSockets: 1
        case .serverSentEvents: 2
        case .longPolling: 4
        }
    }

    /// A redirect moved the hub to `next`, at `nextAddress`; over TLS, `serverName` is the name
    /// its connections send and check (nil: the run's).
    mutating func move(to next: HubURL, at nextAddress: SocketAddress, serverName: String?) {
        place = HubPlace(base: place.base, address: nextAddress, hostHeader: Self.hostHeader(next),
                         token: place.token, serverName: serverName)
    }

    static func hostHeader(_ url: HubURL) -> [UInt8] { HTTPClientRequest.hostValue(host: url.host, port: url.port, defaultPort: 80) }

    /// The bearer token: the latest redirect's, else the scenario's.
    func accessToken(configured: String?) -> String? { redirectToken ?? configured }

    /// The transport URL with the negotiated `id` (and `accessToken` in the query, if given).
    func transportTarget(accessToken: String?) -> String {
        base.transportTarget(id: connectionID, accessToken: accessToken)
    }

    /// Chooses the first transport, from `transportIndex` on, that the scenario allows
    /// (`wanted`) and the server offers for `protocolKind` (without negotiate, WebSockets only);
    /// nil when none is left.
    mutating func chooseTransport(from wanted: [HubTransport], for protocolKind: HubProtocolKind) -> HubTransport? {
        while transportIndex < wanted.count {
            let t = wanted[transportIndex]
            if negotiated ? offered & Self.bit(t) != 0 : t == .webSockets {
                transport = t
                return t
            }
            transportIndex += 1
        }
        return nil
    }
}

/// Where a hub is: its URL, address and Host header, and the access token a redirect gave
/// (immutable; see `HubEndpoint.place`).
final class HubPlace: Sendable {
    let base: HubURL
    let address: SocketAddress
    let hostHeader: [UInt8]
    let token: String?
    /// The TLS server name (SNI and the certificate check) of a host a redirect named; nil: the run's.
    let serverName: String?

    init(base: HubURL, address: SocketAddress, hostHeader: [UInt8], token: String? = nil, serverName: String? = nil) {
        self.base = base; self.address = address; self.hostHeader = hostHeader; self.token = token; self.serverName = serverName
    }
}
