// Starting a hub client: negotiate (with redirects), the two TCP connections, the HTTP requests,
// choosing and opening a transport (§1, §2). A bare §N is a section of docs/protocols.md.

import Foundation
import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeSession
import StampedeWire

/// What hears a redirect host's resolution on the loop (`HubClients`, whatever its codec).
protocol RedirectResolutionHandler: AnyObject {
    func redirectResolved(_ k: Int, epoch: UInt32, _ answer: HubRedirectResolver.Answer)
}

extension HubClients: RedirectResolutionHandler {}

extension HubClients {
    // MARK: Connecting

    /// Starts (or restarts) a client: negotiate unless skipped, then the transport.
    func start(_ k: Int) {
        clients[k].epoch &+= 1
        clients[k].endpoint.restart(home: homes[k % homes.count])
        clients[k].connections.restart()
        sessions[k] = makeSession(k)
        clients[k].phaseStartNs = EventLoop.now()
        metrics.count(.connectAttempts)
        loop.schedule(at: EventLoop.now() + nanoseconds(plan.spec.handshakeTimeoutSeconds) + plan.connectTimeoutNs * 2,
                      token: token(.handshakeTimeout, k, epoch: clients[k].epoch))
        if plan.spec.skipNegotiation {
            clients[k].endpoint.skipNegotiation()
            setPhase(k, .connecting)
            openMain(k)
        } else {
            negotiate(k)
        }
    }

    func negotiate(_ k: Int) {
        setPhase(k, .negotiating)
        clients[k].phaseStartNs = EventLoop.now()
        if clients[k].connections.sideState == .idle {
            sendNegotiate(k)
        } else {
            openSide(k)
        }
    }

    func openSide(_ k: Int) { open(k, .side) }
    func openMain(_ k: Int) { open(k, .main) }

    /// (Re)opens one of the client's two connections.
    func open(_ k: Int, _ role: HubConnections.Role) {
        if role == .main { closeMain(k) } else { closeSide(k) }
        // HTTP state only for the connections that speak HTTP (negotiate and the POSTs, SSE, long polling).
        if role == .side || clients[k].endpoint.transport != .webSockets { clients[k].connections.needHTTP(maxEventBytes: plan.maxMessageBytes) }
        switch connect(k) {
        case .success(let id):
            clients[k].connections.opened(id, as: role)
            owners.bind(id, client: k, role: role)
        case .failure(let e):
            fail(k, ErrorClass.connectFailure(e.errno))
        }
    }

    func connect(_ k: Int) -> Result<ConnectionID, LoopError> {
        let source = plan.sourceAddresses.isEmpty ? nil : plan.sourceAddresses[k % plan.sourceAddresses.count]
        return loop.connectClient(to: clients[k].endpoint.address, from: source, timeoutNs: plan.connectTimeoutNs, tls: plan.tls, client: k,
                                  random: &random, serverName: clients[k].endpoint.place.serverName)
    }

    /// The client and role of connection `id`, if the client still holds it.
    @inline(__always)
    func owner(_ id: ConnectionID) -> (client: Int, role: HubConnections.Role)? {
        guard let (k, role) = owners.binding(id), clients[k].connections.id(role) == id else { return nil }
        return (k, role)
    }

    func closeMain(_ k: Int) {
        if let main = clients[k].connections.releaseMain() { loop.close(main) }
    }

    /// Forgets the main connection and lets the loop close it once its output (a Close) is written.
    func closeMainAfterFlush(_ k: Int) {
        if let main = clients[k].connections.releaseMain() { loop.closeAfterFlush(main) }
    }

    /// Writes the WebSocket Close frame a close-handshake step calls for, if any (a mask key is
    /// drawn either way, as every close step always has).
    func writeClose(_ k: Int, _ payload: WebSocketClosePayload?) {
        let key = UInt32(truncatingIfNeeded: random.next())
        guard let payload else { return }
        loop.writeMaskedFrame(clients[k].connections.main, opcode: .close, length: payload.count, key: key) { payload.write(into: $0) }
    }

    func closeSide(_ k: Int) {
        if let side = clients[k].connections.releaseSide() { loop.close(side) }
    }

    static func perTransport(_ t: HubTransport, _ ws: Counter, _ sse: Counter, _ lp: Counter) -> Counter {
        switch t {
        case .webSockets: ws
        case .serverSentEvents: sse
        case .longPolling: lp
        }
    }

    // MARK: HTTP requests

    /// Builds a request; the token goes in the Authorization header unless `tokenInTarget`.
    func makeRequest(_ k: Int, method: HTTPMethod, target: String, accept: StaticString? = nil,
                     contentType: StaticString? = nil, tokenInTarget: Bool = false) -> HTTPClientRequest {
        let bearer = tokenInTarget ? nil : clients[k].endpoint.accessToken(configured: plan.accessToken)
        return HTTPClientRequest(method: method, target: Array(target.utf8), host: clients[k].endpoint.hostHeader,
                                 bearerToken: bearer.map { Array($0.utf8) },
                                 accept: accept.map { Array(String(describing: $0).utf8) },
                                 contentType: contentType.map { Array(String(describing: $0).utf8) },
                                 extraHeaderLines: plan.extraHeaderLines)
    }

    func sendRequest(_ k: Int, on id: ConnectionID, method: HTTPMethod, target: String, accept: StaticString? = nil,
                     contentType: StaticString? = nil, body: UnsafeRawBufferPointer? = nil, tokenInTarget: Bool = false) {
        send(makeRequest(k, method: method, target: target, accept: accept, contentType: contentType, tokenInTarget: tokenInTarget),
             on: id, body: body)
    }

    /// Writes a request (head and body) on `id`.
    func send(_ request: HTTPClientRequest, on id: ConnectionID, body: UnsafeRawBufferPointer? = nil) {
        let headLength = request.headLength(contentLength: body?.count)
        loop.write(id, reserving: headLength + (body?.count ?? 0)) { out in
            request.write(into: UnsafeMutableRawBufferPointer(start: out, count: headLength + (body?.count ?? 0)), body: body) ?? 0
        }
    }

    func sendNegotiate(_ k: Int) {
        clients[k].connections.sideState = .negotiate
        _ = clients[k].connections.sideExchange.start(method: .post, body: .collect, now: EventLoop.now())
        let target = clients[k].endpoint.base.negotiateTarget(version: plan.spec.negotiateVersion, statefulReconnect: plan.spec.statefulReconnect)
        sendRequest(k, on: clients[k].connections.side, method: .post, target: target, contentType: "text/plain;charset=UTF-8",
                    body: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// The transport URL with `id`; browsers put the token in the query only where they cannot
    /// set headers (WebSocket and EventSource), which `tokenInQuery` simulates.
    func transportTarget(_ k: Int, forStream: Bool = false) -> String {
        let token = plan.spec.tokenInQuery && forStream ? clients[k].endpoint.accessToken(configured: plan.accessToken) : nil
        return clients[k].endpoint.transportTarget(accessToken: token)
    }

    /// POSTs whatever is queued, if the side connection is free (one POST in flight, §2).
    func flushPosts(_ k: Int) {
        guard clients[k].connections.sideState == .idle, !clients[k].connections.postQueue.isEmpty else { return }
        clients[k].connections.sideState = .post
        _ = clients[k].connections.sideExchange.start(method: .post, body: .discard, now: EventLoop.now())
        if clients[k].connections.postRequest == nil {
            clients[k].connections.postRequest = makeRequest(k, method: .post, target: transportTarget(k),
                                                 contentType: plan.spec.protocolKind == .json ? "text/plain;charset=UTF-8" : "application/octet-stream")
        }
        let request = clients[k].connections.postRequest!
        clients[k].connections.postQueue.withUnsafeBytes { body in send(request, on: clients[k].connections.side, body: body) }
        clients[k].connections.postQueue.removeAll(keepingCapacity: true)
    }

    // MARK: Choosing and opening a transport

    func negotiated(_ k: Int, _ body: [UInt8]) {
        switch NegotiateResponse.parse(body, askedStatefulReconnect: plan.spec.statefulReconnect) {
        case .failure:
            fail(k, .negotiateFailed)
        case .success(.error):
            fail(k, .negotiateFailed)
        case .success(.redirect(let url, let token)):
            clients[k].endpoint.redirects += 1
            // The official clients give up after 100 redirects. The URL keeps the run's scheme
            // (its TLS settings are the run's).
            guard clients[k].endpoint.redirects <= 100, let next = HubURL.parse(url, secure: plan.tls != nil) else {
                fail(k, .negotiateFailed)
                return
            }
            redirect(k, to: next, token: token)
        case .success(.connect(let connection)):
            metrics.record(.negotiate, nanoseconds: EventLoop.now() - clients[k].phaseStartNs)
            clients[k].endpoint.accept(connection, for: plan.spec.protocolKind)
            clients[k].endpoint.transportIndex = 0
            openNextTransport(k)
        }
    }

    // MARK: Redirects

    /// A server may send load only where the scenario allows (the target's host, loopback,
    /// `hub.redirect_hosts`); a name is resolved off the loop, once per run (`HubRedirectResolver`).
    func redirect(_ k: Int, to next: HubURL, token: String?) {
        guard plan.spec.allowsRedirect(to: next.host, targetHost: plan.base.host) else {
            // Only the host is named: the URL's query may carry a secret.
            metrics.countHubError("redirect refused: " + next.host)
            fail(k, .redirectRefused)
            return
        }
        clients[k].endpoint.redirect(to: next, token: token)
        let port = UInt16(next.port)
        if let literal = HostLookup.literal(next.host, port: port) {
            follow(k, at: literal)
        } else if next.host.lowercased() == plan.base.host.lowercased() {
            // The target's own name, resolved before the run.
            follow(k, at: homes[k % homes.count].address.with(port: port))
        } else if let resolver = plan.redirectResolver {
            // The answer comes back as a task of this loop, which finds these clients as its
            // handler (a closure over the generic `self` would capture the codec's type).
            let epoch = clients[k].epoch, loop = loop
            let deliver: @Sendable (HubRedirectResolver.Answer) -> Void = { answer in
                loop.execute { loop in (loop.handler as? any RedirectResolutionHandler)?.redirectResolved(k, epoch: epoch, answer) }
            }
            // Unknown yet: the client stays negotiating (its handshake timeout still runs).
            if let answer = resolver.lookUp(next.host.lowercased(), deliver: deliver) { redirectResolved(k, epoch: epoch, answer) }
        } else {
            redirectResolved(k, epoch: clients[k].epoch, .failed("no resolver"))
        }
    }

    /// The redirect's host name resolved (now, or later on the resolver's thread): client `k`
    /// follows it, unless it moved on meanwhile (ended, timed out: another epoch).
    func redirectResolved(_ k: Int, epoch: UInt32, _ answer: HubRedirectResolver.Answer) {
        guard clients[k].epoch == epoch, clients[k].phase == .negotiating else { return }
        let next = clients[k].endpoint.base
        switch answer {
        case .addresses(let list) where !list.isEmpty:
            follow(k, at: list[k % list.count].with(port: UInt16(next.port)))
        default:
            if case .failed(let why) = answer { metrics.countHubError("redirect: cannot resolve \(next.host): \(why)") }
            fail(k, .negotiateFailed)
        }
    }

    /// Negotiates again at the redirect's URL (already `endpoint.base`), found at `address`: on
    /// the open side connection if it goes to the same place, else on a new one.
    func follow(_ k: Int, at address: SocketAddress) {
        let next = clients[k].endpoint.base
        let hostHeader = HubEndpoint.hostHeader(next)
        if address == clients[k].endpoint.address && hostHeader == clients[k].endpoint.hostHeader && clients[k].connections.sideState == .idle {
            sendNegotiate(k)
        } else {
            let sameName = next.host.lowercased() == plan.base.host.lowercased()
            clients[k].endpoint.move(to: next, at: address, serverName: sameName || plan.tls == nil ? nil : next.host)
            openSide(k)
        }
    }

    /// Opens the first transport (from the current index on) that the scenario allows and the server offers.
    func openNextTransport(_ k: Int) {
        guard let t = clients[k].endpoint.chooseTransport(from: plan.spec.transports, for: plan.spec.protocolKind) else {
            fail(k, .noTransport)
            return
        }
        setPhase(k, .connecting)
        clients[k].phaseStartNs = EventLoop.now()
        if t == .webSockets {
            // Negotiate is over and nothing else uses HTTP: its connection, exchange and body go.
            closeSide(k)
            clients[k].connections.releaseHTTP()
        }
        openMain(k)
    }

    func mainConnected(_ k: Int) {
        let id = clients[k].connections.main
        metrics.recordConnected(id, loop: loop, startNs: clients[k].phaseStartNs, nowNs: EventLoop.now())
        clients[k].phaseStartNs = EventLoop.now()
        switch clients[k].endpoint.transport {
        case .webSockets:
            clients[k].connections.mainState = .wsUpgrade
            var headers: [(String, String)] = []
            if !plan.spec.tokenInQuery, let t = clients[k].endpoint.accessToken(configured: plan.accessToken) { headers.append(("Authorization", "Bearer " + t)) }
            // The hub's own timers bound the upgrade and the close (the handshake and close
            // timeouts), so the session's deadlines are not armed.
            var webSocket = WebSocketClientSession(configuration: .init(
                host: clients[k].endpoint.base.host, port: clients[k].endpoint.base.port, path: transportTarget(k, forStream: true), headers: headers,
                headerLines: plan.extraHeaderLines,
                upgradeTimeoutNs: .max / 4, closeTimeoutNs: .max / 4, maxMessageBytes: plan.maxMessageBytes))
            if case .ended = webSocket.connected(now: EventLoop.now(), random: &random) {
                // A header that cannot be written safely (a server's token with a line break).
                fail(k, .upgradeInvalid)
                return
            }
            webSocket.upgradeRequest.withUnsafeBytes { loop.write(id, $0) }
            clients[k].connections.webSocket = webSocket
        case .serverSentEvents:
            clients[k].connections.mainState = .sseHead
            _ = clients[k].connections.mainExchange.start(method: .get, body: .events, now: EventLoop.now())
            sendRequest(k, on: id, method: .get, target: transportTarget(k, forStream: true), accept: "text/event-stream",
                        tokenInTarget: plan.spec.tokenInQuery)
        case .longPolling:
            clients[k].connections.mainState = .pollFirst
            _ = clients[k].connections.mainExchange.start(method: .get, body: .discard, now: EventLoop.now())
            sendRequest(k, on: id, method: .get, target: transportTarget(k))
        }
    }
}
