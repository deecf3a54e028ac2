import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `stampede run --metrics-port`: the flags are checked like every other, and the live
/// endpoint of a real run is what Prometheus's own tools accept: `promtool check metrics`
/// passes its output, and a Prometheus server (Debian's `prometheus`, started here on loopback
/// with its own folder, always killed) scrapes the run and answers queries over its series.
@Suite(.serialized) struct LiveMetricsTests {
    static let scenario = repositoryRoot.appendingPathComponent("scenarios/chat-broadcast.yaml").path

    @Test func badMetricsFlagsExitTwoNamingTheFlag() throws {
        let results = temporaryFolder("live-metrics-flags").path
        let cases: [([String], String)] = [
            (["--metrics-port", "70000"], "--metrics-port"),
            (["--metrics-port", "-1"], "--metrics-port"),
            (["--metrics-port", "0", "--metrics-host", "example.com"], "--metrics-host"),
            (["--metrics-host", "127.0.0.1"], "--metrics-host"),
            (["--metrics-port", "0", "--metrics-host", "192.0.2.1"], "--metrics-host"),  // not this machine's
        ]
        for (flags, named) in cases {
            let r = try runProcess(stampedeBinary.path, ["run", Self.scenario, "--clients", "1", "--duration", "1", "--quiet", "--results", results] + flags, timeout: 30)
            #expect(r.status == 2, "\(flags): \(r.stderr)")
            #expect(r.stderr.contains(named), "\(flags): \(r.stderr)")
        }
    }

    /// curl's body for `url` (empty on failure).
    func fetch(_ url: String, _ extra: [String] = []) throws -> String {
        try runProcess("/usr/bin/curl", ["-s", "-m", "5"] + extra + [url], timeout: 10).stdout
    }

    /// The `data.result` array of a Prometheus instant query.
    func query(_ port: Int, _ promQL: String) throws -> [[String: Any]] {
        let body = try fetch("http://127.0.0.1:\(port)/api/v1/query", ["-G", "--data-urlencode", "query=\(promQL)"])
        guard let json = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
              let data = json["data"] as? [String: Any], let result = data["result"] as? [[String: Any]] else { return [] }
        return result
    }

    /// Polls `condition` every 0.25 s for at most `seconds`.
    func eventually(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.25)
        } while Date() < deadline
        return false
    }

    @Test func promtoolAcceptsALiveRunsMetricsAndPrometheusScrapesThem() throws {
        let folder = temporaryFolder("live-metrics")
        defer { try? FileManager.default.removeItem(at: folder) }
        // A long message phase, ended by SIGINT once Prometheus has what it needs: no race
        // between the run's length and Prometheus's start-up on a busy machine (the waits
        // below add up to less than the 300 s phase).
        let run = try BackgroundProcess(stampedeBinary.path, [
            "run", Self.scenario, "--clients", "20", "--duration", "300", "--quiet", "--loops", "1",
            "--results", folder.appendingPathComponent("results").path, "--metrics-port", "0",
        ])
        defer { run.stop() }
        var url = ""
        #expect(eventually(45) {
            let err = run.errors.withLock { $0 }
            guard let line = err.split(separator: "\n").first(where: { $0.hasPrefix("metrics: http://127.0.0.1:") }) else { return false }
            url = String(line.dropFirst("metrics: ".count))
            return true
        }, "no metrics line: \(run.errors.withLock { $0 })")
        try #require(!url.isEmpty)
        let metricsPort = try #require(Int(url.split(separator: ":").last?.split(separator: "/").first ?? ""))

        // promtool (Prometheus 2.x) reads the 0.0.4 text format: ask for it, once the run has
        // measured round trips so the histograms are in it too.
        var text = ""
        #expect(try eventually(45) {
            text = try fetch(url, ["-H", "Accept: text/plain"])
            return text.contains("stampede_round_trip_seconds_bucket")
        }, "no round-trip histogram at \(url)")
        let textFile = folder.appendingPathComponent("metrics.prom")
        try text.write(to: textFile, atomically: true, encoding: .utf8)
        let lint = try runProcess("/bin/sh", ["-c", "promtool check metrics < '\(textFile.path)'"], timeout: 30)
        #expect(lint.status == 0, "promtool: \(lint.stdout) \(lint.stderr)")
        let om = try fetch(url)
        #expect(om.hasSuffix("# EOF\n"))
        #expect(om.contains("# TYPE stampede_messages_sent counter\n"))

        // Prometheus scrapes the endpoint every second (asking for OpenMetrics first, so a
        // scrape that succeeds means its OpenMetrics parser read the text).
        let promPort = unusedPort()
        let config = folder.appendingPathComponent("prom.yml")
        try """
            global:
              scrape_interval: 1s
              scrape_timeout: 1s
            scrape_configs:
              - job_name: stampede
                static_configs:
                  - targets: ['127.0.0.1:\(metricsPort)']
            """.write(to: config, atomically: true, encoding: .utf8)
        let prometheus = try BackgroundProcess("/usr/bin/prometheus", [
            "--config.file=\(config.path)", "--storage.tsdb.path=\(folder.appendingPathComponent("data").path)",
            "--web.listen-address=127.0.0.1:\(promPort)", "--log.level=warn",
        ])
        defer { prometheus.stop() }
        let found = try eventually(60) {
            try !query(promPort, #"up{job="stampede"} == 1"#).isEmpty
                && !query(promPort, "stampede_messages_sent_total > 0").isEmpty
                && !query(promPort, #"stampede_round_trip_seconds_bucket{le="+Inf"} > 0"#).isEmpty
        }
        #expect(found, "Prometheus found no stampede series; its log: \(prometheus.errors.withLock { $0 }.suffix(2000))")
        if found {
            // The README's p99 query answers a number of seconds.
            let p99 = try query(promPort, "histogram_quantile(0.99, sum by (le) (stampede_round_trip_seconds_bucket))")
            let value = (p99.first?["value"] as? [Any])?.last as? String
            #expect(value.flatMap(Double.init).map { $0 > 0 && $0 <= 60 } == true, "p99: \(p99)")
            let phase = try query(promPort, "stampede_run_phase == 1")
            #expect(phase.count == 1, "\(phase)")
            // Metadata only OpenMetrics carries: the scrape was read as OpenMetrics.
            let metadata = try fetch("http://127.0.0.1:\(promPort)/api/v1/metadata")
            #expect(metadata.contains(#""stampede_run_phase":[{"type":"stateset""#), "\(metadata.prefix(3000))")
            #expect(metadata.contains(#""unit":"bytes""#), "\(metadata.prefix(3000))")
        }
        prometheus.stop()

        // Ctrl-C: the run writes its results, then the endpoint closes and the process ends.
        kill(run.process.processIdentifier, SIGINT)
        #expect(run.wait(timeout: 60) == 130)
        #expect(try fetch(url).isEmpty)
    }
}
