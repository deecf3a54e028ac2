import ArgumentParser
import Foundation
import StampedeEngine
import StampedeLoop
#if canImport(Glibc)
import Glibc
#endif

struct Worker: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run one shard of a coordinator's run (stampede run --workers …).",
        discussion: """
            Listens for a coordinator (`stampede run SCENARIO --workers HOST:PORT,…`), which sends \
            the scenario and this worker's shard of the clients, then drives those clients on \
            this process's loops as the coordinator commands, streaming every interval's \
            histograms and counters back to it. Serves one run, then exits: 0 when the run \
            ended, 1 when the coordinator went away (its clients are closed first), 2 for bad \
            flags, 130 when interrupted.

            On Kubernetes (deploy/kubernetes/), an Indexed Job's JOB_COMPLETION_INDEX gives the \
            shard index and STAMPEDE_WORKER_COUNT the number of workers; the coordinator orders \
            the workers by the index each reports and refuses a run where one is missing.

            Examples:
              stampede worker --listen 0.0.0.0:7070
              stampede worker --listen 10.0.0.5:7070 --index 2 --count 4
            """)

    @Option(help: "ADDRESS:PORT to listen on for the coordinator (an IP literal; [v6]:port).")
    var listen: String?

    @Option(help: "This worker's shard index (default: $JOB_COMPLETION_INDEX).")
    var index: Int?

    @Option(help: "The number of workers in the run (default: $STAMPEDE_WORKER_COUNT).")
    var count: Int?

    @Option(help: "Client event loops (threads), 1 to 256. Default: what the coordinator says, else one per core.")
    var loops: Int?

    @Option(help: ArgumentHelp("Also write every interval this worker sends, as .hlog files (worker-<shard>-<metric>.hlog), to check a merge. Default: $STAMPEDE_WORKER_INTERVALS.", valueName: "folder"))
    var keepIntervals: String?

    @Flag(help: .hidden)
    var stdio = false

    var keepFolder: URL? {
        (keepIntervals ?? ProcessInfo.processInfo.environment["STAMPEDE_WORKER_INTERVALS"]).map { URL(fileURLWithPath: $0) }
    }

    var environmentIndex: Int? { index ?? ProcessInfo.processInfo.environment["JOB_COMPLETION_INDEX"].flatMap { Int($0) } }
    var environmentCount: Int? { count ?? ProcessInfo.processInfo.environment["STAMPEDE_WORKER_COUNT"].flatMap { Int($0) } }

    func validate() throws {
        if !stdio && listen == nil { throw ValidationError("--listen ADDRESS:PORT is required") }
        if let l = loops, !(1...256).contains(l) { throw ValidationError("--loops must be from 1 to 256, got \(l)") }
        if let i = index, i < 0 { throw ValidationError("--index must be 0 or more, got \(i)") }
        if let c = count, c < 1 { throw ValidationError("--count must be 1 or more, got \(c)") }
        if let i = environmentIndex, let c = environmentCount, i >= c { throw ValidationError("--index \(i) is not below --count \(c)") }
        if let listen, listenAddress(listen) == nil { throw ValidationError("--listen: '\(listen)' is not ADDRESS:PORT with an IP address") }
    }

    func listenAddress(_ text: String) -> SocketAddress? {
        WorkerFleet.splitHostPort(text, allowsPortZero: true).flatMap { SocketAddress(host: $0.host, port: $0.port) }
    }

    func run() throws {
        installSignalHandlers()
        let defaultLoops = loops ?? max(1, ProcessInfo.processInfo.activeProcessorCount)
        func log(_ line: String) { FileHandle.standardError.write(Data("stampede worker[\(getpid())]: \(line)\n".utf8)) }
        let status: Int32
        if stdio {
            // The coordinator's pipes: stdout carries frames, so nothing else may be printed there.
            let out = dup(STDOUT_FILENO)
            dup2(STDERR_FILENO, STDOUT_FILENO)
            status = WorkerService.serve(readFD: dup(STDIN_FILENO), writeFD: out, index: environmentIndex, count: environmentCount,
                                         defaultLoops: defaultLoops, interrupt: interrupt, keepIntervals: keepFolder, log: { _ in })
        } else {
            guard let address = listen.flatMap(listenAddress) else { throw ExitCode(ExitStatus.badInput) }
            switch WorkerService.listen(on: address) {
            case .failure(let e):
                log("\(e)")
                throw ExitCode(ExitStatus.runFailed)
            case .success(let (listener, port)):
                print("worker listening on \(address.with(port: port))")
                fflush(nil)
                guard let fd = WorkerService.acceptCoordinator(listener, interrupt: interrupt) else { throw ExitCode(ExitStatus.interrupted) }
                close(listener)
                log("coordinator connected")
                status = WorkerService.serve(readFD: fd, writeFD: fd, index: environmentIndex, count: environmentCount,
                                             defaultLoops: defaultLoops, interrupt: interrupt, keepIntervals: keepFolder, log: log)
            }
        }
        if status != 0 { throw ExitCode(status) }
    }
}
