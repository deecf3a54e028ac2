// Starting a hub client: negotiate (with redirects), the two TCP connections, the HTTP requests,
// choosing and opening a transport (§1, §2). A bare §N is a section of docs/protocols.md.

import Foundation
import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeSession
import StampedeWire

extension HubClients {
    // MARK: Connecting

    /// Starts (or restarts) a client: negotiate unless skipped, then the transport.
    func start(_ k: Int) {
        clients[k].epoch &+= 1
        clients[k].base = plan.base
        clients[k].address = address
        clients[k].hostHeader = hostHeader
        clients[k].redirects = 0
        clients[k].redirectToken = nil
        clients[k].transportIndex = 0
        clients[k].inbound.removeAll(keepingCapacity: true)
        clients[k].postQueue.removeAll(keepingCapacity: true)
        clients[k].postRequest = nil
        clients[k].pollRequest = nil
        clients[k].session = makeSession(k)
        clients[k].phaseStartNs = EventLoop.now()
        metrics.count(.connectAttempts)
        loop.schedule(at: EventLoop.now() + nanoseconds(plan.spec.handshakeTimeoutSeconds) + plan.connectTimeoutNs * 2,
                      token: token(.handshakeTimeout, k, epoch: clients[k].epoch))
        if plan.spec.skipNegotiation {
            clients[k].negotiated = nil
            clients[k].transport = .webSockets
            setPhase(k, .connecting)
            openMain(k)
        } else {
            negotiate(k)
        }
    }

    func negotiate(_ k: Int) {
        setPhase(k, .negotiating)
        clients[k].phaseStartNs = EventLoop.now()
        if clients[k].sideState == .idle {
            sendNegotiate(k)
        } else {
            openSide(k)
        }
    }

    func openSide(_ k: Int) { open(k, .side) }
    func openMain(_ k: Int) { open(k, .main) }

    /// (Re)opens one of the client's two connections.
    func open(_ k: Int, _ role: Role) {
        if role == .main { closeMain(k) } else { closeSide(k) }
        switch connect(k) {
        case .success(let id):
            if role == .main {
                clients[k].main = id
                clients[k].mainState = .tcp
                clients[k].mainExchange.reset()
            } else {
                clients[k].side = id
                clients[k].sideState = .tcp
                clients[k].sideExchange.reset()
            }
            bind(id, k, role)
        case .failure(let e):
            fail(k, ErrorClass.connectFailure(e.errno))
        }
    }

    func connect(_ k: Int) -> Result<ConnectionID, LoopError> {
        let source = plan.sourceAddresses.isEmpty ? nil : plan.sourceAddresses[k % plan.sourceAddresses.count]
        return loop.connect(to: clients[k].address, from: source, timeoutNs: plan.connectTimeoutNs)
    }

    func bind(_ id: ConnectionID, _ k: Int, _ role: Role) {
        let i = Int(id.index)
        if i >= slotClient.count {
            let grow = i + 1 - slotClient.count + 64
            slotClient.append(contentsOf: repeatElement(-1, count: grow))
            slotRole.append(contentsOf: repeatElement(0, count: grow))
        }
        slotClient[i] = Int32(k)
        slotRole[i] = role.rawValue
    }

    @inline(__always)
    func owner(_ id: ConnectionID) -> (client: Int, role: Role)? {
        let i = Int(id.index)
        guard i < slotClient.count, slotClient[i] >= 0 else { return nil }
        let k = Int(slotClient[i])
        if clients[k].main == id && slotRole[i] == Role.main.rawValue { return (k, .main) }
        if clients[k].side == id && slotRole[i] == Role.side.rawValue { return (k, .side) }
        return nil
    }

    func closeMain(_ k: Int) {
        if clients[k].mainState != .none { loop.close(clients[k].main) }
        clients[k].mainState = .none
        clients[k].main = ConnectionID(index: .max, generation: 0)
    }

    /// Forgets the main connection and lets the loop close it once its output (a Close) is written.
    func closeMainAfterFlush(_ k: Int) {
        if clients[k].mainState != .none { loop.closeAfterFlush(clients[k].main) }
        clients[k].mainState = .none
        clients[k].main = ConnectionID(index: .max, generation: 0)
    }

    /// Writes the WebSocket Close frame a close-handshake step calls for, if any (a mask key is
    /// drawn either way, as every close step always has).
    func writeClose(_ k: Int, _ payload: WebSocketClosePayload?) {
        let key = UInt32(truncatingIfNeeded: random.next())
        guard let payload else { return }
        loop.writeMaskedFrame(clients[k].main, opcode: .close, length: payload.count, key: key) { payload.write(into: $0) }
    }

    func closeSide(_ k: Int) {
        if clients[k].sideState != .none { loop.close(clients[k].side) }
        clients[k].sideState = .none
        clients[k].side = ConnectionID(index: .max, generation: 0)
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
        let bearer = tokenInTarget ? nil : clients[k].redirectToken ?? plan.accessToken
        return HTTPClientRequest(method: method, target: Array(target.utf8), host: clients[k].hostHeader,
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
        clients[k].sideState = .negotiate
        _ = clients[k].sideExchange.start(method: .post, body: .collect, now: EventLoop.now())
        let target = clients[k].base.negotiateTarget(version: plan.spec.negotiateVersion, statefulReconnect: plan.spec.statefulReconnect)
        sendRequest(k, on: clients[k].side, method: .post, target: target, contentType: "text/plain;charset=UTF-8",
                    body: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// The transport URL with `id`; browsers put the token in the query only where they cannot
    /// set headers (WebSocket and EventSource), which `tokenInQuery` simulates.
    func transportTarget(_ k: Int, forStream: Bool = false) -> String {
        let token = plan.spec.tokenInQuery && forStream ? (clients[k].redirectToken ?? plan.accessToken) : nil
        return clients[k].base.transportTarget(id: clients[k].negotiated?.idForRequests, accessToken: token)
    }

    /// POSTs whatever is queued, if the side connection is free (one POST in flight, §2).
    func flushPosts(_ k: Int) {
        guard clients[k].sideState == .idle, !clients[k].postQueue.isEmpty else { return }
        clients[k].sideState = .post
        _ = clients[k].sideExchange.start(method: .post, body: .discard, now: EventLoop.now())
        if clients[k].postRequest == nil {
            clients[k].postRequest = makeRequest(k, method: .post, target: transportTarget(k),
                                                 contentType: plan.spec.protocolKind == .json ? "text/plain;charset=UTF-8" : "application/octet-stream")
        }
        let request = clients[k].postRequest!
        clients[k].postQueue.withUnsafeBytes { body in send(request, on: clients[k].side, body: body) }
        clients[k].postQueue.removeAll(keepingCapacity: true)
    }

    // MARK: Choosing and opening a transport

    func negotiated(_ k: Int, _ body: [UInt8]) {
        switch NegotiateResponse.parse(body, askedStatefulReconnect: plan.spec.statefulReconnect) {
        case .failure:
            fail(k, .negotiateFailed)
        case .success(.error):
            fail(k, .negotiateFailed)
        case .success(.redirect(let url, let token)):
            clients[k].redirects += 1
            // The official clients give up after 100 redirects; Stampede also never leaves loopback.
            guard clients[k].redirects <= 100, let next = HubURL.parse(url), let nextAddress = SocketAddress(host: next.host, port: next.port),
                  nextAddress.isLoopback else {
                fail(k, .negotiateFailed)
                return
            }
            clients[k].base = next
            if let token { clients[k].redirectToken = token }
            if nextAddress == clients[k].address && clients[k].sideState == .idle {
                sendNegotiate(k)
            } else {
                clients[k].address = nextAddress
                clients[k].hostHeader = HTTPClientRequest.hostValue(host: next.host, port: next.port, defaultPort: 80)
                openSide(k)
            }
        case .success(.connect(let connection)):
            metrics.record(.negotiate, nanoseconds: EventLoop.now() - clients[k].phaseStartNs)
            clients[k].negotiated = connection
            clients[k].transportIndex = 0
            openNextTransport(k)
        }
    }

    /// Opens the first transport (from the current index on) that the scenario allows and the server offers.
    func openNextTransport(_ k: Int) {
        let wanted = plan.spec.transports
        while clients[k].transportIndex < wanted.count {
            let t = wanted[clients[k].transportIndex]
            if clients[k].negotiated?.offers(t, for: plan.spec.protocolKind) ?? (t == .webSockets) {
                clients[k].transport = t
                setPhase(k, .connecting)
                clients[k].phaseStartNs = EventLoop.now()
                if t == .webSockets { closeSide(k) }
                openMain(k)
                return
            }
            clients[k].transportIndex += 1
        }
        fail(k, .noTransport)
    }

    func mainConnected(_ k: Int) {
        let id = clients[k].main
        metrics.record(.tcpConnect, nanoseconds: EventLoop.now() - clients[k].phaseStartNs)
        clients[k].phaseStartNs = EventLoop.now()
        switch clients[k].transport {
        case .webSockets:
            clients[k].mainState = .wsUpgrade
            var headers: [(String, String)] = []
            if !plan.spec.tokenInQuery, let t = clients[k].redirectToken ?? plan.accessToken { headers.append(("Authorization", "Bearer " + t)) }
            let extra = String(decoding: plan.extraHeaderLines, as: UTF8.self)
            for line in extra.split(separator: "\r\n") {
                if let colon = line.firstIndex(of: ":") {
                    headers.append((String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)))
                }
            }
            // The hub's own timers bound the upgrade and the close (the handshake and close
            // timeouts), so the session's deadlines are not armed.
            var webSocket = WebSocketClientSession(configuration: .init(
                host: clients[k].base.host, port: clients[k].base.port, path: transportTarget(k, forStream: true), headers: headers,
                upgradeTimeoutNs: .max / 4, closeTimeoutNs: .max / 4, maxMessageBytes: plan.maxMessageBytes))
            _ = webSocket.connected(now: EventLoop.now(), random: &random)
            webSocket.upgradeRequest.withUnsafeBytes { loop.write(id, $0) }
            clients[k].webSocket = webSocket
        case .serverSentEvents:
            clients[k].mainState = .sseHead
            _ = clients[k].mainExchange.start(method: .get, body: .events, now: EventLoop.now())
            sendRequest(k, on: id, method: .get, target: transportTarget(k, forStream: true), accept: "text/event-stream",
                        tokenInTarget: plan.spec.tokenInQuery)
        case .longPolling:
            clients[k].mainState = .pollFirst
            _ = clients[k].mainExchange.start(method: .get, body: .discard, now: EventLoop.now())
            sendRequest(k, on: id, method: .get, target: transportTarget(k))
        }
    }
}
