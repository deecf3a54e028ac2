import Testing
import StampedeWire
@testable import StampedeSession

// The server side of Engine.IO 4 / Socket.IO 5 as a pure session, driven by byte fixtures (what
// python-socketio and socket.io-client send) and a fake clock.

private let config = SocketIOServerSession.Configuration(pingIntervalNs: 25_000_000_000, pingTimeoutNs: 20_000_000_000,
                                                          maxPayload: 1000, maxQueuedBytes: 64 * 1024)

private func session(_ transport: SocketIOServerSession.Transport = .polling, _ clock: FakeClock = FakeClock()) -> SocketIOServerSession {
    SocketIOServerSession(sid: Array("SID0123456789abcdefg".utf8), transport: transport, configuration: config, now: clock.now)
}

/// An action as text, its ranges resolved in `buffer` (binary packets in the session's own).
private func describe(_ a: SocketIOServerSession.Action, _ buffer: [UInt8], _ s: SocketIOServerSession) -> String {
    func text(_ b: [UInt8], _ r: Range<Int>?) -> String { r.map { String(decoding: b[$0], as: UTF8.self) } ?? "/" }
    switch a {
    case .none: return "none"
    case .connectRequested(let ns, let auth): return "connect \(text(buffer, ns)) auth=\(text(buffer, auth))"
    case .disconnected(let ns): return "disconnect \(text(buffer, ns))"
    case .packet(let p): return "\(p.type) \(text(buffer, p.namespace)) id=\(p.ackId.map(String.init) ?? "-") \(text(buffer, p.data))"
    case .binaryPacket(let p):
        return "\(p.type) \(text(s.binaryPacket, p.namespace)) id=\(p.ackId.map(String.init) ?? "-") \(text(s.binaryPacket, p.data)) +\(s.attachments)"
    case .ignored: return "ignored"
    case .sendProbeAnswer: return "probe"
    case .upgraded: return "upgraded"
    case .upgradeFailed: return "upgradeFailed"
    case .ended(let end): return "ended \(end)"
    }
}

/// Every record of a POST body, as text.
private func post(_ s: inout SocketIOServerSession, _ body: String, _ clock: FakeClock = FakeClock()) -> [String] {
    let bytes = Array(body.utf8)
    var out: [String] = []
    var offset = 0
    while offset < bytes.count {
        let (a, next) = bytes.withUnsafeBytes { s.post($0, from: offset, now: clock.now) }
        out.append(describe(a, bytes, s))
        #expect(next > offset)
        offset = next
    }
    return out
}

private func ws(_ s: inout SocketIOServerSession, _ text: String, _ clock: FakeClock = FakeClock()) -> String {
    let bytes = Array(text.utf8)
    let a = bytes.withUnsafeBytes { s.webSocketMessage($0, binary: false, now: clock.now) }
    return describe(a, bytes, s)
}

private func wsBinary(_ s: inout SocketIOServerSession, _ bytes: [UInt8]) -> String {
    let a = bytes.withUnsafeBytes { s.webSocketMessage($0, binary: true, now: 1) }
    return describe(a, bytes, s)
}

private func attach(_ s: inout SocketIOServerSession) -> Bool { s.webSocketAttached() }

private func payload(_ s: inout SocketIOServerSession) -> String {
    var text = ""
    s.takePollPayload { text = String(decoding: $0, as: UTF8.self) }
    return text
}

private func drained(_ s: inout SocketIOServerSession) -> [String] {
    var frames: [String] = []
    s.drainWebSocket { binary, bytes in frames.append(binary ? "bin \(Array(bytes))" : String(decoding: bytes, as: UTF8.self)) }
    return frames
}

@Suite struct SocketIOServerSessionHandshakeTests {
    @Test func theOpenPacketAnnouncesTheSidTheWebSocketUpgradeThePingsAndMaxPayload() throws {
        let open = session(.polling).openPacket()
        #expect(open.first == UInt8(ascii: "0"))
        let parsed = try #require(Array(open.dropFirst()).withUnsafeBytes { EngineIOOpen.parse($0) })
        #expect(parsed == EngineIOOpen(sid: "SID0123456789abcdefg", upgrades: ["websocket"], pingIntervalMs: 25000, pingTimeoutMs: 20000, maxPayload: 1000))
        let overWebSocket = try #require(Array(session(.webSocket).openPacket().dropFirst()).withUnsafeBytes { EngineIOOpen.parse($0) })
        #expect(overWebSocket.upgrades == [])
    }

    @Test func aNamespaceConnectIsAcceptedWithASocketIDOrRefusedWithAMessage() {
        var s = session()
        #expect(post(&s, "40{\"token\":\"T\"}\u{1e}40/admin,") == ["connect / auth={\"token\":\"T\"}", "connect /admin auth="])
        #expect(s.acceptConnect(namespace: Array("/".utf8), socketID: Array("abc".utf8)) == .queued)
        #expect(s.refuseConnect(namespace: Array("/admin".utf8), message: Array("not authorized".utf8)) == .queued)
        #expect(s.poll(now: 1) == .answerNow)
        #expect(payload(&s) == "40{\"sid\":\"abc\"}\u{1e}44/admin,{\"message\":\"not authorized\"}")
        #expect(s.isConnected(Array("/".utf8)) && !s.isConnected(Array("/admin".utf8)))
    }
}

@Suite struct SocketIOServerSessionPacketTests {
    @Test func eventsAndAcksOnAConnectedNamespaceAreDeliveredWithTheirAckIds() {
        var s = session()
        _ = post(&s, "40")
        _ = s.acceptConnect(namespace: Array("/".utf8), socketID: Array("x".utf8))
        #expect(post(&s, "42[\"say\",{\"text\":\"hi\"}]\u{1e}4212[\"echo\",1]\u{1e}437[]")
                == ["event / id=- [\"say\",{\"text\":\"hi\"}]", "event / id=12 [\"echo\",1]", "ack / id=7 []"])
    }

    @Test func packetsForANamespaceNotConnectedAreIgnoredAndDisconnectLeavesIt() {
        var s = session()
        #expect(post(&s, "42/chat,[\"say\"]") == ["ignored"])
        _ = s.acceptConnect(namespace: Array("/chat".utf8), socketID: Array("x".utf8))
        #expect(post(&s, "42/chat,[\"say\"]\u{1e}41/chat,\u{1e}42/chat,[\"say\"]") == ["event /chat id=- [\"say\"]", "disconnect /chat", "ignored"])
    }

    @Test func aBinaryEventIsDeliveredOnceEveryAttachmentArrivedOverWebSocket() {
        var s = session(.webSocket)
        _ = ws(&s, "40")
        _ = s.acceptConnect(namespace: Array("/".utf8), socketID: Array("x".utf8))
        #expect(ws(&s, "452-3[\"echo\",{\"_placeholder\":true,\"num\":0},{\"_placeholder\":true,\"num\":1}]") == "none")
        #expect(wsBinary(&s, [1, 2, 3]) == "none")
        #expect(wsBinary(&s, [4]) == "binaryEvent / id=3 [\"echo\",{\"_placeholder\":true,\"num\":0},{\"_placeholder\":true,\"num\":1}] +[[1, 2, 3], [4]]")
    }

    @Test func aBinaryEventOverPollingCarriesItsAttachmentsInBase64() {
        var s = session()
        _ = post(&s, "40")
        _ = s.acceptConnect(namespace: Array("/".utf8), socketID: Array("x".utf8))
        #expect(post(&s, "451-[\"up\",{\"_placeholder\":true,\"num\":0}]\u{1e}bAQID")
                == ["none", "binaryEvent / id=- [\"up\",{\"_placeholder\":true,\"num\":0}] +[[1, 2, 3]]"])
    }

    @Test func binaryForThePollGoesOutAsBase64AndForTheWebSocketAsABinaryFrame() {
        var s = session()
        _ = s.queueSocketIO(.binaryAck, attachments: 1, namespace: Array("/".utf8), ackId: 4, data: UnsafeRawBufferPointer(start: nil, count: 0))
        #expect([UInt8]([1, 2, 3]).withUnsafeBytes { s.sendBinary($0) } == .queued)
        #expect(s.poll(now: 1) == .answerNow)
        #expect(payload(&s) == "461-4\u{1e}bAQID")
        var w = session(.webSocket)
        _ = w.queueSocketIO(.binaryAck, attachments: 1, namespace: Array("/".utf8), ackId: 4, data: UnsafeRawBufferPointer(start: nil, count: 0))
        #expect([UInt8]([1, 2, 3]).withUnsafeBytes { w.sendBinary($0) } == .queued)
        #expect(drained(&w) == ["461-4", "bin [1, 2, 3]"])
    }

    @Test func brokenInputEndsTheSessionInItsClass() {
        var a = session(.webSocket)
        #expect(wsBinary(&a, [1]) == "ended protocolError(StampedeSession.SocketIOServerSession.ProtocolError.unexpectedBinary)")
        var b = session(.webSocket)
        #expect(ws(&b, "4x") == "ended protocolError(StampedeSession.SocketIOServerSession.ProtocolError.badSocketPacket)")
        var c = session(.webSocket)
        #expect(ws(&c, "9") == "ended protocolError(StampedeSession.SocketIOServerSession.ProtocolError.badEnginePacket)")
        var d = session(.webSocket)
        #expect(ws(&d, "4599-[\"x\"]") == "ended protocolError(StampedeSession.SocketIOServerSession.ProtocolError.tooManyAttachments)")
        var e = session()
        #expect(post(&e, "bnot base64!") == ["ended protocolError(StampedeSession.SocketIOServerSession.ProtocolError.badEnginePacket)"])
        var f = session(.webSocket)
        #expect(ws(&f, "1") == "ended clientClosed")
        #expect(ws(&f, "40") == "none")  // nothing after the end
    }

    @Test func maxPayloadIsEnforcedOnMessagesAndPollingBodies() {
        var s = session(.webSocket)
        #expect(ws(&s, "42[\"x\",\"" + String(repeating: "a", count: 1000) + "\"]") == "ended payloadTooLarge")
        var p = session()
        #expect(post(&p, "42[\"x\",\"" + String(repeating: "a", count: 1000) + "\"]") == ["ended payloadTooLarge"])
    }
}

@Suite struct SocketIOServerSessionTransportTests {
    @Test func aHeldPollIsAnsweredByTheServersPingAndThePongSchedulesTheNext() {
        var clock = FakeClock()
        var s = session(.polling, clock)
        #expect(s.poll(now: clock.now) == .hold)
        #expect(!s.pollAnswerDue)
        clock.advance(seconds: 25)
        #expect(s.deadline == clock.now)
        #expect(describe(s.timerFired(deadline: s.deadline, now: clock.now), [], s) == "none")
        #expect(s.pollAnswerDue)
        #expect(payload(&s) == "2")
        #expect(s.deadline == clock.now + 20_000_000_000)
        clock.advance(seconds: 1)
        #expect(post(&s, "3", clock) == ["none"])
        #expect(s.deadline == clock.now + 25_000_000_000)
    }

    @Test func aPingLeftUnansweredForThePingTimeoutEndsTheSession() {
        var clock = FakeClock()
        var s = session(.webSocket, clock)
        clock.advance(seconds: 25)
        _ = s.timerFired(deadline: s.deadline, now: clock.now)
        #expect(drained(&s) == ["2"])
        // A stale deadline changes nothing.
        #expect(describe(s.timerFired(deadline: 5, now: clock.now), [], s) == "none")
        clock.advance(seconds: 20)
        #expect(describe(s.timerFired(deadline: s.deadline, now: clock.now), [], s) == "ended pingTimeout")
    }

    @Test func aSecondConcurrentPollEndsTheSessionAndAPollAfterTheUpgradeIsRefused() {
        var s = session()
        #expect(s.poll(now: 1) == .hold)
        #expect(s.poll(now: 1) == .ended(.protocolError(.overlappingPoll)))
        var u = session()
        #expect(attach(&u))
        #expect(ws(&u, "2probe") == "probe")
        #expect(ws(&u, "5") == "upgraded")
        #expect(u.poll(now: 1) == .badRequest)
    }

    @Test func theUpgradeProbesAnswersTheHeldPollWithANoopAndMovesQueuedPacketsToTheWebSocket() {
        var s = session()
        #expect(s.poll(now: 1) == .hold)
        #expect(attach(&s))
        #expect(!attach(&s))  // one upgrade at a time
        #expect(ws(&s, "2probe") == "probe")
        #expect(s.pollAnswerDue)
        #expect(payload(&s) == "6")
        _ = s.acceptConnect(namespace: Array("/".utf8), socketID: Array("x".utf8))
        #expect(ws(&s, "5") == "upgraded")
        #expect(s.transport == .webSocket && !s.pollAnswerDue)
        #expect(drained(&s) == ["40{\"sid\":\"x\"}"])
        #expect(Array("42[\"said\"]".utf8).withUnsafeBytes { s.sendText($0) } == .writeNow)
    }

    /// The client may poll again before it reads `3probe` (two TCP connections, no order between
    /// them); it then waits for that poll before it sends `5`, so that GET must not be held.
    @Test func everyPollBetweenTheProbeAndTheUpgradeIsAnsweredAtOnce() {
        var s = session()
        #expect(s.poll(now: 1) == .hold)
        #expect(attach(&s))
        #expect(ws(&s, "2probe") == "probe")
        #expect(payload(&s) == "6")
        #expect(s.poll(now: 2) == .answerNow)
        #expect(payload(&s) == "6")
        #expect(s.poll(now: 3) == .answerNow)
        #expect(payload(&s) == "6")
        #expect(ws(&s, "5") == "upgraded")
        #expect(s.transport == .webSocket)
    }

    @Test func aFailedUpgradeLeavesThePollingSessionGoing() {
        var s = session()
        #expect(attach(&s))
        #expect(ws(&s, "40") == "upgradeFailed")
        #expect(s.transport == .polling && !s.isEnded)
        #expect(attach(&s))
        #expect(describe(s.webSocketLost(), [], s) == "none")
        #expect(s.poll(now: 1) == .hold)
        #expect(describe(s.pollLost(), [], s) == "ended transportClosed")
    }

    @Test func aClientThatNeverPollsOverflowsItsQueueAndEnds() {
        var s = session()
        let big = [UInt8](repeating: 0x61, count: 30 * 1024)
        #expect(big.withUnsafeBytes { s.sendText($0) } == .queued)
        #expect(big.withUnsafeBytes { s.sendText($0) } == .queued)
        #expect(big.withUnsafeBytes { s.sendText($0) } == .overflow)
        #expect(s.isEnded)
    }

    @Test func aServerCloseQueuesTheClosePacketForTheTransport() {
        var s = session()
        #expect(s.poll(now: 1) == .hold)
        #expect(describe(s.close(), [], s) == "ended closedByServer")
        #expect(s.pollAnswerDue)
        #expect(payload(&s) == "1")
    }
}

@Suite struct EngineIORequestTests {
    private func classify(_ request: String) -> String {
        let bytes = Array(request.utf8)
        return bytes.withUnsafeBytes { buf -> String in
            var parser = HTTPRequestParser()
            guard case .head(let head) = parser.next(buf).event else { return "no head" }
            switch EngineIORequest.classify(head, in: buf) {
            case .handshake(let t): return "handshake \(t)"
            case .poll(let sid): return "poll \(String(decoding: buf[sid], as: UTF8.self))"
            case .post(let sid): return "post \(String(decoding: buf[sid], as: UTF8.self))"
            case .upgrade(let sid): return "upgrade \(String(decoding: buf[sid], as: UTF8.self))"
            case .refused(let e): return "refused \(e.rawValue)"
            }
        }
    }

    @Test func requestsAreClassifiedAsEngineIODoes() {
        let upgrade = "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        #expect(classify("GET /socket.io/?EIO=4&transport=polling&t=N8hyd6w HTTP/1.1\r\nHost: x\r\n\r\n") == "handshake polling")
        #expect(classify("GET /socket.io/?EIO=4&transport=polling&sid=abc HTTP/1.1\r\nHost: x\r\n\r\n") == "poll abc")
        #expect(classify("POST /socket.io/?EIO=4&transport=polling&sid=abc HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n") == "post abc")
        #expect(classify("GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: x\r\n\(upgrade)\r\n") == "handshake webSocket")
        #expect(classify("GET /socket.io/?EIO=4&transport=websocket&sid=abc HTTP/1.1\r\nHost: x\r\n\(upgrade)\r\n") == "upgrade abc")
        #expect(classify("GET /socket.io/?EIO=3&transport=polling HTTP/1.1\r\nHost: x\r\n\r\n") == "refused 5")
        #expect(classify("GET /socket.io/?EIO=4&transport=flash HTTP/1.1\r\nHost: x\r\n\r\n") == "refused 0")
        #expect(classify("GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: x\r\n\r\n") == "refused 3")
        #expect(classify("POST /socket.io/?EIO=4&transport=polling HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n") == "refused 2")
        #expect(String(decoding: EngineIOError.unknownSid.body, as: UTF8.self) == #"{"code":1,"message":"Session ID unknown"}"#)
    }
}
