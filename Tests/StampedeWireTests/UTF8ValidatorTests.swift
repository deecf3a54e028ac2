import Testing
import StampedeWire

func validate(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { UTF8Validator.isValid($0) } }

/// Feeds `bytes` in the given chunk sizes; returns (every feed accepted, isComplete at the end).
func validateIncrementally(_ bytes: [UInt8], chunks: [Int]) -> Bool {
    var v = UTF8Validator()
    var offset = 0
    var ok = true
    for size in chunks where offset < bytes.count {
        let end = min(bytes.count, offset + size)
        let accepted = bytes[offset..<end].withUnsafeBytes { v.feed($0) }
        #expect(accepted == !v.isRejected)
        if !accepted { ok = false; break }
        offset = end
    }
    return ok && offset == bytes.count && v.isComplete
}

func swiftAccepts(_ bytes: [UInt8]) -> Bool { String(validating: bytes, as: UTF8.self) != nil }

@Suite struct UTF8ValidatorTests {
    @Test(arguments: [
        "", "Hello", "é", "€", "😀", "κόσμε", "日本語テキスト", "mixed ascii ü and 𝄞 music",
        "\u{7F}", "\u{80}", "\u{7FF}", "\u{800}", "\u{D7FF}", "\u{E000}", "\u{FFFD}", "\u{FFFF}", "\u{10000}", "\u{10FFFF}",
    ])
    func acceptsValidText(_ s: String) {
        #expect(validate(Array(s.utf8)))
    }

    @Test func acceptsTwoThreeAndFourByteSequences() {
        #expect(validate([0xC3, 0xA9]))              // é
        #expect(validate([0xE2, 0x82, 0xAC]))        // €
        #expect(validate([0xF0, 0x9F, 0x98, 0x80]))  // 😀
        #expect(validate([0xF4, 0x8F, 0xBF, 0xBF]))  // U+10FFFF
    }

    @Test(arguments: [
        [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF], [0xF0, 0x80, 0x80, 0x80], [0xF0, 0x8F, 0xBF, 0xBF],  // overlongs
        [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF], [0xED, 0xAF, 0xBF, 0xED, 0xB0, 0x80],                                            // surrogates
        [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xF7, 0xBF, 0xBF, 0xBF],                                            // > U+10FFFF
        [0xFF], [0xFE], [0x80], [0xBF], [0x61, 0x80, 0x62],                                                                      // never valid / lone continuation
        [0xC3, 0x28], [0xE2, 0x28, 0xA1], [0xF0, 0x28, 0x8C, 0xBC],                                                              // bad continuation
    ] as [[UInt8]])
    func rejectsInvalidSequences(_ bytes: [UInt8]) {
        #expect(!validate(bytes))
        var v = UTF8Validator()
        #expect(!bytes.withUnsafeBytes { v.feed($0) })
        #expect(v.isRejected && !v.isComplete)
        // Once rejected, it stays rejected.
        #expect(![UInt8(0x61)].withUnsafeBytes { v.feed($0) })
        #expect(v.isRejected)
    }

    @Test(arguments: [[0xC3], [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0x61, 0x62, 0xF0], Array("abcdefghijklmnop".utf8) + [0xE2]] as [[UInt8]])
    func truncatedSequencesAreIncompleteButNotRejected(_ bytes: [UInt8]) {
        #expect(!validate(bytes))
        var v = UTF8Validator()
        #expect(bytes.withUnsafeBytes { v.feed($0) })
        #expect(!v.isComplete && !v.isRejected)
    }

    @Test func resetStartsOver() {
        var v = UTF8Validator()
        _ = [UInt8(0xFF)].withUnsafeBytes { v.feed($0) }
        #expect(v.isRejected)
        v.reset()
        #expect(v.isComplete)
        #expect(Array("ok é".utf8).withUnsafeBytes { v.feed($0) } && v.isComplete)
    }

    @Test func emptyAndNilBufferFeedsKeepState() {
        var v = UTF8Validator()
        #expect(v.feed(UnsafeRawBufferPointer(start: nil, count: 0)) && v.isComplete)
        _ = [UInt8(0xE2)].withUnsafeBytes { v.feed($0) }
        #expect(v.feed(UnsafeRawBufferPointer(start: nil, count: 0)) && !v.isComplete && !v.isRejected)
    }

    @Test func invalidByteAtEveryPositionOfALongASCIIRunIsFound() {
        // Exercises the 8-bytes-at-a-time ASCII path: the bad byte may sit anywhere in a word.
        for length in [1, 7, 8, 9, 15, 16, 17, 33, 64] {
            for position in 0..<length {
                var bytes = [UInt8](repeating: 0x61, count: length)
                bytes[position] = 0x80
                #expect(!validate(bytes), "length \(length) position \(position)")
                bytes[position] = 0xC3
                #expect(validate(bytes) == false, "truncated at \(position) of \(length)")
                if position + 1 < length {
                    bytes[position + 1] = 0xA9
                    #expect(validate(bytes), "é at \(position) of \(length)")
                }
            }
        }
    }

    @Test func byteByByteFeedingEqualsWholeValidation() {
        var rng = SeededRandom(seed: 3629)
        let samples = (0..<2000).map { _ in randomUTF8ish(&rng) } + [Array("κόσμε 😀 €".utf8), [0xF0, 0x9F], [0xED, 0xA0, 0x80]]
        for bytes in samples {
            let whole = validate(bytes)
            #expect(validateIncrementally(bytes, chunks: [Int](repeating: 1, count: bytes.count)) == whole, "\(hexString(bytes))")
            let chunks = (0..<bytes.count).map { _ in Int.random(in: 1...9, using: &rng) }
            #expect(validateIncrementally(bytes, chunks: chunks) == whole, "\(hexString(bytes)) in \(chunks)")
        }
    }

    @Test func agreesWithSwiftOnSeededRandomByteArrays() {
        var rng = SeededRandom(seed: 20_240_601)
        var valid = 0
        for _ in 0..<20_000 {
            let bytes = randomUTF8ish(&rng)
            let ours = validate(bytes)
            #expect(ours == swiftAccepts(bytes), "\(hexString(bytes))")
            if ours { valid += 1 }
        }
        // The generator must produce both outcomes often, or the comparison proves little.
        #expect(valid > 2000 && valid < 18_000)
    }

    @Test func agreesWithSwiftOnEveryOneAndTwoByteSequence() {
        for a in 0...255 {
            #expect(validate([UInt8(a)]) == swiftAccepts([UInt8(a)]))
            for b in 0...255 {
                let bytes = [UInt8(a), UInt8(b)]
                if validate(bytes) != swiftAccepts(bytes) { Issue.record("disagree on \(hexString(bytes))") }
            }
        }
    }

    @Test func agreesWithSwiftOnThreeAndFourByteSequencesAroundEveryLeadByte() {
        let edges: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xF4, 0xFF]
        for lead in 0xC0...0xFF {
            for second in 0...255 {
                for third in edges {
                    let three = [UInt8(lead), UInt8(second), third]
                    if validate(three) != swiftAccepts(three) { Issue.record("disagree on \(hexString(three))") }
                    if lead >= 0xF0 {
                        for fourth in [UInt8(0x80), 0xBF, 0x41] {
                            let four = three + [fourth]
                            if validate(four) != swiftAccepts(four) { Issue.record("disagree on \(hexString(four))") }
                        }
                    }
                }
            }
        }
    }
}

/// Mostly-valid UTF-8 with occasional damage: random scalars of every length, then with some
/// probability a byte flipped, dropped or inserted, so both verdicts are common.
func randomUTF8ish(_ rng: inout SeededRandom) -> [UInt8] {
    let count = Int.random(in: 0...24, using: &rng)
    var s = String.UnicodeScalarView()
    for _ in 0..<count {
        let kind = Int.random(in: 0..<5, using: &rng)
        let range: ClosedRange<UInt32> = switch kind {
        case 0, 1: 0x20...0x7E
        case 2: 0x80...0x7FF
        case 3: 0x800...0xFFFF
        default: 0x10000...0x10FFFF
        }
        if let u = Unicode.Scalar(UInt32.random(in: range, using: &rng)) { s.append(u) }
    }
    var bytes = Array(String(s).utf8)
    switch Int.random(in: 0..<6, using: &rng) {
    case 0 where !bytes.isEmpty: bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
    case 1 where !bytes.isEmpty: bytes.remove(at: Int.random(in: 0..<bytes.count, using: &rng))
    case 2: bytes.insert(UInt8.random(in: 0x80...0xFF, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
    case 3: bytes = rng.bytes(Int.random(in: 0...6, using: &rng))
    default: break
    }
    return bytes
}
