import Foundation
import Testing

/// `--help` as a user reads it. ArgumentParser wraps every paragraph at the terminal's width, so
/// the texts must not be wrapped by hand as well: rendered wide (COLUMNS=1000, so ArgumentParser
/// wraps nothing), each prose paragraph is one line and each table row or example is one line.
struct HelpTextTests {
    static let commands = ["", "run", "capacity", "serve", "worker", "validate", "schema", "compare", "interleave", "merge", "report", "autobahn"]

    /// The help of `command` at `columns`, up to its USAGE line (the abstract and the discussion).
    func overview(_ command: String, columns: Int) throws -> [Substring] {
        let r = try runProcess("/usr/bin/env", ["COLUMNS=\(columns)", stampedeBinary.path] + (command.isEmpty ? [] : [command]) + ["--help"],
                               timeout: 60)
        #expect(r.status == 0, "\(command): \(r.stderr)")
        let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return Array(lines.prefix { !$0.hasPrefix("USAGE:") })
    }

    @Test(arguments: commands)
    func noParagraphIsWrappedByHand(_ command: String) throws {
        let lines = try overview(command, columns: 1000)
        #expect(lines.first?.hasPrefix("OVERVIEW: ") == true, "\(command)")
        for (line, next) in zip(lines, lines.dropFirst()) where !line.isEmpty && !next.isEmpty {
            let indent = line.prefix { $0 == " " }.count
            let nextIndent = next.prefix { $0 == " " }.count
            // Two prose lines in a row are one paragraph broken by hand.
            #expect(indent > 0 || nextIndent > 0, "\(command): a paragraph broken by hand after \"\(line)\"")
            // A deeper-indented line under a row or an example is that row continued by hand.
            #expect(indent == 0 || nextIndent <= indent, "\(command): a row continued by hand after \"\(line)\"")
        }
    }

    @Test func runHelpReadsAsWrittenAtEightyColumns() throws {
        // ArgumentParser's own wrap at 80 columns, and nothing else: the words of a sentence stay in
        // order with single spaces between them once the lines are joined again.
        let joined = try overview("run", columns: 80).joined(separator: " ")
        #expect(joined.contains("and, as the last line on stdout, the results folder."))
    }

    @Test func runHelpExitOneSaysWhatTheReadmeSays() throws {
        let lines = try overview("run", columns: 1000)
        let row = try #require(lines.first { $0.hasPrefix("  1 ") })
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let readmeRow = try #require(readme.split(separator: "\n").first { $0.hasPrefix("| `1` | ") })
        let meaning = readmeRow.dropFirst("| `1` | ".count).dropLast(2)
        #expect(row.drop { $0 == " " || $0 == "1" } == meaning)
        #expect(!lines.joined(separator: "\n").contains("not written"))
    }
}
