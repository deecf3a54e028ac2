import Foundation
import StampedeFleet
import StampedeLoop
import StampedeReport
import StampedeWorkloads

// A run over worker processes: the engine is the coordinator. It owns the schedule (one global
// ramp, phases and events at the same instants everywhere), merges every worker's interval
// exactly, judges thresholds once on the merge, and writes the one results folder.
extension RunEngine {
    func startWorkers(_ fleet: FleetSpec, endpoint: ClientEndpoint) throws(RunSetupError) {
        guard let source = options.scenarioSource else {
            throw RunSetupError("\(scenario.clients) clients need worker processes, which this command does not start (stampede run does)")
        }
        let remote = try WorkerFleet.start(fleet, source: source, scenario: scenario, population: options.population?.name,
                                           steered: options.steering?.load, loops: options.loops,
                                           stampedeExecutable: options.stampedeExecutable,
                                           embeddedPort: scenario.target == .embedded ? endpoint.port : 0,
                                           embeddedCertificatePEM: embeddedCertificatePEM, interrupt: options.interrupt)
        for (i, g) in remote.enumerated() {
            g.runClock = { [runStart = { self.runStartNs }] in
                let start = runStart()
                let now = EventLoop.now()
                return start == 0 || now < start ? 0 : Double(now - start) / 1e9
            }
            gauges.workerResidentBytes[i] = g.residentBytesAtStart
        }
        groups = remote
        let hosts = Set(remote.map(\.hello.hostname)).count
        progress.note("\(remote.count) worker process(es)\(hosts > 1 ? " on \(hosts) hosts" : ""): "
                      + remote.map { "#\($0.shardIndex) pid \($0.hello.pid) \($0.clients) clients" }.joined(separator: ", "))
    }

    /// Reports a worker lost since the last look (once each), and stops the run: its clients
    /// are gone, so the rest is no longer the scenario's load.
    func checkWorkers() {
        for g in groups {
            guard let r = g as? RemoteClientGroup, let loss = r.takeLoss() else { continue }
            let last = loss.lastIntervalSeconds.map { String(format: "%.1f s", $0) } ?? "none"
            let text = "worker \(r.shardIndex) (\(r.hello.hostname), pid \(r.hello.pid)) lost at \(String(format: "%.1f", loss.atSeconds)) s: \(loss.reason); "
                + "its \(r.clients) clients are gone (\(loss.openAtLastInterval) open at its last interval, \(last)); \(loss.messagesLost) of its messages counted lost"
            progress.note(text)
            warnings.append(text)
            if fleetFailure == nil { fleetFailure = text }
        }
    }

    /// summary.json's `workers`, nil for a run in one process.
    func workerRecords() -> [RunSummary.Worker]? {
        let remote = groups.compactMap { $0 as? RemoteClientGroup }
        return remote.isEmpty ? nil : remote.map(\.summary)
    }
}

extension ClientEndpoint {
    /// The port the clients connect to.
    var port: Int {
        switch self {
        case .webSocket(let e): Int(e.address.port)
        case .hub(_, let base): base.port
        case .rest(_, _, let port, _), .socketIO(_, _, let port): port
        }
    }
}
