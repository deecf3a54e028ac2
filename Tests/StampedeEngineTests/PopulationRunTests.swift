import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import StampedeWorkloads
import Synchronization
import Testing

/// `populations:` end to end against the embedded targets: one run, one results folder with a
/// folder per population, exact accounting in each, fan-out due across populations, thresholds
/// per population, and a later population's rate stages followed.
@Suite(.serialized)
struct PopulationRunTests {
    /// Listeners (chat, silent), publishers (chat, starting 2 s in, ramping 10 → 40/s), REST
    /// pollers and hub clients, with `thresholds` appended.
    static func launch(thresholds: String) throws -> Scenario {
        try ScenarioLoader.parse(yaml: """
            name: launch-small
            target: embedded
            duration: 6s
            drain: 3s
            populations:
              - {name: listeners, workload: chat, clients: 60, message: {rate: 0}}
              - name: publishers
                workload: chat
                clients: 6
                start: 1s
                message: {rate: 10, stages: [{duration: 2s, rate: 40}]}
              - {name: pollers, workload: rest, clients: 8, rest: {interval: 1s, resources: [/items]}}
              - {name: dashboards, workload: hub, clients: 6, message: {rate: 12}, hub: {method: Echo, arguments: ["{stamp}"]}}
            thresholds:
            \(thresholds)
            """, file: "launch-small.yaml")
    }

    static func run(_ s: Scenario) throws -> PopulationOutcome {
        try PopulationRun(scenario: s, options: RunOptions(loops: 2, resultsRoot: temporaryFolder(s.name), progress: .silent)).run()
    }

    @Test func everyPopulationIsAccountedForInItsOwnFolderAndTheRunIsTheirExactMerge() throws {
        let s = try Self.launch(thresholds: """
              round_trip{population:publishers}: ["p(99) < 10s"]
              http_2xx{population:pollers}: ["p(95) < 10s"]
              errors: ["count == 0"]
            """)
        let o = try Self.run(s)
        // Ceilings and counts that held: passes even if the generator was saturated.
        #expect(o.exitCode == 0, "\(o.summary.thresholds ?? [])")
        let folder = try #require(o.resultsFolder)
        #expect(o.populations.map(\.name) == ["listeners", "publishers", "pollers", "dashboards"])
        var sent: UInt64 = 0, delivered: UInt64 = 0
        for (name, p) in o.populations {
            let summary = p.summary
            #expect(summary.messages.accountingClosed, "\(name): \(summary.messages)")
            #expect(summary.errorsTotal == 0, "\(name): \(summary.errors.filter { $0.value > 0 })")
            #expect(p.resultsFolder?.path == folder.appendingPathComponent("populations/\(name)").path)
            for file in ["summary.json", "timeseries.csv", "report.html"] {
                #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("populations/\(name)/\(file)").path), "\(name)/\(file)")
            }
            sent += summary.messages.sent
            delivered += summary.messages.delivered
        }
        // The run's folder is the merge: counts summed, and the run's summary lists the populations.
        #expect(o.summary.messages.sent == sent && o.summary.messages.delivered == delivered)
        #expect(o.summary.scenario.clients == 80)
        #expect(o.summary.scenario.workload == "chat+rest+hub")
        #expect(o.summary.populations?.map(\.folder) == ["populations/listeners", "populations/publishers", "populations/pollers", "populations/dashboards"])
        let written = try RunSummary.decode(from: Data(contentsOf: folder.appendingPathComponent("summary.json")))
        #expect(written.populations?.count == 4)
        let report = try String(contentsOf: folder.appendingPathComponent("report.html"), encoding: .utf8)
        #expect(report.contains("id=\"populations-table\"") && report.contains("<a href=\"populations/publishers/report.html\">publishers</a>"))
        let listeners = try #require(o.populations.first { $0.name == "listeners" }?.outcome.summary)
        let publishers = try #require(o.populations.first { $0.name == "publishers" }?.outcome.summary)
        // Listeners send nothing and receive every publisher's message: due 60 × each one sent.
        #expect(listeners.messages.sent == 0)
        #expect(publishers.messages.sent > 0)
        #expect(listeners.messages.fanoutExpected == publishers.messages.sent * 60, "\(listeners.messages)")
        #expect(listeners.messages.fanoutReceived == listeners.messages.fanoutExpected, "\(listeners.messages)")
        #expect(publishers.messages.fanoutReceived == publishers.messages.sent * 5, "\(publishers.messages)")
        // Each population threshold is judged on its population, the run's on the whole run.
        let keys = Set((o.summary.thresholds ?? []).map(\.key))
        #expect(keys == ["errors", "round_trip{population:publishers}", "http_2xx{population:pollers}"])
        #expect((o.summary.thresholds ?? []).allSatisfy { $0.passed })
        #expect(publishers.thresholds?.map(\.key) == ["round_trip{population:publishers}"])
        try Self.expectSendsFollowTheTarget(folder.appendingPathComponent("populations/publishers/timeseries.csv"), summary: publishers)
    }

    /// The publishers joined 1 s into the run's message phase and ramp 10 → 40/s over their own
    /// first 2 s: in every interval of their timeseries.csv what they sent is what the profile
    /// intended over the interval's bounds (`target_rate`), within 2 % or one message, plus what
    /// the generator's late timers (its reported lag) moved across a bound.
    static func expectSendsFollowTheTarget(_ csv: URL, summary: RunSummary) throws {
        let lines = try String(contentsOf: csv, encoding: .utf8).split(separator: "\n").map { $0.split(separator: ",").map(String.init) }
        let header = try #require(lines.first)
        let elapsed = try #require(header.firstIndex(of: "elapsed_s"))
        let sent = try #require(header.firstIndex(of: "messages_sent"))
        let target = try #require(header.firstIndex(of: "target_rate"))
        let rows = lines.dropFirst().map { (elapsed: Double($0[elapsed])!, sent: Double($0[sent])!, target: Double($0[target])!) }
        let lag = Double(summary.generator.maxTimerLagMicros) / 1e6
        var checked = 0
        for (previous, row) in zip(rows, rows.dropFirst()) where row.target > 0 {
            let intended = row.target * (row.elapsed - previous.elapsed)
            #expect(abs(row.sent - intended) <= max(0.02 * intended, 1) + 2 * 40 * lag + 40 * 0.001,
                    "interval to \(row.elapsed) s: sent \(row.sent), intended \(intended)")
            checked += 1
        }
        #expect(checked >= 3)
    }

    @Test func aFailingPopulationThresholdFailsTheRun() throws {
        let s = try Self.launch(thresholds: """
              fanout{population:listeners}: ["p(99) < 1us"]
              round_trip{population:dashboards}: ["p(99) < 10s"]
            """)
        let o = try Self.run(s)
        // A saturated generator leaves unjudged (98) only a miss its delay could have caused.
        let failed = (o.summary.thresholds ?? []).contains { $0.verdict == .fail }
        #expect(o.exitCode == (failed ? 99 : 98), "\(o.summary.thresholds ?? [])")
        #expect(o.summary.thresholds?.first { $0.key.hasPrefix("fanout") }?.verdict != .pass)
        let results = Dictionary(uniqueKeysWithValues: (o.summary.thresholds ?? []).map { ($0.key, $0.passed) })
        #expect(results == ["fanout{population:listeners}": false, "round_trip{population:dashboards}": true])
    }
}

/// `stampede capacity --vary NAME.message.rate`: one population's load changes from step to step
/// while the others hold theirs, and the SLOs judge that population.
@Suite(.serialized)
struct PopulationCapacityTests {
    static let yaml = """
        name: cap-populations
        target: embedded
        duration: 30s
        populations:
          - {name: listeners, workload: chat, clients: 30, message: {rate: 0}}
          - {name: publishers, workload: chat, clients: 4, start: 10s, message: {rate: 5, stages: [{duration: 5s, rate: 50}]}}
        """

    @Test func aCapacityRunVariesOnePopulationWhileTheOthersHold() throws {
        let s = try ScenarioLoader.parse(yaml: Self.yaml, file: "cap-populations.yaml")
        let slo = try ThresholdSpec.parseSLO("round_trip p(99) < 10s", names: ThresholdNames()).get()
        var plan = CapacityPlan(scenario: s, vary: .messageRate, sloTexts: ["round_trip p(99) < 10s"], slos: [slo], from: 20, to: 40,
                                precision: 0.5, stepSeconds: 3, warmupSeconds: 1,
                                limits: .init(errorRatio: 0.01, lostRatio: 0.01, sendRatio: 0.9))
        plan.population = "publishers"
        plan.cooldownSeconds = 0
        #expect(plan.varyText == "publishers.message.rate")
        // (A 3 s window: the engine's one-second intervals do not start on the window's bounds,
        // and a step is judged on the whole intervals inside it.)
        // A step: every population from the start, one load each; only the publishers' rate is the step's.
        let step = plan.stepScenario(load: 30)
        #expect(step.populations.map(\.startSeconds) == [0, 0])
        #expect(step.populations.map(\.scenario.message.ratePerSecond) == [0, 30])
        #expect(step.populations.allSatisfy { $0.scenario.message.stages.isEmpty && $0.scenario.durationSeconds == 4 })

        let root = temporaryFolder("cap-populations")
        let o = CapacityRunner(plan: plan, options: RunOptions(loops: 2, resultsRoot: root, progress: .silent)).run()
        #expect(o.result.vary == "publishers.message.rate")
        #expect(o.result.steps.count >= 2, "\(o.result.conclusion) \(o.result.steps.map { "\($0.load) \($0.outcome) \($0.reasons)" })")
        let folder = try #require(o.folder)
        for step in o.result.steps {
            // The window is the publishers' own: what they were asked to send, not the listeners' nothing.
            #expect(step.intendedRate == step.load)
            #expect(step.sent > 0, "step at \(step.load): \(step.outcome)")
            let stepFolder = folder.appendingPathComponent(try #require(step.resultsFolder))
            let listeners = try RunSummary.decode(from: Data(contentsOf: stepFolder.appendingPathComponent("populations/listeners/summary.json")))
            let publishers = try RunSummary.decode(from: Data(contentsOf: stepFolder.appendingPathComponent("populations/publishers/summary.json")))
            #expect(listeners.scenario.clients == 30 && listeners.messages.sent == 0)
            #expect(publishers.scenario.clients == 4 && publishers.messages.sent > 0)
        }
    }

    @Test func capacityFlagsThatDoNotNameAPopulationOfTheScenarioExitTwo() throws {
        let file = temporaryFolder("cap-populations-flags").appendingPathComponent("cap.yaml")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Self.yaml.write(to: file, atomically: true, encoding: .utf8)
        for (vary, text) in [("message.rate", "name the one to vary, like --vary listeners.message.rate"),
                             ("talkers.message.rate", "no population named 'talkers' (populations: listeners, publishers)")] {
            let r = try runProcess(stampedeBinary.path, ["capacity", file.path, "--vary", vary, "--slo", "round_trip p(99) < 50ms"], timeout: 20)
            #expect(r.status == 2, "\(vary): \(r.stderr)")
            #expect(r.stderr.contains(text), "\(vary): \(r.stderr)")
        }
    }
}

/// A run of populations over worker processes (`--processes N`: each population's clients on N
/// workers of its own), still one folder, every population exact, fan-out due across them.
@Suite(.serialized)
struct PopulationWorkerTests {
    @Test func populationsRunOverWorkerProcessesWithTheirAccountingExact() throws {
        let folder = temporaryFolder("population-workers")
        let file = folder.appendingPathComponent("launch-workers.yaml")
        try """
            name: launch-workers
            target: embedded
            duration: 3s
            drain: 3s
            populations:
              - {name: listeners, workload: chat, clients: 40, message: {rate: 0}}
              - {name: publishers, workload: chat, clients: 4, start: 1s, message: {rate: 20}}
              - {name: pollers, workload: rest, clients: 6, rest: {interval: 1s, resources: [/items]}}
              - {name: viewers, workload: chat, message: {rate: 0}, clients: {start: 2, stages: [{duration: 1s, target: 8}, {duration: 1s, target: 2}]}}
            """.write(to: file, atomically: true, encoding: .utf8)
        let r = try runProcess(stampedeBinary.path, ["run", file.path, "--processes", "2", "--plain", "--results", folder.appendingPathComponent("results").path],
                               timeout: 120)
        #expect(r.status == 0, "\(r.stderr.suffix(3000))")
        let line = try #require(r.stdout.split(separator: "\n").last { $0.hasPrefix("results: ") })
        let results = URL(fileURLWithPath: String(line.dropFirst("results: ".count)))
        let summary = try RunSummary.decode(from: Data(contentsOf: results.appendingPathComponent("summary.json")))
        #expect(summary.populations?.map(\.name) == ["listeners", "publishers", "pollers", "viewers"])
        var each: [String: RunSummary] = [:]
        for name in ["listeners", "publishers", "pollers", "viewers"] {
            let s = try RunSummary.decode(from: Data(contentsOf: results.appendingPathComponent("populations/\(name)/summary.json")))
            #expect(s.workers?.count == 2, "\(name)")
            #expect(s.messages.accountingClosed && s.messages.lost == 0 && s.errorsTotal == 0, "\(name): \(s.messages)")
            each[name] = s
        }
        let sent = try #require(each["publishers"]?.messages.sent)
        #expect(sent > 0)
        #expect(each["listeners"]?.messages.fanoutReceived == sent * 40 && each["listeners"]?.messages.fanoutExpected == sent * 40)
        #expect(each["pollers"].map { $0.messages.sent > 0 } == true)
        // The viewers' profile, followed across their two workers: 2 → 8 → 2.
        #expect(each["viewers"]?.counters["ramped_up"] == 6 && each["viewers"]?.counters["ramped_down"] == 6, "\(each["viewers"]?.counters ?? [:])")
        #expect(summary.messages.sent == sent + (each["pollers"]?.messages.sent ?? 0))
    }
}

/// `clients: {start, stages}` end to end: the connected clients follow the profile, clients
/// leave cleanly (counted as ramped down, not as errors), and every message is accounted for.
@Suite(.serialized)
struct ClientProfileRunTests {
    @Test func connectedClientsFollowTheProfileAndLeaveCleanly() throws {
        let s = try ScenarioLoader.parse(yaml: """
            name: client-stages
            target: embedded
            duration: 8s
            drain: 2s
            clients:
              start: 5
              stages: [{duration: 2s, target: 30}, {duration: 2s, target: 30}, {duration: 2s, target: 0}]
            message: {rate: 30}
            """, file: "client-stages.yaml")
        let profile = try #require(s.clientProfile)
        // Each interval's open count, against the profile at the interval's end in the message phase.
        let seen = Mutex<[(phaseSeconds: Double, open: Int, lateSeconds: Double)]>([])
        var options = RunOptions(loops: 2, resultsRoot: temporaryFolder(s.name), progress: .silent)
        options.intervalObserver = { r in
            guard let m = r.messagePhaseSeconds, r.phase == "messages" else { return }
            // How late this interval ended (the engine's tick is due every second) and how late
            // the loops' timers ran: on a busy machine the profile is followed late by as much.
            let late = max(0, m.upperBound - m.lowerBound - 1) + Double(r.timerLagNs) / 1e9
            seen.withLock { $0.append((m.upperBound, r.open, late)) }
        }
        let o = try RunEngine(scenario: s, options: options).run()
        #expect(o.exitCode == 0, "\(o.record.fatalError ?? "")")
        #expect(o.summary.errorsTotal == 0, "\(o.summary.errors.filter { $0.value > 0 })")
        #expect(o.summary.messages.accountingClosed && o.summary.messages.lost == 0, "\(o.summary.messages)")
        #expect(o.summary.counters["ramped_up"] == 25)
        #expect(o.summary.counters["ramped_down"] == 30)
        #expect(o.summary.messages.fanoutReceived >= o.summary.messages.fanoutExpected, "the fan-out due is a lower bound")
        #expect(o.summary.connections.failed == 0)
        let rows = seen.withLock { $0 }
        #expect(rows.count >= 5)
        for row in rows where row.phaseSeconds > 0 {
            // The engine follows the profile every 100 ms and a connect or a close takes a round
            // trip: within what the profile moves in 0.3 s (12.5 clients a second here), plus one.
            let wanted = profile.clients(atSeconds: row.phaseSeconds)
            #expect(Double(abs(row.open - wanted)) <= 5 + 12.5 * row.lateSeconds, "at \(row.phaseSeconds) s: \(row.open) open, profile \(wanted)")
        }
    }

    /// Hub and Socket.IO clients against the embedded targets: up from 2 to 12, held, down to 0;
    /// every join and leave counted, nothing lost, no error. (Socket.IO clients that join mid-run
    /// upgrade from long polling while their emits are in flight: the reference server must
    /// answer every poll between `3probe` and `5`, or the upgrade waits on a held poll.)
    @Test(arguments: ["hub", "socketio"])
    func hubAndSocketIOClientsFollowTheProfileToo(_ workload: String) throws {
        let section = workload == "hub" ? "hub: {method: Echo, arguments: [\"{stamp}\"]}"
            : "socketio: {namespace: /live, emit: {event: echo, args: [\"{stamp}\"], ack: true}}"
        let s = try ScenarioLoader.parse(yaml: """
            name: client-stages-\(workload)
            workload: \(workload)
            target: embedded
            duration: 6s
            drain: 2s
            clients:
              start: 2
              stages: [{duration: 2s, target: 12}, {duration: 1s, target: 12}, {duration: 2s, target: 0}]
            message: {rate: 24}
            \(section)
            """, file: "client-stages.yaml")
        let o = try RunEngine(scenario: s, options: RunOptions(loops: 2, resultsRoot: temporaryFolder(s.name), progress: .silent)).run()
        #expect(o.exitCode == 0, "\(o.record.fatalError ?? "")")
        #expect(o.summary.errorsTotal == 0, "\(o.summary.errors.filter { $0.value > 0 })")
        #expect(o.summary.messages.accountingClosed && o.summary.messages.lost == 0, "\(o.summary.messages)")
        #expect(o.summary.messages.sent > 0)
        #expect(o.summary.counters["ramped_up"] == 10)
        #expect(o.summary.counters["ramped_down"] == 12)
        #expect(o.summary.connections.peakOpen == 12)
    }
}

/// `stampede compare` of two runs of populations: the runs, then each population both have;
/// `stampede merge` of them: the runs, and each population on its own, exactly.
@Suite(.serialized)
struct PopulationCompareTests {
    @Test func compareShowsTheRunAndThenEachPopulationAndMergeKeepsThemApart() throws {
        let s = try ScenarioLoader.parse(yaml: """
            name: compare-populations
            target: embedded
            duration: 2s
            populations:
              - {name: listeners, workload: chat, clients: 10, message: {rate: 0}}
              - {name: publishers, workload: chat, clients: 2, message: {rate: 10}}
            """, file: "compare-populations.yaml")
        let root = temporaryFolder("compare-populations")
        var folders: [String] = []
        for i in 0..<2 {
            var options = RunOptions(loops: 1, resultsRoot: root, progress: .silent)
            options.resultsFolderName = "run-\(i)"
            folders.append(try #require(try PopulationRun(scenario: s, options: options).run().resultsFolder).path)
        }
        let r = try runProcess(stampedeBinary.path, ["compare"] + folders, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("population listeners") && lines.contains("population publishers"), "\(r.stdout)")
        let markdown = try runProcess(stampedeBinary.path, ["compare", "--format", "markdown"] + folders, timeout: 60)
        #expect(markdown.stdout.contains("### Population publishers"))

        let out = root.appendingPathComponent("merged")
        let merge = try runProcess(stampedeBinary.path, ["merge"] + folders + ["-o", out.path], timeout: 60)
        #expect(merge.status == 0, "\(merge.stderr)")
        let inputs = try folders.map { try RunSummary.decode(from: Data(contentsOf: URL(fileURLWithPath: $0).appendingPathComponent("populations/publishers/summary.json"))) }
        let publishers = try RunSummary.decode(from: Data(contentsOf: out.appendingPathComponent("populations/publishers/summary.json")))
        #expect(publishers.messages.sent == inputs.reduce(0) { $0 + $1.messages.sent })
        #expect(publishers.latencyMicros["round_trip"]?.count == inputs.reduce(0) { $0 + ($1.latencyMicros["round_trip"]?.count ?? 0) })
        let run = try RunSummary.decode(from: Data(contentsOf: out.appendingPathComponent("summary.json")))
        #expect(run.populations?.map(\.name) == ["listeners", "publishers"])
        #expect(run.populations?.first { $0.name == "publishers" }?.messagesSent == publishers.messages.sent)
    }
}
