import Testing
import StampedeTestSupport
@testable import StampedeWire

typealias Role = WebSocketReceiver.Role

@Suite struct ReceiverRFCExampleTests {
    @Test func unmaskedHelloIsOneTextMessageForClient() {
        var r = WebSocketReceiver(role: .client, maxMessageBytes: 1024)
        var buffer = RFC6455Examples.unmaskedHello
        let (event, consumed) = buffer.withUnsafeMutableBytes { r.next($0) }
        #expect(event == .message(.text, payload: 2..<7))
        #expect(consumed == 7)
        #expect(Array(buffer[2..<7]) == helloBytes)
    }

    @Test func maskedHelloIsUnmaskedInPlaceForServer() {
        var r = WebSocketReceiver(role: .server, maxMessageBytes: 1024)
        var buffer = RFC6455Examples.maskedHello
        let (event, consumed) = buffer.withUnsafeMutableBytes { r.next($0) }
        #expect(event == .message(.text, payload: 6..<11))
        #expect(consumed == 11)
        #expect(Array(buffer[6..<11]) == helloBytes)
    }

    @Test func fragmentedHelloIsReassembled() {
        var r = WebSocketReceiver(role: .client, maxMessageBytes: 1024)
        var first = RFC6455Examples.fragmentHel
        let a = first.withUnsafeMutableBytes { r.next($0) }
        #expect(a.event == .fragment && a.consumed == 5)
        var second = RFC6455Examples.fragmentLo
        let b = second.withUnsafeMutableBytes { r.next($0) }
        #expect(b.event == .assembledMessage(.text) && b.consumed == 4)
        #expect(r.assembled == helloBytes)
        // Both fragments in one buffer give the same.
        #expect(receive(RFC6455Examples.fragmentHel + RFC6455Examples.fragmentLo, role: .client)
                == [.fragment, .assembled(.text, helloBytes), .needMore])
    }

    @Test func unmaskedPingForClient() {
        var r = WebSocketReceiver(role: .client, maxMessageBytes: 1024)
        var buffer = RFC6455Examples.unmaskedPing
        let (event, consumed) = buffer.withUnsafeMutableBytes { r.next($0) }
        #expect(event == .ping(payload: 2..<7))
        #expect(consumed == 7)
        #expect(Array(buffer[2..<7]) == helloBytes)
    }

    @Test func maskedPongForServer() {
        var r = WebSocketReceiver(role: .server, maxMessageBytes: 1024)
        var buffer = RFC6455Examples.maskedPong
        let (event, consumed) = buffer.withUnsafeMutableBytes { r.next($0) }
        #expect(event == .pong(payload: 6..<11))
        #expect(consumed == 11)
        #expect(Array(buffer[6..<11]) == helloBytes)
    }

    @Test func binary256And64KiBMessages() {
        #expect(receive(RFC6455Examples.binary256, role: .client) == [.message(.binary, RFC6455Examples.payload256), .needMore])
        #expect(receive(RFC6455Examples.binary64K, role: .client, maxMessageBytes: 65536) == [.message(.binary, RFC6455Examples.payload64K), .needMore])
        // The same payloads masked, to a server.
        let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        #expect(receive(makeFrame(opcode: 2, payload: RFC6455Examples.payload256, mask: key), role: .server)
                == [.message(.binary, RFC6455Examples.payload256), .needMore])
        #expect(receive(makeFrame(opcode: 2, payload: RFC6455Examples.payload64K, mask: key), role: .server, maxMessageBytes: 65536)
                == [.message(.binary, RFC6455Examples.payload64K), .needMore])
    }

    @Test func everyPrefixOfAValidFrameNeedsMoreAndLeavesTheBufferUntouched() {
        let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        let frames: [(Role, [UInt8])] = [
            (.client, RFC6455Examples.unmaskedHello), (.server, RFC6455Examples.maskedHello),
            (.client, RFC6455Examples.fragmentHel), (.client, RFC6455Examples.unmaskedPing), (.server, RFC6455Examples.maskedPong),
            (.client, RFC6455Examples.binary256), (.client, RFC6455Examples.binary64K),
            (.server, makeFrame(opcode: 2, payload: RFC6455Examples.payload64K, mask: key)),
            (.server, makeFrame(opcode: 8, payload: closePayload(1000, Array("bye".utf8)), mask: key)),
            (.client, makeFrame(opcode: 1, payload: [], lengthBytes: 8)),
        ]
        for (role, frame) in frames {
            var buffer = frame
            var r = WebSocketReceiver(role: role, maxMessageBytes: 1 << 20)
            buffer.withUnsafeMutableBytes { all in
                for n in 0..<all.count {
                    let result = r.next(UnsafeMutableRawBufferPointer(rebasing: all[0..<n]))
                    if result.event != .needMore || result.consumed != 0 {
                        Issue.record("prefix \(n) of \(all.count): \(result)")
                        return
                    }
                }
            }
            #expect(buffer == frame, "a partial frame must not be unmasked in place")
            // And the whole frame then parses.
            let whole = buffer.withUnsafeMutableBytes { r.next($0) }
            #expect(whole.consumed == frame.count)
        }
    }

    @Test func severalFramesInOneBufferComeOutInOrder() {
        let input = RFC6455Examples.unmaskedHello + RFC6455Examples.fragmentHel + RFC6455Examples.unmaskedPing
            + RFC6455Examples.fragmentLo + RFC6455Examples.binary256 + makeFrame(opcode: 0xA, payload: [1, 2])
            + makeFrame(opcode: 8, payload: closePayload(1000)) + Array(RFC6455Examples.unmaskedHello.prefix(3))
        #expect(receive(input, role: .client) == [
            .message(.text, helloBytes), .fragment, .ping(helloBytes), .assembled(.text, helloBytes),
            .message(.binary, RFC6455Examples.payload256), .pong([1, 2]), .close(1000, []), .needMore,
        ])
    }

    @Test func severalMaskedFramesInOneBufferForServer() {
        let key: [UInt8] = [9, 8, 7, 6]
        let input = RFC6455Examples.maskedHello + makeFrame(fin: false, opcode: 2, payload: [1, 2, 3], mask: key)
            + RFC6455Examples.maskedPong + makeFrame(fin: false, opcode: 0, payload: [4], mask: [0, 0, 0, 0])
            + makeFrame(fin: true, opcode: 0, payload: [5, 6], mask: key) + RFC6455Examples.maskedHello
        #expect(receive(input, role: .server) == [
            .message(.text, helloBytes), .fragment, .pong(helloBytes), .fragment,
            .assembled(.binary, [1, 2, 3, 4, 5, 6]), .message(.text, helloBytes), .needMore,
        ])
    }
}

@Suite struct ReceiverFrameTests {
    @Test(arguments: [Role.client, .server])
    func controlFramesMayInterleaveFragments(_ role: Role) {
        let input = frameFor(role, fin: false, opcode: 1, payload: Array("He".utf8)) + frameFor(role, opcode: 9, payload: [7])
            + frameFor(role, fin: false, opcode: 0, payload: Array("ll".utf8)) + frameFor(role, opcode: 0xA)
            + frameFor(role, opcode: 0, payload: Array("o".utf8))
        #expect(receive(input, role: role) == [.fragment, .ping([7]), .fragment, .pong([]), .assembled(.text, helloBytes), .needMore])
    }

    @Test func assembledBufferIsClearedOnTheNextCallAndAnotherFragmentedMessageMayFollow() {
        var r = WebSocketReceiver(role: .client, maxMessageBytes: 100)
        #expect(r.run(frameFor(.client, fin: false, opcode: 2, payload: [1]) + frameFor(.client, opcode: 0, payload: [2]))
                == [.fragment, .assembled(.binary, [1, 2]), .needMore])
        #expect(r.assembled.isEmpty)
        #expect(r.run(frameFor(.client, fin: false, opcode: 1, payload: Array("ab".utf8)) + frameFor(.client, opcode: 0, payload: Array("c".utf8)))
                == [.fragment, .assembled(.text, Array("abc".utf8)), .needMore])
        // A message over several fragments whose total is exactly the limit is fine.
        var frames: [UInt8] = []
        var whole: [UInt8] = []
        for k in 0..<10 {
            let part = [UInt8](repeating: UInt8(k), count: 10)
            frames += frameFor(.client, fin: k == 9, opcode: k == 0 ? 2 : 0, payload: part)
            whole += part
        }
        let expected: [Got] = [Got](repeating: .fragment, count: 9) + [.assembled(.binary, whole), .needMore]
        #expect(r.run(frames) == expected)
    }

    @Test func emptyFramesAreValid() {
        #expect(receive(frameFor(.client, opcode: 1) + frameFor(.client, opcode: 2) + frameFor(.client, opcode: 9), role: .client)
                == [.message(.text, []), .message(.binary, []), .ping([]), .needMore])
        #expect(receive(frameFor(.server, fin: false, opcode: 1) + frameFor(.server, fin: false, opcode: 0) + frameFor(.server, opcode: 0), role: .server)
                == [.fragment, .fragment, .assembled(.text, []), .needMore])
    }

    @Test func controlPayloadOf125IsAccepted() {
        let p = [UInt8](repeating: 0x61, count: 125)
        #expect(receive(frameFor(.client, opcode: 9, payload: p), role: .client) == [.ping(p), .needMore])
        #expect(receive(frameFor(.server, opcode: 8, payload: closePayload(1000, Array(p[2...]))), role: .server) == [.close(1000, Array(p[2...])), .needMore])
    }

    @Test func nonMinimalLengthEncodingsAreAccepted() {
        #expect(receive(makeFrame(opcode: 1, payload: helloBytes, lengthBytes: 2), role: .client) == [.message(.text, helloBytes), .needMore])
        #expect(receive(makeFrame(opcode: 1, payload: helloBytes, lengthBytes: 8), role: .client) == [.message(.text, helloBytes), .needMore])
    }
}

@Suite struct ReceiverFailureTests {
    @Test(arguments: [Role.client, .server], [UInt8(1), 2, 4, 7])
    func reservedBitsFail(_ role: Role, _ rsv: UInt8) {
        #expect(receive(frameFor(role, rsv: rsv, opcode: 1, payload: helloBytes), role: role) == [.protocolError])
        #expect(receive(frameFor(role, rsv: rsv, opcode: 9), role: role) == [.protocolError])
    }

    @Test(arguments: [Role.client, .server], [UInt8(3), 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF])
    func reservedOpcodesFail(_ role: Role, _ opcode: UInt8) {
        #expect(receive(frameFor(role, opcode: opcode), role: role) == [.protocolError])
        #expect(receive(frameFor(role, opcode: opcode, payload: [1, 2, 3]), role: role) == [.protocolError])
    }

    @Test func maskedFrameToAClientFails() {
        #expect(receive(RFC6455Examples.maskedHello, role: .client) == [.protocolError])
        #expect(receive(RFC6455Examples.maskedPong, role: .client) == [.protocolError])
    }

    @Test func unmaskedFrameToAServerFails() {
        #expect(receive(RFC6455Examples.unmaskedHello, role: .server) == [.protocolError])
        #expect(receive(RFC6455Examples.unmaskedPing, role: .server) == [.protocolError])
        #expect(receive(RFC6455Examples.fragmentHel, role: .server) == [.protocolError])
    }

    @Test(arguments: [Role.client, .server], [UInt8(8), 9, 0xA])
    func fragmentedControlFrameFails(_ role: Role, _ opcode: UInt8) {
        #expect(receive(frameFor(role, fin: false, opcode: opcode), role: role) == [.protocolError])
    }

    @Test(arguments: [Role.client, .server], [UInt8(8), 9, 0xA])
    func controlPayloadOver125Fails(_ role: Role, _ opcode: UInt8) {
        let payload = opcode == 8 ? closePayload(1000, [UInt8](repeating: 0x61, count: 124)) : [UInt8](repeating: 0x61, count: 126)
        let frame = frameFor(role, opcode: opcode, payload: payload)
        #expect(receive(frame, role: role) == [.protocolError])
        // Known from the header alone, before the payload arrives.
        #expect(receive(Array(frame.prefix(role == .server ? 8 : 4)), role: role) == [.protocolError])
    }

    @Test(arguments: [Role.client, .server])
    func continuationWithoutStartFails(_ role: Role) {
        #expect(receive(frameFor(role, opcode: 0, payload: helloBytes), role: role) == [.protocolError])
        #expect(receive(frameFor(role, fin: false, opcode: 0, payload: helloBytes), role: role) == [.protocolError])
        // Also after a complete fragmented message.
        let input = frameFor(role, fin: false, opcode: 2, payload: [1]) + frameFor(role, opcode: 0, payload: [2]) + frameFor(role, opcode: 0, payload: [3])
        #expect(receive(input, role: role) == [.fragment, .assembled(.binary, [1, 2]), .protocolError])
    }

    @Test(arguments: [Role.client, .server], [UInt8(1), 2])
    func newDataFrameInsideAFragmentedMessageFails(_ role: Role, _ opcode: UInt8) {
        let start = frameFor(role, fin: false, opcode: 1, payload: Array("He".utf8))
        #expect(receive(start + frameFor(role, opcode: opcode, payload: Array("x".utf8)), role: role) == [.fragment, .protocolError])
        #expect(receive(start + frameFor(role, fin: false, opcode: opcode, payload: Array("x".utf8)), role: role) == [.fragment, .protocolError])
    }

    @Test(arguments: [Role.client, .server])
    func sixtyFourBitLengthWithTopBitFails(_ role: Role) {
        var frame = hex("82") + [(role == .server ? 0x80 : 0) | 127, 0x80, 0, 0, 0, 0, 0, 0, 5]
        if role == .server { frame += [1, 2, 3, 4] }
        frame += [1, 2, 3, 4, 5]
        #expect(receive(frame, role: role) == [.protocolError])
    }

    @Test(arguments: [Role.client, .server])
    func closePayloadOfOneByteFails(_ role: Role) {
        #expect(receive(frameFor(role, opcode: 8, payload: [0x03]), role: role) == [.protocolError])
    }

    @Test(arguments: [0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000] as [UInt16])
    func invalidCloseCodesFail(_ code: UInt16) {
        for role in [Role.client, .server] {
            #expect(receive(frameFor(role, opcode: 8, payload: closePayload(code)), role: role) == [.protocolError], "code \(code)")
            #expect(receive(frameFor(role, opcode: 8, payload: closePayload(code, Array("why".utf8))), role: role) == [.protocolError])
        }
    }

    @Test(arguments: [1000, 1001, 1003, 1007, 1011, 1012, 3000, 4999] as [UInt16])
    func validCloseCodesAreDelivered(_ code: UInt16) {
        for role in [Role.client, .server] {
            #expect(receive(frameFor(role, opcode: 8, payload: closePayload(code)), role: role) == [.close(code, []), .needMore])
            let reason = Array("gone – bye".utf8)
            #expect(receive(frameFor(role, opcode: 8, payload: closePayload(code, reason)), role: role) == [.close(code, reason), .needMore])
        }
    }

    @Test func closeEventReasonRangeIndexesTheBuffer() {
        var r = WebSocketReceiver(role: .server, maxMessageBytes: 10)
        var buffer = frameFor(.server, opcode: 8, payload: closePayload(1001, Array("ok".utf8)))
        let (event, consumed) = buffer.withUnsafeMutableBytes { r.next($0) }
        #expect(event == .close(code: 1001, reason: 8..<10))
        #expect(consumed == 10)
        var empty = frameFor(.client, opcode: 8)
        var c = WebSocketReceiver(role: .client, maxMessageBytes: 10)
        #expect(empty.withUnsafeMutableBytes { c.next($0) } == (.close(code: nil, reason: 2..<2), 2))
    }

    @Test(arguments: [Role.client, .server])
    func invalidUTF8InATextFrameFails(_ role: Role) {
        for bad in [[0xFF], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xCE, 0xBA, 0xE1], Array("Hello".utf8) + [0xF4, 0x90, 0x80, 0x80]] as [[UInt8]] {
            #expect(receive(frameFor(role, opcode: 1, payload: bad), role: role) == [.invalidUTF8], "\(hexString(bad))")
            // Binary frames are not validated.
            #expect(receive(frameFor(role, opcode: 2, payload: bad), role: role) == [.message(.binary, bad), .needMore])
        }
    }

    @Test(arguments: [Role.client, .server])
    func invalidUTF8InACloseReasonFails(_ role: Role) {
        #expect(receive(frameFor(role, opcode: 8, payload: closePayload(1000, [0x61, 0xFF])), role: role) == [.invalidUTF8])
        #expect(receive(frameFor(role, opcode: 8, payload: closePayload(1000, [0xE2, 0x82])), role: role) == [.invalidUTF8])
    }

    @Test(arguments: [Role.client, .server])
    func invalidUTF8AcrossFragmentsFailsOnTheBreakingFragment(_ role: Role) {
        // "κ" is CE BA: its first byte ends fragment 1 (fine so far), "A" cannot continue it.
        #expect(receive(frameFor(role, fin: false, opcode: 1, payload: [0x48, 0xCE]) + frameFor(role, fin: false, opcode: 0, payload: [0x41])
                        + frameFor(role, opcode: 0, payload: [0x42]), role: role) == [.fragment, .invalidUTF8])
        // Invalid in a middle fragment: fails there, not only at the end.
        #expect(receive(frameFor(role, fin: false, opcode: 1, payload: Array("ok".utf8)) + frameFor(role, fin: false, opcode: 0, payload: [0xFF])
                        + frameFor(role, opcode: 0, payload: Array("x".utf8)), role: role) == [.fragment, .invalidUTF8])
        // A message that ends inside a character fails on its final fragment.
        #expect(receive(frameFor(role, fin: false, opcode: 1, payload: Array("a".utf8)) + frameFor(role, opcode: 0, payload: [0xE2, 0x82]), role: role)
                == [.fragment, .invalidUTF8])
        // A character split across three fragments is fine.
        let smile: [UInt8] = [0xF0, 0x9F, 0x98, 0x80]
        #expect(receive(frameFor(role, fin: false, opcode: 1, payload: [smile[0]]) + frameFor(role, fin: false, opcode: 0, payload: [smile[1], smile[2]])
                        + frameFor(role, opcode: 0, payload: [smile[3]]), role: role) == [.fragment, .fragment, .assembled(.text, smile), .needMore])
        // A fragmented binary message is not validated.
        #expect(receive(frameFor(role, fin: false, opcode: 2, payload: [0xFF]) + frameFor(role, opcode: 0, payload: [0xC0]), role: role)
                == [.fragment, .assembled(.binary, [0xFF, 0xC0]), .needMore])
    }

    @Test func invalidUTF8StateDoesNotLeakIntoTheNextMessage() {
        // A fragmented text message ending in the middle of nothing, then a new one: validator starts fresh.
        var r = WebSocketReceiver(role: .client, maxMessageBytes: 100)
        #expect(r.run(frameFor(.client, fin: false, opcode: 1, payload: [0x61]) + frameFor(.client, opcode: 0, payload: [0x62])
                      + frameFor(.client, fin: false, opcode: 1, payload: [0xC3]) + frameFor(.client, opcode: 0, payload: [0xA9]))
                == [.fragment, .assembled(.text, [0x61, 0x62]), .fragment, .assembled(.text, [0xC3, 0xA9]), .needMore])
    }

    @Test(arguments: [Role.client, .server])
    func singleFrameOverMaxMessageBytesFails(_ role: Role) {
        let limit = 100
        #expect(receive(frameFor(role, opcode: 2, payload: [UInt8](repeating: 1, count: limit)), role: role, maxMessageBytes: limit)
                == [.message(.binary, [UInt8](repeating: 1, count: limit)), .needMore])
        let over = frameFor(role, opcode: 1, payload: [UInt8](repeating: 0x61, count: limit + 1))
        #expect(receive(over, role: role, maxMessageBytes: limit) == [.messageTooBig])
        // Known from the header, before the payload has arrived.
        #expect(receive(Array(over.prefix(role == .server ? 8 : 4)), role: role, maxMessageBytes: limit) == [.messageTooBig])
        // A huge 64-bit length is rejected the same way.
        var huge = hex("82") + [(role == .server ? 0x80 : 0) | 127, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        if role == .server { huge += [1, 2, 3, 4] }
        #expect(receive(huge, role: role, maxMessageBytes: limit) == [.messageTooBig])
    }

    @Test(arguments: [Role.client, .server])
    func reassembledMessageOverMaxMessageBytesFails(_ role: Role) {
        let limit = 10
        let six = [UInt8](repeating: 0x61, count: 6)
        #expect(receive(frameFor(role, fin: false, opcode: 1, payload: six) + frameFor(role, fin: false, opcode: 0, payload: [0x62, 0x63, 0x64, 0x65])
                        + frameFor(role, opcode: 0, payload: [0x66]), role: role, maxMessageBytes: limit) == [.fragment, .fragment, .messageTooBig])
        #expect(receive(frameFor(role, fin: false, opcode: 2, payload: six) + frameFor(role, opcode: 0, payload: six), role: role, maxMessageBytes: limit)
                == [.fragment, .messageTooBig])
        #expect(receive(frameFor(role, fin: false, opcode: 2, payload: six) + frameFor(role, opcode: 0, payload: [1, 2, 3, 4]), role: role, maxMessageBytes: limit)
                == [.fragment, .assembled(.binary, six + [1, 2, 3, 4]), .needMore])
    }

    @Test func failuresCarryTheRightCloseCodes() {
        #expect(WebSocketFailure.protocolError(detail: "x").closeCode == 1002)
        #expect(WebSocketFailure.invalidUTF8.closeCode == 1007)
        #expect(WebSocketFailure.messageTooBig.closeCode == 1009)
    }
}
