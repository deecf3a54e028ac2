import StampedeScenario
import Testing

/// `populations:`: each population loads as a whole scenario over the top-level fields, the run
/// is their sum, thresholds may name one, and every mistake names its file, line and field.
private func failure(_ yaml: String) -> ScenarioError? {
    do {
        _ = try ScenarioLoader.parse(yaml: yaml, file: "launch.yaml")
        return nil
    } catch {
        return error
    }
}

/// A run of listeners and publishers on one chat target, with `extra` appended to the top level
/// and `more` to the publishers' entry (line 13 on).
private func launch(extra: String = "", more: String = "") -> String {
    """
    name: launch
    target: ws://127.0.0.1:8765/chat
    duration: 60s
    message: {size: 200}
    populations:
      - name: listeners
        clients: 400
        connect_rate: 200
        message: {rate: 0}
      - name: publishers
        clients: 10
        start: 5s
        message: {rate: 10, stages: [{duration: 10s, rate: 100}]}
    \(more)
    \(extra)
    """
}

@Test func eachPopulationInheritsTheTopLevelFieldsItDoesNotGive() throws {
    let s = try ScenarioLoader.parse(yaml: launch(), file: "launch.yaml")
    #expect(s.name == "launch")
    #expect(s.clients == 410)
    #expect(s.durationSeconds == 60)
    #expect(s.populations.map(\.name) == ["listeners", "publishers"])
    let listeners = s.populations[0], publishers = s.populations[1]
    #expect(listeners.startSeconds == 0 && publishers.startSeconds == 5)
    #expect(listeners.scenario.target == publishers.scenario.target)
    #expect(listeners.scenario.connectRate == 200 && publishers.scenario.connectRate == 1000)
    // `message` is replaced whole by a population's own: its size comes back to the default.
    #expect(listeners.scenario.message.ratePerSecond == 0)
    #expect(publishers.scenario.message.stages == [RateStage(durationSeconds: 10, ratePerSecond: 100)])
    // A later population's message phase is what is left of the run.
    #expect(listeners.scenario.durationSeconds == 60 && publishers.scenario.durationSeconds == 55)
}

@Test func populationsMayMixWorkloadsAndTargets() throws {
    let s = try ScenarioLoader.parse(yaml: """
        target: embedded
        duration: 30s
        populations:
          - {name: chatters, clients: 10}
          - name: pollers
            workload: rest
            target: http://127.0.0.1:8080/api
            clients: 20
            rest: {interval: 2s, resources: [/items]}
          - name: dashboards
            workload: hub
            clients: 5
            hub: {operation: none, receive: ReceiveMessage}
        """, file: "mixed.yaml")
    #expect(s.populations.map(\.scenario.workload) == [.chat, .rest, .hub])
    #expect(s.populations[0].scenario.target == .embedded)
    #expect(s.populations[1].scenario.target != .embedded)
    #expect(s.populations[2].scenario.hub != nil)
}

@Test func thresholdsMayNameAPopulationAndAreJudgedOnItAlone() throws {
    let s = try ScenarioLoader.parse(yaml: launch(extra: """
        thresholds:
          round_trip{population:publishers}: ["p(99) < 50ms"]
          fanout{population:listeners}@late: {conditions: ["p(99) < 100ms"], after: 10s}
          errors: ["count == 0"]
        """), file: "launch.yaml")
    #expect(s.thresholds.map(\.key) == ["errors"])
    #expect(s.populations[1].scenario.thresholds.map(\.key) == ["round_trip{population:publishers}"])
    #expect(s.populations[0].scenario.thresholds.map(\.key) == ["fanout{population:listeners}@late"])
    #expect(s.populations[0].scenario.thresholds.first?.metric == "fanout")
    #expect(s.populations[0].scenario.thresholds.first?.label == "late")
}

@Test func aThresholdNamingAnUnknownPopulationIsRefusedAtItsLine() throws {
    let e = try #require(failure(launch(extra: "thresholds:\n  round_trip{population:publisher}: [\"p(99) < 50ms\"]")))
    #expect(e.line == 16)
    #expect(e.field == "thresholds.round_trip{population:publisher}")
    #expect(e.message.contains("no population named 'publisher' (populations: listeners, publishers)"))
    let malformed = try #require(failure(launch(extra: "thresholds:\n  round_trip{scenario:publishers}: [\"p(99) < 50ms\"]")))
    #expect(malformed.message.contains("expected '{population:NAME}'"))
    let single = try #require(failure("target: embedded\nclients: 1\nduration: 5s\nthresholds:\n  round_trip{population:a}: [\"p(99) < 1s\"]\n"))
    #expect(single.line == 5 && single.message.contains("this scenario has no 'populations'"))
}

@Test func twoPopulationsOfOneNameAreRefused() throws {
    let e = try #require(failure(launch(more: "  - {name: listeners, clients: 5}")))
    #expect(e.line == 14)
    #expect(e.field == "populations[2].name")
    #expect(e.message.contains("given twice"))
}

@Test func aStartAtOrAfterTheEndOfTheRunIsRefused() throws {
    let e = try #require(failure(launch().replacingOccurrences(of: "start: 5s", with: "start: 60s")))
    #expect(e.line == 12 && e.field == "populations[1].start")
    #expect(e.message.contains("not before the end of the run"))
}

@Test func stagesThatDoNotFitAfterTheStartAreRefused() throws {
    let e = try #require(failure(launch().replacingOccurrences(of: "start: 5s", with: "start: 55s")))
    #expect(e.line == 12 && e.field == "populations[1].start")
    #expect(e.message.contains("stages take 10s but it starts 55s into a 60s run"))
}

@Test func aMistakeInsideAPopulationNamesThePopulationsField() throws {
    let e = try #require(failure(launch().replacingOccurrences(of: "connect_rate: 200", with: "connect_rate: fast")))
    #expect(e.line == 8)
    #expect(e.field == "populations[0].connect_rate")
    let hub = try #require(failure(launch(more: "  - {name: hubs, workload: hub, clients: 5, target: embedded}")))
    #expect(hub.field == "populations[2].hub" && hub.line == 14)
    // A top-level field that does not suit a population is reported where it is, naming the population.
    let inherited = try #require(failure(launch(more: "  - {name: hubs, workload: hub, clients: 5, hub: {method: Echo}}")))
    #expect(inherited.line == 2 && inherited.field == "target")
    #expect(inherited.message.hasSuffix("(for population 'hubs', which takes 'target' from the top level)"))
}

@Test func runFieldsInAPopulationAndPopulationFieldsAtTheTopAreRefused() throws {
    let duration = try #require(failure(launch(more: "    duration: 10s")))
    #expect(duration.line == 14 && duration.field == "populations[1].duration")
    #expect(duration.message.contains("the run's duration is the same for every population"))
    let clients = try #require(failure(launch(extra: "clients: 5")))
    #expect(clients.line == 15 && clients.field == "clients")
    #expect(clients.message.contains("each population gives its own clients"))
    let missing = try #require(failure(launch(more: "  - {name: quiet}")))
    #expect(missing.line == 14 && missing.field == "populations[2].clients")
    let empty = try #require(failure("target: embedded\nduration: 5s\npopulations: []\n"))
    #expect(empty.line == 3 && empty.field == "populations")
}

@Test func theClientsFlagIsRefusedWithPopulationsNamingTheFlag() throws {
    do {
        _ = try ScenarioLoader.parse(yaml: launch(), file: "launch.yaml", overrides: [ScenarioLoader.Override(flag: "--clients", value: "5")!])
        Issue.record("--clients was accepted with populations")
    } catch {
        #expect(error.flag == "--clients")
        #expect(error.message.contains("each population gives its own clients"))
    }
}
