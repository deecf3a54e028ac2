import Testing
@testable import StampedeWire

/// Writes `message` as one SSE event through `SSEWriter`, checking the predicted size.
func sseEncode(_ message: [UInt8]) -> [UInt8] {
    message.withUnsafeBytes { m in httpWriteChecked(SSEWriter.encodedCount(m)) { SSEWriter.write(m, into: $0) } } ?? []
}

@Suite struct SSEWriterTests {
    @Test func writesAspNetCoreFraming() {
        #expect(sseEncode(httpBytes("{\"type\":6}\u{1E}")) == httpBytes("data: {\"type\":6}\u{1E}\r\n\r\n"))
        #expect(sseEncode(httpBytes("a\nb")) == httpBytes("data: a\r\ndata: b\r\n\r\n"))
        #expect(sseEncode(httpBytes("a\r\nb\n")) == httpBytes("data: a\r\ndata: b\r\ndata: \r\n\r\n"))
        #expect(sseEncode(httpBytes("a\rb")) == httpBytes("data: a\r\ndata: b\r\n\r\n"))
        #expect(sseEncode([]) == httpBytes("data: \r\n\r\n"))
        #expect("\(SSEWriter.streamPreamble)" == ":\r\n")
    }

    @Test func writerOutputParsesBackToTheMessage() {
        let messages = ["{\"type\":1,\"target\":\"send\",\"arguments\":[\"hi\"]}\u{1E}{\"type\":6}\u{1E}", "", "\n", "line1\nline2\n\nline4", "\n\nx", " leading space", ":colon first", "data: inner"]
        var stream = httpBytes("\(SSEWriter.streamPreamble)")
        for m in messages { stream += sseEncode(httpBytes(m)) }
        let run = sseRun(stream)
        #expect(run.events == messages)
        expectSSESplitInvariant(stream)
    }

    @Test func randomMessagesRoundTripExceptCarriageReturnsBecomeLineFeeds() {
        var rng = HTTPTestRandom(seed: 2024)
        let alphabet = httpBytes("ab \r\n:{}\u{1E}") + [0xC3, 0xA9, 0]
        for _ in 0..<500 {
            let message = (0..<Int.random(in: 0...40, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
            var normalized: [UInt8] = []
            var i = 0
            while i < message.count {
                if message[i] == 0x0D {
                    normalized.append(0x0A)
                    if i + 1 < message.count && message[i + 1] == 0x0A { i += 1 }
                } else {
                    normalized.append(message[i])
                }
                i += 1
            }
            let encoded = sseEncode(message)
            let cut = Int.random(in: 0...encoded.count, using: &rng)
            var p = SSEParser()
            var pending = Array(encoded[..<cut])
            var got: [UInt8]? = nil
            for step in 0..<2 {
                if step == 1 { pending += encoded[cut...] }
                let (event, consumed) = pending.withUnsafeBytes { p.next($0) }
                switch event {
                case .event(let r): got = Array(pending[r])
                case .assembledEvent: got = p.assembled
                case .needMore: break
                case .error(let e): Issue.record("\(e)")
                }
                pending.removeFirst(consumed)
                if got != nil { break }
            }
            #expect(pending.isEmpty)
            #expect(got == normalized, "\(message)")
        }
    }
}
