import Testing
@testable import StampedeWire

// SignalR MessagePack hub protocol: the vectors of signalr-protocol.md §8 (frames include the
// VarInt prefix), the protocol errors of §7, the aiosignalr headers quirk of §9, framing, the
// MessagePack reader, and round trips. Helpers are private so this file stands alone.

/// Bytes from hex such as "02 91 06".
private func mpBytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.unicodeScalars.filter { !$0.properties.isWhitespace })
    precondition(digits.count % 2 == 0, "odd hex string")
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(String.UnicodeScalarView(digits[$0..<($0 + 2)])), radix: 16)! }
}

private func mpUTF8(_ s: String) -> [UInt8] { Array(s.utf8) }

/// Runs a writer on a buffer of exactly `capacity` bytes followed by a canary.
private func mpWritten(capacity: Int = 1 << 18, _ write: (UnsafeMutableRawBufferPointer) -> Int?) -> [UInt8]? {
    var buffer = [UInt8](repeating: 0xEE, count: capacity + 16)
    let n = buffer.withUnsafeMutableBytes { all in write(UnsafeMutableRawBufferPointer(rebasing: all[0..<capacity])) }
    #expect(buffer[capacity...].allSatisfy { $0 == 0xEE }, "wrote past the end of the output buffer")
    guard let n else { return nil }
    #expect(n <= capacity)
    return Array(buffer[0..<n])
}

/// Writes with room to spare, then checks every smaller buffer is refused and the exact size works.
private func mpWrittenExactly(_ write: (UnsafeMutableRawBufferPointer) -> Int?) -> [UInt8] {
    guard let full = mpWritten(write) else {
        Issue.record("writer failed with a large buffer")
        return []
    }
    for capacity in 0..<full.count {
        #expect(mpWritten(capacity: capacity, write) == nil, "fits in \(capacity) < \(full.count) mpBytes?")
    }
    #expect(mpWritten(capacity: full.count, write) == full)
    return full
}

private func mpParse(_ frame: [UInt8], max: Int = MessagePackHubProtocol.maxBodyLength) -> HubParseResult {
    frame.withUnsafeBytes { MessagePackHubProtocol.parse($0, maxMessageLength: max) }
}

private func mpParseError(_ hex: String) -> HubProtocolError? {
    if case .failure(let e) = mpParse(mpBytes(hex)) { return e }
    return nil
}

/// A frame for a hand-written body (bodies here are shorter than 128 bytes).
private func mpFrame(_ bodyHex: String) -> [UInt8] {
    let body = mpBytes(bodyHex)
    precondition(body.count < 128)
    return [UInt8(body.count)] + body
}

private func mpBodyError(_ bodyHex: String) -> HubProtocolError? {
    if case .failure(let e) = mpParse(mpFrame(bodyHex)) { return e }
    return nil
}

private func mpPrefix(_ b: [UInt8]) -> MessagePackHubProtocol.LengthPrefix {
    b.withUnsafeBytes { MessagePackHubProtocol.readLengthPrefix($0) }
}

/// A parsed frame plus its bytes, to read ranges back.
private struct MPParsed {
    var message: HubMessage
    var consumed: Int
    var frame: [UInt8]
    func slice(_ r: Range<Int>?) -> [UInt8]? { r.map { Array(frame[$0]) } }
    func text(_ r: Range<Int>?) -> String? { r.map { String(decoding: frame[$0], as: UTF8.self) } }
    func arrayCount(_ r: Range<Int>?) -> Int? { r.flatMap { r in frame.withUnsafeBytes { MessagePackHubProtocol.arrayCount($0, array: r) } } }
    func element(_ r: Range<Int>?, _ i: Int) -> Range<Int>? {
        r.flatMap { r in frame.withUnsafeBytes { MessagePackHubProtocol.arrayElement($0, array: r, at: i) } }
    }
    func string(_ r: Range<Int>?) -> String? {
        r.flatMap { r in frame.withUnsafeBytes { MessagePackHubProtocol.stringContents($0, value: r) } }.map { String(decoding: frame[$0], as: UTF8.self) }
    }
    func int(_ r: Range<Int>?) -> Int64? { r.flatMap { r in frame.withUnsafeBytes { MessagePackHubProtocol.int64($0, value: r) } } }
    func value(_ r: Range<Int>?) -> MessagePackHubProtocol.Value? {
        r.flatMap { r in frame.withUnsafeBytes { b in var reader = MessagePackHubProtocol.Reader(b, range: r); return reader.read() } }
    }
}

private func mpParsed(_ frame: [UInt8]) throws -> MPParsed {
    switch mpParse(frame) {
    case .message(let m, let consumed):
        #expect(consumed == frame.count, "one frame should be consumed whole")
        return MPParsed(message: m, consumed: consumed, frame: frame)
    case let other:
        Issue.record("expected a message, got \(other)")
        throw HubProtocolError.invalidMessagePack
    }
}

private func mpParsed(_ hex: String) throws -> MPParsed { try mpParsed(mpBytes(hex)) }

/// Reads every item of `b` with the reader, as a list.
private func mpItems(_ b: [UInt8]) -> [MessagePackHubProtocol.Value]? {
    b.withUnsafeBytes { raw in
        var r = MessagePackHubProtocol.Reader(raw)
        var out: [MessagePackHubProtocol.Value] = []
        while !r.isAtEnd {
            guard let v = r.read() else { return nil }
            out.append(v)
        }
        return out
    }
}

/// The encoding of one value written by the value writer (a StreamItem's item).
private func mpEncoded(_ write: (inout MessagePackHubProtocol.ValueWriter) -> Void) throws -> [UInt8] {
    let frame = try #require(mpWritten { MessagePackHubProtocol.writeStreamItem(into: $0, invocationId: "1", item: write) })
    let p = try mpParsed(frame)
    return try #require(p.slice(p.message.item))
}

/// SplitMix64, so the fuzz inputs are the same on every run.
private struct MPFuzzRandom: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Writes the same arguments with any protocol: what a generic workload does.
private func hubChatArguments<W: HubValueWriter>(_ w: inout W, stamp: UnsafeRawBufferPointer) {
    w.string("alice")
    w.paddedString(prefix: stamp, totalLength: 40, pad: UInt8(ascii: "x"))
    w.int(7)
}

private func hubChatRoundTrip<P: HubProtocolCodec>(_: P.Type) throws -> (text: String, count: Int) {
    let stamp = mpUTF8("s1:q2:t3:")
    let frame = try #require(mpWritten { out in
        stamp.withUnsafeBytes { s in
            P.writeInvocation(into: out, invocationId: 9, target: "Send", streamIds: nil) { hubChatArguments(&$0, stamp: s) }
        }
    })
    guard case .message(let m, let consumed) = frame.withUnsafeBytes({ P.parse($0, maxMessageLength: 1 << 20) }), consumed == frame.count,
          let args = m.arguments else {
        Issue.record("\(P.self) did not read back its own invocation")
        return ("", 0)
    }
    return frame.withUnsafeBytes { b in
        let count = P.arrayCount(b, array: args) ?? -1
        let text = P.arrayElement(b, array: args, at: 1).flatMap { P.stringContents(b, value: $0) }.map { String(decoding: frame[$0], as: UTF8.self) }
        return (text ?? "", count)
    }
}

@Suite struct SignalRVarIntTests {
    static let vectors: [(Int, String)] = [
        (0, "00"), (127, "7F"), (128, "80 01"), (300, "AC 02"), (16383, "FF 7F"), (16384, "80 80 01"), (2_097_152, "80 80 80 01"),
        (268_435_456, "80 80 80 80 01"), (Int(Int32.max), "FF FF FF FF 07"),
    ]

    @Test func lengthPrefixVectorsBothWays() {
        for (value, hex) in Self.vectors {
            let expected = mpBytes(hex)
            #expect(mpWritten { MessagePackHubProtocol.writeLengthPrefix(value, into: $0) } == expected, "\(value)")
            #expect(MessagePackHubProtocol.lengthPrefixSize(value) == expected.count)
            #expect(mpPrefix(expected) == .value(length: value, prefixLength: expected.count), "\(hex)")
            #expect(mpPrefix(expected + [0xAA, 0xBB]) == .value(length: value, prefixLength: expected.count))
        }
        #expect(mpWritten(capacity: 1) { MessagePackHubProtocol.writeLengthPrefix(128, into: $0) } == nil)
        #expect(mpWritten { MessagePackHubProtocol.writeLengthPrefix(Int(Int32.max) + 1, into: $0) } == nil)
        #expect(mpWritten { MessagePackHubProtocol.writeLengthPrefix(-1, into: $0) } == nil)
    }

    @Test func truncatedPrefixNeedsMoreAndOverlongPrefixIsInvalid() {
        #expect(mpPrefix([]) == .needMore)
        #expect(mpPrefix(mpBytes("80")) == .needMore)
        #expect(mpPrefix(mpBytes("FF FF FF FF")) == .needMore)
        #expect(mpPrefix(mpBytes("80 80 80 80 08")) == .invalid)
        #expect(mpPrefix(mpBytes("FF FF FF FF 7F")) == .invalid)
        #expect(mpPrefix(mpBytes("FF FF FF FF 80 01")) == .invalid)
        #expect(mpPrefix(mpBytes("80 00")) == .value(length: 0, prefixLength: 2), "non-minimal forms are read like .NET reads them")
        #expect(mpParseError("80 80 80 80 08") == .invalidLengthPrefix)
        #expect(mpParse(mpBytes("80")) == .needMore)
        #expect(mpParse(mpBytes("FF FF FF FF 07 91")) == .needMore, "2 GB announced: wait, unless capped")
        #expect(mpParse(mpBytes("FF FF FF FF 07 91"), max: 32 * 1024) == .failure(.messageTooLarge))
        #expect(mpParse(mpBytes("03 92 08 01"), max: 3) != .failure(.messageTooLarge), "the cap is inclusive")
    }
}

@Suite struct SignalRMessagePackVectorTests {
    @Test func pingVectorBothWays() throws {
        #expect(mpWrittenExactly { MessagePackHubProtocol.writePing(into: $0) } == mpBytes("02 91 06"))
        #expect(try mpParsed("02 91 06").message.messageType == .ping)
    }

    @Test func invocationVectorBothWays() throws {
        let frame = mpWrittenExactly { out in
            MessagePackHubProtocol.writeInvocation(into: out, invocationId: "xyz", target: "method") { $0.int(42) }
        }
        #expect(frame == mpBytes("11 96 01 80 A3 78 79 7A A6 6D 65 74 68 6F 64 91 2A 90"))
        let p = try mpParsed(frame)
        #expect(p.message.messageType == .invocation)
        #expect(p.text(p.message.invocationId) == "xyz" && p.text(p.message.target) == "method")
        #expect(p.slice(p.message.arguments) == [0x91, 0x2A] && p.int(p.element(p.message.arguments, 0)) == 42)
        #expect(p.slice(p.message.streamIds) == [0x90] && p.slice(p.message.headers) == [0x80])
    }

    @Test func nonBlockingFiveItemInvocationVectorBothWays() throws {
        let frame = mpWrittenExactly { out in
            MessagePackHubProtocol.writeInvocation(into: out, target: "method", streamIds: nil) { $0.int(42) }
        }
        #expect(frame == mpBytes("0D 95 01 80 C0 A6 6D 65 74 68 6F 64 91 2A"))
        let p = try mpParsed(frame)
        #expect(p.message.invocationId == nil && p.message.streamIds == nil && p.text(p.message.target) == "method")
        #expect(p.arrayCount(p.message.arguments) == 1)
    }

    @Test func completionVectorsBothWays() throws {
        let void = mpWrittenExactly { MessagePackHubProtocol.writeCompletion(into: $0, invocationId: "xyz") }
        #expect(void == mpBytes("08 94 03 80 A3 78 79 7A 02"))
        let value = mpWrittenExactly { MessagePackHubProtocol.writeCompletion(into: $0, invocationId: "xyz") { $0.int(42) } }
        #expect(value == mpBytes("09 95 03 80 A3 78 79 7A 03 2A"))
        let error = mpWrittenExactly { MessagePackHubProtocol.writeCompletion(into: $0, invocationId: "xyz", error: "Error") }
        #expect(error == mpBytes("0E 95 03 80 A3 78 79 7A 01 A5 45 72 72 6F 72"))

        let v = try mpParsed(void)
        #expect(v.message.messageType == .completion && v.message.result == nil && v.message.error == nil && v.text(v.message.invocationId) == "xyz")
        let r = try mpParsed(value)
        #expect(r.int(r.message.result) == 42 && r.message.error == nil)
        let e = try mpParsed(error)
        #expect(e.text(e.message.error) == "Error" && e.message.result == nil)
        let nilResult = try mpParsed("09 95 03 80 A3 78 79 7A 03 C0")
        #expect(nilResult.slice(nilResult.message.result) == [0xC0], "kind 3 with nil is a result")
    }

    @Test func streamItemCancelCloseAckAndSequenceVectorsBothWays() throws {
        let cases: [(String, [UInt8])] = [
            ("08 94 02 80 A3 78 79 7A 2A", mpWrittenExactly { MessagePackHubProtocol.writeStreamItem(into: $0, invocationId: "xyz") { $0.int(42) } }),
            ("07 93 05 80 A3 78 79 7A", mpWrittenExactly { MessagePackHubProtocol.writeCancelInvocation(into: $0, invocationId: "xyz") }),
            ("03 92 07 C0", mpWrittenExactly { MessagePackHubProtocol.writeClose(into: $0) }),
            ("07 93 07 A3 78 79 7A C3", mpWrittenExactly { MessagePackHubProtocol.writeClose(into: $0, error: "xyz", allowReconnect: true) }),
            ("03 92 08 01", mpWrittenExactly { MessagePackHubProtocol.writeAck(into: $0, sequenceId: 1) }),
            ("03 92 09 01", mpWrittenExactly { MessagePackHubProtocol.writeSequence(into: $0, sequenceId: 1) }),
            ("05 92 08 CD 01 2C", mpWrittenExactly { MessagePackHubProtocol.writeAck(into: $0, sequenceId: 300) }),
        ]
        for (hex, frame) in cases { #expect(frame == mpBytes(hex), "\(hex)") }

        let item = try mpParsed("08 94 02 80 A3 78 79 7A 2A")
        #expect(item.message.messageType == .streamItem && item.int(item.message.item) == 42 && item.text(item.message.invocationId) == "xyz")
        let cancel = try mpParsed("07 93 05 80 A3 78 79 7A")
        #expect(cancel.message.messageType == .cancelInvocation && cancel.text(cancel.message.invocationId) == "xyz")
        let close = try mpParsed("03 92 07 C0")
        #expect(close.message.messageType == .close && close.message.error == nil && !close.message.allowReconnect)
        let reconnect = try mpParsed("07 93 07 A3 78 79 7A C3")
        #expect(reconnect.text(reconnect.message.error) == "xyz" && reconnect.message.allowReconnect)
        #expect(try mpParsed("03 92 08 01").message.sequenceId == 1)
        let sequence = try mpParsed("03 92 09 01")
        #expect(sequence.message.messageType == .sequence && sequence.message.sequenceId == 1)
        #expect(try mpParsed("05 92 08 CD 01 2C").message.sequenceId == 300)
        #expect(try mpParsed("04 92 08 CC 24").message.sequenceId == 36, "any unsigned width is fine")
    }

    @Test func specHeadersExampleDecodesWithItsMapRange() throws {
        let p = try mpParsed("19 96 01 82 A1 78 A1 79 A1 7A A1 7A A3 78 79 7A A6 6D 65 74 68 6F 64 91 2A 90")
        #expect(p.slice(p.message.headers) == mpBytes("82 A1 78 A1 79 A1 7A A1 7A"))
        #expect(p.text(p.message.invocationId) == "xyz" && p.text(p.message.target) == "method")
    }
}

@Suite struct SignalRMessagePackHeaderTests {
    @Test func aiosignalrIntegerHeadersAreReadAsNoHeaders() throws {
        let item = try mpParsed("09 94 02 CC 80 A3 78 79 7A 2A")
        #expect(item.message.headers == nil && item.int(item.message.item) == 42)
        let completion = try mpParsed("0A 95 03 CC 80 A3 78 79 7A 03 2A")
        #expect(completion.int(completion.message.result) == 42)
        let cancel = try mpParsed("08 93 05 CC 80 A3 78 79 7A")
        #expect(cancel.message.messageType == .cancelInvocation && cancel.text(cancel.message.invocationId) == "xyz")
    }

    @Test func otherNonMapHeadersAreAProtocolError() {
        for headers in ["C0", "A0", "05", "CC 81", "90", "D0 80", "C3"] {
            let body = mpBytes("94 02") + mpBytes(headers) + mpBytes("A3 78 79 7A 2A")
            #expect(mpParse([UInt8(body.count)] + body) == .failure(.invalidHeaders), "headers \(headers)")
        }
        #expect(mpParseError("05 94 02 82 A1 78") == .invalidMessagePack, "a truncated header map")
    }
}

@Suite struct SignalRMessagePackErrorTests {
    @Test func malformedBodiesAreProtocolErrors() {
        let cases: [(String, HubProtocolError)] = [
            ("", .emptyMessage),
            ("2A", .notAnArray),
            ("80", .notAnArray),
            ("90", .notAnArray),
            ("C1", .invalidMessagePack),
            ("91", .invalidMessagePack),
            ("91 A1 61", .invalidType),
            ("91 C0", .invalidType),
            ("92 01 80", .missingFields),
            ("94 01 80 C0 A1", .missingFields),
            ("95 01 80 C0 A0 90", .missingTarget),
            ("95 01 80 C0 C0 90", .missingTarget),
            ("95 01 80 C0 05 90", .invalidTarget),
            ("95 01 80 C0 A1 54 C0", .invalidArguments),
            ("95 01 80 C0 A1 54 91", .invalidMessagePack),
            ("95 01 80 05 A1 54 90", .invalidInvocationId),
            ("96 01 80 C0 A1 54 90 05", .invalidStreamIds),
            ("96 01 80 C0 A1 54 90 91 01", .invalidStreamIds),
            ("95 04 80 C0 A1 54 90", .missingInvocationId),
            ("95 04 80 A0 A1 54 90", .missingInvocationId),
            ("94 02 80 C0 2A", .missingInvocationId),
            ("94 02 80 A1", .invalidMessagePack),
            ("94 02 80 A1 31", .invalidMessagePack),
            ("93 02 80 A1 31", .missingFields),
            ("93 03 80 A1 31", .missingFields),
            ("94 03 80 A1 31 03", .missingFields),
            ("94 03 80 A1 31 01", .missingFields),
            ("94 03 80 A1 31 04", .invalidCompletionKind),
            ("94 03 80 A1 31 C0", .invalidCompletionKind),
            ("95 03 80 A1 31 01 05", .invalidError),
            ("92 05 80", .missingFields),
            ("91 07", .missingFields),
            ("92 07 05", .invalidError),
            ("93 07 C0 01", .invalidAllowReconnect),
            ("91 08", .missingSequenceId),
            ("92 09 A0", .invalidSequenceId),
            ("92 08 FF", .invalidSequenceId),
            ("92 08 CB 3F", .invalidMessagePack),
        ]
        for (body, error) in cases {
            #expect(mpBodyError(body) == error, "body \(body)")
        }
        #expect(mpParse([0x00]) == .failure(.emptyMessage), "a zero-length body")
    }

    @Test func truncatedBodiesNeedMoreAtEveryCut() {
        let frame = mpBytes("11 96 01 80 A3 78 79 7A A6 6D 65 74 68 6F 64 91 2A 90")
        for cut in 0..<frame.count {
            #expect(mpParse(Array(frame[0..<cut])) == .needMore, "cut at \(cut)")
        }
    }

    @Test func unknownTypesAreReturnedAndTrailingItemsIgnored() throws {
        #expect(try mpParsed(mpFrame("91 0A")).message.type == 10)
        #expect(try mpParsed(mpFrame("91 CD 01 00")).message.type == 0, "a type that does not fit a byte reads as 0")
        #expect(try mpParsed(mpFrame("91 FF")).message.type == 0)
        #expect(try mpParsed(mpFrame("92 0B C1 C1")).message.type == 11, "the rest of an unknown message is not read")
        #expect(try mpParsed(mpFrame("93 06 01 02")).message.messageType == .ping)
        let ack = try mpParsed(mpFrame("93 08 01 A1 78"))
        #expect(ack.message.messageType == .ack && ack.message.sequenceId == 1)
        let empty = try mpParsed(mpFrame("95 01 80 A0 A1 54 90"))
        #expect(empty.message.invocationId == nil, "an empty id is a non-blocking invocation, as in .NET")
        let nilStreams = try mpParsed(mpFrame("96 01 80 C0 A1 54 90 C0"))
        #expect(nilStreams.message.streamIds == nil && nilStreams.text(nilStreams.message.target) == "T")
        let trailing = try mpParsed(mpFrame("92 08 01 FF"))
        #expect(trailing.message.sequenceId == 1, "bytes after the array inside the frame are ignored")
    }

    @Test func severalFramesInOneBufferParseOneAfterAnother() {
        let buffer = mpBytes("02 91 06") + mpBytes("11 96 01 80 A3 78 79 7A A6 6D 65 74 68 6F 64 91 2A 90")
            + mpBytes("09 95 03 80 A3 78 79 7A 03 2A") + mpBytes("05 92 08 CD 01 2C") + mpBytes("08 94 02 80")
        var offset = 0
        var types: [UInt8] = []
        var results: [Int64] = []
        while true {
            let result = buffer.withUnsafeBytes { MessagePackHubProtocol.parse(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            guard case .message(let m, let consumed) = result else {
                #expect(result == .needMore)
                break
            }
            types.append(m.type)
            if let r = m.result {
                let slice = Array(buffer[offset...])
                results.append(slice.withUnsafeBytes { MessagePackHubProtocol.int64($0, value: r) } ?? -1)
            }
            offset += consumed
        }
        #expect(types == [6, 1, 3, 8])
        #expect(results == [42])
        #expect(offset == buffer.count - 4)
    }
}

@Suite struct SignalRMessagePackValueTests {
    @Test func integersUseTheirSmallestEncodingAndReadBack() throws {
        let cases: [(Int64, String)] = [
            (0, "00"), (1, "01"), (127, "7F"), (128, "CC 80"), (255, "CC FF"), (256, "CD 01 00"), (65535, "CD FF FF"),
            (65536, "CE 00 01 00 00"), (4_294_967_295, "CE FF FF FF FF"), (4_294_967_296, "CF 00 00 00 01 00 00 00 00"),
            (.max, "CF 7F FF FF FF FF FF FF FF"), (-1, "FF"), (-32, "E0"), (-33, "D0 DF"), (-128, "D0 80"), (-129, "D1 FF 7F"),
            (-32768, "D1 80 00"), (-32769, "D2 FF FF 7F FF"), (Int64(Int32.min), "D2 80 00 00 00"),
            (Int64(Int32.min) - 1, "D3 FF FF FF FF 7F FF FF FF"), (.min, "D3 80 00 00 00 00 00 00 00"),
        ]
        for (value, hex) in cases {
            let b = try mpEncoded { $0.int(value) }
            #expect(b == mpBytes(hex), "\(value)")
            #expect(mpItems(b)?.first?.int64 == value)
            #expect(b.withUnsafeBytes { MessagePackHubProtocol.int64($0, value: 0..<b.count) } == value)
        }
        #expect(try mpEncoded { $0.uint(.max) } == mpBytes("CF FF FF FF FF FF FF FF FF"))
        #expect(mpItems(mpBytes("CF FF FF FF FF FF FF FF FF")) == [.uint(.max)])
        #expect(mpItems(mpBytes("CF FF FF FF FF FF FF FF FF"))?.first?.int64 == nil)
    }

    @Test func stringAndContainerHeadersAtTheirBoundaries() throws {
        for (n, header) in [(0, "A0"), (31, "BF"), (32, "D9 20"), (255, "D9 FF"), (256, "DA 01 00"), (65535, "DA FF FF"), (65536, "DB 00 01 00 00")] {
            let b = try mpEncoded { $0.paddedString(prefix: UnsafeRawBufferPointer(start: nil, count: 0), totalLength: n, pad: 0x61) }
            #expect(Array(b.prefix(mpBytes(header).count)) == mpBytes(header) && b.count == mpBytes(header).count + n, "string of \(n)")
        }
        for (n, header) in [(15, "9F"), (16, "DC 00 10"), (65535, "DC FF FF"), (65536, "DD 00 01 00 00")] {
            let b = try mpEncoded { w in w.array { for k in 0..<n { $0.int(Int64(k % 100)) } } }
            #expect(Array(b.prefix(mpBytes(header).count)) == mpBytes(header), "array of \(n)")
            let values = try #require(mpItems(b))
            #expect(values.count == n + 1 && values.last == .uint(UInt64((n - 1) % 100)), "contents moved intact")
        }
        let map = try mpEncoded { w in w.object { o in for k in 0..<16 { o.key("k"); o.int(Int64(k)) } } }
        #expect(Array(map.prefix(3)) == mpBytes("DE 00 10") && map.count == 3 + 16 * 3)
        #expect(try mpEncoded { w in w.object { _ in } } == [0x80])
    }

    @Test func everyValueKindWritesWhatTheReaderReads() throws {
        let b = try mpEncoded { w in
            w.array { a in
                a.null(); a.bool(true); a.bool(false); a.double(1.5); a.string("é"); [UInt8(0x2A)].withUnsafeBytes { a.raw($0) }
                [UInt8(1), 2].withUnsafeBytes { a.binary($0) }
                a.object { o in o.key("n"); o.array { $0.uint(3) } }
            }
        }
        #expect(b == mpBytes("98 C0 C3 C2 CB 3F F8 00 00 00 00 00 00 A2 C3 A9 2A C4 02 01 02 81 A1 6E 91 03"))
    }

    @Test func readerDecodesEveryFormat() {
        let cases: [(String, [MessagePackHubProtocol.Value])] = [
            ("C0 C2 C3", [.null, .bool(false), .bool(true)]),
            ("CA 3F C0 00 00 CB 3F F8 00 00 00 00 00 00", [.float(1.5), .float(1.5)]),
            ("C4 02 01 02 C5 00 01 FF C6 00 00 00 01 AA", [.binary(2..<4), .binary(7..<8), .binary(13..<14)]),
            ("D9 01 61 DA 00 01 61 DB 00 00 00 01 61", [.string(2..<3), .string(6..<7), .string(12..<13)]),
            ("DC 00 01 C0 DD 00 00 00 01 C0", [.array(count: 1), .null, .array(count: 1), .null]),
            ("DE 00 01 A1 61 01 DF 00 00 00 01 A1 61 01", [.map(count: 1), .string(4..<5), .uint(1), .map(count: 1), .string(12..<13), .uint(1)]),
            ("D4 01 AA D5 02 AA BB D6 03 01 02 03 04", [.ext(type: 1, data: 2..<3), .ext(type: 2, data: 5..<7), .ext(type: 3, data: 9..<13)]),
            ("D7 FF 01 02 03 04 05 06 07 08", [.ext(type: -1, data: 2..<10)]),
            ("D8 05" + String(repeating: " 00", count: 16), [.ext(type: 5, data: 2..<18)]),
            ("C7 02 05 AA BB C8 00 01 05 AA C9 00 00 00 01 05 AA", [.ext(type: 5, data: 3..<5), .ext(type: 5, data: 9..<10), .ext(type: 5, data: 16..<17)]),
            ("D0 80 D1 80 00 D2 80 00 00 00 D3 80 00 00 00 00 00 00 00", [.int(-128), .int(-32768), .int(Int64(Int32.min)), .int(.min)]),
            ("CC FF CD FF FF CE FF FF FF FF", [.uint(255), .uint(65535), .uint(4_294_967_295)]),
        ]
        for (hex, expected) in cases {
            #expect(mpItems(mpBytes(hex)) == expected, "\(hex)")
        }
        for truncated in ["C1", "CD 01", "D9 05 61", "DC 00", "C7 05 01 AA", "D8 05 00", "CB 00 00", "DB FF FF FF FF 61", "C6 00 00"] {
            #expect(mpItems(mpBytes(truncated)) == nil, "\(truncated)")
        }
    }

    @Test func skippingIsIterativeSoDeepOrHugeContainersCannotTrap() {
        let deep = [UInt8](repeating: 0x91, count: 200_000) + [0xC0]
        deep.withUnsafeBytes { b in
            var r = MessagePackHubProtocol.Reader(b)
            #expect(r.skip() == 0..<deep.count)
            var cut = MessagePackHubProtocol.Reader(UnsafeRawBufferPointer(rebasing: b[0..<(deep.count - 1)]))
            #expect(cut.skip() == nil && cut.position == 0, "failure leaves the position alone")
        }
        mpBytes("DD FF FF FF FF C0").withUnsafeBytes { b in
            var r = MessagePackHubProtocol.Reader(b)
            #expect(r.skip() == nil, "4 billion items announced, one present")
        }
        mpBytes("DF FF FF FF FF").withUnsafeBytes { b in
            var r = MessagePackHubProtocol.Reader(b)
            #expect(r.skip() == nil)
        }
    }

    @Test func largeBodiesGetLongerPrefixesInFrontOfIntactBodies() throws {
        // StreamItem body: 94 02 80 A1 31 + str header + text.
        for (textLength, prefixHex) in [(120, "7F"), (121, "80 01"), (16375, "FF 7F"), (16376, "80 80 01")] {
            let frame = try #require(mpWritten { out in
                MessagePackHubProtocol.writeStreamItem(into: out, invocationId: 1) { w in
                    w.paddedString(prefix: UnsafeRawBufferPointer(start: nil, count: 0), totalLength: textLength, pad: 0x7A)
                }
            })
            let p = mpBytes(prefixHex)
            #expect(Array(frame.prefix(p.count)) == p, "text \(textLength)")
            let parsedFrame = try mpParsed(frame)
            #expect(parsedFrame.string(parsedFrame.message.item) == String(repeating: "z", count: textLength))
            #expect(mpWritten(capacity: frame.count - 1) { out in
                MessagePackHubProtocol.writeStreamItem(into: out, invocationId: 1) { w in
                    w.paddedString(prefix: UnsafeRawBufferPointer(start: nil, count: 0), totalLength: textLength, pad: 0x7A)
                }
            } == nil)
        }
    }
}

@Suite struct SignalRMessagePackRoundTripTests {
    @Test func everyMessageTypeRoundTrips() throws {
        let text = mpUTF8("quote\" back\\ ctl\u{1} é 中 \u{1F600}")
        let invoke = try mpParsed(try #require(mpWritten { out in
            [UInt64(5), 6].withUnsafeBufferPointer { ids in
                text.withUnsafeBytes { t in
                    MessagePackHubProtocol.writeInvocation(into: out, invocationId: 4, target: "Upload", streamIds: ids) { w in
                        w.string(t); w.int(-33); w.uint(65536); w.bool(true); w.null(); w.double(-0.25)
                    }
                }
            }
        }))
        #expect(invoke.text(invoke.message.invocationId) == "4" && invoke.text(invoke.message.target) == "Upload")
        #expect(invoke.arrayCount(invoke.message.arguments) == 6)
        #expect(invoke.string(invoke.element(invoke.message.arguments, 0)).map(mpUTF8) == text)
        #expect(invoke.int(invoke.element(invoke.message.arguments, 1)) == -33)
        #expect(invoke.int(invoke.element(invoke.message.arguments, 2)) == 65536)
        #expect(invoke.value(invoke.element(invoke.message.arguments, 5)) == .float(-0.25))
        #expect(invoke.arrayCount(invoke.message.streamIds) == 2 && invoke.string(invoke.element(invoke.message.streamIds, 1)) == "6")

        let stream = try mpParsed(try #require(mpWritten { MessagePackHubProtocol.writeStreamInvocation(into: $0, invocationId: 8, target: "Counter") { $0.int(10) } }))
        #expect(stream.message.messageType == .streamInvocation && stream.text(stream.message.invocationId) == "8")
        let item = try mpParsed(try #require(mpWritten { MessagePackHubProtocol.writeStreamItem(into: $0, invocationId: 8) { _ in } }))
        #expect(item.slice(item.message.item) == [0xC0], "an item closure writing nothing writes nil")
        let two = try mpParsed(try #require(mpWritten { MessagePackHubProtocol.writeStreamItem(into: $0, invocationId: 8) { $0.int(1); $0.int(2) } }))
        #expect(two.slice(two.message.item) == [0x01] && two.frame.count == 7, "values after the first are cut")
        let error = try mpParsed(try #require(mpWritten { out in
            text.withUnsafeBytes { MessagePackHubProtocol.writeCompletion(into: out, invocationId: .utf8($0), error: .utf8($0)) }
        }))
        #expect(error.slice(error.message.invocationId) == text && error.slice(error.message.error) == text)
        let result = try mpParsed(try #require(mpWritten { MessagePackHubProtocol.writeCompletion(into: $0, invocationId: 1) { $0.string("ok") } }))
        #expect(result.string(result.message.result) == "ok")
        let cancel = try mpParsed(try #require(mpWritten { MessagePackHubProtocol.writeCancelInvocation(into: $0, invocationId: .number(.max)) }))
        #expect(cancel.text(cancel.message.invocationId) == "18446744073709551615")
        let close = try mpParsed(try #require(mpWritten { MessagePackHubProtocol.writeClose(into: $0, error: "bye") }))
        #expect(close.text(close.message.error) == "bye" && !close.message.allowReconnect && close.frame == mpBytes("06 92 07 A3 62 79 65"))
        let closeReconnect = try mpParsed(try #require(mpWritten { MessagePackHubProtocol.writeClose(into: $0, allowReconnect: true) }))
        #expect(closeReconnect.message.allowReconnect && closeReconnect.message.error == nil)
        #expect(try mpParsed(try #require(mpWritten { MessagePackHubProtocol.writeAck(into: $0, sequenceId: .max) })).message.sequenceId == .max)
        #expect(try mpParsed(try #require(mpWritten { MessagePackHubProtocol.writeSequence(into: $0, sequenceId: 70000) })).message.sequenceId == 70000)
    }

    @Test func genericWorkloadCodeWritesTheSameArgumentsInBothProtocols() throws {
        let expected = "s1:q2:t3:" + String(repeating: "x", count: 31)
        let json = try hubChatRoundTrip(JSONHubProtocol.self)
        let msgpack = try hubChatRoundTrip(MessagePackHubProtocol.self)
        #expect(json.text == expected && json.count == 3)
        #expect(msgpack.text == expected && msgpack.count == 3)
    }

    @Test func writersRefuseEveryBufferTooSmallAndNeverWritePastIt() {
        _ = mpWrittenExactly { MessagePackHubProtocol.writeInvocation(into: $0, invocationId: 77, target: "Send") { w in
            w.array { a in for k in 0..<20 { a.int(Int64(k)) } }
            w.object { o in o.key("k"); o.string("v") }
            w.paddedString(prefix: UnsafeRawBufferPointer(start: nil, count: 0), totalLength: 40, pad: 0x2E)
        } }
        _ = mpWrittenExactly { MessagePackHubProtocol.writeStreamItem(into: $0, invocationId: 1) { $0.double(2.5) } }
        _ = mpWrittenExactly { MessagePackHubProtocol.writeCompletion(into: $0, invocationId: 1, error: "e") }
        _ = mpWrittenExactly { MessagePackHubProtocol.writeSequence(into: $0, sequenceId: 1 << 40) }
    }
}

@Suite struct SignalRMessagePackFuzzTests {
    static let seeds: [String] = [
        "02 91 06", "11 96 01 80 A3 78 79 7A A6 6D 65 74 68 6F 64 91 2A 90", "0D 95 01 80 C0 A6 6D 65 74 68 6F 64 91 2A",
        "08 94 03 80 A3 78 79 7A 02", "09 95 03 80 A3 78 79 7A 03 2A", "0E 95 03 80 A3 78 79 7A 01 A5 45 72 72 6F 72",
        "08 94 02 80 A3 78 79 7A 2A", "07 93 05 80 A3 78 79 7A", "03 92 07 C0", "07 93 07 A3 78 79 7A C3", "05 92 08 CD 01 2C",
        "09 94 02 CC 80 A3 78 79 7A 2A", "10 94 02 80 A1 31 DC 00 03 92 C0 C3 81 A1 61 CB 00", "0C 94 02 80 A1 31 DF 00 00 00 01 C7 01 05",
    ]

    /// Parsing random and mutated frames never traps; whatever decodes has its ranges inside
    /// the buffer, and the helpers survive arbitrary ranges.
    @Test func parsingTwentyThousandRandomAndMutatedFramesNeverTraps() {
        var rng = MPFuzzRandom(state: 0x4D53_4750_4143_4B21)
        let interesting: [UInt8] = [0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC3, 0xC4, 0xC7, 0xCC, 0xCF, 0xD3, 0xD4,
                                    0xD8, 0xD9, 0xDB, 0xDC, 0xDD, 0xDE, 0xDF, 0xE0, 0xFF]
        var successes = 0
        for round in 0..<20_000 {
            var frame: [UInt8]
            if round % 3 == 0 {
                let n = Int.random(in: 0...40, using: &rng)
                frame = [UInt8(n)] + (0..<n).map { _ in
                    Bool.random(using: &rng) ? interesting.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
                }
            } else {
                frame = mpBytes(Self.seeds.randomElement(using: &rng)!)
                for _ in 0..<Int.random(in: 1...3, using: &rng) where frame.count > 1 {
                    let at = Int.random(in: 1..<frame.count, using: &rng)
                    switch Int.random(in: 0..<3, using: &rng) {
                    case 0: frame[at] = interesting.randomElement(using: &rng)!
                    case 1: frame[at] = UInt8.random(in: 0...255, using: &rng)
                    default: frame.remove(at: at); frame[0] = UInt8(frame.count - 1)
                    }
                }
            }
            frame.withUnsafeBytes { b in
                if case .message(let m, let consumed) = MessagePackHubProtocol.parse(b) {
                    successes += 1
                    #expect(consumed <= b.count)
                    for r in [m.invocationId, m.target, m.arguments, m.streamIds, m.item, m.result, m.error, m.headers] {
                        if let r { #expect(r.lowerBound >= 0 && r.upperBound <= consumed) }
                    }
                    if let a = m.arguments, let n = MessagePackHubProtocol.arrayCount(b, array: a), n > 0 {
                        #expect(MessagePackHubProtocol.arrayElement(b, array: a, at: n - 1) != nil)
                    }
                }
                _ = MessagePackHubProtocol.decode(body: b)
                let lo = Int.random(in: -2...b.count, using: &rng)
                let hi = Int.random(in: max(lo, -1)...(b.count + 2), using: &rng)
                _ = MessagePackHubProtocol.arrayElement(b, array: lo..<hi, at: 1)
                _ = MessagePackHubProtocol.stringContents(b, value: lo..<hi)
                _ = MessagePackHubProtocol.int64(b, value: lo..<hi)
                _ = MessagePackHubProtocol.decode(b, body: lo..<hi)
                var r = MessagePackHubProtocol.Reader(b, range: lo..<hi)
                while r.skip() != nil {}
            }
        }
        #expect(successes > 100, "some mutated frames should stay valid, so the success path is fuzzed too")
    }
}
