import StampedeLoop
import StampedeScenario
import StampedeWire

/// Where one hub client connects and over which transport: the hub URL with its address and
/// Host header (a negotiate redirect replaces all three), negotiate's answer, and the transport
/// chosen from it (docs/protocols.md §1, §2).
struct HubEndpoint {
    /// The hub URL; negotiate and every transport request go under it.
    var base: HubURL
    /// Where `base` is, and its Host header value (both change with a negotiate redirect).
    var address: SocketAddress
    var hostHeader: [UInt8]
    /// Redirects followed since the client started, and the access token the latest one gave.
    var redirects = 0
    var redirectToken: String? = nil
    /// Negotiate's answer: the connection id and the transports the server offers (nil when
    /// negotiation is skipped).
    var negotiated: NegotiatedConnection? = nil
    /// The index, in the scenario's list of transports, of the one tried now, and its kind.
    var transportIndex = 0
    var transport: HubTransport = .webSockets

    init(base: HubURL, address: SocketAddress, hostHeader: [UInt8]) {
        self.base = base; self.address = address; self.hostHeader = hostHeader
    }

    /// A (re)start: back to the configured hub, no redirect followed, the first transport.
    /// (`negotiated` and `transport` stay until negotiate answers or negotiation is skipped.)
    mutating func restart(base: HubURL, address: SocketAddress, hostHeader: [UInt8]) {
        self.base = base
        self.address = address
        self.hostHeader = hostHeader
        redirects = 0
        redirectToken = nil
        transportIndex = 0
    }

    /// A redirect moved the hub to `next`, at `nextAddress`.
    mutating func move(to next: HubURL, at nextAddress: SocketAddress) {
        address = nextAddress
        hostHeader = HTTPClientRequest.hostValue(host: next.host, port: next.port, defaultPort: 80)
    }

    /// The bearer token: the latest redirect's, else the scenario's.
    func accessToken(configured: String?) -> String? { redirectToken ?? configured }

    /// The transport URL with the negotiated `id` (and `accessToken` in the query, if given).
    func transportTarget(accessToken: String?) -> String {
        base.transportTarget(id: negotiated?.idForRequests, accessToken: accessToken)
    }

    /// Chooses the first transport, from `transportIndex` on, that the scenario allows
    /// (`wanted`) and the server offers for `protocolKind` (without negotiate, WebSockets only);
    /// nil when none is left.
    mutating func chooseTransport(from wanted: [HubTransport], for protocolKind: HubProtocolKind) -> HubTransport? {
        while transportIndex < wanted.count {
            let t = wanted[transportIndex]
            if negotiated?.offers(t, for: protocolKind) ?? (t == .webSockets) {
                transport = t
                return t
            }
            transportIndex += 1
        }
        return nil
    }
}
