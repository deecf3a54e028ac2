import Testing
import Foundation
@testable import StampedeWire

typealias Handshake = WebSocketHandshake

let rfcKey = "dGhlIHNhbXBsZSBub25jZQ=="
let rfcAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

func response(status: String = "101 Switching Protocols", _ headers: [String]) -> String {
    "HTTP/1.1 \(status)\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n"
}

/// What the client makes of `bytes` as the answer to an upgrade sent with `rfcKey`.
func parseAnswer(_ bytes: [UInt8], subprotocol: String? = nil) -> Handshake.ResponseParse {
    bytes.withUnsafeBytes { Handshake.parseResponse($0, key: rfcKey, requestedSubprotocol: subprotocol) }
}

func outcome(_ text: String, subprotocol: String? = nil) -> Handshake.UpgradeOutcome? {
    if case .answer(let o, _) = parseAnswer(Array(text.utf8), subprotocol: subprotocol) { o } else { nil }
}

/// A request head parsed by the server's HTTP parser, with its field values as text.
struct ParsedRequest {
    var bytes: [UInt8]
    var head: HTTPRequestHead

    init(_ bytes: [UInt8]) throws {
        self.bytes = bytes
        var parser = HTTPRequestParser()
        guard case .head(let h) = bytes.withUnsafeBytes({ parser.next($0).event }) else { throw HeaderMissing() }
        head = h
    }

    func field(_ name: String) -> String? {
        bytes.withUnsafeBytes { buf in head.value(forHeader: name, in: buf).map { String(decoding: buf[$0], as: UTF8.self) } }
    }

    var target: String { String(decoding: bytes[head.target], as: UTF8.self) }

    func validate() -> Result<String, Handshake.RequestProblem> {
        bytes.withUnsafeBytes { buf in
            Handshake.validateRequest(head, in: buf).map { String(decoding: buf[$0], as: UTF8.self) }
        }
    }
}

@Suite struct SHA1AndBase64Tests {
    @Test(arguments: [
        ("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        (String(repeating: "a", count: 55), "c1c8bbdc22796e28c0e15163d20899b65621d65a"),
        (String(repeating: "a", count: 56), "c2db330f6083854c99d4b5bfb6e8f29f201be699"),
        (String(repeating: "a", count: 63), "03f09f5b158a7a8cdad920bddc29b81c18a551f5"),
        (String(repeating: "a", count: 64), "0098ba824b5c16427bd7a1122a5a442a25ec644d"),
        (String(repeating: "a", count: 65), "11655326c708d70319be2610e8a57d9a5b959d3b"),
    ])
    func sha1KnownDigests(_ message: String, _ digest: String) {
        #expect(hexString(SHA1.hash(Array(message.utf8))) == digest)
    }

    @Test func sha1OfBinaryInputAcrossManyBlocks() {
        let input = (0..<1024).map { UInt8($0 & 0xFF) }
        #expect(hexString(SHA1.hash(input)) == "5b00669c480d5cffbdfa8bdba99561160f2d1b77")
    }

    @Test(arguments: [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")])
    func base64RFC4648Vectors(_ input: String, _ encoded: String) {
        #expect(Base64.encode(Array(input.utf8)) == encoded)
    }

    @Test func base64AgreesWithFoundationOnSeededRandomBytes() {
        var rng = SeededRandom(seed: 4648)
        for length in 0...70 {
            for _ in 0..<5 {
                let bytes = rng.bytes(length)
                #expect(Base64.encode(bytes) == Data(bytes).base64EncodedString())
            }
        }
        let all = (0...255).map { UInt8($0) }
        #expect(Base64.encode(all) == Data(all).base64EncodedString())
    }

    @Test func acceptValueOfRFC6455Example() {
        #expect(Handshake.acceptValue(forKey: rfcKey) == rfcAccept)
    }

    @Test func makeKeyIsSixteenRandomBytesInBase64() {
        var rng = SeededRandom(seed: 1)
        var seen = Set<String>()
        for _ in 0..<50 {
            let key = Handshake.makeKey(using: &rng)
            #expect(key.count == 24 && key.hasSuffix("=="))
            #expect(Data(base64Encoded: key)?.count == 16)
            seen.insert(key)
        }
        #expect(seen.count == 50)
    }
}

@Suite struct HandshakeRequestTests {
    @Test func upgradeRequestIsWrittenByTheHTTPRequestWriterAndParsesAsAnUpgrade() throws {
        let request = try #require(Handshake.request(host: "127.0.0.1", port: 8080, path: "/chat?room=1", key: rfcKey, subprotocol: "chat.v1",
                                                     headers: [("Origin", "http://example.com"), ("X-Test", "a b")]))
        #expect(request.validate())
        let bytes = request.headBytes()
        #expect(bytes.count == request.headLength(contentLength: nil))
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text == "GET /chat?room=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(rfcKey)\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: chat.v1\r\n"
            + "Origin: http://example.com\r\nX-Test: a b\r\n\r\n")
        let h = try ParsedRequest(bytes)
        #expect(h.head.method == .get && h.target == "/chat?room=1")
        #expect(h.head.range == 0..<bytes.count)
        #expect(h.field("sec-websocket-protocol") == "chat.v1")
        #expect(h.field("Sec-WebSocket-Extensions") == nil)
        #expect(h.validate() == .success(rfcKey))
    }

    @Test func upgradeRequestHostFieldOmitsPort80AndBracketsIPv6() throws {
        let plain = try ParsedRequest(try #require(Handshake.request(host: "example.com", port: 80, path: "/", key: rfcKey, subprotocol: nil, headers: [])).headBytes())
        #expect(plain.field("host") == "example.com")
        #expect(plain.field("sec-websocket-protocol") == nil)
        let v6 = try ParsedRequest(try #require(Handshake.request(host: "::1", port: 9000, path: "/", key: rfcKey, subprotocol: nil, headers: [])).headBytes())
        #expect(v6.field("host") == "[::1]:9000")
    }

    @Test(arguments: [("Authorization", "Bearer t\r\nX-Injected: 1"), ("X-Nul", "a\u{0}b"), ("X-Lf", "a\nb"), ("Bad Name", "v"), ("", "v"), ("X:Y", "v")])
    func upgradeRequestRefusesAFieldThatIsNotOneSafeLine(_ name: String, _ value: String) {
        #expect(Handshake.request(host: "127.0.0.1", port: 80, path: "/", key: rfcKey, subprotocol: nil, headers: [(name, value)]) == nil)
    }

    @Test func upgradeRequestRefusesALineBreakInTheSubprotocol() {
        #expect(Handshake.request(host: "127.0.0.1", port: 80, path: "/", key: rfcKey, subprotocol: "chat\r\nX: 1", headers: []) == nil)
    }

    @Test func serverCheckOfTheUpgradeRequestNamesEachProblemWithItsStatus() throws {
        func request(_ headers: [String], method: String = "GET") throws -> ParsedRequest {
            try ParsedRequest(Array(("\(method) / HTTP/1.1\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n").utf8))
        }
        let good = ["Host: x", "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: \(rfcKey)", "Sec-WebSocket-Version: 13"]
        #expect(try request(good).validate() == .success(rfcKey))
        #expect(try request(["Host: x", "UPGRADE: WebSocket", "connection: keep-alive, upgrade", "sec-websocket-key: k", "Sec-WebSocket-Version: 13"]).validate() == .success("k"))

        func problem(_ r: ParsedRequest) -> Handshake.RequestProblem? {
            if case .failure(let e) = r.validate() { e } else { nil }
        }
        #expect(problem(try request(good, method: "POST")) == .methodNotGET)
        #expect(problem(try request(good.filter { !$0.hasPrefix("Upgrade") })) == .notAnUpgrade)
        #expect(problem(try request(good.map { $0.hasPrefix("Upgrade") ? "Upgrade: h2c" : $0 })) == .notAnUpgrade)
        #expect(problem(try request(good.filter { !$0.hasPrefix("Connection") })) == .notAnUpgrade)
        #expect(problem(try request(good.map { $0.hasPrefix("Sec-WebSocket-Version") ? "Sec-WebSocket-Version: 8" : $0 })) == .unsupportedVersion)
        #expect(problem(try request(good.filter { !$0.hasPrefix("Sec-WebSocket-Version") })) == .unsupportedVersion)
        #expect(problem(try request(good.filter { !$0.hasPrefix("Sec-WebSocket-Key") })) == .missingKey)
        #expect(problem(try request(good.map { $0.hasPrefix("Sec-WebSocket-Key") ? "Sec-WebSocket-Key:" : $0 })) == .missingKey)
        #expect(Handshake.RequestProblem.methodNotGET.status == 405)
        #expect(Handshake.RequestProblem.notAnUpgrade.status == 426 && Handshake.RequestProblem.unsupportedVersion.status == 426)
        #expect(Handshake.RequestProblem.missingKey.status == 400)
    }

    @Test func switchingProtocolsWrittenByTheHTTPWriterIsAcceptedByTheClientCheck() throws {
        let answer = Handshake.switchingProtocols(key: rfcKey)
        #expect(String(decoding: answer, as: UTF8.self)
            == "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(rfcAccept)\r\n\r\n")
        #expect(parseAnswer(answer) == .answer(.accepted(subprotocol: nil), length: answer.count))
        let chat = Handshake.switchingProtocols(key: rfcKey, subprotocol: "chat")
        #expect(parseAnswer(chat, subprotocol: "chat") == .answer(.accepted(subprotocol: "chat"), length: chat.count))
    }

    @Test func errorResponseIsAWellFormedHTTPAnswerThatCloses() throws {
        let bytes = Handshake.errorResponse(status: 426, reason: "not a WebSocket upgrade")
        #expect(String(decoding: bytes, as: UTF8.self) == "HTTP/1.1 426 not a WebSocket upgrade\r\nContent-Type: text/plain\r\n"
            + "Content-Length: 24\r\nConnection: close\r\n\r\nnot a WebSocket upgrade\n")
        var parser = HTTPResponseParser()
        let (event, consumed) = bytes.withUnsafeBytes { parser.next($0) }
        guard case .head(let h) = event else { Issue.record("\(event)"); return }
        #expect(h.status == 426 && h.connectionClose && h.body == .length(bytes.count - consumed))
    }
}

@Suite struct HandshakeAnswerTests {
    static let answerHead = Array(response(["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(rfcAccept)", "X-Mixed-CASE:  padded value \t"]).utf8)

    @Test func answerSplitAtEveryOffsetNeedsMoreUntilCompleteAndLeavesTheFrames() throws {
        let all = Self.answerHead + RFC6455Examples.unmaskedHello
        for n in 0...all.count {
            let result = parseAnswer(Array(all.prefix(n)))
            if n < Self.answerHead.count {
                #expect(result == .needMore(consumed: 0), "prefix \(n)")
            } else {
                #expect(result == .answer(.accepted(subprotocol: nil), length: Self.answerHead.count), "prefix \(n)")
            }
        }
    }

    @Test func answerParsingDoesNotLookPastTheBlankLine() throws {
        // A frame after the head that itself contains CRLFCRLF and colons.
        let tail = Array("\r\n\r\nnot: a header\r\n\r\n".utf8)
        #expect(parseAnswer(Self.answerHead + tail) == .answer(.accepted(subprotocol: nil), length: Self.answerHead.count))
    }

    @Test func clientChecksOfThe101FollowRFC6455Section4Point1() throws {
        let good = ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(rfcAccept)"]
        func check(_ headers: [String], status: String = "101 Switching Protocols", subprotocol: String? = nil) -> Handshake.UpgradeOutcome? {
            outcome(response(status: status, headers), subprotocol: subprotocol)
        }
        #expect(check(good) == .accepted(subprotocol: nil))
        #expect(check(["upgrade: WebSocket", "connection: keep-alive, Upgrade", "sec-websocket-accept: \(rfcAccept)"]) == .accepted(subprotocol: nil))
        #expect(check(good + ["Sec-WebSocket-Protocol: chat"], subprotocol: "chat") == .accepted(subprotocol: "chat"))
        #expect(check(good.map { $0.hasPrefix("Sec-WebSocket-Accept") ? "Sec-WebSocket-Accept: \(Handshake.acceptValue(forKey: "other"))" : $0 }) == .invalid(.wrongAccept))
        #expect(check(good.filter { !$0.hasPrefix("Sec-WebSocket-Accept") }) == .invalid(.wrongAccept))
        #expect(check(good.filter { !$0.hasPrefix("Upgrade") }) == .invalid(.missingUpgrade))
        #expect(check(good.map { $0.hasPrefix("Upgrade") ? "Upgrade: h2c" : $0 }) == .invalid(.missingUpgrade))
        #expect(check(good.filter { !$0.hasPrefix("Connection") }) == .invalid(.missingConnectionUpgrade))
        #expect(check(good + ["Sec-WebSocket-Extensions: permessage-deflate"]) == .invalid(.unofferedExtension))
        #expect(check(good + ["Sec-WebSocket-Protocol: chat"]) == .invalid(.unofferedSubprotocol))
        #expect(check(good + ["Sec-WebSocket-Protocol: other"], subprotocol: "chat") == .invalid(.unofferedSubprotocol))
        #expect(check(good, status: "200 OK") == .rejected(status: 200))
        #expect(check(["Content-Length: 0"], status: "403 Forbidden") == .rejected(status: 403))
        #expect(check(good, status: "400 Bad Request") == .rejected(status: 400))
    }

    @Test func interimAnswersBeforeThe101AreSkippedAsTheHTTPParserDoes() {
        let interim = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
        #expect(parseAnswer(interim) == .needMore(consumed: interim.count))
        let both = interim + Self.answerHead
        #expect(parseAnswer(both) == .answer(.accepted(subprotocol: nil), length: both.count))
    }

    @Test func malformedAnswersAreInvalidWithTheHTTPParsersReason() {
        #expect(outcome("HTTP/1.1 abc OK\r\n\r\n") == .invalid(.malformed(.malformedStatusLine)))
        #expect(outcome("HTTP/1.1 99 Low\r\n\r\n") == .invalid(.malformed(.malformedStatusLine)))
        #expect(outcome("SMTP 101 Hi\r\n\r\n") == .invalid(.malformed(.malformedStatusLine)))
        #expect(outcome("HTTP/1.1 101 OK\r\nno colon here\r\n\r\n") == .invalid(.malformed(.malformedHeader)))
        #expect(outcome("HTTP/1.1 101 OK\r\nUpgrade : websocket\r\n\r\n") == .invalid(.malformed(.malformedHeader)))
        // A head that never ends is cut off rather than buffered forever.
        let endless = Array(("HTTP/1.1 101 OK\r\n" + String(repeating: "X-Filler: 0123456789\r\n", count: 800)).utf8)
        #expect(endless.count > Handshake.maxHeadBytes)
        #expect(parseAnswer(endless) == .answer(.invalid(.malformed(.headTooLarge)), length: endless.count))
        #expect(parseAnswer(Array(endless.prefix(Handshake.maxHeadBytes - 1))) == .needMore(consumed: 0))
    }

    @Test func statusWithoutReasonIsAccepted() {
        #expect(outcome("HTTP/1.1 101\r\nUpgrade: websocket\r\nConnection: upgrade\r\nSec-WebSocket-Accept: \(rfcAccept)\r\n\r\n")
            == .accepted(subprotocol: nil))
    }
}
