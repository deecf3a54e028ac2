import Testing
import StampedeTestSupport
import StampedeWire
@testable import StampedeSession

// The client side of a WebSocket connection (RFC 6455) driven by the bytes a server puts on the
// wire and a fake clock: the upgrade (§4.1), messages, pings (§5.5.2), the close handshake in
// both directions (§5.5.1, §7.1) and every way a connection ends.

private let upgradeTimeout: UInt64 = 10_000_000_000
private let closeTimeout: UInt64 = 2_000_000_000

private func configuration(subprotocol: String? = nil, maxMessageBytes: Int = 1 << 20) -> WebSocketClientSession.Configuration {
    .init(host: "127.0.0.1", port: 8080, path: "/chat", subprotocol: subprotocol, upgradeTimeoutNs: upgradeTimeout,
          closeTimeoutNs: closeTimeout, maxMessageBytes: maxMessageBytes)
}

/// A session whose upgrade request is written (at `clock.now`).
private func upgrading(_ clock: FakeClock, subprotocol: String? = nil, maxMessageBytes: Int = 1 << 20) -> WebSocketClientSession {
    var s = WebSocketClientSession(configuration: configuration(subprotocol: subprotocol, maxMessageBytes: maxMessageBytes))
    #expect(s.connected(now: clock.now, key: exampleKey) == .sendUpgradeRequest(deadline: clock.now + upgradeTimeout))
    return s
}

/// A session that is open.
private func open(_ clock: FakeClock, maxMessageBytes: Int = 1 << 20) -> WebSocketClientSession {
    var s = upgrading(clock, maxMessageBytes: maxMessageBytes)
    #expect(s.feed(switchingProtocols(key: exampleKey), now: clock.now) == [.opened])
    #expect(s.state == .open)
    return s
}

private func text(_ s: String) -> [UInt8] { frameFor(.client, opcode: 1, payload: Array(s.utf8)) }
private func close(_ body: [UInt8]) -> [UInt8] { frameFor(.client, opcode: 8, payload: body) }

@Suite struct WebSocketClientUpgradeTests {
    @Test func theRequestCarriesTheKeyAndTheUpgradeHeaders() {
        let s = upgrading(FakeClock(), subprotocol: "chat")
        let request = String(decoding: s.upgradeRequest, as: UTF8.self)
        #expect(request.hasPrefix("GET /chat HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"))
        #expect(request.contains("Sec-WebSocket-Key: \(exampleKey)\r\n"))
        #expect(request.contains("Sec-WebSocket-Protocol: chat\r\n"))
        #expect(request.hasSuffix("\r\n\r\n"))
        #expect(s.state == .upgrading)
    }

    @Test func aPathGivenPerConnectionReplacesTheConfigurationsPath() {
        var s = WebSocketClientSession(configuration: configuration(), path: "/runCase?case=3")
        _ = s.connected(now: 1, key: exampleKey)
        #expect(String(decoding: s.upgradeRequest, as: UTF8.self).hasPrefix("GET /runCase?case=3 HTTP/1.1\r\n"))
    }

    @Test func acceptedUpgradeOpensAndTheFramesAfterTheHeadAreRead() {
        let clock = FakeClock()
        var s = upgrading(clock)
        let did = s.feed(switchingProtocols(key: exampleKey) + text("hi"), now: clock.now)
        #expect(did == [.opened, .message(.text, Array("hi".utf8))])
        #expect(s.upgradeStartedNs == clock.now)
    }

    @Test func anUpgradeSplitAcrossReadsOpensOnceWhole() {
        let clock = FakeClock()
        var s = upgrading(clock)
        let response = switchingProtocols(key: exampleKey) + text("hi")
        var pending: [UInt8] = []
        var did: [Did] = []
        for b in response { did += s.feed([b], pending: &pending, now: clock.now) }
        #expect(did == [.opened, .message(.text, Array("hi".utf8))])
        #expect(pending.isEmpty)
    }

    @Test func anotherStatusIsRejectedWithIt() {
        let clock = FakeClock()
        var s = upgrading(clock)
        let did = s.feed(Array("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n\r\n".utf8), now: clock.now)
        #expect(did == [.clientEnded(.upgradeRejected(status: 503), closeTransport: true)])
        #expect(s.state == .ended)
    }

    @Test(arguments: [
        Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: wrong\r\n\r\n".utf8),
        Array("SSH-2.0-OpenSSH\r\n\r\n".utf8),
        switchingProtocols(key: exampleKey, extra: "Sec-WebSocket-Extensions: permessage-deflate\r\n"),
    ])
    func aBrokenAnswerIsInvalid(_ response: [UInt8]) {
        let clock = FakeClock()
        var s = upgrading(clock)
        #expect(s.feed(response, now: clock.now) == [.clientEnded(.upgradeInvalid, closeTransport: true)])
    }

    @Test func anInterimAnswerBeforeThe101IsSkippedAsTheHTTPParserDoes() {
        let clock = FakeClock()
        var s = upgrading(clock)
        let did = s.feed(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8) + switchingProtocols(key: exampleKey) + text("hi"), now: clock.now)
        #expect(did == [.opened, .message(.text, Array("hi".utf8))])
    }

    @Test func aHeaderValueWithALineBreakEndsTheAttemptAsUpgradeInvalidWithNothingWritten() {
        var c = configuration()
        c.headers = [("Authorization", "Bearer token\r\nX-Injected: 1")]
        var s = WebSocketClientSession(configuration: c)
        #expect(s.connected(now: 1, key: exampleKey) == .ended(.upgradeInvalid, closeTransport: true))
        #expect(s.upgradeRequest.isEmpty && s.state == .ended)
    }

    @Test func preRenderedHeaderLinesFollowTheHeadersAndAreReleasedOnceOpen() {
        var c = configuration()
        c.headers = [("Authorization", "Bearer t")]
        c.headerLines = Array("X-Tenant: t1\r\n".utf8)
        var s = WebSocketClientSession(configuration: c)
        _ = s.connected(now: 1, key: exampleKey)
        #expect(String(decoding: s.upgradeRequest, as: UTF8.self).hasSuffix("Authorization: Bearer t\r\nX-Tenant: t1\r\n\r\n"))
        #expect(s.feed(switchingProtocols(key: exampleKey), now: 1) == [.opened])
        #expect(!s.holdsUpgradeScratch)
    }

    @Test func malformedPreRenderedHeaderLinesEndTheAttemptAsUpgradeInvalid() {
        var c = configuration()
        c.headerLines = Array("X-Tenant t1\r\n".utf8)
        var s = WebSocketClientSession(configuration: c)
        #expect(s.connected(now: 1, key: exampleKey) == .ended(.upgradeInvalid, closeTransport: true))
    }

    @Test func noAnswerWithinTheUpgradeTimeout() {
        var clock = FakeClock()
        var s = upgrading(clock)
        let deadline = clock.now + upgradeTimeout
        #expect(s.timerFired(deadline: deadline - 1) == .none, "a deadline the session does not wait for is stale")
        clock.advance(ns: upgradeTimeout)
        #expect(s.timerFired(deadline: deadline) == .ended(.upgradeTimeout, closeTransport: true))
        #expect(s.timerFired(deadline: deadline) == .none, "ended once")
    }

    @Test func theUpgradeTimeoutIsStaleOnceOpen() {
        let clock = FakeClock()
        var s = open(clock)
        #expect(s.timerFired(deadline: clock.now + upgradeTimeout) == .none)
        #expect(s.state == .open)
    }

    @Test func tcpEndingBeforeTheAnswer() {
        var s = upgrading(FakeClock())
        #expect(s.transportClosed(.endOfFile) == .ended(.lostBeforeOpen(.endOfFile), closeTransport: false))
        var r = upgrading(FakeClock())
        #expect(r.transportClosed(.reset) == .ended(.lostBeforeOpen(.reset), closeTransport: false))
    }

    @Test func closingBeforeOpenAbandonsTheAttempt() {
        var s = WebSocketClientSession(configuration: configuration())
        #expect(s.close(now: 1) == .ended(.interrupted, closeTransport: true))
        var u = upgrading(FakeClock())
        #expect(u.close(now: 1) == .ended(.interrupted, closeTransport: true))
        #expect(u.close(now: 1) == .none)
    }

    @Test func aFailedConnect() {
        var s = WebSocketClientSession(configuration: configuration())
        #expect(s.connectFailed(errno: 111) == .ended(.connectFailed(errno: 111), closeTransport: false))
        #expect(s.transportClosed(.endOfFile) == .none)
    }
}

@Suite struct WebSocketClientMessageTests {
    @Test func aSingleFrameMessage() {
        let clock = FakeClock()
        var s = open(clock)
        #expect(s.feed(text("hello") + frameFor(.client, opcode: 2, payload: [1, 2, 3]), now: clock.now)
                == [.message(.text, Array("hello".utf8)), .message(.binary, [1, 2, 3])])
    }

    @Test func aFragmentedMessageIsDeliveredOnceWhole() {
        let clock = FakeClock()
        var s = open(clock)
        let frames = frameFor(.client, fin: false, opcode: 1, payload: Array("Hel".utf8))
            + frameFor(.client, opcode: 9, payload: [7])  // a ping between fragments (§5.4)
            + frameFor(.client, fin: true, opcode: 0, payload: Array("lo".utf8))
        #expect(s.feed(frames, now: clock.now) == [.sendPong([7]), .message(.text, Array("Hello".utf8))])
    }

    @Test func inputSplitAnywhereGivesTheSameActions() {
        let clock = FakeClock()
        let input = text("one") + frameFor(.client, fin: false, opcode: 2, payload: [1, 2]) + frameFor(.client, opcode: 0, payload: [3])
            + frameFor(.client, opcode: 10, payload: [9]) + text(String(repeating: "x", count: 300))
        var whole = open(clock)
        let expected = whole.feed(input, now: clock.now)
        #expect(expected.count == 4)
        for cut in 1..<input.count {
            var s = open(clock)
            var pending: [UInt8] = []
            let did = s.feed(Array(input[..<cut]), pending: &pending, now: clock.now) + s.feed(Array(input[cut...]), pending: &pending, now: clock.now)
            #expect(did == expected, "cut at \(cut)")
        }
    }

    @Test func aPingIsAnsweredWithItsPayloadAndAPongIsReported() {
        let clock = FakeClock()
        var s = open(clock)
        #expect(s.feed(frameFor(.client, opcode: 9, payload: [1, 2, 3]) + frameFor(.client, opcode: 10, payload: [4]), now: clock.now)
                == [.sendPong([1, 2, 3]), .pong([4])])
    }
}

@Suite struct WebSocketClientCloseTests {
    @Test(arguments: [(hex("03 E8"), WebSocketClientSession.End.closedCleanly(code: 1000)),
                      (hex("03 E9 62 79 65"), .closedCleanly(code: 1001)),
                      ([], .closedCleanly(code: nil)),
                      (hex("03 F4"), .closedByServer(code: 1012)),
                      (hex("0F A0"), .closedWithError(code: 4000))])
    func thePeerClosesFirst(_ body: [UInt8], _ end: WebSocketClientSession.End) {
        var clock = FakeClock()
        var s = open(clock)
        // The Close is echoed with its code only (an empty one without), then the client stops
        // writing and waits for the server's FIN under the close timeout.
        let echo = body.isEmpty ? [] : Array(body.prefix(2))
        #expect(s.feed(close(body), now: clock.now) == [.closing(send: echo, shutdownWrite: true, deadline: clock.now + closeTimeout)])
        clock.advance(seconds: 0.1)
        #expect(s.transportClosed(.endOfFile) == .ended(end, closeTransport: false))
    }

    @Test func weCloseFirstAndThePeerAnswers() {
        var clock = FakeClock()
        var s = open(clock)
        let deadline = clock.now + closeTimeout
        #expect(s.close(code: 1000, now: clock.now) == .closing(send: WebSocketClosePayload(code: 1000), shutdownWrite: false, deadline: deadline))
        #expect(s.close(code: 1001, now: clock.now) == .none, "one Close only")
        clock.advance(seconds: 1)
        // The answer finishes the handshake; the close timeout is not extended.
        #expect(s.feed(close(hex("03 E8")), now: clock.now) == [.closing(send: nil, shutdownWrite: true, deadline: nil)])
        #expect(s.deadline == deadline)
        #expect(s.transportClosed(.endOfFile) == .ended(.closedCleanly(code: 1000), closeTransport: false))
    }

    @Test func thePeerNeverAnswersOurClose() {
        var clock = FakeClock()
        var s = open(clock)
        _ = s.close(code: 1000, now: clock.now)
        let deadline = clock.now + closeTimeout
        #expect(s.timerFired(deadline: deadline + 1) == .none, "stale")
        clock.advance(ns: closeTimeout)
        #expect(s.timerFired(deadline: deadline) == .ended(.closedCleanly(code: nil), closeTransport: true))
    }

    @Test func theServerNeverDropsTcpAfterItsClose() {
        var clock = FakeClock()
        var s = open(clock)
        _ = s.feed(close(hex("03 F4")), now: clock.now)
        let deadline = clock.now + closeTimeout
        clock.advance(ns: closeTimeout)
        #expect(s.timerFired(deadline: deadline) == .ended(.closedByServer(code: 1012), closeTransport: true))
    }

    @Test func nothingIsDeliveredOnceClosingStarts() {
        let clock = FakeClock()
        var s = open(clock)
        _ = s.close(code: 1000, now: clock.now)
        // Messages and pings are let go while our Close is unanswered; a pong is still reported.
        let input = text("late") + frameFor(.client, opcode: 9, payload: [1]) + frameFor(.client, opcode: 10, payload: [2])
        #expect(s.feed(input, now: clock.now) == [.pong([2])])
        // After the whole handshake, input is dropped unread.
        var pending: [UInt8] = []
        #expect(s.feed(close([]) + frameFor(.client, opcode: 10, payload: [3]), pending: &pending, now: clock.now)
                == [.closing(send: nil, shutdownWrite: true, deadline: nil)])
        #expect(s.feed(frameFor(.client, opcode: 10, payload: [4]) + close(hex("03 E8")), pending: &pending, now: clock.now) == [])
        #expect(pending.isEmpty)
        #expect(s.transportClosed(.reset) == .ended(.closedCleanly(code: nil), closeTransport: false))
    }

    @Test func tcpLostWhileOpen() {
        for how in [WebSocketTransportEnd.endOfFile, .reset, .error] {
            var s = open(FakeClock())
            #expect(s.transportClosed(how) == .ended(.lost(how), closeTransport: false))
        }
    }

    @Test func anAbortEndsOnce() {
        var s = open(FakeClock())
        #expect(s.abort() == .ended(.aborted, closeTransport: true))
        #expect(s.abort() == .none)
        #expect(s.transportClosed(.reset) == .none)
    }
}

@Suite struct WebSocketClientFailureTests {
    @Test(arguments: [
        // A masked frame from the server (§5.1).
        (makeFrame(opcode: 1, payload: Array("x".utf8), mask: [1, 2, 3, 4]), hex("03 EA"), WebSocketFailure.protocolError(detail: "masked server frame")),
        // Invalid UTF-8 text (§8.1).
        (makeFrame(opcode: 1, payload: [0xC0, 0xAF]), hex("03 EF"), .invalidUTF8),
        // Over the 16-byte limit (1009).
        (makeFrame(opcode: 2, payload: Array(repeating: 0, count: 17)), hex("03 F1"), .messageTooBig),
    ])
    func aBrokenFrameFailsWithItsCode(_ frame: [UInt8], _ code: [UInt8], _ failure: WebSocketFailure) {
        let clock = FakeClock()
        var s = open(clock, maxMessageBytes: 16)
        #expect(s.feed(text("ok") + frame + text("after"), now: clock.now)
                == [.message(.text, Array("ok".utf8)), .closing(send: code, shutdownWrite: true, deadline: clock.now + closeTimeout)])
        #expect(s.feed(text("later"), now: clock.now) == [])
        #expect(s.transportClosed(.endOfFile) == .ended(.failed(failure), closeTransport: false))
    }

    @Test func aFailureWhileOurCloseIsUnansweredSendsNoSecondClose() {
        let clock = FakeClock()
        var s = open(clock)
        _ = s.close(code: 1000, now: clock.now)
        #expect(s.feed(makeFrame(opcode: 1, payload: [0xFF]), now: clock.now) == [.closing(send: nil, shutdownWrite: true, deadline: nil)])
        #expect(s.transportClosed(.endOfFile) == .ended(.failed(.invalidUTF8), closeTransport: false))
    }
}

/// The Close a server started is kept with its reason (what `close_codes` counts); the answer to
/// our own Close is not one.
@Suite struct PeerCloseTests {
    @Test(arguments: [(hex("11 31 61 75 74 68 20 66 69 72 73 74"), WebSocketPeerClose(code: 4401, reason: "auth first")),
                      (hex("03 E8"), WebSocketPeerClose(code: 1000)),
                      ([], WebSocketPeerClose(code: nil))])
    func theServersCloseIsKeptWithItsReason(_ body: [UInt8], _ expected: WebSocketPeerClose) {
        let clock = FakeClock()
        var s = open(clock)
        _ = s.feed(close(body), now: clock.now)
        _ = s.transportClosed(.endOfFile)
        #expect(s.peerClose == expected)
    }

    @Test func theAnswerToOurCloseIsNotAPeerClose() {
        let clock = FakeClock()
        var s = open(clock)
        _ = s.close(code: 1000, now: clock.now)
        _ = s.feed(close(hex("03 E8 62 79 65")), now: clock.now)
        #expect(s.peerClose == nil)
        #expect(s.closeHandshake.receivedCode == 1000)
    }
}
