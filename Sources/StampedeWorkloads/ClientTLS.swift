import StampedeLoop
import StampedeMetrics

/// How a workload's clients speak TLS: the run's one client context, and how often a
/// connection offers the client's last session. Every client connection (chat, hub negotiate
/// and transports, REST) goes through `connect` and `connected` here, so TLS is set up and
/// measured the same way for all of them.
public struct ClientTLS: Sendable {
    public let context: TLSContext
    /// The share of connections that offer the client's last session (0 without session tickets).
    public let resumeRatio: Double
    let keepsSessions: Bool

    public init(context: TLSContext, sessionTickets: Bool, resumeRatio: Double) {
        self.context = context
        keepsSessions = sessionTickets
        self.resumeRatio = sessionTickets ? resumeRatio : 0
    }

    /// Whether the next connection of `client` (a global client index, the key of its kept
    /// session) resumes: a first connection has nothing to resume and makes a full handshake.
    func reuse(client: Int, random: inout FastRandom) -> TLSSessionReuse {
        guard keepsSessions else { return .none }
        return resumeRatio >= 1 || random.unit() < resumeRatio ? .resume(key: client) : .keep(key: client)
    }
}

extension EventLoop {
    /// Starts a client connection, over TLS when `tls` is set. `client` is the loop's own index of
    /// the simulated client; with the loop's index it keys the client's kept session (the context
    /// is shared by every loop). `serverName` replaces the context's (a host a hub negotiate
    /// redirected to); such a connection keeps its session apart from the target's, since a
    /// session is only ever resumed with the server that gave it.
    func connectClient(to address: SocketAddress, from source: SocketAddress?, timeoutNs: UInt64,
                       tls: ClientTLS?, client: Int, random: inout FastRandom, serverName: String? = nil) -> Result<ConnectionID, LoopError> {
        guard let tls else { return connect(to: address, fromAddress: source, timeoutNs: timeoutNs) }
        let key = index << 32 | client | (serverName == nil ? 0 : 1 << 31)
        return connect(to: address, fromAddress: source, timeoutNs: timeoutNs, tls: tls.context,
                       tlsSession: tls.reuse(client: key, random: &random), serverName: serverName)
    }
}

extension MetricsShard {
    /// A client connection that started at `startNs` is ready at `nowNs` (TCP connected, and the
    /// TLS handshake done if it speaks TLS): records `tcp_connect` and `tls_handshake` apart.
    mutating func recordConnected(_ id: ConnectionID, loop: EventLoop, startNs: UInt64, nowNs: UInt64) {
        let total = nowNs &- startNs
        record(.tcpConnect, nanoseconds: total &- min(total, recordTLSHandshake(id, loop: loop)))
    }

    /// Records `id`'s TLS handshake, if it had one (a connection whose TCP connect is not timed
    /// on its own: a hub client's send connection); returns its duration (0 without TLS).
    @discardableResult
    mutating func recordTLSHandshake(_ id: ConnectionID, loop: EventLoop) -> UInt64 {
        guard let tls = loop.tlsHandshake(of: id) else { return 0 }
        record(.tlsHandshake, nanoseconds: tls.durationNs)
        count(.tlsHandshakes)
        if tls.resumed { count(.tlsResumed) }
        return tls.durationNs
    }
}
