import Testing
import Foundation
@testable import StampedeWire

typealias Handshake = WebSocketHandshake

func parseHead(_ bytes: [UInt8], isResponse: Bool) -> Handshake.HeadParse {
    bytes.withUnsafeBytes { Handshake.parseHead($0, isResponse: isResponse) }
}

func head(_ text: String, isResponse: Bool) throws -> Handshake.Head {
    guard case .head(let h) = parseHead(Array(text.utf8), isResponse: isResponse) else {
        Issue.record("not a complete head: \(text)")
        throw HeaderMissing()
    }
    return h
}

let rfcKey = "dGhlIHNhbXBsZSBub25jZQ=="
let rfcAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

func response(status: String = "101 Switching Protocols", _ headers: [String]) -> String {
    "HTTP/1.1 \(status)\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n"
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
    @Test func requestCarriesTheUpgradeHeaders() throws {
        let bytes = Handshake.request(host: "127.0.0.1", port: 8080, path: "/chat?room=1", key: rfcKey, subprotocol: "chat.v1",
                                      headers: [("Origin", "http://example.com"), ("X-Test", "a b")])
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("GET /chat?room=1 HTTP/1.1\r\n"))
        #expect(text.hasSuffix("\r\n\r\n"))
        let h = try head(text, isResponse: false)
        #expect(h.method == "GET" && h.target == "/chat?room=1" && h.status == 0)
        #expect(h.length == bytes.count)
        #expect(h.header("Host") == "127.0.0.1:8080")
        #expect(h.header("upgrade") == "websocket")
        #expect(h.header("connection", containsToken: "Upgrade"))
        #expect(h.header("Sec-WebSocket-Key") == rfcKey)
        #expect(h.header("Sec-WebSocket-Version") == "13")
        #expect(h.header("Sec-WebSocket-Protocol") == "chat.v1")
        #expect(h.header("origin") == "http://example.com")
        #expect(h.header("x-test") == "a b")
        #expect(h.header("Sec-WebSocket-Extensions") == nil)
        #expect(Handshake.validateRequest(h) == .success(rfcKey))
    }

    @Test func requestHostHeaderOmitsPort80AndBracketsIPv6() throws {
        let plain = try head(String(decoding: Handshake.request(host: "example.com", port: 80, path: "/", key: rfcKey, subprotocol: nil, headers: []), as: UTF8.self), isResponse: false)
        #expect(plain.header("host") == "example.com")
        #expect(plain.header("sec-websocket-protocol") == nil)
        let v6 = try head(String(decoding: Handshake.request(host: "::1", port: 9000, path: "/", key: rfcKey, subprotocol: nil, headers: []), as: UTF8.self), isResponse: false)
        #expect(v6.header("host") == "[::1]:9000")
    }

    @Test func validateRequestErrors() throws {
        func request(_ headers: [String], method: String = "GET") throws -> Handshake.Head {
            try head("\(method) / HTTP/1.1\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n", isResponse: false)
        }
        let good = ["Host: x", "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: \(rfcKey)", "Sec-WebSocket-Version: 13"]
        #expect(Handshake.validateRequest(try request(good)) == .success(rfcKey))
        #expect(Handshake.validateRequest(try request(["Host: x", "UPGRADE: WebSocket", "connection: keep-alive, upgrade", "sec-websocket-key: k", "Sec-WebSocket-Version: 13"])) == .success("k"))

        func status(_ r: Result<String, Handshake.UpgradeRequestError>) -> Int? {
            if case .failure(let e) = r { return e.status } else { return nil }
        }
        #expect(status(Handshake.validateRequest(try request(good, method: "POST"))) == 405)
        #expect(status(Handshake.validateRequest(try request(good.filter { !$0.hasPrefix("Upgrade") }))) == 426)
        #expect(status(Handshake.validateRequest(try request(good.map { $0.hasPrefix("Upgrade") ? "Upgrade: h2c" : $0 }))) == 426)
        #expect(status(Handshake.validateRequest(try request(good.filter { !$0.hasPrefix("Connection") }))) == 426)
        #expect(status(Handshake.validateRequest(try request(good.map { $0.hasPrefix("Sec-WebSocket-Version") ? "Sec-WebSocket-Version: 8" : $0 }))) == 426)
        #expect(status(Handshake.validateRequest(try request(good.filter { !$0.hasPrefix("Sec-WebSocket-Version") }))) == 426)
        #expect(status(Handshake.validateRequest(try request(good.filter { !$0.hasPrefix("Sec-WebSocket-Key") }))) == 400)
        #expect(status(Handshake.validateRequest(try request(good.map { $0.hasPrefix("Sec-WebSocket-Key") ? "Sec-WebSocket-Key:" : $0 }))) == 400)
    }

    @Test func switchingProtocolsAnswerIsAcceptedByTheClientCheck() throws {
        let h = try head(String(decoding: Handshake.switchingProtocols(key: rfcKey), as: UTF8.self), isResponse: true)
        #expect(h.status == 101)
        #expect(h.header("Sec-WebSocket-Accept") == rfcAccept)
        #expect(Handshake.validateResponse(h, key: rfcKey, requestedSubprotocol: nil) == .accepted(subprotocol: nil))
        let p = try head(String(decoding: Handshake.switchingProtocols(key: rfcKey, subprotocol: "chat"), as: UTF8.self), isResponse: true)
        #expect(Handshake.validateResponse(p, key: rfcKey, requestedSubprotocol: "chat") == .accepted(subprotocol: "chat"))
    }

    @Test func errorResponseIsAWellFormedHTTPAnswer() throws {
        let bytes = Handshake.errorResponse(status: 426, reason: "Upgrade Required")
        let h = try head(String(decoding: bytes, as: UTF8.self), isResponse: true)
        #expect(h.status == 426 && h.reason == "Upgrade Required")
        #expect(h.header("content-length").flatMap(Int.init) == bytes.count - h.length)
        #expect(h.header("connection") == "close")
    }
}

@Suite struct HeadParseTests {
    static let responseHead = Array(response(["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(rfcAccept)", "X-Mixed-CASE:  padded value \t"]).utf8)

    @Test func responseSplitAtEveryOffsetNeedsMoreUntilComplete() throws {
        let leftover = RFC6455Examples.unmaskedHello
        let all = Self.responseHead + leftover
        for n in 0...all.count {
            let result = parseHead(Array(all.prefix(n)), isResponse: true)
            if n < Self.responseHead.count {
                #expect(result == .needMore, "prefix \(n)")
            } else {
                guard case .head(let h) = result else { Issue.record("prefix \(n): \(result)"); continue }
                #expect(h.length == Self.responseHead.count, "leftover bytes must not be consumed")
                #expect(h.status == 101 && h.reason == "Switching Protocols")
                #expect(h.headers.map(\.name) == ["upgrade", "connection", "sec-websocket-accept", "x-mixed-case"])
                #expect(h.headers.map(\.value) == ["websocket", "Upgrade", rfcAccept, "padded value"])
                #expect(h.header("X-MIXED-case") == "padded value")
            }
        }
    }

    @Test func headParsingDoesNotLookPastTheBlankLine() throws {
        // A frame after the head that itself contains CRLFCRLF and colons.
        let tail = Array("\r\n\r\nnot: a header\r\n\r\n".utf8)
        guard case .head(let h) = parseHead(Self.responseHead + tail, isResponse: true) else { Issue.record("no head"); return }
        #expect(h.length == Self.responseHead.count)
        #expect(h.headers.count == 4)
    }

    @Test func validateResponseChecks() throws {
        let good = ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(rfcAccept)"]
        func outcome(_ headers: [String], status: String = "101 Switching Protocols", subprotocol: String? = nil) throws -> Handshake.UpgradeOutcome {
            Handshake.validateResponse(try head(response(status: status, headers), isResponse: true), key: rfcKey, requestedSubprotocol: subprotocol)
        }
        func isInvalid(_ o: Handshake.UpgradeOutcome) -> Bool { if case .invalid = o { true } else { false } }

        #expect(try outcome(good) == .accepted(subprotocol: nil))
        #expect(try outcome(["upgrade: WebSocket", "connection: keep-alive, Upgrade", "sec-websocket-accept: \(rfcAccept)"]) == .accepted(subprotocol: nil))
        #expect(try outcome(good + ["Sec-WebSocket-Protocol: chat"], subprotocol: "chat") == .accepted(subprotocol: "chat"))
        #expect(isInvalid(try outcome(good.map { $0.hasPrefix("Sec-WebSocket-Accept") ? "Sec-WebSocket-Accept: \(Handshake.acceptValue(forKey: "other"))" : $0 })))
        #expect(isInvalid(try outcome(good.filter { !$0.hasPrefix("Sec-WebSocket-Accept") })))
        #expect(isInvalid(try outcome(good.filter { !$0.hasPrefix("Upgrade") })))
        #expect(isInvalid(try outcome(good.map { $0.hasPrefix("Upgrade") ? "Upgrade: h2c" : $0 })))
        #expect(isInvalid(try outcome(good.filter { !$0.hasPrefix("Connection") })))
        #expect(isInvalid(try outcome(good + ["Sec-WebSocket-Extensions: permessage-deflate"])))
        #expect(isInvalid(try outcome(good + ["Sec-WebSocket-Protocol: chat"])))
        #expect(isInvalid(try outcome(good + ["Sec-WebSocket-Protocol: other"], subprotocol: "chat")))
        #expect(try outcome(good, status: "200 OK") == .rejected(status: 200))
        #expect(try outcome(["Content-Length: 0"], status: "403 Forbidden") == .rejected(status: 403))
        #expect(try outcome(good, status: "400 Bad Request") == .rejected(status: 400))
    }

    @Test func malformedHeadsAreInvalid() {
        func isInvalid(_ text: String, response: Bool) -> Bool {
            if case .invalid = parseHead(Array(text.utf8), isResponse: response) { true } else { false }
        }
        #expect(isInvalid("HTTP/1.1 abc OK\r\n\r\n", response: true))
        #expect(isInvalid("HTTP/1.1 99 Low\r\n\r\n", response: true))
        #expect(isInvalid("HTTP/1.1 600 High\r\n\r\n", response: true))
        #expect(isInvalid("SMTP 101 Hi\r\n\r\n", response: true))
        #expect(isInvalid("HTTP/1.1 101 OK\r\nno colon here\r\n\r\n", response: true))
        #expect(isInvalid("GET /\r\n\r\n", response: false))
        #expect(isInvalid("GET / SPDY/3\r\n\r\n", response: false))
        #expect(isInvalid("\r\n\r\n", response: true))
        // A head that never ends is cut off rather than buffered forever.
        let endless = Array(("HTTP/1.1 101 OK\r\n" + String(repeating: "X-Filler: 0123456789\r\n", count: 800)).utf8)
        #expect(endless.count > Handshake.maxHeadBytes)
        #expect(isInvalid(String(decoding: endless, as: UTF8.self), response: true))
        #expect(parseHead(Array(endless.prefix(Handshake.maxHeadBytes)), isResponse: true) == .needMore)
    }

    @Test func statusWithoutReasonIsAccepted() throws {
        let h = try head("HTTP/1.1 101\r\nUpgrade: websocket\r\n\r\n", isResponse: true)
        #expect(h.status == 101 && h.reason == "")
    }
}
