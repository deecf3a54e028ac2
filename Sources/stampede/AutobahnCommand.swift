import ArgumentParser
import Foundation
import StampedeEngine
import StampedeLoop
import StampedeReport
import StampedeScenario
import StampedeServers
#if canImport(Glibc)
import Glibc
#endif

struct Autobahn: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run Stampede's WebSocket client against an Autobahn fuzzing server (conformance).",
        discussion: """
            Follows the Autobahn client protocol: getCaseCount, runCase for every case (echoing \
            each message), updateReports. The server writes the report.

            Example (kosoku from PyPI serves the cases):
              kosoku -m fuzzingserver -i '1.*' -o reports 127.0.0.1:9001 &
              stampede autobahn --port 9001 --agent stampede
            """)

    @Option(help: "Loopback address of the fuzzing server.")
    var host: String = "127.0.0.1"

    @Option(help: "Port of the fuzzing server.")
    var port: Int = 9001

    @Option(help: "Agent name the report lists the results under.")
    var agent: String = "stampede"

    func validate() throws {
        guard (1...65535).contains(port) else { throw ValidationError("--port must be from 1 to 65535, got \(port)") }
    }

    func run() throws {
        guard host == "localhost" || host == "::1" || (parseIPv4(host).map { $0 >> 24 == 127 } ?? false) else {
            throw ValidationError("--host must be a loopback address")
        }
        let outcome = try AutobahnClient.run(host: host, port: port, agent: agent)
        print("autobahn: \(outcome.casesRun) of \(outcome.caseCount) cases run, \(outcome.casesTimedOut) timed out; reports updated for agent \(agent)")
    }
}
