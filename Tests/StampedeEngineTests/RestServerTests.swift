import Foundation
import StampedeLoop
import StampedeServers
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

// The REST target for ETag polling, in both implementations: Stampede's RestServer on its own
// loop, and Tests/peers/rest_server.py (stdlib only) run with the system python3. The shared
// tests hold both to one contract; raw sockets on the client side, so framing is checked byte
// for byte. The Swift server's clock is injectable: the version and rate-limit tests step it.

/// Which implementation of the REST contract a test runs against.
enum RestImplementation: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case swift, python
    var testDescription: String { rawValue }
}

/// A running REST target of either implementation, always stopped.
final class RestTarget: @unchecked Sendable {
    let port: UInt16
    let swift: RefRestServer?
    let python: BackgroundProcess?

    init(_ implementation: RestImplementation, _ configuration: RestServer.Configuration) throws {
        switch implementation {
        case .swift:
            let s = try RefRestServer(configuration)
            swift = s
            python = nil
            port = s.server.port
        case .python:
            var arguments = [repositoryRoot.appendingPathComponent("Tests/peers/rest_server.py").path,
                             "--port", "0", "--path", configuration.path, "--change-rate", "\(configuration.changeRate)",
                             "--body-size", "\(configuration.bodySize)", "--max-seconds", "120"]
            if let t = configuration.token { arguments += ["--token", t] }
            if let n = configuration.rateLimit { arguments += ["--rate-limit", "\(n)"] }
            if configuration.chunked { arguments.append("--chunked") }
            let p = try BackgroundProcess("/usr/bin/env", ["python3"] + arguments)
            python = p
            swift = nil
            let line = try p.waitForLine(prefix: "LISTENING ", timeout: 20)
            guard let n = UInt16(line.dropFirst("LISTENING ".count)) else { throw RefHubError("bad line \(line)") }
            port = n
        }
    }

    func stop() {
        swift?.stop()
        python?.stop()
    }

    /// A new keep-alive connection to the target.
    func connect() throws -> RefHubSocket { try RefHubSocket(port: port) }
}

/// A RestServer on its own loop, on 127.0.0.1 and a free port.
final class RefRestServer: @unchecked Sendable {
    let loop: EventLoop
    let server: RestServer

    init(_ configuration: RestServer.Configuration, clock: @escaping @Sendable () -> Double = RestServer.systemClock) throws {
        loop = try EventLoop(index: 0)
        server = try RestServer(loop: loop, address: .ipv4(0x7F00_0001, port: 0), configuration: configuration, clock: clock)
        loop.start(name: "rest-test")
    }

    func stop() {
        loop.stop()
        loop.join()
    }
}

/// A wall clock the test sets by hand.
final class ManualClock: Sendable {
    let seconds: Mutex<Double>
    init(_ start: Double) { seconds = Mutex(start) }
    func set(_ t: Double) { seconds.withLock { $0 = t } }
    var now: @Sendable () -> Double { { [self] in seconds.withLock { $0 } } }
}

extension RefHubSocket {
    /// Sends one request (keep-alive) and reads its response; a chunked body is de-chunked.
    func rest(_ target: String = "/api/items", method: String = "GET", headers: [String: String] = [:]) throws -> RefHubResponse {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (k, v) in headers.sorted(by: { $0.key < $1.key }) { head += "\(k): \(v)\r\n" }
        write(head + "\r\n")
        return try readRestResponse(headOnly: method == "HEAD")
    }

    func readRestResponse(headOnly: Bool = false) throws -> RefHubResponse {
        var r = try readResponse(headOnly: true)
        if headOnly || r.status == 304 { return r }
        if r.headers["transfer-encoding"] == "chunked" {
            while true {
                let chunk = try readChunk()
                if chunk.isEmpty { break }
                r.body += chunk
            }
        } else {
            let length = Int(r.headers["content-length"] ?? "0") ?? 0
            r.body = try read { b in b.count >= length ? (Array(b[0..<length]), length) : nil }
        }
        return r
    }
}

@Suite struct RestServerTests {
    static let token = "s3cret-token"

    @Test(arguments: RestImplementation.allCases)
    func getAnswers200WithETagChangedAtAndTheJSONBodyFields(_ implementation: RestImplementation) throws {
        let target = try RestTarget(implementation, .init(changeRate: 0, bodySize: 300))
        defer { target.stop() }
        let r = try target.connect().rest("/api/items?page=2")
        #expect(r.status == 200)
        #expect(r.headers["etag"] == "\"v0\"")
        #expect(r.headers["content-type"] == "application/json")
        #expect(r.headers["cache-control"] == "no-cache")
        let changedAt = try #require(r.headers["x-changed-at"])
        #expect(changedAt.range(of: #"^[0-9]{10,}\.[0-9]{6}$"#, options: .regularExpression) != nil, "\(changedAt)")
        #expect(r.body.count == 300)
        let json = try r.jsonObject()
        #expect(json["path"] as? String == "/api/items")
        #expect(json["version"] as? Int == 0)
        #expect((json["changed_at"] as? Double).map { abs($0 - Double(changedAt)!) < 1e-6 } == true)
        #expect((json["data"] as? String).map { !$0.isEmpty && $0.allSatisfy { $0 == "x" } } == true)
        // The body's changed_at is written exactly as the header says it.
        #expect(String(decoding: r.body, as: UTF8.self).contains("\"changed_at\":\(changedAt),"))
    }

    @Test(arguments: RestImplementation.allCases)
    func ifNoneMatchWithTheETagAnswers304WithoutABodyOnTheSameConnection(_ implementation: RestImplementation) throws {
        let target = try RestTarget(implementation, .init(changeRate: 0))
        defer { target.stop() }
        let socket = try target.connect()
        let first = try socket.rest()
        let etag = try #require(first.headers["etag"])
        for match in [etag, "W/\(etag)", "\"v999\", \(etag)", "*"] {
            let r = try socket.rest(headers: ["If-None-Match": match])
            #expect(r.status == 304, "\(match)")
            #expect(r.headers["etag"] == etag)
            #expect(r.headers["x-changed-at"] == first.headers["x-changed-at"])
            #expect(r.headers["content-length"] == nil || r.headers["content-length"] == "0")
        }
        #expect(try socket.rest(headers: ["If-None-Match": "\"v999\""]).status == 200)
        // Nothing stray followed the 304s: the connection is still in step.
        #expect(socket.pending.isEmpty)
        #expect(try socket.rest().status == 200)
    }

    @Test(arguments: RestImplementation.allCases)
    func wrongOrMissingTokenGets401WithWWWAuthenticateBearer(_ implementation: RestImplementation) throws {
        let target = try RestTarget(implementation, .init(token: Self.token))
        defer { target.stop() }
        let socket = try target.connect()
        for headers in [[:], ["Authorization": "Bearer wrong"], ["Authorization": "Basic \(Self.token)"],
                        ["Authorization": "Bearer \(Self.token)x"]] {
            let r = try socket.rest(headers: headers)
            #expect(r.status == 401, "\(headers)")
            #expect(r.headers["www-authenticate"] == "Bearer")
            #expect(r.body == Array(#"{"error":"unauthorized"}"#.utf8))
        }
        #expect(try socket.rest(headers: ["Authorization": "Bearer \(Self.token)"]).status == 200)
        #expect(try socket.rest(headers: ["Authorization": "bearer \(Self.token)"]).status == 200)
    }

    @Test(arguments: RestImplementation.allCases)
    func pastTheRateLimitA200WouldBeGets429While304sStillGetThrough(_ implementation: RestImplementation) throws {
        let target = try RestTarget(implementation, .init(changeRate: 0, rateLimit: 3))
        defer { target.stop() }
        let socket = try target.connect()
        // Windows are one second of the server's clock: keep asking until one runs out.
        var limited: RefHubResponse?
        var etag = ""
        for _ in 0..<200 {
            let r = try socket.rest()
            if r.status == 429 { limited = r; break }
            #expect(r.status == 200)
            #expect(r.headers["x-ratelimit-limit"] == "3")
            #expect((Int(r.headers["x-ratelimit-remaining"] ?? "") ?? -1) >= 0)
            etag = r.headers["etag"] ?? ""
        }
        let r = try #require(limited)
        #expect(r.headers["x-ratelimit-remaining"] == "0")
        #expect(r.headers["x-ratelimit-limit"] == "3")
        #expect((Int(r.headers["retry-after"] ?? "") ?? 0) >= 1)
        #expect(Int(r.headers["x-ratelimit-reset"] ?? "").map { Double($0) > Date().timeIntervalSince1970 - 5 } == true)
        #expect(r.body == Array(#"{"error":"rate limited"}"#.utf8))
        let notModified = try socket.rest(headers: ["If-None-Match": etag])
        #expect(notModified.status == 304)
        #expect(notModified.headers["x-ratelimit-limit"] == "3")
        #expect(notModified.headers["x-ratelimit-remaining"] != nil)
    }

    @Test(arguments: RestImplementation.allCases)
    func chunkedModeFramesTheBodyInChunks(_ implementation: RestImplementation) throws {
        let target = try RestTarget(implementation, .init(changeRate: 0, bodySize: 1000, chunked: true))
        defer { target.stop() }
        let socket = try target.connect()
        socket.write("GET /api/items HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let head = try socket.readResponse(headOnly: true)
        #expect(head.status == 200)
        #expect(head.headers["transfer-encoding"] == "chunked")
        #expect(head.headers["content-length"] == nil)
        var body: [UInt8] = []
        var chunks = 0
        while true {
            let chunk = try socket.readChunk()
            if chunk.isEmpty { break }
            body += chunk
            chunks += 1
        }
        #expect(chunks >= 1)
        #expect(body.count == 1000)
        let json = try RefHubResponse(status: 200, headers: [:], body: body).jsonObject()
        #expect(json["path"] as? String == "/api/items")
        // The last-chunk ended the body exactly: the next answer on the connection is whole.
        #expect(try socket.rest(headers: ["If-None-Match": head.headers["etag"] ?? ""]).status == 304)
    }

    @Test(arguments: RestImplementation.allCases)
    func atFiftyChangesASecondTheETagChangesBetweenRequests(_ implementation: RestImplementation) throws {
        let target = try RestTarget(implementation, .init(changeRate: 50))
        defer { target.stop() }
        let socket = try target.connect()
        let first = try socket.rest()
        let firstVersion = try #require(try first.jsonObject()["version"] as? Int)
        var changed: RefHubResponse?
        // A logical check, not a timing one: 100 ms apart, generously bounded.
        for _ in 0..<100 {
            Thread.sleep(forTimeInterval: 0.1)
            let r = try socket.rest(headers: ["If-None-Match": first.headers["etag"] ?? ""])
            if r.status == 200 { changed = r; break }
            #expect(r.status == 304)
        }
        let r = try #require(changed)
        #expect(r.headers["etag"] != first.headers["etag"])
        let version = try #require(try r.jsonObject()["version"] as? Int)
        #expect(version > firstVersion)
        #expect(r.headers["etag"] == "\"v\(version)\"")
        #expect(Double(r.headers["x-changed-at"] ?? "")! > Double(first.headers["x-changed-at"] ?? "")!)
    }

    @Test(arguments: RestImplementation.allCases)
    func otherPathsGet404OtherMethods405HEADHasNoBodyAndPipelinedRequestsAreAnsweredInOrder(_ implementation: RestImplementation) throws {
        let target = try RestTarget(implementation, .init(changeRate: 0))
        defer { target.stop() }
        let socket = try target.connect()
        #expect(try socket.rest("/elsewhere").status == 404)
        #expect(try socket.rest("/apix").status == 404)
        #expect(try socket.rest("/api").status == 200)
        let post = try socket.rest("/api/items", method: "DELETE")
        #expect(post.status == 405)
        #expect(post.headers["allow"] == "GET, HEAD")
        let head = try socket.rest("/api/items", method: "HEAD")
        #expect(head.status == 200 && head.headers["etag"] == "\"v0\"" && head.headers["content-length"] == "256")
        // Three requests in one write: answered in order (the HEAD above left no body behind).
        socket.write("GET /api/a HTTP/1.1\r\nHost: x\r\n\r\nGET /api/b HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"v0\"\r\n\r\n"
            + "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let a = try socket.readRestResponse()
        let aPath = try a.jsonObject()["path"] as? String
        #expect(a.status == 200 && aPath == "/api/a")
        #expect(try socket.readRestResponse().status == 304)
        #expect(try socket.readRestResponse().status == 404)
        #expect(socket.waitForEOF())
    }

    // MARK: The Swift server only

    @Test func injectedClockStepsTheVersionETagAndChangedAtSequence() throws {
        let clock = ManualClock(1_000_000.25)
        let ref = try RefRestServer(.init(changeRate: 2), clock: clock.now)
        defer { ref.stop() }
        let socket = try RefHubSocket(port: ref.server.port)
        let steps: [(Double, Int, String)] = [
            (0, 0, "1000000.250000"), (0.49, 0, "1000000.250000"), (0.5, 1, "1000000.750000"),
            (0.75, 1, "1000000.750000"), (1.0, 2, "1000001.250000"), (10.2, 20, "1000010.250000"),
        ]
        for (offset, version, changedAt) in steps {
            clock.set(1_000_000.25 + offset)
            let r = try socket.rest()
            #expect(r.headers["etag"] == "\"v\(version)\"", "at +\(offset)")
            #expect(r.headers["x-changed-at"] == changedAt, "at +\(offset)")
            let json = try r.jsonObject()
            #expect(json["version"] as? Int == version)
            #expect(String(decoding: r.body, as: UTF8.self).contains("\"changed_at\":\(changedAt),"))
        }
        #expect(try socket.rest(headers: ["If-None-Match": "\"v20\""]).status == 304)
        #expect(try socket.rest(headers: ["If-None-Match": "\"v19\""]).status == 200)
        // Rate 0: version 0 for ever, changed at the server's start.
        let frozen = try RefRestServer(.init(changeRate: 0), clock: clock.now)
        defer { frozen.stop() }
        clock.set(2_000_000)
        let r = try RefHubSocket(port: frozen.server.port).rest()
        #expect(r.headers["etag"] == "\"v0\"" && r.headers["x-changed-at"] == "1000010.450000")
    }

    @Test func rateLimitWindowsFollowTheInjectedClockAnd304sDoNotCount() throws {
        let clock = ManualClock(5000.3)
        let ref = try RefRestServer(.init(changeRate: 0, rateLimit: 2), clock: clock.now)
        defer { ref.stop() }
        let socket = try RefHubSocket(port: ref.server.port)
        for _ in 0..<3 {
            let r = try socket.rest(headers: ["If-None-Match": "\"v0\""])
            #expect(r.status == 304 && r.headers["x-ratelimit-remaining"] == "2" && r.headers["x-ratelimit-reset"] == "5001")
        }
        #expect(try socket.rest().headers["x-ratelimit-remaining"] == "1")
        #expect(try socket.rest().headers["x-ratelimit-remaining"] == "0")
        let limited = try socket.rest()
        #expect(limited.status == 429 && limited.headers["retry-after"] == "1" && limited.headers["x-ratelimit-reset"] == "5001")
        #expect(try socket.rest(headers: ["If-None-Match": "\"v0\""]).status == 304)
        clock.set(5001.0)
        let next = try socket.rest()
        #expect(next.status == 200 && next.headers["x-ratelimit-remaining"] == "1" && next.headers["x-ratelimit-reset"] == "5002")
        let s = ref.server.statisticsSnapshot()
        #expect(s.ok == 3 && s.notModified == 4 && s.rateLimited == 1 && s.requests == 8 && s.resources == 1)
    }

    @Test func faultsRejectWith503ThenDropResetsEveryConnectionAndStatusReportsRest() throws {
        let ref = try RefRestServer(.init())
        defer { ref.stop() }
        let admin = try TargetAdmin(target: ref.server)
        defer { admin.stop() }
        let idle = try RefHubSocket(port: ref.server.port)
        #expect(try idle.rest().status == 200)
        #expect(try RefHubHTTP.request(admin.port, "POST", "/fault/reject?seconds=30").status == 200)
        let refused = try RefHubSocket(port: ref.server.port).rest()
        #expect(refused.status == 503 && refused.headers["retry-after"] == "30")
        #expect(try RefHubHTTP.request(admin.port, "POST", "/fault/drop?mode=reset").status == 200)
        #expect(endOfStream(idle) == ECONNRESET)
        let status = try RefHubHTTP.request(admin.port, "GET", "/status").jsonObject()
        #expect(status["server"] as? String == "rest")
        #expect(status["requestsRejected"] as? Int == 1 && status["connectionsDropped"] as? Int == 1 && status["ok"] as? Int == 1)
    }

    @Test func serveRestListensPrintsItsURLAnswersWithTheTokenAndNeverPrintsIt() throws {
        let p = try BackgroundProcess(stampedeBinary.path, ["serve", "--rest", "--port", "0", "--token", Self.token, "--rate-limit", "50",
                                                           "--change-rate", "0", "--max-seconds", "60"])
        defer { p.stop() }
        let line = try p.waitForLine(prefix: "listening on http://127.0.0.1:", timeout: 20)
        #expect(line.hasSuffix("/api (REST)"))
        let port = try #require(UInt16(line.dropFirst("listening on http://127.0.0.1:".count).prefix { $0.isNumber }))
        let r = try RefHubSocket(port: port).rest(headers: ["Authorization": "Bearer \(Self.token)"])
        #expect(r.status == 200 && r.headers["x-ratelimit-limit"] == "50")
        p.stop()
        let output = p.lines.withLock { $0 }
        #expect(output.last?.hasPrefix("served: 1 requests: 1 ok") == true, "\(output)")
        #expect(!output.joined().contains(Self.token) && !p.errors.withLock({ $0 }).contains(Self.token))
    }

    @Test func serveRestRefusesConflictingOrOutOfRangeFlags() throws {
        for (arguments, message) in [
            (["--token", "t", "--chunked"], "--token, --chunked: REST flags, they need --rest"),
            (["--rest", "--token", "t", "--token-env", "HOME"], "exclusive"),
            (["--rest", "--rate-limit", "0"], "--rate-limit must be"),
            (["--rest", "--change-rate=-1"], "--change-rate must be"),
            (["--rest", "--body-size", "16777217"], "--body-size must be"),
            (["--rest", "--hub"], "exclusive"),
            (["--rest", "--token-env", "STAMPEDE_SURELY_UNSET_VARIABLE"], "not set"),
        ] {
            let r = try runProcess(stampedeBinary.path, ["serve", "--port", "0"] + arguments, timeout: 30)
            #expect(r.status != 0, "\(arguments)")
            #expect(r.stderr.contains(message), "\(arguments): \(r.stderr)")
        }
    }
}
