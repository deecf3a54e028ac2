import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import StampedeWorkloads
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
        let saturated = o.populations.contains { $0.outcome.summary.generator.saturated }
        #expect(o.exitCode == (saturated ? 98 : 0), "\(o.summary.thresholds ?? [])")
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
    }

    @Test func aFailingPopulationThresholdFailsTheRun() throws {
        let s = try Self.launch(thresholds: """
              fanout{population:listeners}: ["p(99) < 1us"]
              round_trip{population:dashboards}: ["p(99) < 10s"]
            """)
        let o = try Self.run(s)
        let saturated = o.populations.contains { $0.outcome.summary.generator.saturated }
        #expect(o.exitCode == (saturated ? 98 : 99), "\(o.summary.thresholds ?? [])")
        let results = Dictionary(uniqueKeysWithValues: (o.summary.thresholds ?? []).map { ($0.key, $0.passed) })
        #expect(results == ["fanout{population:listeners}": false, "round_trip{population:dashboards}": true])
    }
}
