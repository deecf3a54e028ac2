import Foundation
import StampedeEngine
import StampedeMetrics
import StampedeReport
import StampedeScenario
import Testing

func chatScenario(name: String, target: Target = .embedded, clients: Int = 40, duration: Double = 2, rate: Double = 40,
                  model: LoadModel = .open, think: Double = 0) -> Scenario {
    Scenario(name: name, target: target, clients: clients, connectRate: 2000, durationSeconds: duration,
             message: MessageSpec(ratePerSecond: rate, size: 96), loadModel: model, thinkTimeSeconds: think,
             seed: 7, drainSeconds: 5, connectTimeoutSeconds: 5)
}

/// A scenario file of scenarios/ as shipped, made small enough for the suite.
func shippedScenario(_ file: String, clients: Int, duration: Double, drain: Double = 1) throws -> Scenario {
    var s = try ScenarioLoader.load(path: repositoryRoot.appendingPathComponent("scenarios/\(file)").path)
    s.clients = min(s.clients, clients)
    s.durationSeconds = duration
    s.drainSeconds = drain
    return s
}

func run(_ s: Scenario, loops: Int = 2) throws -> RunOutcome {
    let results = temporaryFolder(s.name)
    return try RunEngine(scenario: s, options: RunOptions(loops: loops, resultsRoot: results, progress: .silent)).run()
}

/// Every own message came back, every client got every other client's message, nothing lost.
func expectExactAccounting(_ o: RunOutcome, clients: Int, sourceLocation: SourceLocation = #_sourceLocation) {
    let m = o.summary.messages
    #expect(o.summary.connections.connected == UInt64(clients), sourceLocation: sourceLocation)
    #expect(m.sent > 0, sourceLocation: sourceLocation)
    #expect(m.delivered == m.sent, sourceLocation: sourceLocation)
    #expect(m.lost == 0, sourceLocation: sourceLocation)
    #expect(m.accountingClosed, sourceLocation: sourceLocation)
    #expect(m.fanoutExpected == m.sent * UInt64(clients - 1), sourceLocation: sourceLocation)
    #expect(m.fanoutReceived == m.fanoutExpected, sourceLocation: sourceLocation)
    #expect(o.summary.errorsTotal == 0, sourceLocation: sourceLocation)
}

@Suite(.serialized)
struct ChatRunTests {
    @Test func openModelAgainstEmbeddedTargetAccountsForEveryMessage() throws {
        let o = try run(chatScenario(name: "open-embedded"))
        #expect(o.exitCode == 0)
        expectExactAccounting(o, clients: 40)
        let rtt = try #require(o.summary.latencyMicros["round_trip"])
        #expect(rtt.count == o.summary.messages.delivered)
        #expect(rtt.p50 > 0)
        #expect(o.summary.latencyMicros["fanout"]?.count == o.summary.messages.fanoutReceived)
        #expect(o.summary.latencyMicros["tcp_connect"]?.count == 40)
        let folder = try #require(o.resultsFolder)
        for file in ["summary.json", "timeseries.csv", "round_trip.hgrm", "fanout.hgrm"] {
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent(file).path), "\(file) missing")
        }
        // Each metric's .hlog intervals add up to the run's histogram exactly.
        for m in LatencyMetric.allCases where o.record.totals.histograms[m.rawValue].totalCount > 0 {
            let log = try HistogramLog.parse(String(contentsOf: folder.appendingPathComponent(m.key + ".hlog"), encoding: .utf8))
            var sum = makeLatencyHistogram()
            for interval in log.intervals { sum.add(interval.histogram) }
            let total = o.record.totals.histograms[m.rawValue]
            #expect(sum.totalCount == total.totalCount, "\(m.key)")
            #expect(sum.maxRecorded == total.maxRecorded, "\(m.key)")
            for p in [50.0, 90.0, 99.0, 99.9, 100.0] { #expect(sum.valueAtPercentile(p) == total.valueAtPercentile(p), "\(m.key) p\(p)") }
            #expect(o.summary.files.contains(m.key + ".hlog"))
        }
        #expect(!o.summary.partial)
    }

    @Test func closedModelSendsEachMessageAfterTheEchoOfThePrevious() throws {
        let o = try run(chatScenario(name: "closed-embedded", clients: 10, duration: 1.5, model: .closed, think: 0.05))
        #expect(o.exitCode == 0)
        expectExactAccounting(o, clients: 10)
        // Each client has at most one message in flight, so it sends at most one per think time.
        #expect(o.summary.messages.sent <= 10 * UInt64(1.5 / 0.05 + 2))
        #expect(o.summary.messages.sent >= 10)
    }

    @Test func oneLoopAndManyLoopsGiveTheSameAccounting() throws {
        let o = try run(chatScenario(name: "one-loop", clients: 30, duration: 1), loops: 1)
        expectExactAccounting(o, clients: 30)
        let many = try run(chatScenario(name: "three-loops", clients: 30, duration: 1), loops: 3)
        expectExactAccounting(many, clients: 30)
    }

    @Test func unreachableTargetEndsWithAClearErrorAndCountedConnectErrors() throws {
        let port = unusedPort()
        let s = chatScenario(name: "unreachable", target: .webSocket(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/chat")), clients: 20)
        let o = try run(s)
        #expect(o.exitCode == 1)
        let fatal = try #require(o.record.fatalError)
        #expect(fatal.contains("connect_refused"))
        #expect(o.summary.errors["connect_refused"] == 20)
        #expect(o.summary.connections.failed == 20)
        let folder = try #require(o.resultsFolder)
        let data = try Data(contentsOf: folder.appendingPathComponent("summary.json"))
        let summary = try RunSummary.decode(from: data)
        #expect(summary.errors["connect_refused"] == 20)
        #expect(summary.fatalError != nil)
    }

    @Test func wrongPathIsCountedAsARejectedUpgradeWithItsStatus() throws {
        // The embedded server only serves /chat; start one via `serve` semantics through a run on a wrong path.
        let server = try BackgroundProcess(stampedeBinary.path, ["serve", "--port", "0", "--max-seconds", "60"])
        defer { server.stop() }
        let line = try server.waitForLine(prefix: "listening on ", timeout: 20)
        let port = try #require(Int(line.split(separator: ":").last!.split(separator: "/").first!))
        let s = chatScenario(name: "wrong-path", target: .webSocket(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/nope")), clients: 5)
        let o = try run(s)
        #expect(o.exitCode == 1)
        #expect(o.summary.errors["upgrade_rejected"] == 5)
        #expect(o.summary.upgradeStatuses["404"] == 5)
    }
}
