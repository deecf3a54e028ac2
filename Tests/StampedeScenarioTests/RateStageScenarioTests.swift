import StampedeScenario
import Testing

/// `message.stages`: the arrival rate over the message phase loads as written, and every mistake
/// names its file, line and field.
private func failure(_ yaml: String) -> ScenarioError? {
    do {
        _ = try ScenarioLoader.parse(yaml: yaml, file: "stages.yaml")
        return nil
    } catch {
        return error
    }
}

/// A 60 s open-model chat scenario whose `message:` mapping holds `message` (lines 5 on).
private func scenario(_ message: String, extra: String = "") -> String {
    "target: embedded\nclients: 10\nduration: 60s\n\(extra)message:\n\(message)\n"
}

@Test func stagesLoadWithTheStartingRateDefaultingToZero() throws {
    let s = try ScenarioLoader.parse(yaml: """
        target: embedded
        clients: 10
        duration: 3m
        message:
          size: 256
          stages:
            - {duration: 10s, rate: 100}
            - {duration: 500ms, rate: 1000}
            - {duration: 2m, rate: 0}
        """, file: "stages.yaml")
    #expect(s.message == MessageSpec(ratePerSecond: 0, size: 256, stages: [
        RateStage(durationSeconds: 10, ratePerSecond: 100), RateStage(durationSeconds: 0.5, ratePerSecond: 1000),
        RateStage(durationSeconds: 120, ratePerSecond: 0),
    ]))
}

@Test func messageRateIsTheFirstStagesStartingRate() throws {
    let s = try ScenarioLoader.parse(yaml: scenario("  rate: 10\n  stages: [{duration: 10s, rate: 100}]"), file: "stages.yaml")
    #expect(s.message.ratePerSecond == 10)
    #expect(s.message.stages == [RateStage(durationSeconds: 10, ratePerSecond: 100)])
}

@Test func aScenarioWithoutStagesIsUnchanged() throws {
    let s = try ScenarioLoader.parse(yaml: scenario("  rate: 25"), file: "stages.yaml")
    #expect(s.message == MessageSpec(ratePerSecond: 25, size: 128))
}

@Test func stagesAddingUpToExactlyTheDurationAreAccepted() throws {
    let s = try ScenarioLoader.parse(yaml: scenario("  stages: [{duration: 30s, rate: 5}, {duration: 0.5m, rate: 5}]"), file: "stages.yaml")
    #expect(s.message.stages.count == 2)
}

@Test(arguments: [
    ("  stages: [{duration: 0s, rate: 5}]", "message.stages[0].duration", "expected a duration > 0"),
    ("  stages: [{duration: fast, rate: 5}]", "message.stages[0].duration", "expected a duration > 0"),
    ("  stages: [{duration: 1s, rate: 5}, {duration: 1s, rate: -1}]", "message.stages[1].rate", "expected a number ≥ 0"),
    ("  stages: [{duration: 1s, rate: 0.0001}]", "message.stages[0].rate", "expected 0 (no messages) or a rate from 0.001"),
    ("  stages: [{duration: 1s, rate: 20000000}]", "message.stages[0].rate", "expected a number ≥ 0 and ≤ 10000000"),
    ("  stages: [{duration: 1s, rate: lots}]", "message.stages[0].rate", "expected a number ≥ 0"),
    ("  stages: [{duration: 1s}]", "message.stages[0].rate", "missing required field 'rate'"),
    ("  stages: [{rate: 1}]", "message.stages[0].duration", "missing required field 'duration'"),
    ("  stages: [{duration: 1s, rate: 1, rampTo: 3}]", "message.stages[0].rampTo", "unknown field 'rampTo'"),
    ("  stages: [{duraton: 1s, rate: 1}]", "message.stages[0].duraton", "unknown field 'duraton'; did you mean 'duration'?"),
    ("  stages: [5]", "message.stages[0]", "expected a mapping with 'duration' and 'rate'"),
    ("  stages: []", "message.stages", "expected a list of stages"),
    ("  stages: {duration: 1s, rate: 1}", "message.stages", "expected a list of stages"),
    ("  stagse: []", "message.stagse", "unknown field 'stagse'; did you mean 'stages'?"),
])
func badStagesAreRefusedNamingTheField(message: String, field: String, text: String) throws {
    let error = try #require(failure(scenario(message)))
    #expect(error.file == "stages.yaml")
    #expect(error.line >= 5)
    #expect(error.field == field)
    #expect(error.message.hasPrefix(text), "\(error.message)")
}

@Test func stagesLongerThanTheDurationAreRefused() throws {
    let error = try #require(failure(scenario("  stages:\n    - {duration: 50s, rate: 5}\n    - {duration: 11s, rate: 5}")))
    #expect(error.line == 6)
    #expect(error.field == "message.stages")
    #expect(error.message.hasPrefix("the stages take 61s, longer than the message phase (duration: 60s)"))
}

@Test func stagesLongerThanADurationFromTheCommandLineNameTheFlag() throws {
    let overrides = [ScenarioLoader.Override(flag: "--duration", value: "10s")!]
    do {
        _ = try ScenarioLoader.parse(yaml: scenario("  stages: [{duration: 20s, rate: 5}]"), file: "stages.yaml", overrides: overrides)
        Issue.record("loaded")
    } catch {
        #expect(error.field == "message.stages")
        #expect(error.message.contains("from --duration"), "\(error.message)")
    }
}

@Test func stagesNeedTheOpenModel() throws {
    let error = try #require(failure(scenario("  stages: [{duration: 1s, rate: 5}]", extra: "load_model: closed\n")))
    #expect(error.line == 6)
    #expect(error.field == "message.stages")
    #expect(error.message.hasPrefix("the closed model has no arrival rate"))
}

@Test func restScenariosHaveNoMessageStages() throws {
    let error = try #require(failure("""
        target: http://127.0.0.1:8080/api
        workload: rest
        clients: 10
        duration: 60s
        rest: {resources: [/items]}
        message:
          stages: [{duration: 1s, rate: 5}]
        """))
    #expect(error.line == 7)
    #expect(error.field == "message.stages")
}

// MARK: Short forms

@Test func aSpikeExpandsToHoldRampHoldRampStagesAroundTheBaseRate() throws {
    let s = try ScenarioLoader.parse(yaml: scenario("  rate: 100\n  spike: {rate: 2000, at: 20s, ramp: 2s, hold: 10s}"), file: "stages.yaml")
    #expect(s.message.ratePerSecond == 100)
    #expect(s.message.stages == [
        RateStage(durationSeconds: 20, ratePerSecond: 100), RateStage(durationSeconds: 2, ratePerSecond: 2000),
        RateStage(durationSeconds: 10, ratePerSecond: 2000), RateStage(durationSeconds: 2, ratePerSecond: 100),
    ])
    // At 0 there is no lead-in stage, and the ramp defaults to 1 s.
    let atOnce = try ScenarioLoader.parse(yaml: scenario("  rate: 10\n  spike: {rate: 50, hold: 5s}"), file: "stages.yaml")
    #expect(atOnce.message.stages == [RateStage(durationSeconds: 1, ratePerSecond: 50), RateStage(durationSeconds: 5, ratePerSecond: 50),
                                      RateStage(durationSeconds: 1, ratePerSecond: 10)])
}

@Test func aStepExpandsToEqualStepsFromTheBaseRateToItsRate() throws {
    let s = try ScenarioLoader.parse(yaml: scenario("  rate: 100\n  step: {rate: 400, steps: 3, every: 10s, ramp: 500ms}"), file: "stages.yaml")
    #expect(s.message.stages == [
        RateStage(durationSeconds: 0.5, ratePerSecond: 200), RateStage(durationSeconds: 10, ratePerSecond: 200),
        RateStage(durationSeconds: 0.5, ratePerSecond: 300), RateStage(durationSeconds: 10, ratePerSecond: 300),
        RateStage(durationSeconds: 0.5, ratePerSecond: 400), RateStage(durationSeconds: 10, ratePerSecond: 400),
    ])
}

@Test func shortFormMistakesNameTheirField() {
    let cases: [(String, String)] = [
        ("  spike: {rate: 10, hold: 5s}\n  step: {rate: 10, steps: 2, every: 5s}", "message.step"),
        ("  stages: [{duration: 5s, rate: 5}]\n  spike: {rate: 10, hold: 5s}", "message.spike"),
        ("  spike: {rate: 10}", "message.spike.hold"),
        ("  spike: {rate: 10, hold: 5s, peak: 3}", "message.spike.peak"),
        ("  step: {rate: 10, steps: 0, every: 5s}", "message.step.steps"),
        ("  step: {rate: 10, steps: 2}", "message.step.every"),
        // 10 steps of 1 s + 10 s: longer than the 60 s phase.
        ("  step: {rate: 10, steps: 10, every: 10s}", "message.step"),
    ]
    for (message, field) in cases {
        let e = failure(scenario(message))
        #expect(e?.field == field, "\(message): \(e.map { "\($0)" } ?? "accepted")")
        #expect(e?.file == "stages.yaml" && (e?.line ?? 0) >= 4)
    }
}
