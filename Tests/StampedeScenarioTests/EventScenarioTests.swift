import StampedeScenario
import Testing

/// Scenario events: stalls, server faults, commands and churn load as written, and every
/// mistake names its line and field.
@Test func everyKindOfEventIsLoaded() throws {
    let s = try ScenarioLoader.parse(yaml: """
        target: embedded
        clients: 10
        duration: 60s
        events:
          - {at: 1s, storm: {fraction: 0.5, mode: stall, for: 20s}}
          - {at: 2s, server: {fault: drop}}
          - {at: 3s, server: {fault: drop, mode: close}}
          - {at: 4s, server: {fault: reject, for: 5s}}
          - {at: 5s, server: {fault: stall, for: 500ms}}
          - {at: 6s, command: "./restart.sh --now"}
          - {at: 7s, command: {run: "echo hi", timeout: 10s}}
          - {at: 8s, churn: {rate: 20, for: 10s}}
          - {at: 50s, churn: {rate: 5}}
        """, file: "events.yaml")
    #expect(s.events.map(\.kind) == [
        .storm(fraction: 0.5, mode: .stall, stallSeconds: 20),
        .server(.drop(reset: true)),
        .server(.drop(reset: false)),
        .server(.reject(seconds: 5)),
        .server(.stall(seconds: 0.5)),
        .command(ExternalCommand(command: "./restart.sh --now", timeoutSeconds: 60)),
        .command(ExternalCommand(command: "echo hi", timeoutSeconds: 10)),
        .churn(ratePerSecond: 20, durationSeconds: 10),
        .churn(ratePerSecond: 5, durationSeconds: 10),  // until the end of the message phase
    ])
    #expect(s.events.filter(\.measuresRecovery).count == 7)
}

@Test func serverEventsNeedTheEmbeddedTargetOrAnAdminEndpoint() throws {
    let events = "events:\n  - {at: 1s, server: {fault: drop}}\n"
    do {
        _ = try ScenarioLoader.parse(yaml: "target: ws://127.0.0.1:9000/chat\nclients: 1\nduration: 10s\n" + events, file: "a.yaml")
        Issue.record("a server event against an external target without target_admin was accepted")
    } catch {
        #expect(error.field == "events[0].server")
        #expect(error.message.contains("target_admin"))
    }
    let s = try ScenarioLoader.parse(yaml: "target: ws://127.0.0.1:9000/chat\ntarget_admin: http://127.0.0.1:9100\nclients: 1\nduration: 10s\n" + events,
                                     file: "a.yaml")
    #expect(s.targetAdmin == AdminEndpoint(host: "127.0.0.1", port: 9100))
    #expect(throws: ScenarioError.self) {
        try ScenarioLoader.parse(yaml: "target: embedded\ntarget_admin: http://10.0.0.1:9100\nclients: 1\nduration: 10s\n", file: "a.yaml")
    }
}

@Test func badEventsNameTheirLineAndField() throws {
    let cases: [(String, String)] = [
        ("- {at: 1s, storm: {mode: stall}}", "events[0].storm.for"),
        ("- {at: 1s, storm: {mode: reset, for: 2s}}", "events[0].storm.for"),
        ("- {at: 1s, server: {fault: explode}}", "events[0].server.fault"),
        ("- {at: 1s, server: {fault: reject}}", "events[0].server.for"),
        ("- {at: 1s, server: {fault: drop, for: 1s}}", "events[0].server.for"),
        ("- {at: 1s, server: {fault: stall, for: 2h}}", "events[0].server.for"),
        ("- {at: 1s, command: \"\"}", "events[0].command"),
        ("- {at: 1s, command: {timeout: 1s}}", "events[0].command.run"),
        ("- {at: 1s, churn: {for: 1s}}", "events[0].churn.rate"),
        ("- {at: 1s, churn: {rate: 0}}", "events[0].churn.rate"),
        ("- {at: 1s, storm: {}, churn: {rate: 1}}", "events[0]"),
        ("- {at: 1s}", "events[0]"),
    ]
    for (event, field) in cases {
        do {
            _ = try ScenarioLoader.parse(yaml: "target: embedded\nclients: 1\nduration: 10s\nevents:\n  \(event)\n", file: "e.yaml")
            Issue.record("\(event) was accepted")
        } catch {
            #expect(error.field == field, "\(event): \(error)")
            #expect(error.line == 5, "\(event): \(error)")
        }
    }
}

@Test func delayEventsLoadAndAreNotRecoveryEvents() throws {
    let s = try ScenarioLoader.parse(yaml: """
        target: embedded
        clients: 10
        duration: 60s
        events:
          - {at: 0s, server: {fault: delay, ms: 2}}
          - {at: 30s, server: {fault: delay, ms: 0}}
        """, file: "delay.yaml")
    #expect(s.events.map(\.kind) == [.server(.delay(microseconds: 2000)), .server(.delay(microseconds: 0))])
    #expect(s.events.filter(\.measuresRecovery).isEmpty)
    for (event, field) in [("{fault: delay}", "events[0].server.ms"), ("{fault: delay, ms: 2.5}", "events[0].server.ms"),
                           ("{fault: delay, ms: 10001}", "events[0].server.ms"), ("{fault: delay, ms: 2, for: 1s}", "events[0].server.for"),
                           ("{fault: stall, for: 1s, ms: 2}", "events[0].server.ms"),
                           ("{fault: delay, us: 2.5}", "events[0].server.us"), ("{fault: delay, us: 10000001}", "events[0].server.us"),
                           ("{fault: delay, us: 300, ms: 2}", "events[0].server.us"), ("{fault: drop, us: 300}", "events[0].server.us")] {
        do {
            _ = try ScenarioLoader.parse(yaml: "target: embedded\nclients: 1\nduration: 10s\nevents:\n  - {at: 1s, server: \(event)}\n", file: "e.yaml")
            Issue.record("\(event) was accepted")
        } catch {
            #expect(error.field == field, "\(event): \(error)")
        }
    }
}

@Test func delayEventsTakeMicrosecondsInUs() throws {
    let s = try ScenarioLoader.parse(yaml: """
        target: embedded
        clients: 10
        duration: 60s
        events:
          - {at: 0s, server: {fault: delay, us: 300}}
          - {at: 30s, server: {fault: delay, us: 0}}
        """, file: "delay.yaml")
    #expect(s.events.map(\.kind) == [.server(.delay(microseconds: 300)), .server(.delay(microseconds: 0))])
    #expect(ServerFault.delay(microseconds: 300).description == "delay 300us")
    #expect(ServerFault.delay(microseconds: 2000).description == "delay 2ms", "whole milliseconds read as before")
}

@Test func delayEventsAreForChatOnly() throws {
    let hub = "target: embedded\nworkload: hub\nhub: {operation: invoke, method: Echo}\nclients: 1\nduration: 10s\n"
    _ = try ScenarioLoader.parse(yaml: hub, file: "e.yaml")
    do {
        _ = try ScenarioLoader.parse(yaml: hub + "events:\n  - {at: 1s, server: {fault: delay, ms: 2}}\n", file: "e.yaml")
        Issue.record("a delay event in a hub scenario was accepted")
    } catch {
        #expect(error.field == "events" && error.message.contains("chat and REST servers only"), "\(error)")
    }
}
