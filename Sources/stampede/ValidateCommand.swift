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

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check scenario files without running them (exit 2 on the first bad file).",
        discussion: "Example:\n  stampede validate scenarios/*.yaml")

    @Argument(help: "Scenario files.")
    var files: [String]

    func run() throws {
        var failed = false
        for f in files {
            do {
                let s = try ScenarioLoader.load(path: f)
                if s.populations.isEmpty {
                    print("\(f): ok (\(s.workload.rawValue), \(s.clients) clients, \(s.target))")
                } else {
                    print("\(f): ok (\(s.clients) clients in \(s.populations.count) populations: "
                          + s.populations.map { "\($0.name) \($0.scenario.workload.rawValue) × \($0.scenario.clients)" }.joined(separator: ", ") + ")")
                }
            } catch {
                FileHandle.standardError.write(Data("\(error)\n".utf8))
                failed = true
            }
        }
        if failed { throw ExitCode(ExitStatus.badInput) }
    }
}
