import ArgumentParser
import Foundation
import StampedeEngine
import StampedeReport

/// The flags of every command that runs load (`run`, `capacity`): where the clients run, where
/// results go, and the target instead of the scenario's.
struct LoadOptions: ParsableArguments {
    @Option(help: "Client event loops (threads), 1 to 256. Default: one per core.")
    var loops: Int?

    @Option(help: "Folder to write results into (created if needed; checked before the run starts).")
    var results: String = "results"

    @Option(help: "Override the scenario's target ('embedded', or a ws:// URL for chat, http:// for hub and REST).")
    var target: String?

    func validate() throws {
        if let l = loops, !(1...256).contains(l) { throw ValidationError("--loops must be from 1 to 256, got \(l)") }
    }

    /// Run options with these flags applied; exit 2 naming --results when it cannot be written to.
    func runOptions(progress: RunOptions.ProgressStyle) throws -> RunOptions {
        do { try ResultsWriter.checkWritable(resultsRoot: URL(fileURLWithPath: results)) } catch {
            FileHandle.standardError.write(Data("error: --results: \(error)\n".utf8))
            throw ExitCode(ExitStatus.badInput)
        }
        var options = RunOptions(resultsRoot: URL(fileURLWithPath: results), progress: progress, interrupt: interrupt)
        options.stampedeExecutable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        if let loops { options.loops = loops }
        return options
    }
}
