import ArgumentParser
import Foundation
import StampedeEngine
import StampedeLive
import StampedeLoop
import StampedeScenario

/// `--metrics-port` and `--metrics-host`: the live OpenMetrics endpoint of a run (see
/// docs/metrics.md). A group of its own so that every command that runs load takes the same
/// flags.
struct MetricsOptions: ParsableArguments {
    @Option(name: .customLong("metrics-port"),
            help: "Serve live metrics (OpenMetrics) at http://HOST:PORT/metrics during the run; 0 picks a free port (printed to stderr).")
    var port: Int?

    @Option(name: .customLong("metrics-host"),
            help: "Address the metrics endpoint listens on: an IP literal (default 127.0.0.1; 0.0.0.0 or :: to let other hosts scrape).")
    var host: String?

    func validate() throws {
        if let p = port, !(0...65535).contains(p) { throw ValidationError("--metrics-port must be from 0 to 65535, got \(p)") }
        if let h = host {
            guard port != nil else { throw ValidationError("--metrics-host needs --metrics-port") }
            guard h.utf8.count <= 64, SocketAddress(host: h, port: 0) != nil else {
                throw ValidationError("--metrics-host must be an IP address literal like 127.0.0.1 or ::1, got '\(h.prefix(64))'")
            }
        }
    }

    /// The endpoint's address, nil without --metrics-port.
    var address: SocketAddress? {
        guard let port else { return nil }
        return SocketAddress(host: host ?? "127.0.0.1", port: port)
    }

    /// Starts the endpoint when asked (prints `metrics: URL` to stderr); nil without
    /// --metrics-port. Feed it with `observe(_:labels:)`. A listen failure (the port is taken,
    /// the address is not this machine's) is bad input: exit 2 naming the flag.
    func start(for scenario: Scenario) throws -> LiveMetrics? {
        guard let address else { return nil }
        let live: LiveMetrics
        do { live = try LiveMetrics(address: address, scenario: scenario) } catch {
            FileHandle.standardError.write(Data("error: --metrics-port \(port ?? 0) on --metrics-host \(address.hostText): \(error)\n".utf8))
            throw ExitCode(ExitStatus.badInput)
        }
        FileHandle.standardError.write(Data("metrics: \(live.endpoint.url)\n".utf8))
        return live
    }
}

/// A run's live metrics: the endpoint and what feeds it.
///
/// For `stampede capacity`, one endpoint for the whole search is what a dashboard wants: each
/// step's run options get `observe(&options, labels: ["step": "N"])`, so every step is a series
/// of its own and a step's counters, which start again from zero, are not mistaken for a reset
/// of the previous step's (docs/metrics.md).
final class LiveMetrics: Sendable {
    let endpoint: MetricsEndpoint
    let scenarioName: String
    let workload: String
    /// A run of several populations: each one's workload, by name.
    let populationWorkloads: [String: String]

    init(address: SocketAddress, scenario: Scenario) throws {
        scenarioName = scenario.name
        workload = scenario.workload.rawValue
        populationWorkloads = Dictionary(scenario.populations.map { ($0.name, $0.scenario.workload.rawValue) }, uniquingKeysWith: { a, _ in a })
        endpoint = try MetricsEndpoint(address: address, snapshot: LiveSnapshot(scenario: scenario.name, workload: workload))
    }

    /// Feeds the endpoint from `options`' interval reports, after any observer already set;
    /// `labels` go on every sample (a capacity step's `step`).
    func observe(_ options: inout RunOptions, labels: [String: String] = [:]) {
        let previous = options.intervalObserver
        let feed = observer(labels: labels)
        options.intervalObserver = { report in
            previous?(report)
            feed(report)
        }
    }

    /// An interval observer that updates the endpoint, `labels` on every sample.
    func observer(labels: [String: String]) -> @Sendable (IntervalReport) -> Void {
        let (name, workload, populationWorkloads) = (scenarioName, workload, populationWorkloads)
        return { [endpoint] report in
            // A run of several populations: a series each, labelled with its name.
            guard let population = report.population else {
                return endpoint.update(Self.snapshot(report, scenario: name, workload: workload, labels: labels))
            }
            var own = labels
            own["population"] = population
            endpoint.update(Self.snapshot(report, scenario: name, workload: populationWorkloads[population] ?? workload, labels: own), series: population)
        }
    }

    static func snapshot(_ r: IntervalReport, scenario: String, workload: String, labels: [String: String]) -> LiveSnapshot {
        var s = LiveSnapshot(scenario: scenario, workload: workload, phase: r.final ? "finished" : r.phase)
        s.labels = labels
        s.elapsedSeconds = r.elapsedSeconds
        s.totals = r.totals
        s.open = r.open
        s.connecting = r.connecting
        s.reconnecting = r.reconnecting
        s.clients = r.clients
        s.timerLagSeconds = Double(r.timerLagNs) / 1e9
        s.processCPURatio = r.processCPUPercent / 100
        s.clientLoopCPURatio = r.clientLoopCPUPercent / 100
        s.loops = r.loops
        s.residentBytes = r.residentBytes
        return s
    }

    /// Closes the endpoint (once the run's results are written).
    func stop() { endpoint.stop() }
}
