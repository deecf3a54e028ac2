import ArgumentParser
import Foundation
import StampedeReport

struct Report: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the self-contained HTML report of a results folder, or of two runs compared.",
        discussion: """
            One folder (a run's, a merge's or a capacity run's): its report, \
            written to <folder>/report.html unless -o says otherwise. Every run \
            already writes one there; this renders it again. Two folders: the \
            baseline and the current run side by side, with `stampede compare`'s \
            verdicts and both runs' latency overlaid; -o is required then.

            The page has inline SVG charts and CSS only: no script, and nothing \
            is loaded from a network, so it opens offline and in CI artifact \
            viewers.

            Exit codes: 0 written; 1 the file could not be written; 2 a folder \
            is missing or not a results folder (the message names it), or bad \
            flags.

            Examples:
              stampede report results/chat-1k-20260101T000000Z
              stampede report results/base-… results/pr-… -o compare.html
            """)
    @Argument(help: "One results folder, or two (baseline, current).") var folders: [String]
    @Option(name: .short, help: ArgumentHelp("The HTML file to write (default: <folder>/report.html for one folder; required for two).", valueName: "file"))
    var output: String?

    func validate() throws {
        guard (1...2).contains(folders.count) else { throw ValidationError("give one results folder, or two (baseline, current); got \(folders.count)") }
        if folders.count == 2 && output == nil { throw ValidationError("-o FILE is required when comparing two folders") }
    }

    func run() throws {
        let urls = folders.map { URL(fileURLWithPath: $0) }
        let html: String
        do {
            html = urls.count == 1 ? try HTMLReport.render(folder: urls[0]) : try HTMLReport.render(baseline: urls[0], current: urls[1])
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(ExitStatus.badInput)
        }
        let out = output.map { URL(fileURLWithPath: $0) } ?? urls[0].appendingPathComponent(HTMLReport.fileName)
        do {
            try Data(html.utf8).write(to: out, options: .atomic)
        } catch {
            FileHandle.standardError.write(Data("error: cannot write \(out.path): \(error.localizedDescription)\n".utf8))
            throw ExitCode(ExitStatus.runFailed)
        }
        print(out.path)
    }
}
