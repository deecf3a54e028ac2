import Testing
@testable import StampedeWire

// MARK: - Helpers shared by the HTTP*/SSE* tests (prefixed to stay clear of other test files)

/// The UTF-8 bytes of a string literal.
func httpBytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// SplitMix64, seeded, so the fuzz loops are reproducible.
struct HTTPTestRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A response parser event with its bytes copied out; adjacent body pieces are merged, so
/// runs over differently split input compare equal.
enum HTTPResponseGot: Equatable, CustomStringConvertible {
    case head(status: Int, body: HTTPBodyFraming, close: Bool, contentType: String?)
    case body([UInt8])
    case end
    case error(HTTPParseError)

    static func text(_ s: String) -> HTTPResponseGot { .body(Array(s.utf8)) }

    var description: String {
        switch self {
        case .head(let s, let b, let c, let t): "head(\(s), \(b), close: \(c), type: \(t ?? "nil"))"
        case .body(let b): "body(\(String(decoding: b, as: UTF8.self).debugDescription))"
        case .end: "end"
        case .error(let e): "error(\(e))"
        }
    }
}

/// Drives a parser the way a connection does: received bytes are appended to a pending
/// buffer, the parser is run until it needs more, and consumed bytes are dropped.
struct HTTPResponseDriver {
    var parser: HTTPResponseParser
    var pending: [UInt8] = []
    var events: [HTTPResponseGot] = []
    var failed = false
    /// Header fields of each head, as "name: value", read while the head was in the buffer.
    var fields: [[String]] = []

    init(_ parser: HTTPResponseParser = HTTPResponseParser()) { self.parser = parser }

    mutating func record(_ got: HTTPResponseGot) {
        if case .body(let s) = got, case .body(let prev)? = events.last {
            events[events.count - 1] = .body(prev + s)
        } else {
            events.append(got)
        }
    }

    mutating func feed(_ input: [UInt8]) {
        guard !failed else { return }
        pending += input
        var idle = 0
        while true {
            let snapshot = pending
            let (event, consumed) = snapshot.withUnsafeBytes { buf -> (HTTPResponseParser.Event, Int) in
                let result = parser.next(buf)
                if case .head(let h) = result.event {
                    fields.append(h.headerFields(in: buf).map { f in
                        String(decoding: buf[f.name], as: UTF8.self) + ": " + String(decoding: buf[f.value], as: UTF8.self)
                    })
                }
                return result
            }
            #expect(consumed >= 0 && consumed <= pending.count, "consumed \(consumed) of \(pending.count)")
            guard consumed >= 0 && consumed <= pending.count else { failed = true; return }
            switch event {
            case .needMore:
                pending.removeFirst(consumed)
                return
            case .head(let h):
                #expect(h.range.upperBound == consumed && h.range.lowerBound >= 0)
                #expect(h.fieldsRange.lowerBound >= h.range.lowerBound && h.fieldsRange.upperBound <= h.range.upperBound)
                let type = h.contentType.map { String(decoding: snapshot[$0], as: UTF8.self) }
                record(.head(status: h.status, body: h.body, close: h.connectionClose, contentType: type))
            case .body(let r):
                #expect(!r.isEmpty && r.upperBound <= consumed && r.lowerBound >= 0)
                record(.body(Array(snapshot[r])))
            case .end:
                record(.end)
            case .error(let e):
                record(.error(e))
                failed = true
                return
            }
            pending.removeFirst(consumed)
            // Only `.end` may make no progress, and never twice in a row.
            idle = consumed == 0 ? idle + 1 : 0
            #expect(idle < 2, "parser made no progress")
            if idle >= 2 { failed = true; return }
        }
    }

    mutating func close() {
        guard !failed, let e = parser.endOfStream() else { return }
        switch e {
        case .end: record(.end)
        case .error(let err): record(.error(err))
        default: Issue.record("endOfStream returned \(e)")
        }
    }
}

/// Events for `input` fed in one piece.
func httpResponses(_ input: [UInt8], parser: HTTPResponseParser = HTTPResponseParser(), close: Bool = false) -> [HTTPResponseGot] {
    var d = HTTPResponseDriver(parser)
    d.feed(input)
    if close { d.close() }
    return d.events
}

/// Events for `input` fed in pieces cut at `cuts`.
func httpResponses(_ input: [UInt8], cuts: [Int], parser: HTTPResponseParser = HTTPResponseParser(), close: Bool = false) -> [HTTPResponseGot] {
    var d = HTTPResponseDriver(parser)
    var last = 0
    for c in cuts.sorted() where c >= last && c <= input.count {
        d.feed(Array(input[last..<c]))
        last = c
    }
    d.feed(Array(input[last...]))
    if close { d.close() }
    return d.events
}

/// Checks that splitting `input` in two at every offset, and feeding it byte by byte, gives
/// the same events as feeding it whole.
func expectHTTPResponseSplitInvariant(_ input: [UInt8], parser: HTTPResponseParser = HTTPResponseParser(), close: Bool = false,
                          sourceLocation: SourceLocation = #_sourceLocation) {
    let whole = httpResponses(input, parser: parser, close: close)
    for cut in 0...input.count {
        let split = httpResponses(input, cuts: [cut], parser: parser, close: close)
        #expect(split == whole, "split at \(cut)", sourceLocation: sourceLocation)
        if split != whole { return }
    }
    #expect(httpResponses(input, cuts: Array(0...input.count), parser: parser, close: close) == whole, "byte by byte",
            sourceLocation: sourceLocation)
}

// MARK: - Response parser

@Suite struct HTTPResponseParserTests {
    @Test func contentLengthResponseGivesHeadBodyEnd() {
        let input = httpBytes("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhello")
        #expect(httpResponses(input) == [.head(status: 200, body: .length(5), close: false, contentType: "application/json"), .text("hello"), .end])
        expectHTTPResponseSplitInvariant(input)
    }

    @Test func headRangesPointIntoTheCallersBuffer() {
        let input = httpBytes("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nETag: \"abc\"\r\n\r\n")
        input.withUnsafeBytes { buf in
            var p = HTTPResponseParser()
            let (event, consumed) = p.next(buf)
            guard case .head(let h) = event else { Issue.record("\(event)"); return }
            #expect(consumed == input.count)
            #expect(String(decoding: buf[h.reason], as: UTF8.self) == "Not Found")
            #expect(h.range == 0..<input.count)
            #expect(String(decoding: buf[h.fieldsRange], as: UTF8.self) == "Content-Length: 0\r\nETag: \"abc\"\r\n")
            #expect(h.contentLength == 0 && h.versionMinor == 1 && !h.isChunked)
            #expect(p.next(UnsafeRawBufferPointer(rebasing: buf[consumed...])) == (.end, 0))
        }
    }

    @Test func headerLookupIsCaseInsensitiveAndTrimsWhitespace() {
        let input = httpBytes("HTTP/1.1 503 Service Unavailable\r\nretry-after: \t 120 \t\r\nLOCATION:/next\r\nX-Empty:\r\nContent-Length: 0\r\n\r\n")
        input.withUnsafeBytes { buf in
            var p = HTTPResponseParser()
            guard case .head(let h) = p.next(buf).event else { Issue.record("no head"); return }
            func value(_ name: String) -> String? { h.value(forHeader: name, in: buf).map { String(decoding: buf[$0], as: UTF8.self) } }
            #expect(value("Retry-After") == "120")
            #expect(value("RETRY-AFTER") == "120")
            #expect(h.value(forHeader: "retry-after" as StaticString, in: buf).flatMap { HTTPFieldValue.decimal(in: buf, $0) } == 120)
            #expect(value("location") == "/next")
            #expect(value("x-empty") == "")
            #expect(value("ETag") == nil)
            #expect(value("retry-afte") == nil)
            #expect(h.headerFields(in: buf).map { String(decoding: buf[$0.name], as: UTF8.self) } == ["retry-after", "LOCATION", "X-Empty", "Content-Length"])
        }
    }

    @Test func chunkedBodyYieldsPayloadsOnlyAndSkipsExtensionsAndTrailers() {
        let input = httpBytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value\r\nhello\r\n"
            + "6 ; a=\"b;c\"\r\n world\r\n"
            + "A\r\n0123456789\r\n"
            + "0\r\nExpires: never\r\nX-Trailer: 1\r\n\r\n")
        #expect(httpResponses(input) == [.head(status: 200, body: .chunked, close: false, contentType: nil), .text("hello world0123456789"), .end])
        expectHTTPResponseSplitInvariant(input)
    }

    @Test func chunkedBodyPiecesAreChunkPayloadRanges() {
        let input = httpBytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
        input.withUnsafeBytes { all in
            var p = HTTPResponseParser()
            var offset = 0
            var pieces: [String] = []
            loop: while true {
                let buf = UnsafeRawBufferPointer(rebasing: all[offset...])
                let (event, consumed) = p.next(buf)
                offset += consumed
                switch event {
                case .body(let r): pieces.append(String(decoding: buf[r], as: UTF8.self))
                case .end: break loop
                case .head: break
                default: Issue.record("\(event)"); break loop
                }
            }
            #expect(pieces == ["abc", "de"])
            #expect(offset == input.count)
        }
    }

    @Test func chunkSizeLineSplitAcrossBuffersIsConsumedAsItArrives() {
        // A size line arriving in pieces is used up byte by byte: nothing is offered twice.
        let head = httpBytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        var p = HTTPResponseParser()
        _ = head.withUnsafeBytes { p.next($0) }
        for piece in ["1", "0;ext=", "1\r", "\n"] {
            let bytes = httpBytes(piece)
            let (event, consumed) = bytes.withUnsafeBytes { p.next($0) }
            #expect(event == .needMore && consumed == bytes.count, "\(piece.debugDescription)")
        }
        let data = [UInt8](repeating: 0x61, count: 16) + httpBytes("\r\n0\r\n\r\n")
        #expect(data.withUnsafeBytes { p.next($0) } == (.body(0..<16), 16))
    }

    @Test func closeDelimitedBodyEndsAtEndOfStream() {
        let input = httpBytes("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nstreamed until close")
        let expected: [HTTPResponseGot] = [.head(status: 200, body: .untilClose, close: true, contentType: "text/plain"), .text("streamed until close"), .end]
        #expect(httpResponses(input, close: true) == expected)
        expectHTTPResponseSplitInvariant(input, close: true)
    }

    @Test func http10ResponseClosesUnlessKeepAlive() {
        #expect(httpResponses(httpBytes("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")) == [.head(status: 200, body: .length(2), close: true, contentType: nil), .text("ok"), .end])
        #expect(httpResponses(httpBytes("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok")) == [.head(status: 200, body: .length(2), close: false, contentType: nil), .text("ok"), .end])
        #expect(httpResponses(httpBytes("HTTP/1.1 200 OK\r\nConnection: upgrade, CLOSE\r\nContent-Length: 0\r\n\r\n")) == [.head(status: 200, body: .length(0), close: true, contentType: nil), .end])
    }

    @Test func responsesWithoutBodyEndRightAfterTheHead() {
        let noBody: [(String, Int)] = [
            ("HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", 204),
            ("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n", 304),
            ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", 101),
        ]
        for (text, status) in noBody {
            let got = httpResponses(httpBytes(text))
            #expect(got.count == 2 && got.last == .end, "\(status): \(got)")
            if case .head(let s, let b, _, _)? = got.first { #expect(s == status && b == HTTPBodyFraming.none) }
        }
        // 304's Content-Length (and TE) describe the representation, not this message, so the
        // next response follows immediately.
        let pipelined = httpBytes("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")
        #expect(httpResponses(pipelined) == [
            .head(status: 304, body: .none, close: false, contentType: nil), .end,
            .head(status: 200, body: .length(1), close: false, contentType: nil), .text("x"), .end,
        ])
    }

    @Test func responseToHEADHasNoBodyWhenTheCallerSaysSo() {
        var p = HTTPResponseParser()
        p.nextResponseIsToHEAD = true
        let input = httpBytes("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        #expect(httpResponses(input, parser: p) == [
            .head(status: 200, body: .none, close: false, contentType: nil), .end,
            .head(status: 200, body: .length(2), close: false, contentType: nil), .text("ok"), .end,
        ])
    }

    @Test func interimResponsesAreSkippedBeforeTheFinalOne() {
        let input = httpBytes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
        #expect(httpResponses(input) == [.head(status: 201, body: .length(2), close: false, contentType: nil), .text("ok"), .end])
        expectHTTPResponseSplitInvariant(input)
        // The final head's ranges still index the buffer passed in, after the skipped bytes.
        input.withUnsafeBytes { buf in
            var p = HTTPResponseParser()
            guard case (.head(let h), let consumed) = p.next(buf) else { Issue.record("no head"); return }
            #expect(consumed == input.count - 2)
            #expect(String(decoding: buf[h.reason], as: UTF8.self) == "Created")
            #expect(h.value(forHeader: "link", in: buf) == nil)
        }
    }

    @Test func interimResponsesCanBeReported() {
        let p = HTTPResponseParser(reportsInterimResponses: true)
        let input = httpBytes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(httpResponses(input, parser: p) == [
            .head(status: 100, body: .none, close: false, contentType: nil), .end,
            .head(status: 200, body: .length(0), close: false, contentType: nil), .end,
        ])
    }

    @Test func keepAlivePipelineOfTwoResponsesInOneBuffer() {
        let input = httpBytes("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n")
        let expected: [HTTPResponseGot] = [
            .head(status: 200, body: .length(3), close: false, contentType: nil), .text("abc"), .end,
            .head(status: 200, body: .chunked, close: false, contentType: nil), .text("de"), .end,
        ]
        #expect(httpResponses(input) == expected)
        expectHTTPResponseSplitInvariant(input)
    }

    @Test func signalRLongPollingExchangeParses() {
        // Long polling (signalr-protocol.md §2): 200 with framed messages, 200 empty, then 204.
        let input = httpBytes("HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: application/octet-stream\r\n\r\n{\"type\":6}\u{1E}\u{1E}"
            + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
            + "HTTP/1.1 204 No Content\r\n\r\n")
        #expect(httpResponses(input) == [
            .head(status: 200, body: .length(12), close: false, contentType: "application/octet-stream"), .text("{\"type\":6}\u{1E}\u{1E}"), .end,
            .head(status: 200, body: .length(0), close: false, contentType: nil), .end,
            .head(status: 204, body: .none, close: false, contentType: nil), .end,
        ])
    }

    @Test func bareLFLineEndingsAreAccepted() {
        let input = httpBytes("HTTP/1.1 200 OK\nContent-Length: 2\n\nokHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nab\n0\n\n")
        #expect(httpResponses(input) == [
            .head(status: 200, body: .length(2), close: false, contentType: nil), .text("ok"), .end,
            .head(status: 200, body: .chunked, close: false, contentType: nil), .text("ab"), .end,
        ])
    }

    @Test func statusLineWithoutReasonIsAccepted() {
        #expect(httpResponses(httpBytes("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n")) == [.head(status: 200, body: .length(0), close: false, contentType: nil), .end])
        #expect(httpResponses(httpBytes("HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n")) == [.head(status: 200, body: .length(0), close: false, contentType: nil), .end])
    }

    @Test func transferEncodingWinsOverContentLengthAndForcesClose() {
        let input = httpBytes("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n")
        #expect(httpResponses(input) == [.head(status: 200, body: .chunked, close: true, contentType: nil), .text("x"), .end])
    }

    @Test func nonChunkedTransferEncodingReadsUntilClose() {
        let input = httpBytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nraw")
        #expect(httpResponses(input, close: true) == [.head(status: 200, body: .untilClose, close: true, contentType: nil), .text("raw"), .end])
        let split = httpBytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        #expect(httpResponses(split) == [.head(status: 200, body: .chunked, close: false, contentType: nil), .end])
    }

    @Test func identicalContentLengthsAreOneValue() {
        let input = httpBytes("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nok")
        #expect(httpResponses(input) == [.head(status: 200, body: .length(2), close: false, contentType: nil), .text("ok"), .end])
    }

    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", HTTPParseError.conflictingContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nok", .conflictingContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 1234567890123456789\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2,\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2 3\r\n\r\n", .invalidContentLength),
        ("HTTP/2 200\r\n\r\n", .malformedStatusLine),
        ("HTTP/1.1 20 OK\r\n\r\n", .malformedStatusLine),
        ("HTTP/1.1 2000 OK\r\n\r\n", .malformedStatusLine),
        ("HTTP/1.1 099 OK\r\n\r\n", .malformedStatusLine),
        ("http/1.1 200 OK\r\n\r\n", .malformedStatusLine),
        ("HTTP/1.1  200 OK\r\n\r\n", .malformedStatusLine),
        ("GARBAGE\r\n\r\n", .malformedStatusLine),
        ("HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\nName : value\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\n: value\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\nX-A: a\rb\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\nX-A: a\u{0}b\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZ\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n;ext\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\rx", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", .malformedChunk),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\rX", .malformedChunk),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\rX", .malformedChunk),
    ])
    func malformedResponsesAreErrors(_ text: String, _ error: HTTPParseError) {
        let got = httpResponses(httpBytes(text))
        #expect(got.last == .error(error), "\(text.debugDescription): \(got)")
        // The error is the same however the input is split.
        expectHTTPResponseSplitInvariant(httpBytes(text))
    }

    @Test func errorIsStickyUntilReset() {
        var p = HTTPResponseParser()
        let bad = httpBytes("NOPE\r\n\r\n")
        #expect(bad.withUnsafeBytes { p.next($0) }.event == .error(.malformedStatusLine))
        let good = httpBytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(good.withUnsafeBytes { p.next($0) }.event == .error(.malformedStatusLine))
        p.reset()
        if case .head = good.withUnsafeBytes({ p.next($0) }).event {} else { Issue.record("reset parser should parse") }
    }

    @Test func oversizeHeadIsAnErrorEvenWithoutALineEnd() {
        let filler = [UInt8](repeating: 0x61, count: 16 * 1024)
        #expect(httpResponses(httpBytes("HTTP/1.1 200 OK\r\nX-Big: ") + filler).last == .error(.headTooLarge))
        // Just under the limit is fine; one byte more is not.
        let head = httpBytes("HTTP/1.1 200 OK\r\nX-Big: ")
        let fits = 16 * 1024 - head.count - 4
        let ok = head + [UInt8](repeating: 0x61, count: fits) + httpBytes("\r\n\r\n")
        #expect(ok.count == 16 * 1024)
        #expect(httpResponses(ok).first.map { if case .head = $0 { true } else { false } } == true)
        let tooBig = head + [UInt8](repeating: 0x61, count: fits + 1) + httpBytes("\r\n\r\n")
        #expect(httpResponses(tooBig).last == .error(.headTooLarge))
        #expect(httpResponses(tooBig, cuts: Array(stride(from: 0, to: tooBig.count, by: 1000))).last == .error(.headTooLarge))
    }

    @Test func manyTinyHeaderLinesAreBoundedByTheHeadLimit() {
        let input = httpBytes("HTTP/1.1 200 OK\r\n") + Array(repeating: httpBytes("a:b\r\n"), count: 5000).flatMap { $0 }
        #expect(httpResponses(input).last == .error(.headTooLarge))
    }

    @Test func overlongChunkLineIsAnError() {
        let input = httpBytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;") + [UInt8](repeating: 0x61, count: 5000)
        #expect(httpResponses(input).last == .error(.chunkLineTooLong))
        let zeros = httpBytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n") + [UInt8](repeating: 0x30, count: 5000)
        #expect(httpResponses(zeros).last == .error(.chunkLineTooLong))
    }

    @Test func oversizeTrailersAreAnError() {
        let input = httpBytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n") + Array(repeating: httpBytes("X-T: 1\r\n"), count: 3000).flatMap { $0 }
        #expect(httpResponses(input).last == .error(.trailersTooLarge))
    }

    @Test func truncatedMessagesAreReportedAtEndOfStream() {
        #expect(httpResponses(httpBytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel"), close: true).last == .error(.unexpectedEndOfStream))
        #expect(httpResponses(httpBytes("HTTP/1.1 200 OK\r\nContent-"), close: true) == [.error(.unexpectedEndOfStream)])
        #expect(httpResponses(httpBytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"), close: true).last == .error(.unexpectedEndOfStream))
        // Closing between messages is clean.
        #expect(httpResponses(httpBytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), close: true).last == .end)
        var p = HTTPResponseParser()
        #expect(p.endOfStream() == nil)
    }

    @Test func largeBodySplitEverywhereIsReassembledExactly() {
        var rng = HTTPTestRandom(seed: 7)
        let payload = (0..<3000).map { _ in UInt8.random(in: 0x20...0x7E, using: &rng) }
        var chunked = httpBytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        var i = 0
        while i < payload.count {
            let n = min(Int.random(in: 1...700, using: &rng), payload.count - i)
            chunked += httpBytes(String(n, radix: 16) + "\r\n") + payload[i..<(i + n)] + httpBytes("\r\n")
            i += n
        }
        chunked += httpBytes("0\r\n\r\n")
        let expected: [HTTPResponseGot] = [.head(status: 200, body: .chunked, close: false, contentType: nil), .body(payload), .end]
        for _ in 0..<200 {
            let cuts = (0..<Int.random(in: 1...20, using: &rng)).map { _ in Int.random(in: 0...chunked.count, using: &rng) }
            let got = httpResponses(chunked, cuts: cuts)
            #expect(got == expected)
            if got != expected { break }
        }
    }

    @Test func seededFuzzNeverTrapsAndStaysBounded() {
        var rng = HTTPTestRandom(seed: 0x5EED)
        let seeds = [
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n",
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 204 No Content\r\nConnection: keep-alive\r\n\r\n",
            "HTTP/1.1 200 OK\r\n\r\nuntil close",
        ].map(httpBytes)
        let alphabet = httpBytes("HTTP/1.0 \r\n:;0123456789abcdefABCDEF,\t chunked Content-Length Transfer-Encoding") + [0, 0xFF]
        for round in 0..<3000 {
            var input = seeds[round % seeds.count] + seeds[(round / 4) % seeds.count]
            for _ in 0..<Int.random(in: 0...6, using: &rng) {
                guard !input.isEmpty else { break }
                let at = Int.random(in: 0..<input.count, using: &rng)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: input[at] = alphabet.randomElement(using: &rng)!
                case 1: input.insert(alphabet.randomElement(using: &rng)!, at: at)
                case 2: input.remove(at: at)
                default: input[at] = UInt8.random(in: 0...255, using: &rng)
                }
            }
            if round % 10 == 0 { input = (0..<Int.random(in: 0...200, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! } }
            let cuts = (0..<Int.random(in: 0...8, using: &rng)).map { _ in Int.random(in: 0...input.count, using: &rng) }
            var p = HTTPResponseParser(maxHeadBytes: 256, maxChunkLineBytes: 16)
            p.nextResponseIsToHEAD = round % 7 == 0
            let whole = httpResponses(input, parser: p, close: true)
            let split = httpResponses(input, cuts: cuts, parser: p, close: true)
            #expect(whole == split, "round \(round)")
            if whole != split { break }
        }
    }
}
