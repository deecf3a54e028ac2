import Testing
import StampedeTestSupport
import StampedeWire

// The examples of RFC 6455 §5.7, byte for byte.
enum RFC6455Examples {
    static let unmaskedHello = hex("81 05 48 65 6c 6c 6f")
    static let maskedHello = hex("81 85 37 fa 21 3d 7f 9f 4d 51 58")
    static let fragmentHel = hex("01 03 48 65 6c")
    static let fragmentLo = hex("80 02 6c 6f")
    static let unmaskedPing = hex("89 05 48 65 6c 6c 6f")
    static let maskedPong = hex("8a 85 37 fa 21 3d 7f 9f 4d 51 58")
    static let payload256: [UInt8] = (0..<256).map { UInt8($0) }
    static let binary256 = hex("82 7E 01 00") + payload256
    static let payload64K: [UInt8] = (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
    static let binary64K = hex("82 7F 00 00 00 00 00 01 00 00") + payload64K
    /// 0x37fa213d in wire order, packed little-endian.
    static let maskKey: UInt32 = 0x3D21_FA37
}

func parse(_ bytes: [UInt8]) -> WebSocketFrameCodec.HeaderParse {
    bytes.withUnsafeBytes { WebSocketFrameCodec.parseHeader($0) }
}

func header(_ bytes: [UInt8]) throws -> WebSocketFrameHeader {
    guard case .header(let h) = parse(bytes) else {
        Issue.record("no header in \(hexString(Array(bytes.prefix(16))))")
        throw HeaderMissing()
    }
    return h
}
struct HeaderMissing: Error {}

func writtenHeader(fin: Bool, opcode: WebSocketOpcode, length: Int, maskKey: UInt32?) -> [UInt8] {
    var out = [UInt8](repeating: 0xEE, count: WebSocketFrameCodec.maxHeaderLength)
    let n = out.withUnsafeMutableBytes {
        WebSocketFrameCodec.writeHeader(into: $0.baseAddress!, fin: fin, opcode: opcode, payloadLength: length, maskKey: maskKey)
    }
    #expect(n == WebSocketFrameCodec.headerLength(payloadLength: length, masked: maskKey != nil))
    return Array(out[0..<n])
}

/// Byte-at-a-time masking, the definition in RFC 6455 §5.3.
func referenceMask(_ bytes: [UInt8], key: UInt32, keyOffset: Int) -> [UInt8] {
    bytes.enumerated().map { i, b in b ^ UInt8(truncatingIfNeeded: key >> (8 * UInt32((keyOffset + i) % 4))) }
}

/// Header bytes per RFC 6455 §5.2, written out independently: lengths big-endian, key in wire order.
func referenceHeader(fin: Bool, opcode: UInt8, length n: Int, maskKey: UInt32?) -> [UInt8] {
    var out: [UInt8] = [(fin ? 0x80 : 0) | opcode]
    let m: UInt8 = maskKey == nil ? 0 : 0x80
    if n < 126 {
        out.append(m | UInt8(n))
    } else if n <= 0xFFFF {
        out += [m | 126, UInt8(n >> 8), UInt8(n & 0xFF)]
    } else {
        out.append(m | 127)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((UInt64(n) >> UInt64(shift)) & 0xFF)) }
    }
    if let k = maskKey { for i in 0..<4 { out.append(UInt8((k >> (8 * UInt32(i))) & 0xFF)) } }
    return out
}

func masked(_ bytes: [UInt8], key: UInt32, keyOffset: Int = 0) -> [UInt8] {
    var copy = bytes
    copy.withUnsafeMutableBytes { WebSocketFrameCodec.applyMask($0, maskKey: key, keyOffset: keyOffset) }
    return copy
}

@Suite struct RFCExampleHeaderTests {
    @Test func rfcMaskKeyIsPackedLittleEndianFromWireOrder() {
        #expect(packKey([0x37, 0xFA, 0x21, 0x3D]) == RFC6455Examples.maskKey)
        for i in 0..<4 { #expect(UInt8(RFC6455Examples.maskKey >> (8 * UInt32(i)) & 0xFF) == [0x37, 0xFA, 0x21, 0x3D][i]) }
    }

    @Test func parsesUnmaskedSingleFrameHelloHeader() throws {
        let h = try header(RFC6455Examples.unmaskedHello)
        #expect(h == WebSocketFrameHeader(fin: true, reservedBits: 0, opcodeBits: 1, masked: false, maskKey: 0, payloadLength: 5, headerLength: 2))
        #expect(h.opcode == .text)
        #expect(h.frameLength == 7)
    }

    @Test func parsesMaskedHelloHeaderWithKeyInWireOrder() throws {
        let h = try header(RFC6455Examples.maskedHello)
        #expect(h == WebSocketFrameHeader(fin: true, reservedBits: 0, opcodeBits: 1, masked: true, maskKey: RFC6455Examples.maskKey, payloadLength: 5, headerLength: 6))
        #expect(h.frameLength == RFC6455Examples.maskedHello.count)
    }

    @Test func parsesFragmentedHelloHeaders() throws {
        let a = try header(RFC6455Examples.fragmentHel)
        #expect(!a.fin && a.opcode == .text && a.payloadLength == 3 && a.headerLength == 2 && !a.masked)
        let b = try header(RFC6455Examples.fragmentLo)
        #expect(b.fin && b.opcode == .continuation && b.payloadLength == 2 && b.headerLength == 2 && !b.masked)
    }

    @Test func parsesPingAndMaskedPongHeaders() throws {
        let ping = try header(RFC6455Examples.unmaskedPing)
        #expect(ping.fin && ping.opcode == .ping && ping.payloadLength == 5 && !ping.masked)
        #expect(ping.opcode?.isControl == true)
        let pong = try header(RFC6455Examples.maskedPong)
        #expect(pong.fin && pong.opcode == .pong && pong.payloadLength == 5 && pong.masked && pong.maskKey == RFC6455Examples.maskKey)
    }

    @Test func parses16BitAnd64BitLengthHeaders() throws {
        let a = try header(RFC6455Examples.binary256)
        #expect(a.opcode == .binary && a.fin && a.payloadLength == 256 && a.headerLength == 4)
        let b = try header(RFC6455Examples.binary64K)
        #expect(b.opcode == .binary && b.fin && b.payloadLength == 65536 && b.headerLength == 10)
        #expect(b.frameLength == RFC6455Examples.binary64K.count)
    }

    @Test func writeHeaderReproducesRFCExampleHeaderBytes() {
        #expect(writtenHeader(fin: true, opcode: .text, length: 5, maskKey: nil) == hex("81 05"))
        #expect(writtenHeader(fin: true, opcode: .text, length: 5, maskKey: RFC6455Examples.maskKey) == hex("81 85 37 fa 21 3d"))
        #expect(writtenHeader(fin: false, opcode: .text, length: 3, maskKey: nil) == hex("01 03"))
        #expect(writtenHeader(fin: true, opcode: .continuation, length: 2, maskKey: nil) == hex("80 02"))
        #expect(writtenHeader(fin: true, opcode: .ping, length: 5, maskKey: nil) == hex("89 05"))
        #expect(writtenHeader(fin: true, opcode: .pong, length: 5, maskKey: RFC6455Examples.maskKey) == hex("8a 85 37 fa 21 3d"))
        #expect(writtenHeader(fin: true, opcode: .binary, length: 256, maskKey: nil) == hex("82 7E 01 00"))
        #expect(writtenHeader(fin: true, opcode: .binary, length: 65536, maskKey: nil) == hex("82 7F 00 00 00 00 00 01 00 00"))
    }

    @Test func writtenMaskedHelloFrameEqualsRFCExample() {
        var frame = writtenHeader(fin: true, opcode: .text, length: 5, maskKey: RFC6455Examples.maskKey)
        frame += masked(helloBytes, key: RFC6455Examples.maskKey)
        #expect(frame == RFC6455Examples.maskedHello)
    }

    @Test func headerLengthBoundaries() {
        let cases: [(Int, Int)] = [(0, 2), (125, 2), (126, 4), (0xFFFF, 4), (0x10000, 10), (1 << 40, 10)]
        for (n, expected) in cases {
            #expect(WebSocketFrameCodec.headerLength(payloadLength: n, masked: false) == expected)
            #expect(WebSocketFrameCodec.headerLength(payloadLength: n, masked: true) == expected + 4)
        }
    }

    @Test func writeThenParseRoundTripsAtLengthBoundaries() throws {
        for n in [0, 1, 125, 126, 127, 0xFFFF, 0x10000, 1 << 33] {
            for key: UInt32? in [nil, 0xDEAD_BEEF, 0] {
                for op: WebSocketOpcode in [.text, .binary, .continuation, .close] {
                    for fin in [true, false] {
                        let bytes = writtenHeader(fin: fin, opcode: op, length: n, maskKey: key)
                        let h = try header(bytes)
                        #expect(h == WebSocketFrameHeader(fin: fin, reservedBits: 0, opcodeBits: op.rawValue, masked: key != nil,
                                                          maskKey: key ?? 0, payloadLength: n, headerLength: bytes.count))
                        #expect(bytes == referenceHeader(fin: fin, opcode: op.rawValue, length: n, maskKey: key))
                    }
                }
            }
        }
    }

    @Test func everyHeaderPrefixNeedsMore() {
        for frame in [RFC6455Examples.unmaskedHello, RFC6455Examples.maskedHello, RFC6455Examples.binary256, RFC6455Examples.binary64K,
                      makeFrame(opcode: 2, payload: [UInt8](repeating: 1, count: 70000), mask: [1, 2, 3, 4])] {
            guard case .header(let h) = parse(frame) else { Issue.record("no header"); continue }
            for n in 0..<h.headerLength {
                #expect(parse(Array(frame.prefix(n))) == .needMore, "prefix \(n)")
            }
            // The header alone is enough for the header parser; the payload may still be missing.
            #expect(parse(Array(frame.prefix(h.headerLength))) == .header(h))
        }
    }

    @Test func topBitOf64BitLengthIsInvalid() {
        #expect(parse(hex("82 7F 80 00 00 00 00 00 00 00")) == .invalidLength)
        #expect(parse(hex("82 FF FF FF FF FF FF FF FF FF 01 02 03 04")) == .invalidLength)
        #expect(parse(hex("82 7F 80 00 00 00 00 00 00")) == .needMore)
    }

    @Test func huge64BitLengthIsClampedNotOverflowed() throws {
        let h = try header(hex("82 7F 7F FF FF FF FF FF FF FF"))
        #expect(h.payloadLength > 1 << 40)
        #expect(h.frameLength > h.payloadLength)
    }

    @Test func reservedBitsAndOpcodeNibbleAreReportedRaw() throws {
        let h = try header(hex("F3 00"))
        #expect(h.reservedBits == 7 && h.opcodeBits == 3 && h.opcode == nil && h.fin)
        let g = try header(hex("4B 00"))
        #expect(g.reservedBits == 4 && g.opcodeBits == 0xB && g.opcode == nil && !g.fin)
    }
}

@Suite struct MaskingTests {
    static let keys: [UInt32] = [RFC6455Examples.maskKey, 0, 0xFFFF_FFFF, 0x0403_0201, 0x8000_0001]

    @Test func rfcMaskedHelloUnmasksToHello() {
        #expect(masked(Array(RFC6455Examples.maskedHello[6...]), key: RFC6455Examples.maskKey) == helloBytes)
    }

    @Test func applyMaskEqualsByteAtATimeReferenceForEveryLengthAndKeyOffset() {
        var rng = SeededRandom(seed: 6455)
        for key in Self.keys {
            for length in 0...100 {
                let input = rng.bytes(length)
                for keyOffset in 0...3 {
                    #expect(masked(input, key: key, keyOffset: keyOffset) == referenceMask(input, key: key, keyOffset: keyOffset),
                            "key \(key) length \(length) offset \(keyOffset)")
                }
            }
        }
    }

    @Test func keyOffsetIsTakenModuloFour() {
        let input = (0..<37).map { UInt8($0) }
        for keyOffset in 0..<16 {
            #expect(masked(input, key: 0x1234_5678, keyOffset: keyOffset) == masked(input, key: 0x1234_5678, keyOffset: keyOffset % 4))
        }
    }

    @Test func applyMaskOnUnalignedStartEqualsReference() {
        var rng = SeededRandom(seed: 7)
        for start in 1...7 {
            for length in [0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100] {
                var storage = rng.bytes(start + length + 8)
                let original = storage
                storage.withUnsafeMutableBytes {
                    WebSocketFrameCodec.applyMask(UnsafeMutableRawBufferPointer(rebasing: $0[start..<(start + length)]), maskKey: 0xA1B2_C3D4, keyOffset: start)
                }
                let expected = Array(original[..<start]) + referenceMask(Array(original[start..<(start + length)]), key: 0xA1B2_C3D4, keyOffset: start)
                    + Array(original[(start + length)...])
                #expect(storage == expected, "start \(start) length \(length): bytes outside the range must be untouched")
            }
        }
    }

    @Test func maskingTwiceRestoresInput() {
        var rng = SeededRandom(seed: 99)
        for key in Self.keys {
            for length in 0...100 {
                let input = rng.bytes(length)
                for keyOffset in 0...3 {
                    #expect(masked(masked(input, key: key, keyOffset: keyOffset), key: key, keyOffset: keyOffset) == input)
                }
            }
        }
    }

    @Test func maskingInTwoPiecesWithKeyOffsetEqualsMaskingWhole() {
        var rng = SeededRandom(seed: 1234)
        for key in [RFC6455Examples.maskKey, 0x0403_0201] {
            for length in 0...100 {
                let input = rng.bytes(length)
                let whole = masked(input, key: key)
                for split in 0...length {
                    let a = masked(Array(input[..<split]), key: key, keyOffset: 0)
                    let b = masked(Array(input[split...]), key: key, keyOffset: split)
                    #expect(a + b == whole, "length \(length) split \(split)")
                }
            }
        }
    }

    @Test func maskingLargePayloadEqualsReference() {
        var rng = SeededRandom(seed: 5)
        let input = rng.bytes(70_001)
        #expect(masked(input, key: 0xCAFE_BABE, keyOffset: 3) == referenceMask(input, key: 0xCAFE_BABE, keyOffset: 3))
    }

    /// The vectorised paths (64- and 16-byte SIMD loops, 8/4/1-byte tails, the byte-wise walk to a
    /// 16-byte boundary for payloads of 128 bytes and more) against the byte-at-a-time reference:
    /// every length 0…300, every keyOffset 0…3, base pointers at every offset from a 16-byte
    /// boundary, a few large sizes; the bytes around the range must stay untouched.
    @Test func vectorisedMaskEqualsReferenceForLengthsTo300EveryKeyOffsetAndMisalignment() {
        var rng = SeededRandom(seed: 2026)
        let guardBytes = 32
        func check(length: Int, start: Int, key: UInt32, keyOffset: Int) {
            // 16-byte aligned storage, so `start` is the misalignment of the masked range.
            let raw = UnsafeMutableRawBufferPointer.allocate(byteCount: start + length + guardBytes, alignment: 16)
            defer { raw.deallocate() }
            let original = rng.bytes(raw.count)
            raw.copyBytes(from: original)
            WebSocketFrameCodec.applyMask(UnsafeMutableRawBufferPointer(rebasing: raw[start..<(start + length)]), maskKey: key, keyOffset: keyOffset)
            let expected = Array(original[..<start]) + referenceMask(Array(original[start..<(start + length)]), key: key, keyOffset: keyOffset)
                + Array(original[(start + length)...])
            #expect(Array(raw) == expected, "length \(length) start \(start) key \(key) keyOffset \(keyOffset)")
        }
        for length in 0...300 {
            for keyOffset in 0...3 {
                check(length: length, start: 0, key: 0xA1B2_C3D4, keyOffset: keyOffset)
                check(length: length, start: (length + keyOffset) % 16, key: 0x3713_0F5E, keyOffset: keyOffset)
            }
        }
        for start in 0..<16 {
            for length in [127, 128, 129, 143, 144, 4096, 4099, 65_536, 65_536 + 61] {
                check(length: length, start: start, key: 0xDEAD_BEEF, keyOffset: start % 4)
                check(length: length, start: start, key: 0x0102_0304, keyOffset: (start + 1) % 4)
            }
        }
        check(length: 1 << 20, start: 5, key: 0xCAFE_BABE, keyOffset: 2)
    }

    @Test func vectorisedMaskInPiecesAtUnalignedSplitsEqualsWhole() {
        var rng = SeededRandom(seed: 17)
        let input = rng.bytes(5_000)
        let whole = masked(input, key: 0x9ABC_DEF0)
        for split in [1, 3, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1_001, 4_095] {
            var pieces = input
            pieces.withUnsafeMutableBytes { b in
                WebSocketFrameCodec.applyMask(UnsafeMutableRawBufferPointer(rebasing: b[..<split]), maskKey: 0x9ABC_DEF0, keyOffset: 0)
                WebSocketFrameCodec.applyMask(UnsafeMutableRawBufferPointer(rebasing: b[split...]), maskKey: 0x9ABC_DEF0, keyOffset: split)
            }
            #expect(pieces == whole, "split \(split)")
        }
    }
}

@Suite struct CloseCodeTests {
    @Test(arguments: [0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535] as [UInt16])
    func invalidCloseCodes(_ code: UInt16) {
        #expect(!WebSocketFrameCodec.isValidCloseCode(code))
    }

    @Test(arguments: [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999] as [UInt16])
    func validCloseCodes(_ code: UInt16) {
        #expect(WebSocketFrameCodec.isValidCloseCode(code))
    }
}
