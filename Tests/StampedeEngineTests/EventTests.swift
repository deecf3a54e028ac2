import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import Testing

/// Scenario events besides client storms: stalls, external commands (restarting a third-party
/// server), churn, and the reference target's faults. Each affected client is counted and its
/// recovery measured; the accounting closes.
@Suite(.serialized)
struct EventTests {
    @Test func stalledChatClientsReadAgainAfterTheStallAndLoseNothing() throws {
        var s = chatScenario(name: "stall-chat", clients: 10, duration: 2, rate: 40)
        s.drainSeconds = 1
        s.events = [ScenarioEvent(atSeconds: 0.3, kind: .storm(fraction: 1, mode: .stall, stallSeconds: 0.8))]
        let o = try run(s)
        let storm = try #require(o.summary.storms.first)
        #expect(storm.affected == 10 && storm.recovered == 10 && storm.gaveUp == 0)
        // Recovery is the moment the client reads again: never before the stall is over.
        #expect(try #require(storm.recoveryMs["p50"] ?? nil) >= 800)
        #expect(storm.attempts["max"] == 0 || storm.attempts.isEmpty || storm.attempts["max"] == 1)
        #expect(o.summary.messages.accountingClosed)
        #expect(o.summary.messages.lost == 0, "the connections survived the stall")
        #expect(o.summary.counters["reconnected"] == 0)
    }

    @Test func stalledHubClientsReadAgainAfterTheStall() throws {
        var s = hubScenario("stall-hub", target: .embedded, transport: .webSockets, protocolKind: .json, clients: 6,
                            duration: 2, rate: 30, operation: .invoke, method: "Echo", arguments: [.stamp])
        s.events = [ScenarioEvent(atSeconds: 0.3, kind: .storm(fraction: 1, mode: .stall, stallSeconds: 0.8))]
        let o = try run(s)
        let storm = try #require(o.summary.storms.first)
        #expect(storm.affected == 6 && storm.recovered == 6)
        #expect(try #require(storm.recoveryMs["p50"] ?? nil) >= 800)
        #expect(o.summary.messages.accountingClosed)
        #expect(o.summary.messages.lost == 0)
    }

    @Test func churnReplacesClientsWithNewUsersAndTheAccountingCloses() throws {
        var s = chatScenario(name: "churn-chat", clients: 20, duration: 2.5, rate: 40)
        s.drainSeconds = 1
        s.events = [ScenarioEvent(atSeconds: 0.2, kind: .churn(ratePerSecond: 10, durationSeconds: 2))]
        let o = try run(s)
        let left = o.summary.counters["churn_left", default: 0]
        #expect(left >= 10, "about 20 should leave in 2 s at 10/s")
        #expect(o.summary.counters["churn_joined"] == left)
        #expect(o.summary.messages.accountingClosed)
        #expect(o.summary.messages.lost == 0, "only idle clients leave")
        #expect(o.summary.storms.isEmpty, "churn has no recovery to measure")
    }

    @Test func hubChurnReplacesClientsWithNewUsers() throws {
        var s = hubScenario("churn-hub", target: .embedded, transport: .webSockets, protocolKind: .json, clients: 10,
                            duration: 2, rate: 20, operation: .invoke, method: "Echo", arguments: [.stamp])
        s.events = [ScenarioEvent(atSeconds: 0.2, kind: .churn(ratePerSecond: 10, durationSeconds: 1.5))]
        let o = try run(s)
        let left = o.summary.counters["churn_left", default: 0]
        #expect(left >= 5)
        #expect(o.summary.counters["churn_joined"] == left)
        #expect(o.summary.messages.accountingClosed)
    }

    @Test func aCommandEventRunsInTheScenarioFolderAndItsOutputIsKept() throws {
        let folder = temporaryFolder("command-event")
        var s = chatScenario(name: "command-event", clients: 4, duration: 1.5, rate: 8)
        s.file = folder.appendingPathComponent("scenario.yaml").path
        s.events = [ScenarioEvent(atSeconds: 0.2, kind: .command(ExternalCommand(command: "echo here: $(pwd); echo oops >&2; exit 3"))),
                    ScenarioEvent(atSeconds: 0.4, kind: .command(ExternalCommand(command: "sleep 30", timeoutSeconds: 0.5)))]
        let o = try run(s)
        #expect(o.exitCode == 0)
        let first = try #require(o.summary.storms.first?.command)
        #expect(first.exitStatus == 3 && !first.timedOut)
        let log = try String(contentsOf: try #require(o.resultsFolder).appendingPathComponent(first.outputFile), encoding: .utf8)
        #expect(log.contains("here: \(folder.resolvingSymlinksInPath().path)") || log.contains("here: \(folder.path)"))
        #expect(log.contains("oops"))
        let second = try #require(o.summary.storms.last?.command)
        #expect(second.timedOut && second.exitStatus == nil)
        #expect(o.summary.files.contains("event-1-command.log"))
    }

    @Test func aServerDropOnTheEmbeddedTargetIsRecoveredFromByEveryClient() throws {
        var s = chatScenario(name: "server-drop-chat", clients: 12, duration: 2, rate: 24)
        s.drainSeconds = 1
        s.reconnect = .delays([0.1, 0.3, 0.5])
        s.events = [ScenarioEvent(atSeconds: 0.5, kind: .server(.drop(reset: false)))]
        let o = try run(s)
        let event = try #require(o.summary.storms.first)
        #expect(event.kind == "server" && event.mode == "drop close" && event.faultError == nil)
        #expect(event.affected == 12 && event.recovered == 12)
        // The drop's 1012 "service restart" is the server's choice: neither a protocol error nor an error close.
        #expect(o.summary.errors["protocol_error"] == 0 && o.summary.errors["closed_with_error"] == 0,
                "\(o.summary.errors.filter { $0.value > 0 })")
        #expect(o.summary.messages.accountingClosed)
        #expect(event.connectPhaseMicros?["ws_upgrade"]?.during?.count ?? 0 >= 12, "the reconnects are in the event's window")
        #expect(event.connectPhaseMicros?["ws_upgrade"]?.baseline?.count == 12, "the ramp-up is the baseline")

        var h = hubScenario("server-drop-hub", target: .embedded, transport: .webSockets, protocolKind: .json, clients: 6,
                            duration: 2, rate: 20, operation: .invoke, method: "Echo", arguments: [.stamp])
        h.hub?.reconnect = .delays([0.1, 0.3, 0.5])
        h.drainSeconds = 1
        h.events = [ScenarioEvent(atSeconds: 0.5, kind: .server(.drop(reset: true)))]
        let ho = try run(h)
        let hubEvent = try #require(ho.summary.storms.first)
        #expect(hubEvent.affected == 6 && hubEvent.recovered == 6)
        #expect(ho.summary.messages.accountingClosed)
    }

    @Test func clientsRejectedWithA503KeepTryingUntilTheServerTakesThemAgain() throws {
        var s = chatScenario(name: "server-reject", clients: 8, duration: 3, rate: 16)
        s.drainSeconds = 1
        s.reconnect = .exponential(initialSeconds: 0.1, maxSeconds: 0.2, attempts: 40, jitter: .none)
        // Both at one instant: the engine starts them in order in one tick, and the server's
        // loop applies them back to back, so the drop always falls inside the rejection window.
        // (At 0.3 s and 0.4 s, a tick late by a second on a loaded machine dropped the clients
        // after the window: no 503, no second attempt.)
        s.events = [ScenarioEvent(atSeconds: 0.4, kind: .server(.reject(seconds: 1.5))),
                    ScenarioEvent(atSeconds: 0.4, kind: .server(.drop(reset: true)))]
        let o = try run(s)
        let drop = try #require(o.summary.storms.last)
        #expect(drop.affected == 8 && drop.recovered == 8)
        // Back no sooner than the rejection window allows: it began no earlier than the drop's instant
        // (less the histogram's rounding).
        #expect(try #require(drop.recoveryMs["p50"] ?? nil) >= 1400)
        #expect(o.summary.upgradeStatuses["503", default: 0] >= 8)
        #expect(try #require(drop.attempts["p50"]) > 1)
        #expect(o.summary.messages.accountingClosed)
    }

    /// `stampede serve --admin-port` in its own process, its faults driven by the scenario
    /// through `target_admin`; an admin endpoint nobody answers is reported, not fatal.
    @Test func serverEventsReachAServeProcessThroughItsAdminEndpoint() throws {
        let serve = try BackgroundProcess(stampedeBinary.path, ["serve", "--port", "0", "--admin-port", "0", "--max-seconds", "60"])
        defer { serve.stop() }
        let listening = try serve.waitForLine(prefix: "listening on ", timeout: 20)
        let adminLine = try serve.waitForLine(prefix: "admin on http://127.0.0.1:", timeout: 5)
        let port = try #require(Int(listening.split(separator: ":").last!.split(separator: "/").first!))
        let adminPort = try #require(Int(adminLine.split(separator: ":").last!))
        var s = chatScenario(name: "serve-admin", target: .webSocket(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/chat")),
                             clients: 8, duration: 2, rate: 16)
        s.drainSeconds = 1
        s.reconnect = .delays([0.1, 0.3, 0.5])
        s.targetAdmin = AdminEndpoint(host: "127.0.0.1", port: adminPort)
        s.events = [ScenarioEvent(atSeconds: 0.5, kind: .server(.drop(reset: true)))]
        let o = try run(s)
        let event = try #require(o.summary.storms.first)
        #expect(event.faultError == nil)
        #expect(event.affected == 8 && event.recovered == 8)
        #expect(o.summary.messages.accountingClosed)

        s.targetAdmin = AdminEndpoint(host: "127.0.0.1", port: unusedPort())
        let unreachable = try run(s)
        #expect(unreachable.exitCode == 0)
        #expect(unreachable.summary.storms.first?.faultError?.contains("cannot reach") == true)
        #expect(unreachable.summary.storms.first?.affected == 0)
    }

    /// The event scenarios in scenarios/ run as shipped, with fewer clients.
    @Test(arguments: ["reconnect-storm.yaml", "churn.yaml"])
    func eventScenarioFilesRunAtASmallSize(_ file: String) throws {
        var s = try shippedScenario(file, clients: 100, duration: file == "churn.yaml" ? 7 : 5)
        s.connectRate = 1000
        let o = try run(s)
        #expect(o.exitCode == 0)
        #expect(o.summary.messages.accountingClosed && o.summary.messages.unaccounted == 0)
        #expect(!o.summary.storms.isEmpty)
        for event in o.summary.storms {
            #expect(event.affected > 0 && event.recovered + event.gaveUp <= event.affected, "\(file) event \(event.number)")
            let csv = try String(contentsOf: try #require(o.resultsFolder).appendingPathComponent(event.file), encoding: .utf8)
            #expect(csv.hasPrefix("offset_ms,attempts,successes,recovered_total\n"))
        }
        if file == "reconnect-storm.yaml" {
            #expect(o.summary.storms[0].recovered == 100)
            #expect(o.summary.storms[0].recoveryMs["p100"] != .some(nil))
        } else {
            #expect(o.summary.counters["churn_left", default: 0] > 0)
        }
    }

    /// The done-when of the storm issue: a third-party chat server (Python websockets) restarted
    /// by the scenario's external trigger; every client comes back and the accounting closes.
    @Test func chatClientsRecoverWhenACommandRestartsAWebsocketsServer() throws {
        let python = try peerPython("websockets")
        try restartScenario(python: python, server: ["Tests/peers/chat_server.py"], name: "restart-websockets") { port in
            var s = chatScenario(name: "restart-websockets", target: .webSocket(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/chat")),
                                 clients: 10, duration: 4, rate: 20)
            s.reconnect = .delays([0.2, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5])
            s.drainSeconds = 1
            return s
        }
    }

    /// The same against aiosignalr, with SignalR's default reconnect delays (0, 2, 10, 30 s).
    @Test func hubClientsRecoverWhenACommandRestartsAnAiosignalrHub() throws {
        let python = try peerPython("aiosignalr")
        try restartScenario(python: python, server: ["Tests/peers/signalr_hub_server.py"], name: "restart-aiosignalr") { port in
            var s = hubScenario("restart-aiosignalr", target: .http(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/hub")),
                                transport: .webSockets, protocolKind: .json, clients: 6, duration: 5, rate: 12,
                                operation: .invoke, method: "Echo", arguments: [.stamp])
            s.hub?.reconnect = .signalRDefault
            return s
        }
    }

    /// Starts `server` through restart_server.py, runs the scenario with a command event at 1 s
    /// that restarts it, and checks the event's recovery.
    func restartScenario(python: String, server: [String], name: String, scenario: (Int) -> Scenario) throws {
        let port = unusedPort()
        let folder = temporaryFolder(name)
        let pidfile = folder.appendingPathComponent("server.pid").path
        let peers = repositoryRoot.appendingPathComponent("Tests/peers").path
        let serverCommand = [python, repositoryRoot.appendingPathComponent(server[0]).path, "--port", String(port), "--max-seconds", "120"]
        let restart = ([python, "\(peers)/restart_server.py", "--pidfile", pidfile, "--port", String(port),
                        "--log", folder.appendingPathComponent("server.log").path, "--"] + serverCommand)
            .map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        defer {
            if let pid = try? String(contentsOfFile: pidfile, encoding: .utf8), let n = Int32(pid.trimmingCharacters(in: .whitespacesAndNewlines)) {
                kill(n, SIGTERM)
            }
        }
        let first = try runProcess("/bin/sh", ["-c", restart], timeout: 60)
        try #require(first.status == 0, "the server did not start: \(first.stdout) \(first.stderr)")

        var s = scenario(port)
        s.events = [ScenarioEvent(atSeconds: 1, kind: .command(ExternalCommand(command: restart, timeoutSeconds: 30)))]
        let o = try run(s)
        #expect(o.exitCode == 0)
        let event = try #require(o.summary.storms.first)
        let command = try #require(event.command)
        #expect(command.exitStatus == 0, "restart failed: see \(command.outputFile)")
        let clients = UInt64(s.clients)
        #expect(event.kind == "command")
        #expect(event.affected == clients, "every client lost its connection to the restart")
        #expect(event.recovered == clients && event.gaveUp == 0)
        #expect(try #require(event.recoveryMs["p100"] ?? nil) > 0)
        #expect(o.summary.messages.accountingClosed)
        let csv = try String(contentsOf: try #require(o.resultsFolder).appendingPathComponent(event.file), encoding: .utf8)
        let rows = csv.split(separator: "\n").dropFirst().map { $0.split(separator: ",").compactMap { UInt64($0) } }
        #expect(rows.reduce(0) { $0 + $1[2] } == clients)
    }
}
