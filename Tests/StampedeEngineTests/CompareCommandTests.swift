import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import Testing

/// `stampede compare` end to end on small real runs against the embedded target: A against a
/// copy of A is no change (exit 0), A against A with the server's `delay` fault is slower (exit 97 with
/// --fail-on slower), every format parses, bad folders exit 1 and bad flags 2. The tolerance is
/// wide (50 %) and the delay long (20 ms: under the whole suite in parallel a debug build's round
/// trip is several ms, and 2 ms was not always beyond 50 %) so the test does not flake.
@Suite(.serialized)
struct CompareCommandTests {
    static func folder(_ name: String, delayMs: Int?) throws -> String {
        var s = chatScenario(name: name, clients: 10, duration: 4, rate: 50)
        s.drainSeconds = 1
        if let delayMs { s.events = [ScenarioEvent(atSeconds: 0, kind: .server(.delay(microseconds: delayMs * 1000)))] }
        let o = try run(s)
        #expect(o.exitCode == 0)
        return try #require(o.resultsFolder).path
    }

    @Test func comparingRunsGivesNoChangeForAAAndSlowerForAddedDelay() throws {
        let a = try Self.folder("compare-a", delayMs: nil)
        // A second run of A on this shared machine can be genuinely slower (another process's
        // burst), which a comparison rightly reports; "no change" is proven on a copy of A.
        let a2 = temporaryFolder("compare-a2").appendingPathComponent("copy-of-a").path
        try FileManager.default.copyItem(atPath: a, toPath: a2)
        let b = try Self.folder("compare-b", delayMs: 20)
        #expect(FileManager.default.fileExists(atPath: a + "/round_trip.hlog"))
        let same = try runProcess(stampedeBinary.path, ["compare", a, a2, "--tolerance", "50%", "--fail-on", "slower"], timeout: 60)
        #expect(same.status == 0, "\(same.stdout)\(same.stderr)")
        #expect(same.stdout.contains("round_trip: NO CHANGE"), "\(same.stdout)")

        let slower = try runProcess(stampedeBinary.path, ["compare", a, b, "--tolerance", "50%", "--fail-on", "slower", "--format", "json"], timeout: 60)
        #expect(slower.status == 97, "\(slower.stdout)\(slower.stderr)")
        let report = try JSONDecoder().decode(CompareReport.self, from: Data(slower.stdout.utf8))
        #expect(report.verdict == .slower && report.gateTripped)
        let rt = try #require(report.metrics.first { $0.metric == "round_trip" })
        #expect(rt.verdict == .slower && rt.wassersteinMs >= 10 && rt.ksD > 0.5)
        #expect(report.figures.contains { $0.name == "messages sent" })

        let noGate = try runProcess(stampedeBinary.path, ["compare", a, b, "--tolerance", "50%", "--format", "junit"], timeout: 60)
        #expect(noGate.status == 0, "without --fail-on the verdict is reported, not gated")
        #expect(noGate.stdout.hasPrefix("<?xml") && noGate.stdout.contains("<testcase"))
        let md = try runProcess(stampedeBinary.path, ["compare", a, b, "--format", "markdown", "--fail-on", "slower"], timeout: 60)
        #expect(md.status == 97 && md.stdout.hasPrefix("### Stampede compare"))

        // Unreadable folders: exit 1, naming the folder or file. Bad flags: exit 2.
        let missing = try runProcess(stampedeBinary.path, ["compare", a, "/nonexistent/results"], timeout: 60)
        #expect(missing.status == 1 && missing.stderr.contains("/nonexistent/results"))
        let empty = temporaryFolder("compare-empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let noSummary = try runProcess(stampedeBinary.path, ["compare", empty.path, a], timeout: 60)
        #expect(noSummary.status == 1 && noSummary.stderr.contains("summary.json"))
        for args in [["compare", a], ["compare", a, b, "--format", "html"], ["compare", a, b, "--tolerance", "x"], ["compare", a, b, "--fail-on", "worse"]] {
            let r = try runProcess(stampedeBinary.path, args, timeout: 60)
            #expect(r.status == 2, "\(args): \(r.stderr)")
        }
    }
}
