import Testing
@testable import StampedeWire

@Suite struct HTTPBytesTests {
    @Test func wordAtATimeSearchesAgreeWithAByteLoopAtEveryOffset() {
        var rng = HTTPTestRandom(seed: 11)
        for _ in 0..<300 {
            let count = Int.random(in: 0...40, using: &rng)
            // Mostly bytes next to the targets, so borrows between bytes are exercised.
            let pool: [UInt8] = [0x0A, 0x0B, 0x09, 0x0D, 0x0C, 0x0E, 0x8A, 0x8D, 0x00, 0xFF, 0x61, 0x01]
            let data = (0..<count).map { _ in pool.randomElement(using: &rng)! }
            data.withUnsafeBytes { buf in
                for from in 0...count {
                    for to in from...count {
                        let lf = data[from..<to].firstIndex(of: 0x0A)
                        let brk = data[from..<to].firstIndex { $0 == 0x0A || $0 == 0x0D }
                        #expect(HTTPBytes.firstIndex(of: 0x0A, in: buf, from: from, to: to) == lf)
                        #expect(HTTPBytes.firstLineBreak(in: buf, from: from, to: to) == brk)
                    }
                }
            }
        }
    }

    @Test func asciiHelpersFollowTheGrammar() {
        let token = httpBytes("!#$%&'*+-.^_`|~09azAZ")
        #expect(token.allSatisfy(HTTPBytes.isTokenChar))
        #expect(!httpBytes(" \t\"(),/:;<=>?@[\\]{}").contains(where: HTTPBytes.isTokenChar))
        #expect(!HTTPBytes.isTokenChar(0x7F) && !HTTPBytes.isTokenChar(0x80) && !HTTPBytes.isTokenChar(0))
        #expect((0...255).allSatisfy { b in HTTPBytes.lower(UInt8(b)) == (0x41...0x5A ~= b ? UInt8(b) + 32 : UInt8(b)) })
        let padded = httpBytes(" \t a b \t")
        padded.withUnsafeBytes { #expect(HTTPBytes.trimOWS($0, 0..<padded.count) == 3..<6) }
        let blank = httpBytes(" \t ")
        blank.withUnsafeBytes { #expect(HTTPBytes.trimOWS($0, 0..<3).isEmpty) }
    }

    @Test func fieldValueHelpers() {
        let v = httpBytes("keep-alive , Upgrade;q=1,close")
        v.withUnsafeBytes { b in
            #expect(HTTPFieldValue.containsToken("upgrade", in: b, 0..<v.count))
            #expect(HTTPFieldValue.containsToken("CLOSE", in: b, 0..<v.count))
            #expect(HTTPFieldValue.containsToken("keep-alive", in: b, 0..<v.count))
            #expect(!HTTPFieldValue.containsToken("clos", in: b, 0..<v.count))
            #expect(!HTTPFieldValue.containsToken("q=1", in: b, 0..<v.count))
        }
        let n = httpBytes("120x")
        n.withUnsafeBytes { b in
            #expect(HTTPFieldValue.decimal(in: b, 0..<3) == 120)
            #expect(HTTPFieldValue.decimal(in: b, 0..<4) == nil)
            #expect(HTTPFieldValue.decimal(in: b, 0..<0) == nil)
            #expect(HTTPFieldValue.equalsIgnoringCase("120X", in: b, 0..<4))
        }
    }
}
