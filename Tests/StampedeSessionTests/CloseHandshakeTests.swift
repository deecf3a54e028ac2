import Testing
import StampedeTestSupport
import StampedeWire
@testable import StampedeSession

// The close handshake (RFC 6455 §5.5.1, §7.1): what each role sends and does with TCP, fed the
// Close frames a peer puts on the wire, and how each ending is counted.

/// The bytes of a Close body, or nil when no Close is to be sent.
private func bytes(_ p: WebSocketClosePayload?) -> [UInt8]? { p.map { $0.withUnsafeBytes { Array($0) } } }

/// Runs a peer's frame through a receiver for `role` and hands its Close event to `h`.
private func receive(_ frame: [UInt8], _ h: inout WebSocketCloseHandshake, sourceLocation: SourceLocation = #_sourceLocation) -> WebSocketCloseHandshake.Step? {
    var r = WebSocketReceiver(role: h.role, maxMessageBytes: 1024)
    var buffer = frame
    let (event, consumed) = buffer.withUnsafeMutableBytes { r.next($0) }
    guard case .close(let code, _) = event else {
        Issue.record("not a close: \(event)", sourceLocation: sourceLocation)
        return nil
    }
    #expect(consumed == frame.count, sourceLocation: sourceLocation)
    return h.received(code: code)
}

/// What the given role does with TCP once the handshake is over (§7.1.1).
private func finished(_ role: Role) -> WebSocketCloseHandshake.Transport { role == .server ? .close : .awaitFIN }

@Suite struct CloseHandshakeTests {
    @Test(arguments: [Role.client, .server])
    func peerCloseWithACodeIsEchoedWithoutItsReason(_ role: Role) throws {
        var h = WebSocketCloseHandshake(role: role)
        // 1001 "bye": 88 05 03 E9 62 79 65 (masked toward a server).
        let step = try #require(receive(frameFor(role, opcode: 8, payload: hex("03 E9 62 79 65")), &h))
        #expect(bytes(step.send) == hex("03 E9"))
        #expect(step.transport == finished(role))
        #expect(h.state == .closed && h.receivedCode == 1001)
        #expect(h.outcome == .clean(code: 1001))
    }

    @Test(arguments: [Role.client, .server])
    func peerCloseWithoutACodeIsAnsweredWithAnEmptyClose(_ role: Role) throws {
        var h = WebSocketCloseHandshake(role: role)
        let step = try #require(receive(frameFor(role, opcode: 8), &h))
        #expect(step.send == .empty && bytes(step.send) == [])
        #expect(step.transport == finished(role))
        #expect(h.outcome == .clean(code: nil))
    }

    @Test(arguments: [Role.client, .server])
    func ourCloseThenThePeersAnswer(_ role: Role) throws {
        var h = WebSocketCloseHandshake(role: role)
        let first = h.sending(code: 1000)
        #expect(bytes(first.send) == hex("03 E8"))
        #expect(first.transport == .awaitClose && h.state == .closeSent)
        let answer = try #require(receive(frameFor(role, opcode: 8, payload: hex("03 E8")), &h))
        #expect(answer.send == nil, "never a second Close")
        #expect(answer.transport == finished(role))
        #expect(h.state == .closed && h.outcome == .clean(code: 1000))
    }

    @Test(arguments: [Role.client, .server])
    func aSecondCloseIsIgnored(_ role: Role) throws {
        var h = WebSocketCloseHandshake(role: role)
        _ = try #require(receive(frameFor(role, opcode: 8, payload: hex("03 E8")), &h))
        let again = try #require(receive(frameFor(role, opcode: 8, payload: hex("0F A0")), &h))
        #expect(again == .ignore)
        #expect(h.sending(code: 1000) == .ignore)
        #expect(h.failed(.protocolError(detail: "late")) == .ignore)
        #expect(h.outcome == .clean(code: 1000), "the first Close decides")
    }

    @Test(arguments: [Role.client, .server])
    func ourSecondCloseIsNotSent(_ role: Role) {
        var h = WebSocketCloseHandshake(role: role)
        _ = h.sending(code: 1001)
        #expect(h.sending(code: 1000) == .ignore)
        #expect(h.sent == WebSocketClosePayload(code: 1001))
    }

    @Test(arguments: [(WebSocketFailure.protocolError(detail: "x"), hex("03 EA")),
                      (.invalidUTF8, hex("03 EF")), (.messageTooBig, hex("03 F1"))])
    func failuresSendTheirCode(_ failure: WebSocketFailure, _ body: [UInt8]) {
        for role in [Role.client, .server] {
            var h = WebSocketCloseHandshake(role: role)
            let step = h.failed(failure)
            #expect(bytes(step.send) == body)
            #expect(step.transport == finished(role))
            #expect(h.outcome == .failed(failure))
            // The peer's answer to our failure Close changes nothing.
            #expect(h.received(code: failure.closeCode) == .ignore)
        }
    }

    @Test(arguments: [Role.client, .server])
    func aFailureWhileOurCloseIsUnansweredSendsNoSecondClose(_ role: Role) {
        var h = WebSocketCloseHandshake(role: role)
        _ = h.sending(code: 1000)
        let step = h.failed(.invalidUTF8)
        #expect(step.send == nil && step.transport == finished(role))
        #expect(h.outcome == .failed(.invalidUTF8))
    }

    @Test func serviceRestartCloseKeepsItsReasonBytes() {
        var h = WebSocketCloseHandshake(role: .server)
        let step = h.sending(code: 1012, reason: "service restart")
        #expect(bytes(step.send) == hex("03 F4") + Array("service restart".utf8))
        #expect(step.send?.count == 17)
        var out = [UInt8](repeating: 0, count: 17)
        #expect(out.withUnsafeMutableBytes { step.send!.write(into: $0.baseAddress!) } == 17)
        #expect(out == bytes(step.send))
    }

    @Test func theOutcomeRule() {
        func outcome(_ code: UInt16?) -> WebSocketCloseHandshake.Outcome {
            var h = WebSocketCloseHandshake(role: .client)
            _ = h.received(code: code)
            return h.outcome
        }
        #expect(outcome(nil) == .clean(code: nil))
        #expect(outcome(1000) == .clean(code: 1000))
        #expect(outcome(1001) == .clean(code: 1001))
        #expect(outcome(1012) == .closedByServer(code: 1012))
        for code: UInt16 in [1002, 1003, 1007, 1008, 1009, 1011, 1013, 4000] { #expect(outcome(code) == .error(code: code)) }
        // Our Close left unanswered is clean; no Close at all is abnormal (1006).
        var ours = WebSocketCloseHandshake(role: .client)
        _ = ours.sending(code: 1000)
        #expect(ours.outcome == .clean(code: nil))
        #expect(WebSocketCloseHandshake(role: .server).outcome == .abnormal)
    }

    @Test func serviceRestartFromTheServerIsAValidCodeForTheClient() throws {
        var h = WebSocketCloseHandshake(role: .client)
        let step = try #require(receive(makeFrame(opcode: 8, payload: hex("03 F4") + Array("service restart".utf8)), &h))
        #expect(bytes(step.send) == hex("03 F4"))
        #expect(h.outcome == .closedByServer(code: 1012))
    }
}
