import CStampedeLinux
import Foundation
import StampedeLoop
import StampedeMetrics
import StampedeReport
import StampedeScenario
import StampedeServers
import StampedeWire
import StampedeWorkloads
import Synchronization

// Starting a run: the target (in this process, in a child `stampede serve`, or the scenario's
// own) and one loop of clients per core, each made by the workload's `WorkloadKind`.
extension RunEngine {
    // MARK: Setup

    func startTarget() throws(RunSetupError) -> ClientEndpoint {
        guard scenario.target == .embedded else { return try kind.targetEndpoint(scenario) }
        if let shared = options.population?.sharedTarget {
            embeddedServer = shared.server
            childAdmin = shared.childAdmin
            embeddedCertificatePEM = shared.certificatePEM
            return kind.embeddedEndpoint(scenario, address: shared.address, port: Int(shared.address.port))
        }
        if targetInChildProcess {
            let (address, port) = try startChildTarget()
            return kind.embeddedEndpoint(scenario, address: address, port: port)
        }
        let loop: EventLoop
        do { loop = try EventLoop(index: 1000) } catch { throw RunSetupError("cannot start the embedded target: \(error)") }
        serverLoop = loop
        let (server, endpoint) = try kind.startEmbeddedServer(on: loop, scenario, tls: try makeEmbeddedServerTLS())
        embeddedServer = server
        loop.start(name: "stampede-target")
        return endpoint
    }

    /// The clients: on this process's loops, or on worker processes (RunEngine+Fleet.swift).
    func startClients(plan: RunPlan, endpoint: ClientEndpoint) throws(RunSetupError) {
        if let fleet = plan.fleet {
            try startWorkers(fleet, endpoint: endpoint)
        } else {
            groups = [try LocalClientGroup.start(scenario: scenario, kind: kind, endpoint: endpoint, tls: clientTLS, loopCount: plan.loopCount)]
        }
    }

    func shutdown(interrupted: Bool) {
        for g in groups { g.stop(interrupted: interrupted) }
        serverLoop?.stop()
        serverLoop?.join()
        childTarget?.stop(graceSeconds: interrupted ? 0.3 : 3)
    }

    /// Starts `stampede serve --admin-port 0` and reads where it listens.
    func startChildTarget() throws(RunSetupError) -> (SocketAddress, Int) {
        guard let executable = options.stampedeExecutable else { throw RunSetupError("no stampede executable to run the target in") }
        var arguments = ["serve", "--port", "0", "--admin-port", "0",
                         "--max-seconds", String(Int(scenario.durationSeconds + scenario.drainSeconds
                                                     + Double(scenario.clients) / scenario.connectRate + scenario.connectTimeoutSeconds * 4 + 120))]
        let (workloadArguments, environment) = try kind.serveArguments(scenario)
        arguments += workloadArguments
        // More connections than one process's descriptors hold: several processes on one port.
        if targetProcesses > 1 { arguments += ["--processes", String(targetProcesses)] }
        // The child makes its own throw-away certificate and says where it is: the key stays in its memory.
        if scenario.tls != nil { arguments.append("--tls-self-signed") }
        let child: ChildTarget
        do { child = try ChildTarget(executable: executable, arguments: arguments, environment: environment) } catch {
            throw RunSetupError("cannot start the target process: \(error)")
        }
        childTarget = child
        guard let listening = child.waitForLine(prefix: "listening on ", seconds: 30, interrupt: options.interrupt),
              let admin = child.waitForLine(prefix: "admin on http://127.0.0.1:", seconds: 5, interrupt: options.interrupt),
              let port = Int(listening.split(separator: ":").last?.split(separator: "/").first ?? ""),
              let adminPort = Int(admin.split(separator: ":").last ?? "") else {
            if options.interrupt.isRaised { throw RunSetupError("interrupted while the target process started") }
            throw RunSetupError("the target process did not start: \(child.errorOutput.suffix(500))")
        }
        if scenario.tls != nil { try trustChildCertificate(child) }
        childAdmin = AdminEndpoint(host: "127.0.0.1", port: adminPort)
        progress.note("the embedded target runs in a child process (pid \(child.pid)\(targetProcesses > 1 ? ", \(targetProcesses) server processes" : "")): both ends of \(scenario.clients) connections do not fit in one process's file descriptors")
        return (.ipv4(0x7F00_0001, port: UInt16(port)), port)
    }
}
