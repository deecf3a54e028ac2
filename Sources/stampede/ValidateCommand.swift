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
                print("\(f): ok (\(s.workload.rawValue), \(s.clients) clients, \(s.target))")
            } catch {
                FileHandle.standardError.write(Data("\(error)\n".utf8))
                failed = true
            }
        }
        if failed { throw ExitCode(ExitStatus.badInput) }
    }
}
