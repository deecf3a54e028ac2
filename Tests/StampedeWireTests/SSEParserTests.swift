import Testing
@testable import StampedeWire

/// What an SSE run produced: each dispatched event's data and type, and how it was delivered.
struct SSETestRun: Equatable, CustomStringConvertible {
    var events: [String] = []
    var types: [String] = []
    var error: SSEParseError? = nil
    var zeroCopy = 0
    var assembled = 0
    /// Largest number of bytes the caller had to keep buffered.
    var maxPending = 0

    var description: String { "events: \(events.map(\.debugDescription)), error: \(String(describing: error)), zeroCopy: \(zeroCopy)" }
}

/// Feeds `input` cut at `cuts` to `parser`, keeping unconsumed bytes as a connection would.
func sseRun(_ input: [UInt8], cuts: [Int] = [], parser: SSEParser = SSEParser()) -> SSETestRun {
    var p = parser
    var run = SSETestRun()
    var pending: [UInt8] = []
    var last = 0
    var pieces: [[UInt8]] = []
    for c in cuts.sorted() where c >= last && c <= input.count {
        pieces.append(Array(input[last..<c]))
        last = c
    }
    pieces.append(Array(input[last...]))
    for piece in pieces {
        pending += piece
        run.maxPending = max(run.maxPending, pending.count)
        while true {
            let snapshot = pending
            let (event, consumed) = snapshot.withUnsafeBytes { p.next($0) }
            #expect(consumed >= 0 && consumed <= pending.count)
            switch event {
            case .needMore:
                pending.removeFirst(consumed)
            case .event(let r):
                #expect(r.upperBound <= consumed && r.lowerBound >= 0)
                run.events.append(String(decoding: snapshot[r], as: UTF8.self))
                run.types.append(String(decoding: p.eventType, as: UTF8.self))
                run.zeroCopy += 1
                #expect(consumed > 0)
                pending.removeFirst(consumed)
            case .assembledEvent:
                run.events.append(String(decoding: p.assembled, as: UTF8.self))
                run.types.append(String(decoding: p.eventType, as: UTF8.self))
                run.assembled += 1
                #expect(consumed > 0)
                pending.removeFirst(consumed)
            case .error(let e):
                run.error = e
                return run
            }
            if event == .needMore { break }
        }
    }
    return run
}

/// Checks that every two-piece split, and byte-by-byte feeding, give the events of a whole feed.
func expectSSESplitInvariant(_ input: [UInt8], parser: SSEParser = SSEParser(), sourceLocation: SourceLocation = #_sourceLocation) {
    let whole = sseRun(input, parser: parser)
    for cut in 0...input.count {
        let split = sseRun(input, cuts: [cut], parser: parser)
        #expect(split.events == whole.events && split.types == whole.types && split.error == whole.error, "cut \(cut)", sourceLocation: sourceLocation)
        #expect(split.zeroCopy == whole.zeroCopy, "zero copy should not depend on splitting (cut \(cut))", sourceLocation: sourceLocation)
        if split.events != whole.events { return }
    }
    let bytewise = sseRun(input, cuts: Array(0...input.count), parser: parser)
    #expect(bytewise.events == whole.events && bytewise.error == whole.error, "byte by byte", sourceLocation: sourceLocation)
}

@Suite struct SSEParserTests {
    @Test func aspNetCoreStreamWithOpeningCommentAndRecordSeparator() {
        // signalr-protocol.md §2: ":\r\n" first, then "data: <line>\r\n" and a blank line per flush.
        let input = httpBytes(":\r\ndata: {\"type\":6}\u{1E}\r\n\r\n")
        let run = sseRun(input)
        #expect(run.events == ["{\"type\":6}\u{1E}"] && run.error == nil)
        #expect(run.zeroCopy == 1 && run.assembled == 0)
        expectSSESplitInvariant(input)
    }

    @Test func singleDataLineIsReportedAsARangeOfTheBuffer() {
        let input = httpBytes("data: hello\r\n\r\n")
        input.withUnsafeBytes { buf in
            var p = SSEParser()
            #expect(p.next(buf) == (.event(data: 6..<11), input.count))
        }
    }

    @Test func multiLineDataIsJoinedWithLineFeeds() {
        let input = httpBytes("data: {\"a\":\r\ndata:  1}\r\ndata\r\ndata:x\r\n\r\n")
        let run = sseRun(input)
        #expect(run.events == ["{\"a\":\n 1}\n\nx"])
        #expect(run.assembled == 1)
        expectSSESplitInvariant(input)
    }

    @Test func severalEventsInOneBufferComeOneByOne() {
        let input = httpBytes("data: 1\n\ndata: 2\r\n\r\ndata: 3\r\rdata: 4\n\n")
        let run = sseRun(input)
        #expect(run.events == ["1", "2", "3", "4"] && run.zeroCopy == 4)
        expectSSESplitInvariant(input)
    }

    @Test func mixedCRLFAndCRAndLFLineEndingsSplitAtEveryOffset() {
        let input = httpBytes(": hi\rdata: a\r\ndata: b\rdata: c\n\r\n:\r\r\ndata: d\r\r\n\n\rdata:e\n\n")
        let run = sseRun(input)
        #expect(run.events == ["a\nb\nc", "d", "e"])
        expectSSESplitInvariant(input)
    }

    @Test func crAtTheEndOfOneBufferAndLFAtTheStartOfTheNext() {
        // The LF must not be taken for a second (blank) line: that would dispatch "a" early.
        let run = sseRun(httpBytes("data: a\r\ndata: b\r\n\r\n"), cuts: [8, 17, 19])
        #expect(run.events == ["a\nb"])
        let run2 = sseRun(httpBytes("data: a\r\r\ndata: b\r\n\r\n"), cuts: [8])
        #expect(run2.events == ["a", "b"])
    }

    @Test func commentsEventIdRetryAndUnknownFieldsAreNotData() {
        let input = httpBytes(": comment\nevent: chat\nid: 7\nretry: 2500\nfoo: bar\ndata: x\n\nevent: ignored\n\ndata: y\n\n")
        var p = SSEParser()
        let run = sseRun(input, parser: p)
        #expect(run.events == ["x", "y"])
        #expect(run.types == ["chat", ""])
        #expect(input.withUnsafeBytes { p.next($0) }.event == .event(data: 55..<56))
        #expect(String(decoding: p.eventType, as: UTF8.self) == "chat")
        #expect(String(decoding: p.lastEventID, as: UTF8.self) == "7")
        #expect(p.reconnectionTime == 2500)
        expectSSESplitInvariant(input)
    }

    @Test func retryAndIdValuesFollowTheSpecRules() {
        var p = SSEParser()
        let input = httpBytes("retry: 12a\nid: a\u{0}b\nretry\nid\ndata\n\n")
        input.withUnsafeBytes { buf in
            #expect(p.next(buf).event == .event(data: 32..<32))
        }
        #expect(p.reconnectionTime == nil)
        #expect(p.lastEventID.isEmpty) // "id" with no colon sets it to empty; the NUL one was ignored
    }

    @Test func fieldWithoutColonAndDataWithoutSpace() {
        let run = sseRun(httpBytes("data\n\ndata:no space\n\ndata:  two spaces\n\n"))
        #expect(run.events == ["", "no space", " two spaces"])
    }

    @Test func eventWithoutDataIsNotDispatched() {
        let input = httpBytes("event: x\n\n:\n\nid: 1\n\n\n\ndata: last\n\n")
        let run = sseRun(input)
        #expect(run.events == ["last"] && run.types == [""])
        expectSSESplitInvariant(input)
    }

    @Test func byteOrderMarkAtStreamStartIsSkippedOnlyThere() {
        let input = [0xEF, 0xBB, 0xBF] + httpBytes("data: a\n\n")
        #expect(sseRun(input).events == ["a"])
        expectSSESplitInvariant(input)
        // A second BOM is part of the first field name, so the line is an unknown field.
        let twice = [0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF] + httpBytes("data: a\n\ndata: b\n\n")
        #expect(sseRun(twice).events == ["b"])
        // A partial BOM-like prefix that is not a BOM is ordinary data.
        let notBOM: [UInt8] = [0xEF, 0xBB] + httpBytes("\ndata: c\n\n")
        #expect(sseRun(notBOM).events == ["c"])
        expectSSESplitInvariant(notBOM)
        // After reset(), a new stream may start with a BOM again.
        var p = SSEParser()
        _ = input.withUnsafeBytes { p.next($0) }
        p.reset()
        #expect(input.withUnsafeBytes { p.next($0) }.event == .event(data: 9..<10))
    }

    @Test func incompleteEventIsHeldNotConsumedAndStaysZeroCopy() {
        var p = SSEParser()
        let first = httpBytes(":\r\ndata: {\"type\":1,\"target\":\"x\"")
        let (e1, c1) = first.withUnsafeBytes { p.next($0) }
        #expect(e1 == .needMore && c1 == 3) // only the comment is used up
        let rest = Array(first[c1...]) + httpBytes(",\"arguments\":[]}\u{1E}\r\n\r\n")
        let (e2, c2) = rest.withUnsafeBytes { p.next($0) }
        #expect(c2 == rest.count)
        if case .event(let r) = e2 {
            #expect(String(decoding: rest[r], as: UTF8.self) == "{\"type\":1,\"target\":\"x\",\"arguments\":[]}\u{1E}")
        } else {
            Issue.record("\(e2)")
        }
    }

    @Test func multiLineEventConsumesAsItGoes() {
        var p = SSEParser()
        let first = httpBytes("data: a\ndata: b\ndata: c")
        let (e1, c1) = first.withUnsafeBytes { p.next($0) }
        // Two complete data lines are joined into `assembled`; the partial third line is kept.
        #expect(e1 == .needMore && c1 == 16)
        let rest = Array(first[c1...]) + httpBytes("\n\n")
        #expect(rest.withUnsafeBytes { p.next($0) } == (.assembledEvent, rest.count))
        #expect(String(decoding: p.assembled, as: UTF8.self) == "a\nb\nc")
        // The assembled data is released on the next call, capacity kept.
        _ = [UInt8]().withUnsafeBytes { p.next($0) }
        #expect(p.assembled.isEmpty)
    }

    @Test func eventLargerThanTheLimitIsAnError() {
        let p = SSEParser(maxEventBytes: 10)
        #expect(sseRun(httpBytes("data: 0123456789\n\n"), parser: p).events == ["0123456789"])
        #expect(sseRun(httpBytes("data: 0123456789a\n\n"), parser: p).error == .eventTooLarge)
        #expect(sseRun(httpBytes("data: 01234\ndata: 5678\n\n"), parser: p).events == ["01234\n5678"])
        #expect(sseRun(httpBytes("data: 01234\ndata: 56789\n\n"), parser: p).error == .eventTooLarge)
        // A line with no end is bounded too, whether it arrives whole or in pieces.
        let endless = [UInt8](repeating: 0x61, count: 1000)
        #expect(sseRun(endless, parser: p).error == .lineTooLong)
        #expect(sseRun(endless, cuts: Array(stride(from: 0, to: 1000, by: 7)), parser: p).error == .lineTooLong)
        #expect(sseRun(httpBytes(": ") + endless + httpBytes("\n"), parser: p).error == .lineTooLong)
        // The error is sticky.
        var q = p
        _ = endless.withUnsafeBytes { q.next($0) }
        #expect(httpBytes("data: a\n\n").withUnsafeBytes { q.next($0) }.event == .error(.lineTooLong))
    }

    @Test func retainedBytesStayBoundedWhenALoneDataLineIsFollowedByManyComments() {
        // Zero copy keeps the data line in the caller's buffer; comments after it must not make
        // that buffer grow without bound: the parser copies the data out and consumes.
        let p = SSEParser(maxEventBytes: 100)
        var input = httpBytes("data: payload\n")
        for _ in 0..<200 { input += httpBytes(": keep-alive comment\n") }
        input += httpBytes("\n")
        let run = sseRun(input, cuts: Array(stride(from: 0, to: input.count, by: 10)), parser: p)
        #expect(run.events == ["payload"] && run.error == nil)
        #expect(run.maxPending < 2 * p.maxLineBytes + 10)
    }

    @Test func signalRMessagesSpanningManyBuffersReassemble() {
        var rng = HTTPTestRandom(seed: 99)
        var input = httpBytes(":\r\n")
        var expected: [String] = []
        for i in 0..<60 {
            let text = "{\"type\":1,\"target\":\"send\",\"arguments\":[\"" + String(repeating: "x", count: i * 37 % 500) + "\"]}\u{1E}"
            expected.append(text)
            input += httpBytes("data: " + text + "\r\n\r\n")
        }
        for _ in 0..<50 {
            let cuts = (0..<Int.random(in: 1...40, using: &rng)).map { _ in Int.random(in: 0...input.count, using: &rng) }
            let run = sseRun(input, cuts: cuts)
            #expect(run.events == expected && run.zeroCopy == 60)
        }
    }

    @Test func sseOverAChunkedResponseFeedsBodyPiecesDirectlyWhenNothingIsPending() {
        // The pipeline a client runs: receive buffer → HTTP parser → SSE parser. Body pieces go
        // straight to the SSE parser; only an unconsumed tail is copied aside.
        var stream = httpBytes("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        var expected: [String] = []
        func chunk(_ s: String) -> [UInt8] { httpBytes(String(s.utf8.count, radix: 16) + "\r\n" + s + "\r\n") }
        stream += chunk(":\r\n")
        for i in 0..<20 {
            let message = "{\"type\":1,\"target\":\"t\",\"arguments\":[\(i)]}\u{1E}"
            expected.append(message)
            stream += chunk("data: " + message + "\r\n\r\n")
        }
        // One event spread over three chunks, as a proxy might re-chunk it.
        expected.append("split\nacross")
        stream += chunk("data: spl") + chunk("it\r\ndata: across\r") + chunk("\n\r\n")
        stream += httpBytes("0\r\n\r\n")

        var rng = HTTPTestRandom(seed: 5)
        for round in 0..<40 {
            var http = HTTPResponseParser()
            var sse = SSEParser()
            var received: [UInt8] = []
            var side: [UInt8] = []
            var got: [String] = []
            var direct = 0
            var ended = false
            let cuts = round == 0 ? [] : (0..<Int.random(in: 1...30, using: &rng)).map { _ in Int.random(in: 0...stream.count, using: &rng) }.sorted()
            var last = 0
            for cut in cuts + [stream.count] {
                received += stream[last..<cut]
                last = cut
                while true {
                    let (event, consumed) = received.withUnsafeBytes { buf -> (HTTPResponseParser.Event, Int) in
                        let (event, consumed) = http.next(buf)
                        switch event {
                        case .head(let h):
                            #expect(h.status == 200 && h.body == .chunked)
                            #expect(h.contentType.map { String(decoding: buf[$0], as: UTF8.self) } == "text/event-stream")
                        case .body(let r):
                            // SSE over the piece in place, or over the side buffer holding a tail.
                            func drain(_ bytes: UnsafeRawBufferPointer, inPlace: Bool) -> Int {
                                var used = 0
                                while true {
                                    let (e, c) = sse.next(UnsafeRawBufferPointer(rebasing: bytes[used...]))
                                    switch e {
                                    case .event(let d):
                                        got.append(String(decoding: bytes[(used + d.lowerBound)..<(used + d.upperBound)], as: UTF8.self))
                                        if inPlace { direct += 1 }
                                    case .assembledEvent: got.append(String(decoding: sse.assembled, as: UTF8.self))
                                    case .error(let err): Issue.record("\(err)"); return bytes.count
                                    case .needMore: return used + c
                                    }
                                    used += c
                                }
                            }
                            if side.isEmpty {
                                let piece = UnsafeRawBufferPointer(rebasing: buf[r])
                                let used = drain(piece, inPlace: true)
                                side += piece[used...]
                            } else {
                                side += buf[r]
                                let used = side.withUnsafeBytes { drain($0, inPlace: false) }
                                side.removeFirst(used)
                            }
                        case .end: ended = true
                        case .error(let e): Issue.record("\(e)")
                        case .needMore: break
                        }
                        return (event, consumed)
                    }
                    received.removeFirst(consumed)
                    if event == .needMore || ended { break }
                    if case .error = event { break }
                }
            }
            #expect(ended && got == expected, "round \(round)")
            if round == 0 { #expect(direct == 20) }
        }
    }

    @Test func seededFuzzNeverTrapsAndSplittingDoesNotMatter() {
        var rng = HTTPTestRandom(seed: 0xE5E5)
        let alphabet = httpBytes("data:event:id:retry: \r\n\r\n::xyz0123") + [0xEF, 0xBB, 0xBF, 0, 0xFF]
        for round in 0..<3000 {
            let input = (0..<Int.random(in: 0...120, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
            let cuts = (0..<Int.random(in: 0...8, using: &rng)).map { _ in Int.random(in: 0...input.count, using: &rng) }
            let p = SSEParser(maxEventBytes: 24, maxLineBytes: round % 2 == 0 ? 16 : nil)
            let whole = sseRun(input, parser: p)
            let split = sseRun(input, cuts: cuts, parser: p)
            #expect(whole.events == split.events && whole.types == split.types && whole.error == split.error, "round \(round): \(input)")
            if whole.events != split.events { break }
        }
    }
}
