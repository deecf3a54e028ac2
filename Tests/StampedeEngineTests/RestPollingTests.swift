import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import Testing

/// A REST polling scenario: `clients` clients polling `paths` every `interval` seconds.
func restScenario(_ name: String, target: Target, clients: Int = 8, duration: Double = 2, interval: Double = 0.1,
                  token: TokenSource? = nil, paths: [String] = ["/items"]) -> Scenario {
    var s = Scenario(name: name, target: target, workload: .rest, clients: clients, connectRate: 1000, durationSeconds: duration,
                     message: MessageSpec(ratePerSecond: 0, size: 64), seed: 5, drainSeconds: 2, connectTimeoutSeconds: 5)
    s.rest = RestSpec(token: token, intervalSeconds: interval, staleness: .header("X-Changed-At"),
                      resources: paths.map { RestResource(path: $0) })
    return s
}

/// The third-party REST server of Tests/peers (Python standard library), on a free port.
func startPythonRestServer(_ arguments: [String]) throws -> (BackgroundProcess, Int) {
    let server = try BackgroundProcess("/usr/bin/python3", [repositoryRoot.appendingPathComponent("Tests/peers/rest_server.py").path,
                                                           "--port", "0", "--max-seconds", "120"] + arguments)
    let line = try server.waitForLine(prefix: "LISTENING ", timeout: 30)
    return (server, try #require(Int(line.dropFirst("LISTENING ".count))))
}

/// ETag-polling clients against the embedded REST target and a third-party one: conditional
/// requests come back 304, changes are seen with their staleness, refused tokens stop clients,
/// rate limits are honoured, and every poll is accounted for.
@Suite(.serialized)
struct RestPollingTests {
    func expectPollingFigures(_ o: RunOutcome, clients: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(o.exitCode == 0, sourceLocation: sourceLocation)
        let rest = try #require(o.summary.rest, sourceLocation: sourceLocation)
        let m = o.summary.messages
        #expect(m.accountingClosed && m.lost == 0 && m.failed == 0, "\(m)", sourceLocation: sourceLocation)
        #expect(rest.requests == m.sent && m.sent >= UInt64(clients) * 10, sourceLocation: sourceLocation)
        // The first poll of each client gets a 200; then mostly 304s, with a 200 at each change.
        #expect(rest.byStatus["200", default: 0] >= UInt64(clients), sourceLocation: sourceLocation)
        #expect(rest.byStatus["304", default: 0] > 0, sourceLocation: sourceLocation)
        let ratio = try #require(rest.notModifiedRatio, sourceLocation: sourceLocation)
        #expect(ratio > 0 && ratio < 1, sourceLocation: sourceLocation)
        #expect(rest.changed == rest.byStatus["200"], sourceLocation: sourceLocation)
        #expect(o.summary.latencyMicros["http_2xx"] != nil && o.summary.latencyMicros["http_3xx"] != nil, sourceLocation: sourceLocation)
        let staleness = try #require(o.summary.latencyMicros["staleness"], "changes were seen, with their age", sourceLocation: sourceLocation)
        #expect(staleness.count > 0, sourceLocation: sourceLocation)
        // Keep-alive: one connection per client served every poll.
        #expect(o.summary.connections.attempted == UInt64(clients), sourceLocation: sourceLocation)
        #expect(o.summary.latencyCorrection.pairs.contains { $0.corrected == "http_2xx" && $0.uncorrected == "http_uncorrected" },
                sourceLocation: sourceLocation)
    }

    /// The done-when of the REST issue, against the embedded target.
    @Test func pollingTheEmbeddedTargetReportsThe304RatioStalenessAndLatencyPerStatusClass() throws {
        var s = restScenario("rest-embedded", target: .embedded, token: .literal("demo-token"), paths: ["/items", "/users/7"])
        s.rest?.embedded.changeRate = 4
        let o = try run(s)
        try expectPollingFigures(o, clients: 8)
        try expectNoSecretInResults(o, secret: "demo-token")
        #expect(FileManager.default.fileExists(atPath: try #require(o.resultsFolder).appendingPathComponent("http_3xx.hgrm").path))
    }

    @Test func aTokenTheEmbeddedTargetRefusesStopsEveryClientWithCounted401s() throws {
        var s = restScenario("rest-embedded-bad-token", target: .embedded, token: .literal("not-the-one"))
        s.rest?.embedded.token = .literal("the-right-one")
        let o = try run(s)
        #expect(o.exitCode == 0)
        #expect(o.summary.rest?.byStatus == ["401": 8])
        #expect(o.summary.rest?.clientsStopped == 8)
        #expect(o.summary.messages.accountingClosed)
        try expectNoSecretInResults(o, secret: "not-the-one")
        try expectNoSecretInResults(o, secret: "the-right-one")
    }

    /// The REST scenarios in scenarios/ run as shipped, smaller and faster.
    @Test(arguments: ["rest-poll-etag.yaml", "rest-poll-rate-limited.yaml"])
    func restScenarioFilesRunAgainstTheEmbeddedTarget(_ file: String) throws {
        var s = try shippedScenario(file, clients: 20, duration: 2)
        s.rest?.intervalSeconds = 0.1
        // 20 clients ask for fewer 200s than the shipped limit of 300/s: lower it to match.
        if file == "rest-poll-rate-limited.yaml" { s.rest?.embedded.rateLimit = 50 }
        let o = try run(s)
        #expect(o.exitCode == 0)
        let rest = try #require(o.summary.rest)
        #expect(o.summary.messages.accountingClosed && o.summary.messages.lost == 0)
        #expect(rest.unprocessed == 0 && rest.clientsStopped == 0)
        if file == "rest-poll-etag.yaml" {
            #expect(try #require(rest.notModifiedRatio) > 0.5)
        } else {
            #expect(rest.byStatus["429", default: 0] > 0 && rest.retryAfterSeen > 0)
        }
    }

    @Test func pollingAThirdPartyServerGets304sAndSeesEveryChange() throws {
        let (server, port) = try startPythonRestServer(["--change-rate", "4", "--token", "s3cret-token"])
        defer { server.stop() }
        let target = Target.http(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/api"))
        let o = try run(restScenario("rest-python", target: target, token: .literal("s3cret-token"), paths: ["/items", "/users/7"]))
        try expectPollingFigures(o, clients: 8)
        try expectNoSecretInResults(o, secret: "s3cret-token")
    }

    @Test func chunkedBodiesAndRequiredFieldsAreRead() throws {
        let (server, port) = try startPythonRestServer(["--change-rate", "4", "--chunked"])
        defer { server.stop() }
        var s = restScenario("rest-chunked", target: .http(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/api")))
        s.rest?.staleness = .field("changed_at")
        s.rest?.resources = [RestResource(path: "/items", processors: [
            RestProcessor(statuses: [200], meaning: .changed, requiredFields: ["nope"]),  // never matches: passed on
            RestProcessor(statuses: [200], meaning: .changed, requiredFields: ["version", "changed_at"]),
            RestProcessor(statuses: [304], meaning: .unchanged),
        ])]
        let o = try run(s)
        try expectPollingFigures(o, clients: 8)
        #expect(o.summary.rest?.unprocessed == 0)
    }

    @Test func aWrongTokenIsCounted401AndStopsEveryClient() throws {
        let (server, port) = try startPythonRestServer(["--token", "right-token"])
        defer { server.stop() }
        let o = try run(restScenario("rest-bad-token", target: .http(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/api")),
                                     token: .literal("wrong-token")))
        #expect(o.exitCode == 0)
        let rest = try #require(o.summary.rest)
        #expect(rest.byStatus == ["401": 8])
        #expect(rest.clientsStopped == 8)
        #expect(o.summary.messages.failed == 8 && o.summary.messages.accountingClosed)
        #expect(o.summary.generator.warnings.contains { $0.contains("401/403") })
        try expectNoSecretInResults(o, secret: "wrong-token")
    }

    @Test func rateLimitedClientsWaitForRetryAfterAndTheAccountingCloses() throws {
        let (server, port) = try startPythonRestServer(["--change-rate", "20", "--rate-limit", "30"])
        defer { server.stop() }
        let o = try run(restScenario("rest-rate-limited", target: .http(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/api")),
                                     clients: 10, interval: 0.05))
        let rest = try #require(o.summary.rest)
        #expect(rest.byStatus["429", default: 0] > 0)
        #expect(rest.retryAfterSeen >= rest.byStatus["429", default: 0])
        #expect(rest.rateLimitRemainingMin == 0)
        #expect(rest.rateLimitHeadersSeen > 0)
        #expect(o.summary.messages.failed == rest.byStatus["429"])
        #expect(o.summary.messages.accountingClosed)
        // Honouring Retry-After (about a second) means far fewer polls than the schedule's 400.
        #expect(rest.requests < 300)
    }

    @Test func aServerThatNeverAnswersIsCountedAsTimeoutsNotAHang() throws {
        // A listener nobody accepts from: the kernel completes the handshake, then silence.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        listen(fd, 64)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        let port = Int(UInt16(bigEndian: addr.sin_port))
        var s = restScenario("rest-silent", target: .http(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/api")), clients: 3,
                             duration: 1.5, interval: 0.5)
        s.rest?.firstByteTimeoutSeconds = 0.3
        let o = try run(s)
        #expect(o.summary.errors["response_timeout", default: 0] > 0)
        #expect(o.summary.messages.lostByReason["timed_out", default: 0] > 0)
        #expect(o.summary.messages.accountingClosed)
    }

    func expectNoSecretInResults(_ o: RunOutcome, secret: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let folder = try #require(o.resultsFolder, sourceLocation: sourceLocation)
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            let text = (try? String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)) ?? ""
            #expect(!text.contains(secret), "\(file) holds the token", sourceLocation: sourceLocation)
        }
    }
}
