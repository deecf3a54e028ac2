import StampedeScenario
import Testing

/// `clients: {start, stages}`: connected clients over the message phase load as written, the
/// profile interpolates linearly, and every mistake names its file, line and field.
private func failure(_ yaml: String) -> ScenarioError? {
    do {
        _ = try ScenarioLoader.parse(yaml: yaml, file: "profile.yaml")
        return nil
    } catch {
        return error
    }
}

/// A 60 s chat scenario whose `clients:` mapping holds `clients` (lines 4 on).
private func scenario(_ clients: String, workload: String = "chat") -> String {
    "target: embedded\nworkload: \(workload)\nduration: 60s\nclients:\n\(clients)\n"
}

@Test func aClientProfileLoadsWithItsPeakAsTheClients() throws {
    let s = try ScenarioLoader.parse(yaml: scenario("  start: 10\n  stages: [{duration: 10s, target: 500}, {duration: 40s, target: 500}, {duration: 10s, target: 0}]"),
                                     file: "profile.yaml")
    #expect(s.clients == 500)
    #expect(s.clientProfile == ClientProfile(start: 10, stages: [ClientStage(durationSeconds: 10, target: 500),
                                                                ClientStage(durationSeconds: 40, target: 500), ClientStage(durationSeconds: 10, target: 0)]))
    let plain = try ScenarioLoader.parse(yaml: "target: embedded\nclients: 5\nduration: 5s\n", file: "plain.yaml")
    #expect(plain.clientProfile == nil)
}

@Test func theProfileIsLinearWithinAStageAndHoldsAfterTheLast() {
    let p = ClientProfile(start: 0, stages: [ClientStage(durationSeconds: 10, target: 100), ClientStage(durationSeconds: 10, target: 20)])
    #expect(p.clients(atSeconds: 0) == 0)
    #expect(p.clients(atSeconds: 2.5) == 25)
    #expect(p.clients(atSeconds: 10) == 100)
    #expect(p.clients(atSeconds: 15) == 60)
    #expect(p.clients(atSeconds: 20) == 20)
    #expect(p.clients(atSeconds: 1000) == 20)
    #expect(p.peak == 100 && p.totalSeconds == 20)
}

@Test func aLateTickStillReachesEveryStageTargetOnTheWay() {
    // 2 → 8 over 1 s, back to 2 over 1 s: ticks at 0.9 s and 1.1 s both want 7, but the peak of 8
    // lies between them and a follower must pass through it.
    let p = ClientProfile(start: 2, stages: [ClientStage(durationSeconds: 1, target: 8), ClientStage(durationSeconds: 1, target: 2)])
    #expect(p.waypoints(after: 0.9, through: 1.1) == [8, 7])
    #expect(p.waypoints(after: 0.5, through: 2.5) == [8, 2, 2])
    #expect(p.waypoints(after: 0.2, through: 0.5) == [5])
    #expect(p.waypoints(after: -1, through: 0) == [2])
}

@Test func clientProfileMistakesNameTheirField() throws {
    let long = try #require(failure(scenario("  stages: [{duration: 50s, target: 10}, {duration: 20s, target: 0}]")))
    #expect(long.line == 5 && long.field == "clients.stages" && long.message.contains("the stages take 70s"))
    let zero = try #require(failure(scenario("  stages: [{duration: 5s, target: 0}]")))
    #expect(zero.field == "clients.stages" && zero.message.contains("no client would ever connect"))
    let missing = try #require(failure(scenario("  stages: [{duration: 5s}]")))
    #expect(missing.line == 5 && missing.field == "clients.stages[0]" && missing.message.contains("both 'duration' and 'target'"))
    let unknown = try #require(failure(scenario("  begin: 3\n  stages: [{duration: 5s, target: 3}]")))
    #expect(unknown.line == 5 && unknown.field == "clients.begin")
    let rest = try #require(failure(scenario("  stages: [{duration: 5s, target: 3}]", workload: "rest") + "rest: {interval: 1s, resources: [/items]}\n"))
    #expect(rest.field == "clients.stages" && rest.message.contains("REST pollers cannot follow a profile"))
}
