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

/// `compare --baseline … --current …` and `compare --history DIR CURRENT` on real runs: copies
/// of one run stand for a build's runs (identical, so the verdicts cannot flake), a folder of
/// run folders stands for its runs, and the delayed run is slower both ways.
@Suite(.serialized)
struct CompareSeveralRunsTests {
    /// `count` copies of the run `folder` inside a new folder named `name`.
    static func copies(of folder: String, _ count: Int, in name: String) throws -> String {
        let dir = temporaryFolder(name)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for k in 1...count { try FileManager.default.copyItem(atPath: folder, toPath: dir.appendingPathComponent("run-\(k)").path) }
        return dir.path
    }

    @Test func severalRunsAndAHistoryCallTheDelayedBuildSlowerAndACopyNoChange() throws {
        let a = try CompareCommandTests.folder("runs-a", delayMs: nil)
        let b = try CompareCommandTests.folder("runs-b", delayMs: 20)
        let baseline = try Self.copies(of: a, 4, in: "runs-baseline"), current = try Self.copies(of: b, 4, in: "runs-current")
        let sameSide = try Self.copies(of: a, 4, in: "runs-same")

        let slower = try runProcess(stampedeBinary.path, ["compare", "--baseline", baseline, "--current", current, "--tolerance", "50%",
                                                          "--fail-on", "slower", "--format", "json"], timeout: 60)
        #expect(slower.status == 97, "\(slower.stdout)\(slower.stderr)")
        let report = try JSONDecoder().decode(RunSetReport.self, from: Data(slower.stdout.utf8))
        #expect(report.mode == .runs && report.baseline.count == 4 && report.current.count == 4)
        let rt = try #require(report.metrics.first { $0.metric == "round_trip" })
        #expect(rt.verdict == .slower && (rt.percentile("p50")?.pValue ?? 1) < 0.05)

        let same = try runProcess(stampedeBinary.path, ["compare", "--baseline", baseline, "--current", sameSide, "--fail-on", "slower"], timeout: 60)
        #expect(same.status == 0 && same.stdout.contains("round_trip: NO CHANGE"), "\(same.stdout)\(same.stderr)")

        // Paired (stampede interleave's runs): the pairs' ratios decide.
        let paired = try runProcess(stampedeBinary.path, ["compare", "--baseline", baseline, "--current", current, "--paired",
                                                          "--tolerance", "50%", "--fail-on", "slower", "--format", "json"], timeout: 60)
        #expect(paired.status == 97, "\(paired.stdout)\(paired.stderr)")
        let pairs = try JSONDecoder().decode(RunSetReport.self, from: Data(paired.stdout.utf8))
        #expect(pairs.mode == .pairs && pairs.metrics.first { $0.metric == "round_trip" }?.verdict == .slower)
        let uneven = try runProcess(stampedeBinary.path, ["compare", "--baseline", baseline, "--current", b, a, "--paired"], timeout: 60)
        #expect(uneven.status == 1 && uneven.stderr.contains("as many baseline runs as current runs"), "\(uneven.stderr)")

        // One run a side is the two-folder form (schema stampede.compare/1).
        let one = try runProcess(stampedeBinary.path, ["compare", "--baseline", a, "--current", b, "--format", "json"], timeout: 60)
        #expect(one.status == 0, "\(one.stdout)\(one.stderr)")
        #expect(try JSONDecoder().decode(CompareReport.self, from: Data(one.stdout.utf8)).schema == "stampede.compare/1")

        // History: the current run is judged against the history's runs, never against itself.
        let history = try runProcess(stampedeBinary.path, ["compare", "--history", baseline, b, "--tolerance", "50%",
                                                           "--fail-on", "slower", "--format", "markdown"], timeout: 60)
        #expect(history.status == 97 && history.stdout.contains("slower"), "\(history.stdout)\(history.stderr)")
        let inHistory = baseline + "/run-1"
        let notAgainstItself = try runProcess(stampedeBinary.path, ["compare", "--history", baseline, inHistory, "--format", "junit"], timeout: 60)
        #expect(notAgainstItself.status == 0 && notAgainstItself.stdout.contains("<testcase"), "\(notAgainstItself.stderr)")

        // Bad forms exit 2 naming what to give; a folder holding no run exits 1 naming it.
        for args in [["compare", "--baseline", baseline], ["compare", a, "--current", current], ["compare", "--history", baseline],
                     ["compare", a, b, "--paired"],
                     ["compare", "--history", baseline, a, "--history-runs", "2"]] {
            let r = try runProcess(stampedeBinary.path, args, timeout: 60)
            #expect(r.status == 2, "\(args): \(r.stderr)")
        }
        let empty = temporaryFolder("runs-empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let none = try runProcess(stampedeBinary.path, ["compare", "--baseline", empty.path, "--current", current], timeout: 60)
        #expect(none.status == 1 && none.stderr.contains(empty.path) && none.stderr.contains("holds no results folder"))
    }
}
