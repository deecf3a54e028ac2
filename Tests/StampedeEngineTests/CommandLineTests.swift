import Foundation
import StampedeReport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The `stampede` executable as a user meets it: exit codes, error messages, interrupted runs.
@Suite(.serialized)
struct CommandLineTests {
    func writeScenario(_ text: String, name: String) throws -> URL {
        let url = temporaryFolder("cli").appendingPathComponent(name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    @Test func brokenScenarioExitsTwoNamingFileLineAndField() throws {
        let file = try writeScenario("""
            target: embedded
            clients: 10
            duration: 2s
            message:
              rate: fast
            """, name: "broken.yaml")
        for command in ["validate", "run"] {
            let r = try runProcess(stampedeBinary.path, [command, file.path], timeout: 60)
            #expect(r.status == 2, "\(command): \(r.stderr)")
            #expect(r.stderr.contains("broken.yaml:5"), "\(command): \(r.stderr)")
            #expect(r.stderr.contains("message.rate"), "\(command): \(r.stderr)")
        }
    }

    @Test func unknownFieldExitsTwoWithASuggestion() throws {
        let file = try writeScenario("target: embedded\nclinets: 10\nclients: 10\nduration: 1s\n", name: "typo.yaml")
        let r = try runProcess(stampedeBinary.path, ["validate", file.path], timeout: 60)
        #expect(r.status == 2)
        #expect(r.stderr.contains("typo.yaml:2"))
        #expect(r.stderr.contains("clients"))
    }

    @Test func malformedTargetOverrideIsRefused() throws {
        // Refused before any connection: nothing is sent anywhere.
        let r = try runProcess(stampedeBinary.path, ["run", repositoryRoot.appendingPathComponent("scenarios/chat-broadcast.yaml").path,
                                                     "--target", "ws://0127.0.0.1:80/chat"], timeout: 60)
        #expect(r.status == 2)
        #expect(r.stderr.contains("not an IPv4 address"))
    }

    @Test func unreachableTargetExitsNonZeroAndStillWritesResults() throws {
        let results = temporaryFolder("cli-unreachable")
        let r = try runProcess(stampedeBinary.path, ["run", repositoryRoot.appendingPathComponent("scenarios/chat-broadcast.yaml").path,
                                                     "--target", "ws://127.0.0.1:\(unusedPort())/chat", "--clients", "10",
                                                     "--results", results.path, "--quiet"], timeout: 60)
        #expect(r.status == 1)
        #expect(r.stderr.contains("connect_refused"))
        let folder = try #require(r.stdout.split(separator: "\n").last { $0.hasPrefix("results: ") })
        let summary = try RunSummary.decode(from: Data(contentsOf: URL(fileURLWithPath: String(folder.dropFirst("results: ".count))).appendingPathComponent("summary.json")))
        #expect(summary.errors["connect_refused"] == 10)
    }

    @Test func interruptedRunWritesPartialResults() throws {
        let results = temporaryFolder("cli-interrupt")
        let p = try BackgroundProcess(stampedeBinary.path, ["run", repositoryRoot.appendingPathComponent("scenarios/chat-broadcast.yaml").path,
                                                            "--clients", "50", "--duration", "60", "--results", results.path, "--plain"])
        defer { p.stop() }
        // Wait until the message phase is under way, then Ctrl-C.
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && !p.errors.withLock({ $0.contains("messages") }) { Thread.sleep(forTimeInterval: 0.1) }
        kill(p.process.processIdentifier, SIGINT)
        let status = p.wait(timeout: 30)
        #expect(status == 130)
        let line = try #require(p.lines.withLock { $0.last { $0.hasPrefix("results: ") } })
        let summary = try RunSummary.decode(from: Data(contentsOf: URL(fileURLWithPath: String(line.dropFirst("results: ".count))).appendingPathComponent("summary.json")))
        #expect(summary.partial)
        #expect(summary.partialReason?.contains("interrupted") == true)
        #expect(summary.messages.accountingClosed)
    }

    @Test func everyScenarioInTheRepositoryValidatesThroughTheCommandLine() throws {
        let dir = repositoryRoot.appendingPathComponent("scenarios")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".yaml") }.sorted()
        #expect(!files.isEmpty)
        let r = try runProcess(stampedeBinary.path, ["validate"] + files.map { dir.appendingPathComponent($0).path }, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
    }
}
