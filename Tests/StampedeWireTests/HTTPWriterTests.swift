import Testing
@testable import StampedeWire

/// Runs `write` into buffers of every size from 0 to the needed size plus slack: every buffer
/// smaller than the output must give nil, every larger one the same bytes.
func httpWriteChecked(_ expectedCount: Int? = nil, _ write: (UnsafeMutableRawBufferPointer) -> Int?) -> [UInt8]? {
    var big = [UInt8](repeating: 0xAA, count: 1 << 16)
    guard let n = big.withUnsafeMutableBytes(write) else { return nil }
    if let expectedCount { #expect(n == expectedCount, "predicted length") }
    let output = Array(big[..<n])
    for size in 0..<n {
        var small = [UInt8](repeating: 0, count: size)
        #expect(small.withUnsafeMutableBytes(write) == nil, "size \(size) of \(n)")
    }
    var exact = [UInt8](repeating: 0, count: n)
    #expect(exact.withUnsafeMutableBytes(write) == n)
    #expect(exact == output)
    return output
}

@Suite struct HTTPWriterTests {
    @Test func sseGetRequestHasBearerAcceptAndKeepAlive() {
        let request = HTTPClientRequest(method: .get, target: httpBytes("/chat?id=abc"), host: httpBytes("localhost:5000"),
                                        bearerToken: httpBytes("eyJ.x.y"), accept: httpBytes("text/event-stream"),
                                        extraHeaderLines: httpBytes("X-Requested-With: XMLHttpRequest\r\n"))
        #expect(request.validate())
        let out = httpWriteChecked(request.headLength(contentLength: nil)) { request.write(into: $0) }
        #expect(out.map { String(decoding: $0, as: UTF8.self) } ==
            "GET /chat?id=abc HTTP/1.1\r\nHost: localhost:5000\r\nAuthorization: Bearer eyJ.x.y\r\nAccept: text/event-stream\r\n"
            + "Connection: keep-alive\r\nX-Requested-With: XMLHttpRequest\r\n\r\n")
    }

    @Test func postWithBodyCarriesContentTypeLengthAndBody() {
        let request = HTTPClientRequest(method: .post, target: httpBytes("/chat?id=abc"), host: httpBytes("h"),
                                        contentType: httpBytes("text/plain;charset=UTF-8"))
        let body = httpBytes("{\"type\":6}\u{1E}")
        let out = body.withUnsafeBytes { b in httpWriteChecked(request.headLength(contentLength: b.count) + b.count) { request.write(into: $0, body: b) } }
        #expect(out.map { String(decoding: $0, as: UTF8.self) } ==
            "POST /chat?id=abc HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain;charset=UTF-8\r\nContent-Length: 11\r\nConnection: keep-alive\r\n\r\n{\"type\":6}\u{1E}")
    }

    @Test func emptyPostSaysContentLengthZeroButGetAndDeleteDoNot() {
        let post = HTTPClientRequest(method: .post, target: httpBytes("/chat/negotiate?negotiateVersion=1"), host: httpBytes("h"), keepAlive: false)
        #expect(httpWriteChecked(post.headLength(contentLength: nil)) { post.write(into: $0) }.map { String(decoding: $0, as: UTF8.self) } ==
            "POST /chat/negotiate?negotiateVersion=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        let delete = HTTPClientRequest(method: .delete, target: httpBytes("/chat?id=1"), host: httpBytes("h"), contentType: httpBytes("x/y"))
        #expect(httpWriteChecked(delete.headLength(contentLength: nil)) { delete.write(into: $0) }.map { String(decoding: $0, as: UTF8.self) } ==
            "DELETE /chat?id=1 HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\n")
        // A head written for a body the caller sends itself.
        #expect(httpWriteChecked(delete.headLength(contentLength: 123456)) { delete.writeHead(into: $0, contentLength: 123456) }
            .map { String(decoding: $0, as: UTF8.self) } ==
            "DELETE /chat?id=1 HTTP/1.1\r\nHost: h\r\nContent-Type: x/y\r\nContent-Length: 123456\r\nConnection: keep-alive\r\n\r\n")
    }

    @Test func writtenRequestParsesBackOnTheServerSide() {
        let request = HTTPClientRequest(method: .post, target: httpBytes("/a?b=c"), host: httpBytes("[::1]:8080"), bearerToken: httpBytes("t"),
                                        accept: httpBytes("*/*"), contentType: httpBytes("application/octet-stream"))
        let body = [UInt8](0...255)
        let out = body.withUnsafeBytes { b in httpWriteChecked { request.write(into: $0, body: b) } } ?? []
        #expect(httpRequests(out) == [.head(method: "POST", target: "/a?b=c", body: .length(256), close: false), .body(body), .end])
    }

    @Test func hostValueOmitsDefaultPortAndBracketsIPv6() {
        #expect(HTTPClientRequest.hostValue(host: "example.com", port: 443, defaultPort: 443) == httpBytes("example.com"))
        #expect(HTTPClientRequest.hostValue(host: "example.com", port: 5000, defaultPort: 80) == httpBytes("example.com:5000"))
        #expect(HTTPClientRequest.hostValue(host: "::1", port: 8080, defaultPort: 80) == httpBytes("[::1]:8080"))
        #expect(HTTPClientRequest.hostValue(host: "[::1]", port: 80, defaultPort: 80) == httpBytes("[::1]"))
    }

    @Test func validateRejectsHeaderInjection() {
        let good = HTTPClientRequest(method: .get, target: httpBytes("/"), host: httpBytes("h"), extraHeaderLines: httpBytes("A: 1\r\nB-c: 2\r\n"))
        #expect(good.validate())
        var bad = good
        bad.bearerToken = httpBytes("tok\r\nX-Evil: 1")
        #expect(!bad.validate())
        bad = good
        bad.target = httpBytes("/a b")
        #expect(!bad.validate())
        bad = good
        bad.host = []
        #expect(!bad.validate())
        for lines in ["A: 1", "A: 1\n", "A 1\r\n", ": 1\r\n", "A: 1\r\r\n", "A: 1\r\n\r\n"] {
            bad = good
            bad.extraHeaderLines = httpBytes(lines)
            #expect(!bad.validate(), "\(lines.debugDescription)")
        }
    }

    @Test func percentEncodingKeepsOnlyUnreservedCharacters() {
        let cases: [(String, String)] = [
            ("abcXYZ019-._~", "abcXYZ019-._~"),
            ("a b+c/d?e=f&g", "a%20b%2Bc%2Fd%3Fe%3Df%26g"),
            ("eyJhbGciOi.J9==", "eyJhbGciOi.J9%3D%3D"),
            ("é", "%C3%A9"),
            ("", ""),
        ]
        for (raw, encoded) in cases {
            #expect(HTTPPercentEncoding.encoded(httpBytes(raw)) == httpBytes(encoded))
            let out = httpBytes(raw).withUnsafeBytes { src in httpWriteChecked(HTTPPercentEncoding.encodedCount(src)) { HTTPPercentEncoding.encode(src, into: $0) } }
            #expect(out == httpBytes(encoded))
            // Decoding gives the value back.
            var back = [UInt8](repeating: 0, count: encoded.utf8.count)
            let n = httpBytes(encoded).withUnsafeBytes { src in back.withUnsafeMutableBytes { HTTPPercentEncoding.decode(src, into: $0) } }
            #expect(n.map { Array(back[..<$0]) } == httpBytes(raw))
        }
        // Every byte value survives a round trip.
        let all = [UInt8](0...255)
        let encoded = HTTPPercentEncoding.encoded(all)
        var back = [UInt8](repeating: 0, count: encoded.count)
        let n = encoded.withUnsafeBytes { src in back.withUnsafeMutableBytes { HTTPPercentEncoding.decode(src, into: $0, plusIsSpace: false) } }
        #expect(n.map { Array(back[..<$0]) } == all)
    }

    @Test func percentDecodingRejectsBadEscapesAndMapsPlus() {
        for bad in ["%", "%4", "%G0", "a%2"] {
            var out = [UInt8](repeating: 0, count: 8)
            #expect(httpBytes(bad).withUnsafeBytes { src in out.withUnsafeMutableBytes { HTTPPercentEncoding.decode(src, into: $0) } } == nil)
        }
        var out = [UInt8](repeating: 0, count: 8)
        let n = httpBytes("a+b%2b").withUnsafeBytes { src in out.withUnsafeMutableBytes { HTTPPercentEncoding.decode(src, into: $0) } }
        #expect(n.map { Array(out[..<$0]) } == httpBytes("a b+"))
    }

    @Test func byteWriterAppendsQueryValuesAndNumbers() {
        let out = httpWriteChecked {
            var w = HTTPByteWriter($0)
            w.append("/chat?id=")
            httpBytes("a/b=").withUnsafeBytes { w.appendPercentEncoded($0) }
            w.append(byte: 0x26)
            w.appendDecimal(0)
            w.append(byte: 0x20)
            w.appendDecimal(9_876_543_210)
            w.append(byte: 0x20)
            w.appendHex(0)
            w.append(byte: 0x20)
            w.appendHex(0xABCDEF)
            return w.result
        }
        #expect(out == httpBytes("/chat?id=a%2Fb%3D&0 9876543210 0 abcdef"))
    }

    @Test func responseWriterAndChunksParseBackOnTheClientSide() {
        var stream: [UInt8] = []
        let head = httpWriteChecked { HTTPResponseWriter.writeHead(into: $0, status: 200, reason: "OK", contentType: "text/event-stream", body: .chunked,
                                                               extraHeaderLines: nil) } ?? []
        #expect(String(decoding: head, as: UTF8.self) == "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        stream += head
        var expectedBody: [UInt8] = []
        for size in [1, 15, 16, 255, 256, 4097] {
            let payload = [UInt8](repeating: UInt8(truncatingIfNeeded: size), count: size)
            expectedBody += payload
            stream += payload.withUnsafeBytes { p in httpWriteChecked(HTTPResponseWriter.chunkLength(payloadCount: size)) { HTTPResponseWriter.writeChunk(p, into: $0) } } ?? []
        }
        var nothing: [UInt8] = []
        #expect([UInt8]().withUnsafeBytes { p in nothing.withUnsafeMutableBytes { HTTPResponseWriter.writeChunk(p, into: $0) } } == 0)
        stream += httpBytes("\(HTTPResponseWriter.lastChunk)")
        let extra = httpBytes("X-A: 1\r\n")
        stream += extra.withUnsafeBytes { e in httpWriteChecked { HTTPResponseWriter.writeHead(into: $0, status: 204, reason: "No Content", body: .none, connectionClose: true, extraHeaderLines: e) } } ?? []
        #expect(httpResponses(stream) == [
            .head(status: 200, body: .chunked, close: false, contentType: "text/event-stream"), .body(expectedBody), .end,
            .head(status: 204, body: .none, close: true, contentType: nil), .end,
        ])
        let lengthHead = httpWriteChecked { HTTPResponseWriter.writeHead(into: $0, status: 404, reason: "Not Found", body: .length(0)) } ?? []
        #expect(String(decoding: lengthHead, as: UTF8.self) == "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    }
}
