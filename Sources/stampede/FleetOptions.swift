import ArgumentParser
import Foundation
import StampedeEngine

/// `stampede run`'s flags for spreading the clients over worker processes.
struct FleetOptions: ParsableArguments {
    @Option(help: "Run the clients in N local worker processes (default: as many as the clients' file descriptors need, 1 to 64).")
    var processes: Int?

    @Option(help: ArgumentHelp("Run the clients on `stampede worker`s: HOST:PORT,HOST:PORT,… (shard = position, or each worker's own --index), or dns:NAME:PORT with --worker-count (a headless Service).", valueName: "list"))
    var workers: String?

    @Option(help: "With --workers dns:NAME:PORT: how many workers to wait for.")
    var workerCount: Int?

    @Option(help: "With --workers dns:NAME:PORT: seconds to wait until they all resolve (default 120).")
    var workerWait: Double = 120

    func validate() throws {
        if let p = processes, !(1...64).contains(p) { throw ValidationError("--processes must be from 1 to 64, got \(p)") }
        if processes != nil && workers != nil { throw ValidationError("--processes and --workers cannot be used together") }
        if let w = workers {
            if w.hasPrefix("dns:") {
                guard let c = workerCount, (1...1000).contains(c) else { throw ValidationError("--workers dns:NAME:PORT needs --worker-count from 1 to 1000") }
                guard Self.hostPort(String(w.dropFirst(4))) != nil else { throw ValidationError("--workers: '\(w)' is not dns:NAME:PORT") }
            } else {
                let list = w.split(separator: ",").map(String.init)
                guard !list.isEmpty, list.count <= 1000 else { throw ValidationError("--workers: give 1 to 1000 HOST:PORT entries") }
                for item in list where Self.hostPort(item) == nil { throw ValidationError("--workers: '\(item)' is not HOST:PORT") }
                if let c = workerCount, c != list.count { throw ValidationError("--worker-count \(c) but --workers names \(list.count)") }
            }
        } else if workerCount != nil {
            throw ValidationError("--worker-count goes with --workers dns:NAME:PORT")
        }
        if !(workerWait > 0 && workerWait <= 3600) { throw ValidationError("--worker-wait must be from 0 to 3600 seconds, got \(workerWait)") }
    }

    static func hostPort(_ text: String) -> (host: String, port: Int)? { WorkerFleet.splitHostPort(text) }

    /// What the flags ask for; nil: the engine decides (one process, or local workers when the
    /// clients' descriptors do not fit in one).
    var spec: FleetSpec? {
        if let processes { return .processes(processes) }
        guard let workers else { return nil }
        if workers.hasPrefix("dns:"), let (host, port) = Self.hostPort(String(workers.dropFirst(4))) {
            return .discover(host: host, port: port, count: workerCount ?? 1, waitSeconds: workerWait)
        }
        return .workers(workers.split(separator: ",").map(String.init))
    }
}
