// Starting a Socket.IO client and its connections: the long-polling GETs and POSTs (HTTP
// requests built once per Engine.IO session), the WebSocket, and writing Engine.IO packets on
// whichever transport carries them now.

import StampedeLoop
import StampedeMetrics
import StampedeSession
import StampedeWire

extension SocketIOClients {
    // MARK: Starting

    /// Starts (or restarts) a client: a new Engine.IO session over the first transport.
    func start(_ k: Int) {
        clients[k].epoch &+= 1
        closeAllConnections(k)
        clients[k].session = SocketIOClientSession(sessionConfiguration, now: EventLoop.now())
        clients[k].phaseStartNs = EventLoop.now()
        metrics.count(.connectAttempts)
        setPhase(k, .opening)
        loop.schedule(at: EventLoop.now() + plan.handshakeTimeoutNs + plan.connectTimeoutNs,
                      token: token(.handshakeTimeout, k, epoch: clients[k].epoch))
        open(k, plan.transportPlan.first == .polling ? .poll : .ws)
    }

    /// (Re)opens one of the client's connections.
    func open(_ k: Int, _ role: SocketIOConnections.Role) {
        close(k, role)
        if role != .ws && clients[k].connections.http == nil {
            clients[k].connections.http = SocketIOHTTPState(maxResponseBytes: plan.maxMessageBytes + 16 * 1024)
        }
        let source = plan.sourceAddresses.isEmpty ? nil : plan.sourceAddresses[k % plan.sourceAddresses.count]
        let to = plan.addresses.isEmpty ? address : plan.addresses[k % plan.addresses.count]
        switch loop.connectClient(to: to, from: source, timeoutNs: plan.connectTimeoutNs, tls: plan.tls, client: k, random: &random) {
        case .success(let id):
            switch role {
            case .poll: clients[k].connections.poll = id; clients[k].connections.pollState = .tcp
            case .post: clients[k].connections.post = id; clients[k].connections.postState = .tcp
            case .ws: clients[k].connections.ws = id; clients[k].connections.wsState = .tcp
            }
            if role != .ws { exchangeReset(k, role) }
            owners.bind(id, client: k, role: role)
        case .failure(let e):
            connectFailed(k, role, e.errno)
        }
    }

    func exchangeReset(_ k: Int, _ role: SocketIOConnections.Role) {
        guard let http = clients[k].connections.http else { return }
        if role == .poll { http.pollExchange.reset() } else { http.postExchange.reset() }
    }

    /// A connect failed: the upgrade's WebSocket fails only the upgrade; anything else the client.
    func connectFailed(_ k: Int, _ role: SocketIOConnections.Role, _ errno: Int32) {
        if role == .ws && isProbe(k) {
            upgradeFailed(k)
            return
        }
        fail(k, ErrorClass.connectFailure(errno))
    }

    /// Whether the WebSocket is the upgrade's probe (not yet the transport).
    func isProbe(_ k: Int) -> Bool { plan.transportPlan == .pollingThenWebSocket && clients[k].session.messageTransport != .websocket }

    /// The client and role of connection `id`, if the client still holds it.
    @inline(__always)
    func owner(_ id: ConnectionID) -> (client: Int, role: SocketIOConnections.Role)? {
        guard let (k, role) = owners.binding(id), clients[k].connections.id(role) == id else { return nil }
        return (k, role)
    }

    func close(_ k: Int, _ role: SocketIOConnections.Role) {
        if let id = clients[k].connections.release(role) { loop.close(id) }
    }

    func closeAllConnections(_ k: Int) {
        close(k, .poll)
        close(k, .post)
        close(k, .ws)
        clients[k].connections.http = nil
    }

    // MARK: Long polling

    func request(_ k: Int, _ method: HTTPMethod) -> HTTPClientRequest {
        let target = plan.target(.polling, sid: clients[k].session.open?.sid)
        return HTTPClientRequest(method: method, target: Array(target.utf8), host: hostHeader, bearerToken: nil, accept: nil,
                                 contentType: method == .post ? Array("text/plain;charset=UTF-8".utf8) : nil,
                                 extraHeaderLines: plan.extraHeaderLines)
    }

    func send(_ request: HTTPClientRequest, on id: ConnectionID, body: UnsafeRawBufferPointer? = nil) {
        let headLength = request.headLength(contentLength: body?.count)
        let total = headLength + (body?.count ?? 0)
        metrics.count(.bytesSent, UInt64(total))
        loop.write(id, reserving: total) { out in
            request.write(into: UnsafeMutableRawBufferPointer(start: out, count: total), body: body) ?? 0
        }
    }

    /// Sends the next GET (the first one is the handshake), opening the connection if needed.
    func startPoll(_ k: Int) {
        guard clients[k].phase != .closing, !clients[k].session.hasEnded, let http = clients[k].connections.http else { return }
        switch clients[k].connections.pollState {
        case .none: open(k, .poll)
        case .tcp, .waiting: return
        case .idle:
            if clients[k].session.open == nil { clients[k].phaseStartNs = EventLoop.now() }  // the handshake's GET
            // Built once the sid is known (the handshake's own GET has none).
            if http.pollRequest == nil || clients[k].session.open == nil { http.pollRequest = request(k, .get) }
            guard let request = http.pollRequest else { return }
            clients[k].connections.pollState = .waiting
            _ = http.pollExchange.start(method: .get, body: .collect, now: EventLoop.now())
            clients[k].session.pollStarted()
            send(request, on: clients[k].connections.poll)
        }
    }

    /// POSTs what is queued, if a POST may go now (one at a time; not while the upgrade pauses
    /// polling), at most the server's `maxPayload` bytes of whole records.
    func flushPosts(_ k: Int) {
        guard clients[k].session.canPost, let http = clients[k].connections.http, !http.postQueue.isEmpty else { return }
        switch clients[k].connections.postState {
        case .none: open(k, .post); return
        case .tcp, .posting: return
        case .idle: break
        }
        if http.postRequest == nil { http.postRequest = request(k, .post) }
        guard let request = http.postRequest else { return }
        let limit = clients[k].session.maxPayload ?? Int.max
        var cut = http.postQueue.count
        if cut > limit {
            // Whole records only: the last separator within the limit, or else the first record
            // alone (emits are checked against the limit; a binary attachment's base64 may pass it).
            cut = http.postQueue[..<min(limit + 1, http.postQueue.count)].lastIndex(of: 0x1E)
                ?? http.postQueue.firstIndex(of: 0x1E) ?? cut
        }
        clients[k].connections.postState = .posting
        _ = http.postExchange.start(method: .post, body: .discard, now: EventLoop.now())
        clients[k].session.postStarted()
        http.postQueue.withUnsafeBytes { send(request, on: clients[k].connections.post, body: UnsafeRawBufferPointer(rebasing: $0[0..<cut])) }
        http.postQueue.removeSubrange(0..<min(http.postQueue.count, cut + 1))
        if http.postQueue.isEmpty && http.postQueue.capacity > 4096 { http.postQueue = [] }
    }

    // MARK: Writing packets

    /// Sends one Engine.IO packet (a text packet with its type digit, or a binary message's raw
    /// bytes) where the session says client packets go now; false when none can take it.
    @discardableResult
    func sendPacket(_ k: Int, _ packet: UnsafeRawBufferPointer, binary: Bool) -> Bool {
        switch clients[k].session.messageTransport {
        case .websocket?:
            guard clients[k].connections.wsState == .open else { return false }
            let n = loop.writeMaskedFrame(clients[k].connections.ws, opcode: binary ? .binary : .text, payload: packet,
                                          key: UInt32(truncatingIfNeeded: random.next()))
            metrics.count(.bytesSent, UInt64(n))
            return true
        case .polling?:
            guard let http = clients[k].connections.http else { return false }
            if !http.postQueue.isEmpty { http.postQueue.append(0x1E) }
            if binary {
                let start = http.postQueue.count
                http.postQueue.append(UInt8(ascii: "b"))
                http.postQueue.append(contentsOf: repeatElement(0, count: Base64.encodedCount(packet.count)))
                let written = http.postQueue.withUnsafeMutableBytes { out in
                    Base64.encode(packet, into: UnsafeMutableRawBufferPointer(rebasing: out[(start + 1)...]))
                }
                guard written != nil else { return false }
            } else {
                http.postQueue.append(contentsOf: packet)
            }
            flushPosts(k)
            return true
        case nil:
            return false
        }
    }

    /// Sends one of the session's fixed packets (pong, probe, upgrade, close) as a WebSocket text
    /// frame on the WebSocket, whatever the transport.
    func sendOnWebSocket(_ k: Int, _ packet: [UInt8]) {
        guard clients[k].connections.wsState == .open else { return }
        packet.withUnsafeBytes { p in
            let n = loop.writeMaskedFrame(clients[k].connections.ws, opcode: .text, payload: p, key: UInt32(truncatingIfNeeded: random.next()))
            metrics.count(.bytesSent, UInt64(n))
        }
    }
}
