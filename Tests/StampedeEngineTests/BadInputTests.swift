import Foundation
import StampedeEngine
import StampedeLoop
import StampedeReport
import StampedeScenario
import Testing

/// Bad input never reaches a trap, a hang or a late failure: every value a scenario or a flag
/// can give is refused by the loader (exit 2, naming the field or flag) or planned without
/// trapping. Each of the first six findings of the hostile-input review has a test here.
struct BadInputTests {
    func probe(_ yaml: String) -> ScenarioProbe.Outcome { ScenarioProbe.run(yaml) }

    func rejection(_ yaml: String) -> String? {
        if case .rejected(let message) = probe(yaml) { return message }
        return nil
    }

    static let chat = "target: embedded\nclients: 10\nduration: 2s\n"

    @Test(arguments: [
        ("connect_rate: 1e-10", "connect_rate"),
        ("message: {rate: 1e-10}", "message.rate"),
        ("message: {rate: 1.0e-300}", "message.rate"),
        ("clients: 1000000\nconnect_rate: 0.001", "connect_rate"),
    ])
    func ratesTooSmallForTheEngineAreRefusedNamingTheField(extra: String, field: String) throws {
        let yaml = extra.hasPrefix("clients:") ? "target: embedded\nduration: 2s\n" + extra + "\n" : Self.chat + extra + "\n"
        let message = try #require(rejection(yaml))
        #expect(message.contains("field '\(field)'"), "\(message)")
    }

    @Test func hubMessageRatesTooSmallAreRefused() throws {
        let yaml = "target: embedded\nworkload: hub\nclients: 4\nduration: 2s\nhub: {method: Echo}\nmessage: {rate: 1.0e-300}\n"
        #expect(try #require(rejection(yaml)).contains("field 'message.rate'"))
    }

    @Test(arguments: ["1.0e-12", "0.0000001", "10ns"])
    func restIntervalsTooShortToBeATimerAreRefused(interval: String) throws {
        let yaml = "target: embedded\nworkload: rest\nclients: 4\nduration: 2s\nrest: {interval: \(interval), resources: [/a]}\n"
        #expect(try #require(rejection(yaml)).contains("field 'rest.interval'"))
    }

    @Test func theSlowestAcceptedValuesPlanWithoutTrapping() throws {
        let yaml = """
            #--loops 256
            target: embedded
            clients: 600
            connect_rate: 0.001
            duration: 168h
            think_time: 1ms
            message: {rate: 0.001}
            reconnect: {exponential: {initial: 1ms, max: 168h, attempts: 1000000}}
            heartbeat: {ping_interval: 1ms, timeout: 168h}
            events: [{at: 167h, churn: {rate: 0.001}}]
            """
        guard case .planned(let plan) = probe(yaml) else { Issue.record("refused: \(probe(yaml))"); return }
        #expect(plan.loopCount == 256)
        #expect(plan.rampBudgetNs > 600_000 * 1_000_000_000)
    }

    @Test func secondsBecomeNanosecondsWithoutEverTrapping() {
        #expect(nanoseconds(1.5) == 1_500_000_000)
        #expect(nanoseconds(.nan) == 0)
        #expect(nanoseconds(-3) == 0)
        #expect(nanoseconds(.infinity) == maxNanoseconds)
        #expect(nanoseconds(1e300) == maxNanoseconds)
        #expect(nanoseconds(1e-12) == 0)
        // Two saturated spans on a monotonic clock still fit.
        #expect(UInt64.max - (1 << 40) > maxNanoseconds * 2)
    }

    @Test(arguments: [
        ("--clients", "0", "expected an integer from 1 to 1000000"),
        ("--duration", "nan", "expected a duration"),
        ("--duration", "1e300", "at most 168h"),
        ("--duration", "1e-12", "at least 1ms"),
        ("--target", "ws://10.0.0.01/chat", "not an IPv4 address"),
    ])
    func commandLineValuesMeetTheChecksOfTheirFields(flag: String, value: String, message: String) throws {
        let text = try #require(rejection("#\(flag) \(value)\n" + Self.chat))
        #expect(text.hasPrefix("\(flag): "), "\(text)")
        #expect(text.contains(message), "\(text)")
    }

    @Test func aShorterDurationFlagStillChecksTheEventsAgainstIt() throws {
        let text = try #require(rejection("#--duration 5\n" + Self.chat.replacingOccurrences(of: "2s", with: "20s") + "events: [{at: 8s, storm: {}}]\n"))
        #expect(text.contains("field 'events[0].at'"), "\(text)")
        #expect(text.contains("duration 5s, from --duration"), "\(text)")
    }

    @Test func aFlagReplacesTheFieldItNames() throws {
        let s = try ScenarioLoader.parse(yaml: Self.chat, file: "x.yaml", overrides: [.init(flag: "--clients", field: "clients", value: "7"),
                                                                                   .init(flag: "--duration", field: "duration", value: "90s")])
        #expect(s.clients == 7)
        #expect(s.durationSeconds == 90)
    }

    @Test func anUnsetTokenVariableIsRefusedBeforeTheRunAtItsLine() throws {
        let file = temporaryFolder("token").appendingPathComponent("rest.yaml")
        let yaml = "target: embedded\nworkload: rest\nclients: 4\nduration: 2s\nrest:\n  token: {env: STAMPEDE_TEST_UNSET_TOKEN}\n  resources: [/a]\n"
        try yaml.write(to: file, atomically: true, encoding: .utf8)
        #expect(throws: ScenarioError.self) { try ScenarioLoader.load(path: file.path) }
        do { _ = try ScenarioLoader.load(path: file.path) } catch {
            #expect(error.line == 6)
            #expect(error.field == "rest.token.env")
            #expect(error.message.contains("STAMPEDE_TEST_UNSET_TOKEN"))
        }
        // Parsing alone (no run ahead) accepts it: the variable may be set where it runs.
        #expect(throws: Never.self) { try ScenarioLoader.parse(yaml: yaml, file: "rest.yaml") }
    }

    @Test func anOversizedScenarioIsRefusedWithoutParsingIt() throws {
        let file = temporaryFolder("huge").appendingPathComponent("huge.yaml")
        let body = "target: embedded\nclients: 1\nduration: 1s\nbulk:\n" + String(repeating: "  - 123456789\n", count: 200_000)
        try body.write(to: file, atomically: true, encoding: .utf8)
        do { _ = try ScenarioLoader.load(path: file.path); Issue.record("accepted") } catch {
            #expect(error.message.contains("at most \(ScenarioLoader.maxFileBytes) bytes"), "\(error)")
        }
        do { _ = try ScenarioLoader.load(path: "/dev/zero"); Issue.record("accepted") } catch {
            #expect(error.message.contains("not a regular file"), "\(error)")
        }
    }

    @Test func anUnwritableResultsFolderIsFoundBeforeTheRun() throws {
        #expect(throws: ResultsWriterError.self) { try ResultsWriter.checkWritable(resultsRoot: URL(fileURLWithPath: "/proc/stampede-results")) }
        do { try ResultsWriter.checkWritable(resultsRoot: URL(fileURLWithPath: "/dev/null/x")) } catch {
            #expect(error.description.contains("/dev/null is not a folder"), "\(error)")
            #expect(!error.description.contains("NSCocoaErrorDomain"))
        }
        let fine = temporaryFolder("results-ok").appendingPathComponent("a/b")
        try ResultsWriter.checkWritable(resultsRoot: fine)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fine.path).isEmpty)
    }

    /// Every input the fuzzer keeps (Tests/Fuzz/corpus/scenario, crash inputs included) goes
    /// through the same probe as the fuzz target; a trap would end this test process.
    @Test func theScenarioFuzzCorpusPlansOrIsRefusedWithoutTrapping() throws {
        let folder = repositoryRoot.appendingPathComponent("Tests/Fuzz/corpus/scenario")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(files.count >= 20)
        for name in files {
            let data = try Data(contentsOf: folder.appendingPathComponent(name))
            if case .rejected(let message) = ScenarioProbe.run(String(decoding: data, as: UTF8.self)) {
                #expect(message.contains(": "), "\(name): \(message)")
            }
        }
    }

    /// Tests/broken-input/broken_inputs.py: over 100 generated broken scenarios and 30 broken
    /// command lines against the real executable, `validate` and `run` alike.
    @Test func everyGeneratedBrokenInputExitsTwoNamingTheFieldWithoutCrashOrHang() throws {
        let r = try runProcess("/usr/bin/env", ["python3", repositoryRoot.appendingPathComponent("Tests/broken-input/broken_inputs.py").path,
                                                "--stampede", stampedeBinary.path], timeout: 600)
        #expect(r.status == 0, "\(r.stdout.suffix(6000))\(r.stderr.suffix(2000))")
        #expect(r.stdout.contains(" 0 failed"), "\(r.stdout.suffix(3000))")
    }
}
