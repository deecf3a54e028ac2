import Foundation
import StampedeLive
import StampedeLoop
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A blocking loopback client with a receive timeout: sends bytes, reads what comes back.
struct RawClient: Equatable {
    let fd: Int32

    init?(port: UInt16, timeoutMs: Int = 2000) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard r == 0 else { Glibc.close(fd); return nil }
        var tv = timeval(tv_sec: timeoutMs / 1000, tv_usec: (timeoutMs % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        self.fd = fd
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads until the peer closes, the timeout passes, or `until` holds for what came so far.
    func read(until: (String) -> Bool = { _ in false }) -> (text: String, closed: Bool) {
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        for _ in 0..<10_000 {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return (String(decoding: data, as: UTF8.self), true) }
            if n < 0 { return (String(decoding: data, as: UTF8.self), errno == ECONNRESET) }
            data += buffer[0..<n]
            if until(String(decoding: data, as: UTF8.self)) { break }
        }
        return (String(decoding: data, as: UTF8.self), false)
    }

    func close() { Glibc.close(fd) }
}

/// The endpoint answers /metrics, refuses the rest with the right status, and stays bounded:
/// connections over the cap, silent clients, oversized heads and bodies are turned away.
@Suite struct MetricsEndpointTests {
    func endpoint(_ limits: MetricsEndpoint.Limits = MetricsEndpoint.Limits()) throws -> MetricsEndpoint {
        try MetricsEndpoint(address: .ipv4(0x7F00_0001, port: 0), snapshot: LiveSnapshot(scenario: "s", workload: "chat"), limits: limits)
    }

    func exchange(_ port: UInt16, _ request: String) throws -> String {
        let c = try #require(RawClient(port: port))
        defer { c.close() }
        c.send(request)
        return c.read().text
    }

    @Test func getMetricsAnswersTheLatestSnapshotInTheNegotiatedFormat() throws {
        let e = try endpoint()
        defer { e.stop() }
        #expect(e.url == "http://127.0.0.1:\(e.address.port)/metrics")
        var s = LiveSnapshot(scenario: "s", workload: "chat", phase: "messages")
        s.totals.count(.messagesSent, 42)
        e.update(s)
        let om = try exchange(e.address.port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(om.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(om.contains("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"))
        #expect(om.contains("stampede_messages_sent_total{scenario=\"s\",workload=\"chat\"} 42\n"))
        #expect(om.hasSuffix("# EOF\n"))
        let text = try exchange(e.address.port, "GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\nAccept: text/plain\r\nConnection: close\r\n\r\n")
        #expect(text.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"))
        #expect(text.contains("# TYPE stampede_messages_sent_total counter\n"))
        let head = try exchange(e.address.port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(head.hasSuffix("\r\n\r\n"))
    }

    @Test func otherPathsAre404AndOtherMethods405() throws {
        let e = try endpoint()
        defer { e.stop() }
        #expect(try exchange(e.address.port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").hasPrefix("HTTP/1.1 404 "))
        #expect(try exchange(e.address.port, "GET /metricsx HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").hasPrefix("HTTP/1.1 404 "))
        let post = try exchange(e.address.port, "DELETE /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(post.hasPrefix("HTTP/1.1 405 "))
        #expect(post.contains("Allow: GET, HEAD\r\n"))
    }

    @Test func keepAliveAnswersPipelinedRequestsInOrder() throws {
        let e = try endpoint()
        defer { e.stop() }
        let c = try #require(RawClient(port: e.address.port))
        defer { c.close() }
        c.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let (text, closed) = c.read()
        #expect(closed)
        let statuses = text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { String($0.prefix(3)) }
        #expect(statuses == ["200", "404", "200"])
    }

    @Test func aBodyOrAnOversizedHeadIsRefusedAndClosed() throws {
        let e = try endpoint()
        defer { e.stop() }
        let body = try exchange(e.address.port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        #expect(body.hasPrefix("HTTP/1.1 400 "))
        let big = try exchange(e.address.port, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 20_000))\r\n\r\n")
        #expect(big.hasPrefix("HTTP/1.1 400 "))
        #expect(try exchange(e.address.port, "NONSENSE\r\n\r\n").hasPrefix("HTTP/1.1 400 "))
    }

    @Test func aClientThatSendsNothingIsClosedAfterTheRequestTimeout() throws {
        var limits = MetricsEndpoint.Limits()
        limits.requestTimeoutNs = 200_000_000
        let e = try endpoint(limits)
        defer { e.stop() }
        let c = try #require(RawClient(port: e.address.port, timeoutMs: 10_000))
        defer { c.close() }
        c.send("GET /metr")  // half a request, then silence
        let (text, closed) = c.read()
        #expect(closed)
        #expect(text.isEmpty)
    }

    @Test func connectionsOverTheCapAreAnswered503() throws {
        var limits = MetricsEndpoint.Limits()
        limits.maxConnections = 2
        let e = try endpoint(limits)
        defer { e.stop() }
        let held = try (0..<2).map { _ in try #require(RawClient(port: e.address.port)) }
        defer { held.forEach { $0.close() } }
        // The held ones are accepted before the third (one accept loop, in order).
        held[0].send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = held[0].read { $0.hasSuffix("# EOF\n") }
        let third = try exchange(e.address.port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(third.hasPrefix("HTTP/1.1 503 "))
        // A held one still gets its answer.
        held[1].send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(held[1].read().text.hasPrefix("HTTP/1.1 200 "))
    }

    @Test func stopClosesTheListener() throws {
        let e = try endpoint()
        let port = e.address.port
        e.stop()
        #expect(RawClient(port: port) == nil)
    }
}
