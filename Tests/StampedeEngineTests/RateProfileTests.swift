import StampedeEngine
import StampedeLoop
import StampedeScenario
import StampedeWorkloads
import Testing

/// The open model's rate over the phase (`message.stages`) and the schedule that follows it:
/// message j of the aggregate stream is intended where the cumulative count reaches j.
@Suite struct RateProfileTests {
    static let stages = [RateStage(durationSeconds: 3, ratePerSecond: 400), RateStage(durationSeconds: 3, ratePerSecond: 400),
                         RateStage(durationSeconds: 3, ratePerSecond: 100)]

    /// A schedule begun at `start` over `clients` clients.
    func schedule(clients: Int, rate: Double, stages: [RateStage], start: UInt64 = 5_000_000_000) -> LoadSchedule {
        var s = LoadSchedule(totalClients: clients, connectRate: 1000, loadModel: .open, totalRate: rate, stages: stages,
                             thinkTimeNs: 0, seed: 9)
        _ = s.beginMessages(startNs: start, endNs: .max)
        return s
    }

    @Test func aConstantRateGivesExactlyTheEvenlySpacedTimesOfBefore() {
        let start: UInt64 = 5_000_000_000
        let s = schedule(clients: 37, rate: 13, stages: [], start: start)
        let interval = nanoseconds(37.0 / 13)
        #expect(s.intervalNs == interval)
        for g in 0..<37 {
            let slot = s.sendSlot(globalIndex: g)
            // The schedule as it was: the first send in the client's slot, then one per interval.
            let first = start + UInt64(Double(interval) * Double(slot) / 37)
            for k in [0, 1, 2, 17, 1000] as [UInt32] {
                #expect(s.intended(slot: slot, sequence: k) == first + UInt64(k) * interval)
            }
            for now in [first, first + 1, first + interval, first + 7 * interval - 1, first + 7 * interval] {
                let before = now > first ? UInt32((now - first) / interval) + 1 : 0
                #expect(s.sequencesDue(slot: slot, now: now) == before)
            }
        }
    }

    @Test func aConstantProfileInvertsToJOverTheRate() {
        let p = RateProfile(startRate: 250)
        for j in [0.0, 1, 2, 249, 250, 12_345] {
            let t = Double(p.offsetNs(ofMessage: j)!) / 1e9
            #expect(abs(t - j / 250) < 1e-9)
        }
        #expect(p.messages(fromSeconds: 2, toSeconds: 3) == 250)
    }

    @Test func cumulativeCountIsTheAreaUnderTheRate() {
        let p = RateProfile(startRate: 50, stages: Self.stages)
        #expect(p.messages(throughSeconds: 3) == 675)  // (50 + 400) / 2 × 3
        #expect(p.messages(throughSeconds: 6) == 675 + 1200)
        #expect(p.messages(throughSeconds: 9) == 675 + 1200 + 750)
        #expect(p.messages(throughSeconds: 12) == 675 + 1200 + 750 + 300)  // held at 100
        #expect(p.rate(atSeconds: 1.5) == 225)
        #expect(p.rate(atSeconds: 7.5) == 250)
        #expect(p.rate(atSeconds: 100) == 100)
    }

    @Test func inversionAgreesWithTheCumulativeCountEverywhere() {
        let p = RateProfile(startRate: 50, stages: Self.stages)
        var j = 0.0
        var previous: UInt64 = 0
        while j < 3000 {
            let t = p.offsetNs(ofMessage: j)!
            #expect(t >= previous, "message \(j) goes back in time")
            #expect(abs(p.messages(throughSeconds: Double(t) / 1e9) - j) < 1e-4, "message \(j)")
            previous = t
            j += 1
        }
    }

    @Test func spacingIsContinuousAcrossStageBoundaries() {
        let p = RateProfile(startRate: 50, stages: Self.stages)
        // Around each boundary, the gap between consecutive messages is 1/rate there (no burst, no pause).
        for (boundary, rate) in [(3.0, 400.0), (6.0, 400.0), (9.0, 100.0)] {
            let j = p.messages(throughSeconds: boundary).rounded(.down)
            let gap = Double(p.offsetNs(ofMessage: j + 1)! - p.offsetNs(ofMessage: j)!) / 1e9
            #expect(abs(gap - 1 / rate) < 0.05 / rate, "at \(boundary)s")
        }
    }

    @Test func aRampFromZeroStartsAtTheStartAndFlatZeroStagesAreSkipped() {
        let ramp = RateProfile(startRate: 0, stages: [RateStage(durationSeconds: 10, ratePerSecond: 100)])
        #expect(ramp.offsetNs(ofMessage: 0) == 0)
        // M(t) = 5t²: message 5 at 1 s, message 499 just before 10 s.
        #expect(ramp.offsetNs(ofMessage: 5) == 1_000_000_000)
        #expect(ramp.messages(fromSeconds: 0, toSeconds: 1) == 5)
        let quiet = RateProfile(startRate: 0, stages: [RateStage(durationSeconds: 5, ratePerSecond: 0), RateStage(durationSeconds: 1, ratePerSecond: 100)])
        #expect(quiet.offsetNs(ofMessage: 0) == 5_000_000_000)
        #expect(quiet.sendsAnything)
        #expect(!RateProfile(startRate: 0, stages: [RateStage(durationSeconds: 5, ratePerSecond: 0)]).sendsAnything)
    }

    @Test func messagesPastWhereTheRateEndsAtZeroAreNeverIntended() {
        let p = RateProfile(startRate: 10, stages: [RateStage(durationSeconds: 1, ratePerSecond: 0)])
        #expect(p.messages(throughSeconds: 100) == 5)
        #expect(p.offsetNs(ofMessage: 4.9) != nil)
        #expect(p.offsetNs(ofMessage: 5) == nil)
        let s = schedule(clients: 2, rate: 10, stages: [RateStage(durationSeconds: 1, ratePerSecond: 0)])
        #expect(s.intended(slot: 0, sequence: 3) == .max)
        #expect(!s.isInPhase(s.intended(slot: 0, sequence: 3)))
    }

    @Test func everyClientsChainTogetherFollowTheProfile() {
        let clients = 200, start: UInt64 = 5_000_000_000
        let s = schedule(clients: clients, rate: 50, stages: Self.stages, start: start)
        #expect(s.intervalNs == 0)
        var times: [UInt64] = []
        for g in 0..<clients {
            let slot = s.sendSlot(globalIndex: g)
            for k in 0..<20 as Range<UInt32> {
                let t = s.intended(slot: slot, sequence: k)
                if t < start + 12_000_000_000 { times.append(t - start) }
            }
        }
        // Each second holds the profile's count for that second, within one message.
        for second in 0..<12 {
            let a = UInt64(second) * 1_000_000_000, b = a + 1_000_000_000
            let sent = times.filter { $0 >= a && $0 < b }.count
            let intended = s.profile.messages(fromSeconds: Double(second), toSeconds: Double(second + 1))
            #expect(abs(Double(sent) - intended) <= 1, "second \(second): \(sent) vs \(intended)")
        }
    }

    @Test func sequencesDueCountsTheIntendedTimesPassed() {
        let s = schedule(clients: 50, rate: 50, stages: Self.stages)
        for g in [0, 7, 49] {
            let slot = s.sendSlot(globalIndex: g)
            let first = s.intended(slot: slot, sequence: 0)
            for offset in stride(from: 1 as UInt64, to: 12_000_000_000, by: 333_333_333) {
                let now = first + offset
                let passed = (0..<1000 as Range<UInt32>).filter { s.intended(slot: slot, sequence: $0) <= now }.count
                #expect(s.sequencesDue(slot: slot, now: now) == UInt32(passed), "client \(g) at +\(offset)")
            }
            #expect(s.sequencesDue(slot: slot, now: first) == 0)
        }
    }

    /// The schedule arithmetic at the extremes the loader lets through (the fuzz target's probe).
    @Test(arguments: [
        "clients: 1000000\nconnect_rate: 1000000\nduration: 168h\nmessage:\n  rate: 10000000\n  stages: [{duration: 1ms, rate: 0.001}, {duration: 167h, rate: 10000000}]",
        "clients: 1\nduration: 168h\nmessage:\n  stages: [{duration: 1ms, rate: 0.001}, {duration: 167h, rate: 0}]",
        "clients: 7\nduration: 2s\nmessage:\n  stages: [{duration: 1s, rate: 0}]",
    ])
    func extremeStagesPlanWithoutTrapping(body: String) {
        guard case .planned = ScenarioProbe.run("target: embedded\n" + body + "\n") else {
            Issue.record("refused: \(ScenarioProbe.run("target: embedded\n" + body + "\n"))")
            return
        }
    }

    @Test func aRateChangeKeepsEveryEarlierTimeAndPacesTheRestAtTheNewRate() {
        // A capacity search on held connections: 1,000/s for 2.5 s, then 4,000/s (and a pause, then 500/s).
        let start: UInt64 = 5_000_000_000
        var s = schedule(clients: 100, rate: 1000, stages: [], start: start)
        let before = s
        s.changeRate(to: 4000, atNs: start + 2_500_000_000)
        // Messages intended before the change keep their times; the stream's numbering goes on.
        for j in stride(from: 0, to: 2500, by: 7) {
            let slot = UInt32(j % 100), seq = UInt32(j / 100)
            let a = Int64(before.intended(slot: slot, sequence: seq)), b = Int64(s.intended(slot: slot, sequence: seq))
            #expect(abs(a - b) <= 2, "message \(j)")
        }
        // After it, 4,000 a second: message 2,500 + 4,000·k is intended k seconds after the change.
        for k in 0..<3 {
            let j = 2500 + 4000 * k
            let t = s.intended(slot: UInt32(j % 100), sequence: UInt32(j / 100))
            #expect(abs(Int64(t) - Int64(start + 2_500_000_000 + UInt64(k) * 1_000_000_000)) <= 2, "message \(j)")
        }
        #expect(s.profile.messages(fromSeconds: 3, toSeconds: 4) == 4000)
        // Rate 0 holds no messages: nothing more falls due until the rate comes back.
        s.changeRate(to: 0, atNs: start + 4_000_000_000)
        #expect(s.profile.messages(fromSeconds: 4, toSeconds: 60) == 0)
        s.changeRate(to: 500, atNs: start + 10_000_000_000)
        #expect(s.profile.messages(fromSeconds: 10, toSeconds: 12) == 1000)
        #expect(s.profile.rate(atSeconds: 7) == 0 && s.profile.rate(atSeconds: 11) == 500)
    }
}
