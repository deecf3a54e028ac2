import StampedeWire
import Testing

/// Selectors pick a range out of a frame (path, between two literals, bytes at an offset) and a
/// match is every condition at once; a frame too short or malformed for a condition fails it.
struct FrameMatchTests {
    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    func extract(_ s: FieldSelector, _ frame: [UInt8]) -> [UInt8]? {
        frame.withUnsafeBytes { b in s.extract(b).map { Array(frame[$0]) } }
    }

    func holds(_ m: FrameMatch, _ frame: [UInt8], isText: Bool = true) -> Bool {
        frame.withUnsafeBytes { m.holds($0, isText: isText) }
    }

    @Test func betweenTakesTheTextBetweenTheFirstStartAndTheNextEnd() {
        let stomp = bytes("RECEIPT\nreceipt-id:77\nx:y\n\n\u{0}")
        #expect(extract(.between(start: bytes("receipt-id:"), end: bytes("\n")), stomp) == bytes("77"))
        #expect(extract(.between(start: bytes("x:"), end: bytes("\n")), stomp) == bytes("y"))
        #expect(extract(.between(start: bytes("missing:"), end: bytes("\n")), stomp) == nil)
        #expect(extract(.between(start: bytes("receipt-id:"), end: bytes("\u{1}")), stomp) == nil)
        #expect(extract(.between(start: [], end: bytes("\n")), stomp) == bytes("RECEIPT"))
        #expect(extract(.between(start: bytes("x:"), end: []), stomp) == bytes("y\n\n\u{0}"))
        #expect(extract(.between(start: bytes("a"), end: bytes("a")), bytes("aa")) == [])
        #expect(extract(.between(start: bytes("long start"), end: bytes("x")), bytes("long")) == nil)
    }

    @Test func bytesAtAnOffsetMustLieInTheFrame() {
        let frame: [UInt8] = [0x40, 0x02, 0x00, 0x2A]
        #expect(extract(.bytes(offset: 2, length: 2), frame) == [0x00, 0x2A])
        #expect(extract(.bytes(offset: 4, length: 0), frame) == [])
        #expect(extract(.bytes(offset: 3, length: 2), frame) == nil)
        #expect(extract(.bytes(offset: -1, length: 1), frame) == nil)
        #expect(extract(.bytes(offset: 1, length: Int.max), frame) == nil)
        #expect(extract(.bytes(offset: Int.max, length: 1), frame) == nil)
    }

    @Test func aMatchHoldsWhenEveryConditionHolds() throws {
        let ack = FrameMatch([.equals(.path(try JSONPath(parsing: "$.op")), bytes("ack")), .opcode(isText: true)])
        #expect(holds(ack, bytes(#"{"id":3, "op" : "ack"}"#)))
        #expect(!holds(ack, bytes(#"{"id":3, "op" : "ack"}"#), isText: false))
        #expect(!holds(ack, bytes(#"{"op":"acks"}"#)))
        #expect(holds(ack, bytes(#"{"op":"ack""#)), "the value is complete before the cut")
        #expect(!holds(ack, bytes(#"{"op":"ac"#)))
        #expect(!holds(ack, bytes("not json")))
        let id = FrameMatch([.equals(.path(try JSONPath(parsing: "$.id")), bytes("3"))])
        #expect(holds(id, bytes(#"{"id":3}"#)), "a number compares as written")
        #expect(holds(id, bytes(#"{"id":"3"}"#)), "a string compares without its quotes")
        #expect(!holds(id, bytes(#"{"id":3.0}"#)))
        #expect(holds(FrameMatch([]), []))
    }

    @Test func prefixContainsAndBetweenServeTextProtocols() {
        let frame = bytes("MESSAGE\nsubscription:sub-0\nreceipt-id:9\n\nbody ~st~s1:\u{0}")
        #expect(holds(FrameMatch([.prefix(bytes("MESSAGE\n")), .contains(bytes("~st~"))]), frame))
        #expect(!holds(FrameMatch([.prefix(bytes("RECEIPT"))]), frame))
        #expect(!holds(FrameMatch([.prefix(bytes("MESSAGE\n and more than the frame holds, much more"))]), bytes("MESSAGE\n")))
        #expect(holds(FrameMatch([.contains([])]), []))
        #expect(!holds(FrameMatch([.contains(bytes("xyz"))]), bytes("xy")))
        #expect(holds(FrameMatch([.equals(.between(start: bytes("receipt-id:"), end: bytes("\n")), bytes("9"))]), frame))
        #expect(!holds(FrameMatch([.equals(.between(start: bytes("receipt-id:"), end: bytes("\n")), bytes("99"))]), frame))
    }

    @Test func maskedBytesCompareOnlyTheMaskedBits() {
        // MQTT: PUBACK is 0x40, PUBLISH 0x3X (flags in the low nibble).
        let publish = FrameMatch([.opcode(isText: false), .masked(offset: 0, bytes: [0x30], mask: [0xF0])])
        #expect(holds(publish, [0x32, 0x05], isText: false))
        #expect(holds(publish, [0x3F], isText: false))
        #expect(!holds(publish, [0x40, 0x02], isText: false))
        #expect(!holds(publish, [], isText: false))
        let exact = FrameMatch([.masked(offset: 1, bytes: [0x02, 0x00], mask: [])])
        #expect(holds(exact, [0x40, 0x02, 0x00]))
        #expect(!holds(exact, [0x40, 0x02, 0x01]))
        #expect(!holds(exact, [0x40, 0x02]))
        #expect(!holds(FrameMatch([.masked(offset: -1, bytes: [0], mask: [])]), [0]))
    }
}
