@testable import StampedeEngine
import StampedeMetrics
import StampedeReport
import StampedeScenario
import Testing

/// The capacity search on held connections, driven by made-up interval reports: a server that
/// takes at most 250 connections. No run, no clock: the reports carry the time.
@Suite struct HeldStepsTests {
    static let yaml = """
        name: held
        target: ws://127.0.0.1:9/chat
        workload: chat
        clients: 100
        duration: 10s
        message:
          rate: 100
          size: 64
        """

    func plan() throws -> CapacityPlan {
        let s = try ScenarioLoader.parse(yaml: Self.yaml, file: "held.yaml")
        let slo = try ThresholdSpec.parseSLO("round_trip p(99) < 50ms").get()
        var p = CapacityPlan(scenario: s, vary: .clients, sloTexts: ["round_trip p(99) < 50ms"], slos: [slo], from: 100, to: 400, precision: 0.1,
                             stepSeconds: 3, warmupSeconds: 1, limits: .init(errorRatio: 0.001, lostRatio: 0.001, sendRatio: 0.99))
        p.cooldownSeconds = 10
        return p
    }

    /// One second of a server that holds `open` clients, each sending one message a second
    /// (the plan's per-client rate) answered in 1 ms; `paused`: nothing sent or received.
    func report(at t: Double, open: Int, paused: Bool) -> IntervalReport {
        var m = MetricsShard()
        if !paused {
            m.count(.messagesSent, UInt64(open))
            m.count(.messagesDelivered, UInt64(open))
            for _ in 0..<open { m.record(.roundTrip, nanoseconds: 1_000_000) }
        }
        return IntervalReport(elapsedSeconds: t + 5, phase: "messages", messagePhaseSeconds: (t - 1)...t, interval: m, totals: m,
                              open: open, connecting: 0, reconnecting: 0, clients: 400, timerLagNs: 100_000, processCPUPercent: 10,
                              clientLoopCPUPercent: 10, loops: 2, residentBytes: 0, final: false)
    }

    @Test func clientsStayConnectedAndTheSearchFindsTheServersConnectionLimit() throws {
        let plan = try plan()
        #expect(plan.holdsConnections)
        #expect(plan.heldLoad.clients == 400 && plan.heldLoad.connectedAtStart == 100 && plan.heldLoad.ratePerSecond == 400)
        var held = HeldSteps(plan: plan, connectRate: 1000, search: CapacitySearch(from: 100, to: 400, precision: 0.1, integral: true))
        var wanted = 100, rate = 400.0
        var judged: [CapacityResult.Step] = []
        var commands: [RunSteering.Command] = []
        var t = 1.0
        while t < 600 {
            let out = held.observe(report(at: t, open: min(wanted, 250), paused: rate == 0))
            for c in out.commands {
                commands.append(c)
                switch c {
                case .connectedClients(let n): wanted = n
                case .rate(let r): rate = r
                case .endMessages: break
                }
            }
            if let (step, tally) = out.judged {
                judged.append(step)
                #expect(tally.reconnected == 0)
            }
            if out.finished { break }
            t += 1
        }
        #expect(commands.last == .endMessages, "the search ends the run when it has its answer")
        let verdict = try #require(held.search.verdict)
        #expect(verdict == .found, "\(judged.map { "\($0.load) \($0.outcome) \($0.reasons)" })")
        let answer = try #require(held.search.maxSustainable)
        #expect(answer <= 250 && answer >= 250 * 0.9, "within --precision of the limit: \(answer)")
        // A step above the limit fails on the clients it lacks, after its settle deadline.
        let over = try #require(judged.first { $0.outcome == "fail" })
        #expect(over.reasons.contains { $0.contains("of \(Int(over.load)) clients connected") }, "\(over.reasons)")
        // After a failure the sends pause (the backlog drains) and come back at the run's rate.
        let pause = try #require(commands.firstIndex(of: .rate(0)))
        #expect(commands[pause...].contains(.rate(400)))
        // Every load was reached by moving clients, never by a new run.
        #expect(commands.allSatisfy { if case .connectedClients(let n) = $0 { n >= 100 && n <= 400 } else { true } })
    }
}
