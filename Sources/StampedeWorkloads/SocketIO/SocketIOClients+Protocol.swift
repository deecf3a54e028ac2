// The session's answers, carried out: the Engine.IO open packet, pings, the upgrade to
// WebSocket, the namespace's CONNECT and its answer, the connect emits, and every way the
// session ends, counted in its class.

import StampedeLoop
import StampedeMetrics
import StampedeScenario
import StampedeSession
import StampedeWire

extension SocketIOClients {
    /// One Engine.IO packet that arrived on `transport`, through the session.
    func receivePacket(_ k: Int, _ packet: UnsafeRawBufferPointer, binary: Bool, on transport: SocketIOTransport) {
        switch clients[k].session.receive(packet, binary: binary, on: transport, now: EventLoop.now()) {
        case .opened: engineOpened(k)
        case .sendPong(let t):
            if t == .websocket { sendOnWebSocket(k, SocketIOClientSession.pong) } else {
                SocketIOClientSession.pong.withUnsafeBytes { _ = sendPacket(k, $0, binary: false) }
            }
        case .probeAnswered(let upgradeNow):
            if upgradeNow { finishUpgrade(k) }
        case .probeFailed: upgradeFailed(k)
        case .namespaceConnected: namespaceConnected(k)
        case .event(let p): eventReceived(k, p, packet)
        case .ack(let p): ackReceived(k, p.ackId)
        case .binary(let p):
            let head = clients[k].session.binaryHead  // a copy (no bytes copied): handling touches `clients`
            head.withUnsafeBytes { h in
                if p.type == .binaryAck { ackReceived(k, p.ackId) } else { eventReceived(k, p, h) }
            }
        case .skipped: break
        case .ended(let end): sessionEnded(k, end, packet)
        }
    }

    /// The open packet: time the Engine.IO handshake, send the namespace CONNECT, and start the upgrade.
    func engineOpened(_ k: Int) {
        guard let sid = clients[k].session.open?.sid, Self.isSafeSid(sid) else {
            fail(k, .handshakeFailed)
            return
        }
        let now = EventLoop.now()
        metrics.record(.eioHandshake, nanoseconds: now &- clients[k].phaseStartNs)
        clients[k].connections.http?.pollRequest = nil  // the next GETs carry the sid
        setPhase(k, .connecting)
        clients[k].phaseStartNs = now
        sendConnect(k)
        if clients[k].session.shouldProbe {
            clients[k].session.probeStarted()
            clients[k].probeStartNs = now
            open(k, .ws)
        }
    }

    /// A sid goes into request targets: only the characters servers use (base64url and a few).
    static func isSafeSid(_ sid: String) -> Bool {
        !sid.isEmpty && sid.utf8.count <= 128 && sid.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D || c == 0x5F || c == 0x2E || c == 0x7E
        }
    }

    /// The namespace CONNECT, with the auth object when the scenario gives one.
    func sendConnect(_ k: Int) {
        guard let head = clients[k].session.writeHead(.connect, into: scratch) else { return }
        var n = head
        if let auth = plan.spec.auth {
            guard let written = render(k, auth, at: head, sequence: 0, stamp: MessageStamp(sender: 0, sequence: 0, intendedNs: 0, actualNs: 0)) else {
                fail(k, .messageTooBig)
                return
            }
            n = head + written
        }
        sendPacket(k, UnsafeRawBufferPointer(rebasing: scratch[0..<n]), binary: false)
    }

    /// The WebSocket's 101 arrived: it carries the session (`[websocket]`) or the probe.
    func webSocketOpened(_ k: Int) {
        clients[k].connections.wsState = .open
        if isProbe(k) {
            clients[k].probeStartNs = EventLoop.now()
            sendOnWebSocket(k, SocketIOClientSession.probe)
        } else {
            clients[k].phaseStartNs = EventLoop.now()  // the open packet is timed from the WebSocket's opening
        }
    }

    /// Polling is paused and drained: the upgrade packet, then what waited for a POST goes on the
    /// WebSocket, and long polling's connections and state go.
    func finishUpgrade(_ k: Int) {
        sendOnWebSocket(k, SocketIOClientSession.upgradePacket)
        metrics.record(.upgrade, nanoseconds: EventLoop.now() &- clients[k].probeStartNs)
        metrics.count(.upgraded)
        if let queue = clients[k].connections.http?.postQueue, !queue.isEmpty {
            queue.withUnsafeBytes { body in
                var records = EngineIOPollingPayload(body)
                while let record = records.next() {
                    switch record {
                    case .text(_, let data) where data.lowerBound >= 1:
                        _ = sendPacket(k, UnsafeRawBufferPointer(rebasing: body[(data.lowerBound - 1)..<data.upperBound]), binary: false)
                    case .binary(let base64):
                        if let n = Base64.decode(UnsafeRawBufferPointer(rebasing: body[base64]), into: decodeScratch) {
                            _ = sendPacket(k, UnsafeRawBufferPointer(rebasing: decodeScratch[0..<n]), binary: true)
                        }
                    default: break
                    }
                }
            }
        }
        close(k, .poll)
        close(k, .post)
        clients[k].connections.http = nil
    }

    /// The upgrade failed (the WebSocket did not open, or did not answer the probe): polling
    /// carries on, unless it was already paused for the upgrade.
    func upgradeFailed(_ k: Int) {
        metrics.count(.upgradesFailed)
        close(k, .ws)
        if clients[k].session.upgrade == .pausing {
            drop(k)
            return
        }
        clients[k].session.probeFailed()
    }

    func namespaceConnected(_ k: Int) {
        metrics.record(.namespaceConnect, nanoseconds: EventLoop.now() &- clients[k].phaseStartNs)
        setPhase(k, .joining)
        clients[k].connectStep = 0
        runConnectEmits(k)
    }

    /// Ack ids of the connect emits: above every scheduled emit's id (a UInt32).
    static let connectAckBase: UInt64 = 1 << 40

    /// Sends the connect emits in order; one with `ack: true` waits for its ack. After the last
    /// one the client is connected.
    func runConnectEmits(_ k: Int) {
        while clients[k].connectStep < plan.spec.connect.count {
            let step = clients[k].connectStep
            let e = plan.spec.connect[step]
            let now = EventLoop.now()
            let stamp = MessageStamp(sender: plan.load.sender(k), sequence: 0, intendedNs: stampNow(now), actualNs: stampNow(now))
            guard emit(k, e, ackId: e.ack ? Self.connectAckBase + UInt64(step) : nil, sequence: 0, stamp: stamp) else {
                fail(k, .messageTooBig)
                return
            }
            if e.ack { return }
            clients[k].connectStep += 1
        }
        connected(k)
    }

    /// The session ended on what the server sent: counted in its class.
    func sessionEnded(_ k: Int, _ end: SocketIOSessionEnd, _ packet: UnsafeRawBufferPointer) {
        switch end {
        case .handshakeInvalid: fail(k, .handshakeFailed)
        case .namespaceRefused(let message):
            metrics.countConnectError(message.map { String(decoding: UnsafeRawBufferPointer(rebasing: packet[$0]), as: UTF8.self) } ?? "")
            // socket.io-client does not retry a refused CONNECT: the server said no.
            metrics.error(.namespaceRefused)
            self.end(k, reconnect: false)
        case .disconnectedByServer, .closedByServer:
            // The server's choice: the official client reconnects after a close, not after a
            // namespace disconnect; a load generator's clients come back either way, by the policy.
            drop(k)
        case .serverTimeout: fail(k, .serverTimeout)
        case .protocolError: fail(k, .protocolError)
        case .messageTooBig: fail(k, .messageTooBig)
        }
    }
}
