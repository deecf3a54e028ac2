import Testing
import StampedeTestSupport
import StampedeWire
@testable import StampedeSession

// Byte fixtures: JSON as text records, MessagePack from the test vectors of the SignalR
// reference (length prefix included).
private let jsonInvoke = records(#"{"type":1,"invocationId":"0","target":"Send","arguments":["hi",42]}"#)
private let msgpackInvoke = hex("11 96 01 80 A3 78 79 7A A6 6D 65 74 68 6F 64 91 2A 90")
private let msgpackCompletionVoid = hex("08 94 03 80 A3 78 79 7A 02")
private let handshakeOK = hex("7B 7D 1E")

@Suite struct HubHandshakeTests {
    @Test func requestIsJSONWhateverTheProtocolAndVersion2OnlyForStatefulReconnect() {
        var json = HubHarness<JSONHubProtocol>()
        #expect(json.start() == records(#"{"protocol":"json","version":1}"#))
        var msgpack = HubHarness<MessagePackHubProtocol>()
        #expect(msgpack.start(stateful: true) == records(#"{"protocol":"messagepack","version":2}"#))
        #expect(msgpack.session.isStateful)
    }

    @Test func successThenMessagesInTheSameBufferJSON() {
        var h = HubHarness<JSONHubProtocol>()
        _ = h.start()
        #expect(h.receive(records(#"{"minorVersion":1}"#) + jsonInvoke) == [.handshake, .message(type: 1, bytes: jsonInvoke)])
        #expect(h.session.isOpen)
    }

    @Test func successThenMessagesInTheSameBufferMessagePack() {
        var h = HubHarness<MessagePackHubProtocol>()
        _ = h.start()
        #expect(h.receive(handshakeOK + msgpackInvoke + msgpackCompletionVoid)
                == [.handshake, .message(type: 1, bytes: msgpackInvoke), .message(type: 3, bytes: msgpackCompletionVoid)])
    }

    @Test func errorEndsTheSessionWithTheServersText() {
        var h = HubHarness<MessagePackHubProtocol>()
        _ = h.start()
        #expect(h.receive(records(#"{"error":"Requested protocol 'x' is not available."}"#))
                == [.handshakeRejected("Requested protocol 'x' is not available.")])
        #expect(h.session.hasEnded)
        #expect(h.receive(msgpackInvoke) == [])  // ended: nothing more is read
    }

    @Test func garbageOrAHubMessageInsteadOfTheResponseEnds() {
        var notJSON = HubHarness<JSONHubProtocol>()
        #expect(notJSON.receive(records("HTTP/1.1 200")) == [.handshakeInvalid])
        var hubMessage = HubHarness<JSONHubProtocol>()
        #expect(hubMessage.receive(records(#"{"type":6}"#)) == [.handshakeInvalid])
        var notString = HubHarness<JSONHubProtocol>()
        #expect(notString.receive(records(#"{"error":42}"#)) == [.handshakeInvalid])
    }

    @Test func responseLongerThanTheMessageLimitWithoutSeparatorEnds() {
        var h = HubHarness<JSONHubProtocol>(maxMessageLength: 16)
        #expect(h.receive(Array(#"{"minorVersion":1"#.utf8)) == [.handshakeInvalid])
    }

    @Test func responseSplitAcrossReadsGivesTheSameActions() {
        for split in [1, 2, 3, 5] {
            var h = HubHarness<JSONHubProtocol>()
            _ = h.start()
            let input = handshakeOK + jsonInvoke
            var log: [HubLogged] = []
            var i = 0
            while i < input.count {
                log += h.receive(Array(input[i..<min(i + split, input.count)]))
                i += split
            }
            #expect(log == [.handshake, .message(type: 1, bytes: jsonInvoke)], "pieces of \(split)")
        }
    }
}

@Suite struct HubMessageTests {
    @Test func pingsAndUnknownTypesAreConsumedByTheSession() {
        var h = HubHarness<JSONHubProtocol>()
        #expect(h.receive(handshakeOK + records(#"{"type":6}"#, #"{"type":42,"x":1}"#)) == [.handshake, .skipped, .skipped])
        var m = HubHarness<MessagePackHubProtocol>()
        #expect(m.receive(handshakeOK + hex("02 91 06")) == [.handshake, .skipped])
    }

    @Test func closeWithAllowReconnectAndError() {
        var json = HubHarness<JSONHubProtocol>()
        #expect(json.receive(handshakeOK + records(#"{"type":7,"error":"Connection closed with an error.","allowReconnect":true}"#))
                == [.handshake, .closed(error: "Connection closed with an error.", allowReconnect: true)])
        var msgpack = HubHarness<MessagePackHubProtocol>()
        #expect(msgpack.receive(handshakeOK + hex("07 93 07 A3 78 79 7A C3") + msgpackInvoke)
                == [.handshake, .closed(error: "xyz", allowReconnect: true)])
    }

    @Test func closeWithoutAllowReconnectIsFinal() {
        var json = HubHarness<JSONHubProtocol>()
        #expect(json.receive(handshakeOK + records(#"{"type":7}"#)) == [.handshake, .closed(error: nil, allowReconnect: false)])
        var msgpack = HubHarness<MessagePackHubProtocol>()
        #expect(msgpack.receive(handshakeOK + hex("03 92 07 C0")) == [.handshake, .closed(error: nil, allowReconnect: false)])
        #expect(msgpack.session.hasEnded)
    }

    @Test func malformedMessageIsAProtocolError() {
        var json = HubHarness<JSONHubProtocol>()
        #expect(json.receive(handshakeOK + records(#"{"type":1,"target":"x"}"#)) == [.handshake, .protocolError(.missingArguments)])
        var msgpack = HubHarness<MessagePackHubProtocol>()
        #expect(msgpack.receive(handshakeOK + hex("80 80 80 80 08")) == [.handshake, .protocolError(.invalidLengthPrefix)])
    }

    @Test func messageOverTheLimitIsAProtocolError() {
        var h = HubHarness<JSONHubProtocol>(maxMessageLength: 20)
        #expect(h.receive(handshakeOK + jsonInvoke) == [.handshake, .protocolError(.messageTooLarge)])
    }

    @Test func partialMessageWaitsForTheRest() {
        var h = HubHarness<MessagePackHubProtocol>()
        #expect(h.receive(handshakeOK + Array(msgpackInvoke[0..<7])) == [.handshake])
        #expect(h.receive(Array(msgpackInvoke[7...])) == [.message(type: 1, bytes: msgpackInvoke)])
    }

    @Test func withoutStatefulReconnectAckAndSequenceAreIgnoredAndNothingIsNumbered() {
        var h = HubHarness<MessagePackHubProtocol>()
        _ = h.start()
        #expect(h.receive(handshakeOK + hex("03 92 08 01") + hex("03 92 09 05") + msgpackInvoke)
                == [.handshake, .skipped, .skipped, .message(type: 1, bytes: msgpackInvoke)])
        #expect(h.invoke(1).0 == .write(count: h.invoke(1).1.count))
        #expect(h.session.receivedSequence == 0 && h.session.sentSequence == 0 && h.session.replayCount == 0)
    }
}

@Suite struct HubKeepAliveTests {
    @Test func pingIsDueAfterAnIntervalWithoutSending() {
        var h = HubHarness<JSONHubProtocol>(keepAliveSeconds: 15, serverTimeoutSeconds: 30)
        _ = h.start()
        _ = h.receive(handshakeOK)
        #expect(h.session.keepAliveDeadline == h.clock.now + 15_000_000_000)
        h.clock.advance(seconds: 14)
        _ = h.receive(records(#"{"type":6}"#))  // received data does not postpone our ping
        #expect(h.keepAlive().step == HubKeepAliveStep())
        h.clock.advance(seconds: 1)
        let due = h.keepAlive()
        #expect(due.ping == records(#"{"type":6}"#))
        #expect(due.ack == nil && !due.step.serverTimedOut)
        #expect(h.session.lastSentNs == h.clock.now)
        #expect(h.keepAlive().step == HubKeepAliveStep())  // just pinged
    }

    @Test func serverTimeoutEndsWhenNothingWasReceived() {
        var h = HubHarness<MessagePackHubProtocol>(keepAliveSeconds: 15, serverTimeoutSeconds: 30)
        _ = h.start()
        _ = h.receive(handshakeOK)
        h.clock.advance(seconds: 29)
        #expect(h.keepAlive().ping == hex("02 91 06"))
        h.clock.advance(seconds: 1)
        #expect(h.keepAlive().step == HubKeepAliveStep(serverTimedOut: true))
        #expect(h.session.hasEnded)
        #expect(h.session.keepAliveDeadline == nil)
        #expect(h.keepAlive().step == HubKeepAliveStep())  // ended once
    }

    @Test func staleDeadlineIsIgnored() {
        var h = HubHarness<JSONHubProtocol>(keepAliveSeconds: 15, serverTimeoutSeconds: 30)
        _ = h.start()
        _ = h.receive(handshakeOK)
        let deadline = h.session.keepAliveDeadline!
        h.clock.advance(seconds: 10)
        #expect(h.invoke(1).0 != .notSent)  // sending postpones the ping
        _ = h.receive(records(#"{"type":6}"#))
        h.clock.now = deadline
        #expect(h.keepAlive().step == HubKeepAliveStep())
        #expect(h.session.keepAliveDeadline == deadline + 10_000_000_000)
        #expect(h.session.isOpen)
    }

    @Test func noKeepAliveBeforeTheHandshakeOrWithoutIt() {
        var h = HubHarness<JSONHubProtocol>()
        _ = h.start()
        h.clock.advance(seconds: 100)
        #expect(h.keepAlive().step == HubKeepAliveStep())
        var polling = HubProtocolSession<JSONHubProtocol>(.init(maxMessageLength: 1000, keepAlive: false))
        _ = handshakeOK.withUnsafeBytes { polling.next($0) }
        #expect(polling.isOpen && polling.keepAliveDeadline == nil)
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { out.deallocate() }
        #expect(polling.keepAliveCheck(now: .max / 2, into: out) == HubKeepAliveStep())
    }
}
