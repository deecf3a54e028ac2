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

struct Merge: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Merge results folders of runs made side by side into one (histograms added exactly, counts summed).",
        discussion: "Example:\n  stampede merge results/a results/b -o results/merged\nExit 2 when an input is not a results folder.")
    @Argument(help: "Results folders.") var folders: [String]
    @Option(name: .short, help: ArgumentHelp("The merged folder (created; must not exist or be empty).", valueName: "out")) var output: String

    func run() throws {
        do {
            let summary = try ResultsMerge.merge(folders.map { URL(fileURLWithPath: $0) }, into: URL(fileURLWithPath: output))
            print("merged \(folders.count) folders: \(summary.messages.sent) messages sent, \(summary.errorsTotal) errors")
            print(output)
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            if case .badInput = error { throw ExitCode(ExitStatus.badInput) }
            throw ExitCode(ExitStatus.runFailed)
        }
    }
}
