import Testing
@testable import StampedeWire

/// A request parser event with its bytes copied out (adjacent body pieces merged).
enum HTTPRequestGot: Equatable, CustomStringConvertible {
    case head(method: String, target: String, body: HTTPBodyFraming, close: Bool)
    case body([UInt8])
    case end
    case error(HTTPParseError)

    static func text(_ s: String) -> HTTPRequestGot { .body(Array(s.utf8)) }

    var description: String {
        switch self {
        case .head(let m, let t, let b, let c): "head(\(m) \(t), \(b), close: \(c))"
        case .body(let b): "body(\(String(decoding: b, as: UTF8.self).debugDescription))"
        case .end: "end"
        case .error(let e): "error(\(e))"
        }
    }
}

/// Feeds `input` cut at `cuts` to a fresh request parser, the way the reference server does.
func httpRequests(_ input: [UInt8], cuts: [Int] = [], parser: HTTPRequestParser = HTTPRequestParser()) -> [HTTPRequestGot] {
    var p = parser
    var pending: [UInt8] = []
    var events: [HTTPRequestGot] = []
    func record(_ g: HTTPRequestGot) {
        if case .body(let b) = g, case .body(let prev)? = events.last { events[events.count - 1] = .body(prev + b) } else { events.append(g) }
    }
    var last = 0
    var pieces: [[UInt8]] = []
    for c in cuts.sorted() where c >= last && c <= input.count {
        pieces.append(Array(input[last..<c]))
        last = c
    }
    pieces.append(Array(input[last...]))
    for piece in pieces {
        pending += piece
        var idle = 0
        while true {
            let snapshot = pending
            let (event, consumed) = snapshot.withUnsafeBytes { p.next($0) }
            #expect(consumed >= 0 && consumed <= pending.count)
            switch event {
            case .needMore:
                pending.removeFirst(consumed)
            case .head(let h):
                #expect(h.range.upperBound == consumed)
                record(.head(method: String(decoding: snapshot[h.methodRange], as: UTF8.self), target: String(decoding: snapshot[h.target], as: UTF8.self),
                             body: h.body, close: h.connectionClose))
            case .body(let r):
                #expect(!r.isEmpty && r.upperBound <= consumed)
                record(.body(Array(snapshot[r])))
            case .end:
                record(.end)
            case .error(let e):
                record(.error(e))
                return events
            }
            if event == .needMore { break }
            pending.removeFirst(consumed)
            idle = consumed == 0 ? idle + 1 : 0
            if idle >= 2 { Issue.record("no progress"); return events }
        }
    }
    return events
}

@Suite struct HTTPRequestParserTests {
    @Test func signalRSendPostWithContentLengthBody() {
        let input = httpBytes("POST /chat?id=abc%2B1 HTTP/1.1\r\nHost: localhost:5000\r\nContent-Type: text/plain;charset=UTF-8\r\nContent-Length: 11\r\n\r\n{\"type\":6}\u{1E}")
        let expected: [HTTPRequestGot] = [.head(method: "POST", target: "/chat?id=abc%2B1", body: .length(11), close: false), .text("{\"type\":6}\u{1E}"), .end]
        #expect(httpRequests(input) == expected)
        for cut in 0...input.count { #expect(httpRequests(input, cuts: [cut]) == expected, "cut \(cut)") }
    }

    @Test func headFieldsMethodAndQueryAreReadableInPlace() {
        let input = httpBytes("GET /chat?hub=x&id=tok%3D%3D&access_token=a.b.c&flag HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\nAuthorization: Bearer xyz\r\nExpect: 100-continue\r\n\r\n")
        input.withUnsafeBytes { buf in
            var p = HTTPRequestParser()
            guard case (.head(let h), let consumed) = p.next(buf) else { Issue.record("no head"); return }
            #expect(consumed == input.count)
            #expect(h.method == .get && h.versionMinor == 1 && h.expectsContinue && h.body == HTTPBodyFraming.none)
            #expect(h.value(forHeader: "accept", in: buf).map { String(decoding: buf[$0], as: UTF8.self) } == "text/event-stream")
            #expect(h.value(forHeader: "AUTHORIZATION", in: buf).map { String(decoding: buf[$0], as: UTF8.self) } == "Bearer xyz")
            func query(_ name: StaticString) -> String? { HTTPQuery.value(of: name, inTarget: h.target, of: buf).map { String(decoding: buf[$0], as: UTF8.self) } }
            #expect(query("id") == "tok%3D%3D")
            #expect(query("access_token") == "a.b.c")
            #expect(query("hub") == "x")
            #expect(query("flag") == "")
            #expect(query("missing") == nil)
            #expect(query("i") == nil)
            if let r = HTTPQuery.value(of: "id", inTarget: h.target, of: buf) {
                var out = [UInt8](repeating: 0, count: r.count)
                let n = out.withUnsafeMutableBytes { HTTPPercentEncoding.decode(UnsafeRawBufferPointer(rebasing: buf[r]), into: $0) }
                #expect(n.map { String(decoding: out[..<$0], as: UTF8.self) } == "tok==")
            }
            #expect(p.next(UnsafeRawBufferPointer(rebasing: buf[consumed...])) == (.end, 0))
        }
    }

    @Test func pipelinedRequestsAndChunkedBodiesParse() {
        let input = httpBytes("GET / HTTP/1.1\r\nHost: h\r\n\r\n"
            + "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;e\r\nabc\r\n0\r\n\r\n"
            + "\r\nDELETE /chat?id=1 HTTP/1.0\r\n\r\n"
            + "PURGE * HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        let expected: [HTTPRequestGot] = [
            .head(method: "GET", target: "/", body: .none, close: false), .end,
            .head(method: "POST", target: "/x", body: .chunked, close: false), .text("abc"), .end,
            .head(method: "DELETE", target: "/chat?id=1", body: .none, close: true), .end,
            .head(method: "PURGE", target: "*", body: .length(0), close: true), .end,
        ]
        #expect(httpRequests(input) == expected)
        for cut in 0...input.count { #expect(httpRequests(input, cuts: [cut]) == expected, "cut \(cut)") }
        #expect(httpRequests(input, cuts: Array(0...input.count)) == expected)
    }

    @Test func unknownMethodHasNilMethodButKeepsItsBytes() {
        httpBytes("PURGE / HTTP/1.1\r\n\r\n").withUnsafeBytes { buf in
            var p = HTTPRequestParser()
            guard case .head(let h) = p.next(buf).event else { Issue.record("no head"); return }
            #expect(h.method == nil && h.methodRange == 0..<5)
        }
        for m in HTTPMethod.allCases {
            let text = "\(m.name) / HTTP/1.1\r\n\r\n"
            httpBytes(text).withUnsafeBytes { buf in
                var p = HTTPRequestParser()
                guard case .head(let h) = p.next(buf).event else { Issue.record("no head"); return }
                #expect(h.method == m)
            }
        }
    }

    @Test(arguments: [
        ("GET /\r\n\r\n", HTTPParseError.malformedRequestLine),
        ("GET  / HTTP/1.1\r\n\r\n", .malformedRequestLine),
        ("GET / HTTP/1.1 \r\n\r\n", .malformedRequestLine),
        ("GET / HTTP/2.0\r\n\r\n", .malformedRequestLine),
        ("G(T / HTTP/1.1\r\n\r\n", .malformedRequestLine),
        (" GET / HTTP/1.1\r\n\r\n", .malformedRequestLine),
        ("GET /\u{7F} HTTP/1.1\r\n\r\n", .malformedRequestLine),
        ("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", .conflictingFraming),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", .unsupportedTransferEncoding),
        ("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", .conflictingContentLength),
        ("POST / HTTP/1.1\r\nHost : x\r\n\r\n", .malformedHeader),
    ])
    func malformedRequestsAreErrors(_ text: String, _ error: HTTPParseError) {
        #expect(httpRequests(httpBytes(text)).last == .error(error), "\(text.debugDescription)")
    }

    @Test func oversizeRequestHeadIsAnError() {
        let p = HTTPRequestParser(maxHeadBytes: 1024)
        #expect(httpRequests(httpBytes("GET /") + [UInt8](repeating: 0x61, count: 2000), parser: p).last == .error(.headTooLarge))
        // Blank lines before the request line count against the limit too.
        #expect(httpRequests([UInt8](repeating: 0x0A, count: 2000), parser: p).last == .error(.headTooLarge))
    }

    @Test func seededFuzzOfRequestsNeverTraps() {
        var rng = HTTPTestRandom(seed: 42)
        let seed = httpBytes("POST /chat?id=1 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\nGET / HTTP/1.1\r\nContent-Length: 2\r\n\r\nok")
        for round in 0..<2000 {
            var input = seed
            for _ in 0..<Int.random(in: 1...5, using: &rng) {
                let at = Int.random(in: 0..<input.count, using: &rng)
                input[at] = UInt8.random(in: 0...255, using: &rng)
            }
            let cuts = (0..<Int.random(in: 0...6, using: &rng)).map { _ in Int.random(in: 0...input.count, using: &rng) }
            let p = HTTPRequestParser(maxHeadBytes: 128, maxChunkLineBytes: 8)
            let whole = httpRequests(input, parser: p)
            #expect(whole == httpRequests(input, cuts: cuts, parser: p), "round \(round)")
        }
    }
}
