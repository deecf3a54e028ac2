import Testing
import StampedeTestSupport
import StampedeWire
@testable import StampedeSession

// The server side of a WebSocket connection after the upgrade, driven by the masked frames a
// client sends and a fake clock: messages, pings, the close handshake in both directions
// (RFC 6455 §5.5.1, §7.1: the server closes TCP first) and failures (§7.4.1).

private let closeTimeout: UInt64 = 2_000_000_000

private func text(_ s: String) -> [UInt8] { frameFor(.server, opcode: 1, payload: Array(s.utf8)) }
private func close(_ body: [UInt8]) -> [UInt8] { frameFor(.server, opcode: 8, payload: body) }
private func session(maxMessageBytes: Int = 1 << 20, closeTimeoutNs: UInt64? = closeTimeout) -> WebSocketServerSession {
    WebSocketServerSession(maxMessageBytes: maxMessageBytes, closeTimeoutNs: closeTimeoutNs)
}

@Suite struct WebSocketServerMessageTests {
    @Test func maskedMessagesAreDeliveredUnmasked() {
        var s = session()
        #expect(s.feed(text("hello") + frameFor(.server, opcode: 2, payload: [1, 2, 3]), now: 1)
                == [.message(.text, Array("hello".utf8)), .message(.binary, [1, 2, 3])])
    }

    @Test func aFragmentedMessageIsDeliveredOnceWhole() {
        var s = session()
        let frames = frameFor(.server, fin: false, opcode: 1, payload: Array("Hel".utf8)) + frameFor(.server, opcode: 0, payload: Array("lo".utf8))
        #expect(s.feed(frames, now: 1) == [.message(.text, Array("Hello".utf8))])
    }

    @Test func inputSplitAnywhereGivesTheSameActions() {
        let input = text("one") + frameFor(.server, fin: false, opcode: 2, payload: [1, 2]) + frameFor(.server, opcode: 9, payload: [5])
            + frameFor(.server, opcode: 0, payload: [3]) + text(String(repeating: "y", count: 200)) + close(hex("03 E8"))
        var whole = session()
        let expected = whole.feed(input, now: 1)
        #expect(expected.count == 5)
        for cut in 1..<input.count {
            var s = session()
            var pending: [UInt8] = []
            let did = s.feed(Array(input[..<cut]), pending: &pending, now: 1) + s.feed(Array(input[cut...]), pending: &pending, now: 1)
            #expect(did == expected, "cut at \(cut)")
        }
    }

    @Test func aPingIsAnsweredAndAPongReported() {
        var s = session()
        #expect(s.feed(frameFor(.server, opcode: 9, payload: [1, 2]) + frameFor(.server, opcode: 10, payload: [3]), now: 1)
                == [.sendPong([1, 2]), .pong([3])])
    }
}

@Suite struct WebSocketServerCloseTests {
    @Test(arguments: [(hex("03 E8"), hex("03 E8"), UInt16?.some(1000)),
                      (hex("03 E9 62 79 65"), hex("03 E9"), UInt16?.some(1001)),
                      ([], [], UInt16?.none)])
    func theClientClosesFirst(_ body: [UInt8], _ echo: [UInt8], _ code: UInt16?) {
        var s = session()
        // Echoed (code only, or empty), then the server closes TCP first.
        #expect(s.feed(close(body) + text("after"), now: 1) == [.closeTransport(send: echo, end: .peerClosed(code: code))])
        #expect(s.state == .ended)
        #expect(s.transportClosed(.endOfFile) == .none)
    }

    @Test func weCloseFirstAndTheClientAnswers() {
        var clock = FakeClock()
        var s = session()
        #expect(s.close(code: 1012, reason: "service restart", now: clock.now)
                == .closing(send: WebSocketClosePayload(code: 1012, reason: "service restart"), deadline: clock.now + closeTimeout))
        #expect(s.close(code: 1000, now: clock.now) == .none)
        clock.advance(seconds: 0.5)
        // Nothing is delivered or answered while our Close waits; the answer ends it, no second Close.
        #expect(s.feed(text("late") + frameFor(.server, opcode: 9, payload: [1]) + close(hex("03 F4")), now: clock.now)
                == [.closeTransport(send: nil, end: .peerClosed(code: 1012))])
    }

    @Test func theClientNeverAnswers() {
        var clock = FakeClock()
        var s = session()
        _ = s.close(code: 1001, now: clock.now)
        let deadline = clock.now + closeTimeout
        #expect(s.timerFired(deadline: deadline - 1) == .none, "stale")
        clock.advance(ns: closeTimeout)
        #expect(s.timerFired(deadline: deadline) == .ended(.closedByUs(code: 1001), closeTransport: true))
        #expect(s.timerFired(deadline: deadline) == .none)
    }

    @Test func withoutACloseTimeoutTheServerBoundsTheWait() {
        var s = session(closeTimeoutNs: nil)
        #expect(s.close(code: 1012, now: 5) == .closing(send: WebSocketClosePayload(code: 1012), deadline: nil))
        #expect(s.timerFired(deadline: 5) == .none)
        #expect(s.transportClosed(.endOfFile) == .ended(.closedByUs(code: 1012), closeTransport: false))
    }

    @Test func closingWithoutWaitingForTheAnswer() {
        var s = session()
        #expect(s.close(code: 1000, now: 1, waitForAnswer: false) == .closeTransport(send: WebSocketClosePayload(code: 1000), end: .closedByUs(code: 1000)))
        #expect(s.abort() == .none)
    }

    @Test func tcpLostOrDropped() {
        var s = session()
        #expect(s.transportClosed(.reset) == .ended(.lost(.reset), closeTransport: false))
        var t = session()
        #expect(t.abort() == .ended(.aborted, closeTransport: true))
    }
}

@Suite struct WebSocketServerFailureTests {
    @Test(arguments: [
        // An unmasked client frame (§5.1).
        (makeFrame(opcode: 1, payload: Array("x".utf8)), hex("03 EA"), WebSocketFailure.protocolError(detail: "unmasked client frame")),
        (frameFor(.server, opcode: 1, payload: [0xED, 0xA0, 0x80]), hex("03 EF"), .invalidUTF8),
        (frameFor(.server, opcode: 2, payload: Array(repeating: 7, count: 33)), hex("03 F1"), .messageTooBig),
        // A close code that may not be sent (1005 is reserved, §7.4.1).
        (frameFor(.server, opcode: 8, payload: hex("03 ED")), hex("03 EA"), .protocolError(detail: "invalid close code")),
    ])
    func aBrokenFrameFailsWithItsCode(_ frame: [UInt8], _ code: [UInt8], _ failure: WebSocketFailure) {
        var s = session(maxMessageBytes: 32)
        #expect(s.feed(text("ok") + frame + text("after"), now: 1)
                == [.message(.text, Array("ok".utf8)), .closeTransport(send: code, end: .failed(failure))])
        #expect(s.feed(text("later"), now: 1) == [])
    }

    @Test func aFailureWhileOurCloseWaitsSendsNoSecondClose() {
        var s = session()
        _ = s.close(code: 1012, now: 1)
        #expect(s.state == .closing)
        #expect(s.feed(makeFrame(opcode: 2, payload: []), now: 1) == [.closeTransport(send: nil, end: .failed(.protocolError(detail: "unmasked client frame")))])
    }
}
