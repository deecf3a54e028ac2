import CStampedeLinux
import Foundation
import StampedeFleet
import StampedeLoop
import StampedeScenario

/// Where a run's worker processes come from.
public enum FleetSpec: Sendable, Equatable {
    /// N local worker processes (`stampede run --processes N`, or chosen by the plan when one
    /// process's descriptors do not hold the clients), spoken to over pipes.
    case processes(Int)
    /// `stampede worker` processes listening at these `host:port`s (`--workers`).
    case workers([String])
    /// A headless Service's name resolving to `count` workers' addresses (`--workers dns:NAME:PORT`).
    case discover(host: String, port: Int, count: Int, waitSeconds: Double)
}

/// The scenario as the user gave it, for the workers to parse exactly as the coordinator did.
public struct ScenarioSource: Sendable {
    public var yaml: String
    public var file: String
    public var overrides: [ScenarioLoader.Override]
    public init(yaml: String, file: String, overrides: [ScenarioLoader.Override]) {
        self.yaml = yaml; self.file = file; self.overrides = overrides
    }
}

/// Starts a run's workers: spawns or reaches them, greets each (protocol version, who it is),
/// measures its clock against ours, and hands it its shard.
public enum WorkerFleet {
    /// Clock exchanges per worker; the one with the shortest round trip is believed.
    static let clockExchanges = 8

    struct Connected {
        var link: WorkerLink
        var hello: WorkerHello
        var clock: ClockOffsetEstimator
        var process: Process?
    }

    /// - Parameter population: The population the workers run, in a run of several (nil otherwise).
    static func start(_ spec: FleetSpec, source: ScenarioSource, scenario: Scenario, population: String? = nil, steered: SteeredLoad? = nil, loops: Int, stampedeExecutable: String?,
                      embeddedPort: Int, embeddedCertificatePEM: String?, interrupt: InterruptFlag) throws(RunSetupError) -> [RemoteClientGroup] {
        var connected: [Connected] = []
        func abandon() { for c in connected { c.link.close(); if let p = c.process, p.isRunning { kill(p.processIdentifier, SIGKILL) } } }
        do throws(RunSetupError) {
            switch spec {
            case .processes(let n):
                guard let executable = stampedeExecutable else { throw RunSetupError("no stampede executable to run worker processes with") }
                for _ in 0..<n { connected.append(try greet(try spawn(executable))) }
            case .workers(let list):
                for text in list { connected.append(try greet(try reach(text))) }
            case .discover(let host, let port, let count, let wait):
                for address in try discover(host: host, port: port, count: count, waitSeconds: wait, interrupt: interrupt) {
                    connected.append(try greet(try link(connecting: address)))
                }
            }
            connected = try ordered(connected)
        } catch { abandon(); throw error }

        let n = connected.count
        let sameBoot = FleetSockets.bootID
        var groups: [RemoteClientGroup] = []
        for (i, c) in connected.enumerated() {
            let same = !sameBoot.isEmpty && c.hello.bootID == sameBoot
            let g = RemoteClientGroup(link: c.link, hello: c.hello, shardIndex: i, clients: shardClients(scenario.clients, index: i, count: n), clock: c.clock, sameClock: same, process: c.process)
            let loopsThere: Int = if case .processes = spec { max(1, loops / n) } else { 0 }
            var plan = WorkerPlan(scenarioYAML: source.yaml, scenarioFile: source.file, overrides: source.overrides.map { [$0.flag, $0.field, $0.value] },
                                  shardIndex: i, shardCount: n, loops: loopsThere, embeddedPort: embeddedPort,
                                  embeddedCertificatePEM: embeddedCertificatePEM ?? "", clockOffsetNs: same ? 0 : c.clock.offsetNs)
            plan.population = population ?? ""
            plan.steered = steered
            do { try g.start(plan) } catch {
                for other in groups { other.stop(interrupted: true) }
                g.stop(interrupted: true)
                for rest in connected[(i + 1)...] { rest.link.close(); if let p = rest.process, p.isRunning { kill(p.processIdentifier, SIGKILL) } }
                throw error
            }
            groups.append(g)
        }
        return groups
    }

    /// `stampede worker --stdio`, its standard input and output a pipe pair to us; its standard
    /// error is ours, so what it has to say reaches the user.
    static func spawn(_ executable: String) throws(RunSetupError) -> (WorkerLink, Process) {
        guard let toWorker = FleetSockets.pipe(), let fromWorker = FleetSockets.pipe() else {
            throw RunSetupError("cannot make pipes for a worker process: \(errnoDescription(cs_errno()))")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = ["worker", "--stdio"]
        p.standardInput = FileHandle(fileDescriptor: toWorker.read, closeOnDealloc: false)
        p.standardOutput = FileHandle(fileDescriptor: fromWorker.write, closeOnDealloc: false)
        do { try p.run() } catch {
            for fd in [toWorker.read, toWorker.write, fromWorker.read, fromWorker.write] { close(fd) }
            throw RunSetupError("cannot start a worker process (\(executable)): \(error)")
        }
        // Our copies of the child's ends go, so its death is an end of stream here.
        close(toWorker.read)
        close(fromWorker.write)
        return (WorkerLink(readFD: fromWorker.read, writeFD: toWorker.write), p)
    }

    /// Connects to a `stampede worker` at `host:port` (an IP literal, `[v6]:port`, or a name).
    static func reach(_ text: String) throws(RunSetupError) -> (WorkerLink, Process?) {
        guard let (host, port) = splitHostPort(text) else { throw RunSetupError("--workers: '\(text)' is not HOST:PORT") }
        let addresses = try TargetResolver.addresses(host: host, port: port, policy: .first)
        guard let address = addresses.first else { throw RunSetupError("--workers: \(host) has no address") }
        return try link(connecting: address)
    }

    static func link(connecting address: SocketAddress) throws(RunSetupError) -> (WorkerLink, Process?) {
        switch FleetSockets.connect(to: address, timeoutNs: 10_000_000_000) {
        case .success(let fd): return (WorkerLink(readFD: fd, writeFD: fd), nil)
        case .failure(let e): throw e
        }
    }

    /// A headless Service's addresses, asked again every second until there are `count` (pods
    /// start in any order) or `waitSeconds` have passed.
    static func discover(host: String, port: Int, count: Int, waitSeconds: Double, interrupt: InterruptFlag) throws(RunSetupError) -> [SocketAddress] {
        let deadline = Date().addingTimeInterval(waitSeconds)
        var found: [SocketAddress] = []
        while true {
            found = (try? TargetResolver.addresses(host: host, port: port, policy: .all)) ?? []
            if found.count >= count { return Array(Set(found)).sorted { $0.description < $1.description }.prefix(count).map { $0 } }
            if Date() >= deadline || interrupt.isRaised { break }
            Thread.sleep(forTimeInterval: 1)
        }
        throw RunSetupError("--workers dns:\(host):\(port): \(found.count) of \(count) workers found in \(Int(waitSeconds)) s")
    }

    /// Hello (versions must match), then the clock exchanges.
    static func greet(_ pair: (WorkerLink, Process?)) throws(RunSetupError) -> Connected {
        let (link, process) = pair
        func failed(_ what: String) -> RunSetupError {
            link.close()
            if let process, process.isRunning { kill(process.processIdentifier, SIGKILL) }
            return RunSetupError("a worker \(what): \(link.failure ?? "no reason given")")
        }
        guard link.send(.hello(version: FleetMessage.version), deadlineNs: EventLoop.now() + 5_000_000_000) else { throw failed("could not be greeted") }
        guard case .helloReply(let hello) = link.receive(deadlineNs: EventLoop.now() + 30_000_000_000) else { throw failed("did not answer") }
        guard hello.version == FleetMessage.version else {
            throw failed("speaks protocol version \(hello.version), this stampede \(FleetMessage.version) (use one stampede version everywhere)")
        }
        var clock = ClockOffsetEstimator()
        for _ in 0..<clockExchanges {
            let t1 = EventLoop.now()
            guard link.send(.clockProbe(coordinatorNs: t1), deadlineNs: t1 + 5_000_000_000),
                  case .clockReply(let echoed, let t2) = link.receive(deadlineNs: EventLoop.now() + 5_000_000_000), echoed == t1 else {
                throw failed("did not answer the clock exchange")
            }
            clock.add(coordinatorSendNs: t1, workerNs: t2, coordinatorReceiveNs: EventLoop.now())
        }
        return Connected(link: link, hello: hello, clock: clock, process: process)
    }

    /// In shard order: the workers' own indices when every one has one (an Indexed Job's
    /// `JOB_COMPLETION_INDEX`), else the order they were named or found in.
    static func ordered(_ workers: [Connected]) throws(RunSetupError) -> [Connected] {
        let indices = workers.map(\.hello.index)
        guard indices.allSatisfy({ $0 >= 0 }) else { return workers }
        guard Set(indices) == Set(0..<workers.count) else {
            throw RunSetupError("the workers' own indices are \(indices.sorted()), not 0 to \(workers.count - 1): each shard must be there once")
        }
        return workers.sorted { $0.hello.index < $1.hello.index }
    }

    /// `host:port`, `[v6]:port` (the brackets dropped); port 0 only when `allowsPortZero`
    /// (a listener the kernel gives a port). The one parser of `--workers` and `--listen`.
    public static func splitHostPort(_ text: String, allowsPortZero: Bool = false) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              ((allowsPortZero ? 0 : 1)...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }
}
