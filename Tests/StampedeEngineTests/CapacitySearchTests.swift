import Foundation
@testable import StampedeEngine
import StampedeMetrics
import StampedeReport
import StampedeScenario
import Testing

/// The capacity search's logic without a server: a "server" is a function from load to outcome.
struct CapacitySearchTests {
    /// Runs the search against `outcome` until it has a verdict (at most 100 steps).
    func search(_ s: inout CapacitySearch, _ outcome: (Double, Int, CapacitySearch.Stage) -> CapacitySearch.Outcome) {
        var n = 0
        while let next = s.next, n < 100 {
            s.record(outcome(next.load, n, next.stage))
            n += 1
        }
    }

    @Test func growsByHalfUntilAFailureThenHalvesTheBracketToThePrecisionThenConfirms() {
        var s = CapacitySearch(from: 1000, to: 1_000_000, precision: 0.02, integral: false)
        search(&s) { load, _, _ in load <= 20_000 ? .pass : .fail }
        #expect(s.verdict == .found)
        let answer = s.maxSustainable ?? 0
        #expect(answer <= 20_000 && answer >= 20_000 * 0.98)
        #expect(s.steps.prefix(9).map(\.load) == [1000, 1500, 2250, 3375, 5062.5, 7593.75, 11390.625, 17085.938, 25628.907])
        #expect(s.steps.prefix(9).allSatisfy { $0.stage == .exponential })
        #expect(s.steps.last?.stage == .confirm && s.steps.last?.load == answer)
        #expect(s.steps.contains { $0.stage == .binary })
    }

    @Test func aFailedConfirmationLowersTheAnswerInsteadOfReportingIt() {
        var s = CapacitySearch(from: 1000, to: 100_000, precision: 0.05, integral: false)
        var confirmations = 0
        search(&s) { load, _, stage in
            if stage == .confirm { confirmations += 1; if confirmations == 1 { return .fail } }
            return load <= 10_000 ? .pass : .fail
        }
        #expect(s.verdict == .found)
        let failedConfirm = s.steps.first { $0.stage == .confirm }!.load
        #expect(s.maxSustainable! < failedConfirm, "the load that failed its confirmation is not the answer")
    }

    @Test func severalConfirmationsMustAllPassAndANoisyFailureLowersTheAnswer() {
        var s = CapacitySearch(from: 1000, to: 100_000, precision: 0.05, integral: false, confirmations: 3)
        var confirmRuns = 0
        search(&s) { load, _, stage in
            if stage == .confirm { confirmRuns += 1; if confirmRuns == 2 { return .fail } }  // the second of three fails
            return load <= 10_000 ? .pass : .fail
        }
        #expect(s.verdict == .found)
        let confirms = s.steps.filter { $0.stage == .confirm }
        #expect(confirms.count >= 4, "two at the first answer, then three passes at a lower one")
        #expect(confirms.suffix(3).allSatisfy { $0.outcome == .pass && $0.load == s.maxSustainable })
        #expect(s.maxSustainable! < confirms[0].load)
    }

    @Test func anInvalidStepRunsAgainAndAPersistentOneIsTheGeneratorsCeiling() {
        var once = CapacitySearch(from: 1000, to: 100_000, precision: 0.05, integral: false)
        search(&once) { load, n, _ in n == 2 ? .invalid : load <= 10_000 ? .pass : .fail }
        #expect(once.verdict == .found, "one hiccup of a shared machine does not end the search")
        #expect(once.steps[2].load == once.steps[3].load)
        #expect(once.generatorLimit == nil)

        // The server holds everything the generator can drive: its limit is not the server's.
        var always = CapacitySearch(from: 1000, to: 100_000, precision: 0.05, integral: false, growth: 2)  // steps land on the ceiling
        search(&always) { load, _, _ in load >= 4000 ? .invalid : .pass }
        #expect(always.verdict == .generatorLimited)
        #expect(always.maxSustainable == nil)
        #expect(always.generatorLimit == 4000)
        #expect(always.steps.filter { $0.outcome == .invalid }.count == 2)
        let held = always.highestPass ?? 0
        #expect(held < 4000 && held >= 4000 / 1.05, "the search narrowed the bracket up to the ceiling: \(held)")
    }

    @Test func aServerLimitBelowTheGeneratorsCeilingIsStillFound() {
        var s = CapacitySearch(from: 1000, to: 100_000, precision: 0.02, integral: false, growth: 2)
        search(&s) { load, _, _ in load >= 8000 ? .invalid : load > 5000 ? .fail : .pass }
        #expect(s.verdict == .found)
        #expect(s.generatorLimit == 8000)
        let answer = s.maxSustainable ?? 0
        #expect(answer <= 5000 && answer >= 5000 * 0.98)
    }

    @Test func theRangeEndsAreVerdictsOfTheirOwn() {
        var below = CapacitySearch(from: 1000, to: 100_000, precision: 0.05, integral: false)
        search(&below) { _, _, _ in .fail }
        #expect(below.verdict == .belowRange && below.maxSustainable == nil && below.steps.count == 1)

        var above = CapacitySearch(from: 1000, to: 5000, precision: 0.05, integral: false)
        search(&above) { _, _, _ in .pass }
        #expect(above.verdict == .aboveRange)
        #expect(above.steps.map(\.load) == [1000, 1500, 2250, 3375, 5000], "the last step is the top of the range, not past it")
        #expect(above.maxSustainable == 5000)
    }

    @Test func theGrowthFactorIsAParameterAndOneClientStillGrows() {
        var doubling = CapacitySearch(from: 1000, to: 8000, precision: 0.05, integral: false, growth: 2)
        search(&doubling) { _, _, _ in .pass }
        #expect(doubling.steps.map(\.load) == [1000, 2000, 4000, 8000])
        var one = CapacitySearch(from: 1, to: 4, precision: 0.05, integral: true)
        search(&one) { _, _, _ in .pass }
        #expect(one.steps.map(\.load) == [1, 2, 3, 4], "1 × 1.5 rounds down to 1: the next client count is 2")
    }

    @Test func aBorderlineStepRunsOnceMoreAndTheRetryDecidesForItsStage() {
        // The step at 2250 is borderline; its retry fails: the exponential stage ends there.
        var s = CapacitySearch(from: 1000, to: 100_000, precision: 0.05, integral: false)
        search(&s) { load, _, stage in
            if load == 2250 { return stage == .retry ? .fail : .borderline }
            return load <= 2000 ? .pass : .fail
        }
        #expect(s.steps[2].load == 2250 && s.steps[2].outcome == .borderline && s.steps[2].stage == .exponential)
        #expect(s.steps[3].load == 2250 && s.steps[3].stage == .retry && s.steps[3].outcome == .fail)
        #expect(s.steps[4].stage == .binary && s.steps[4].load < 2250 && s.steps[4].load > 1500)
        #expect(s.verdict == .found && s.steps.filter { $0.load == 2250 }.count == 2)

        // A borderline confirmation whose retry passes confirms the answer.
        var c = CapacitySearch(from: 1000, to: 100_000, precision: 0.05, integral: false)
        var confirms = 0
        search(&c) { load, _, stage in
            if stage == .confirm { confirms += 1; return .borderline }
            return load <= 10_000 ? .pass : .fail
        }
        #expect(c.verdict == .found && confirms == 1)
        #expect(c.steps.suffix(2).map(\.stage) == [.confirm, .retry] && c.steps.last?.outcome == .pass)

        // A retry the judge could not decide either (it decides retries by the point estimate) is a fail.
        var r = CapacitySearch(from: 1000, to: 100_000, precision: 0.05, integral: false)
        r.record(.pass)
        r.record(.borderline)
        r.record(.borderline)
        #expect(r.steps.last?.outcome == .fail && r.lowestFail == 1500 && r.next?.stage == .binary)
    }

    @Test func confirmationsThatKeepFailingMakeTheVerdictUnstableAndNameTheRange() throws {
        var s = CapacitySearch(from: 1000, to: 100_000, precision: 0.05, integral: false)
        search(&s) { load, _, stage in stage == .confirm ? .fail : load <= 10_000 ? .pass : .fail }
        #expect(s.verdict == .unstable && s.verdict?.rawValue == "unstable")
        #expect(s.maxSustainable == nil)
        let confirms = s.steps.filter { $0.stage == .confirm }
        #expect(confirms.count == 3 && confirms.allSatisfy { $0.outcome == .fail })
        let range = try #require(s.unstableRange)
        #expect(range.lowerBound == confirms.map(\.load).min() && range.upperBound == confirms[0].load,
                "from the lowest load that failed to the highest that passed at or above it: \(range)")

        let runner = CapacityRunner(plan: plan(), options: RunOptions(progress: .silent))
        var result = runner.emptyResult(startedAt: Date())
        result.steps = s.steps.map { step($0.load, $0.outcome.rawValue, p50: 1000) }
        runner.conclude(&result, search: s, interrupted: false, unreachable: nil, startedAt: Date())
        #expect(result.verdict == "unstable")
        #expect(result.conclusion.hasPrefix("the server is too unstable to give one number: between "), "\(result.conclusion)")
        #expect(result.conclusion.contains(CapacityRunner.format(range.upperBound)) && result.conclusion.contains(CapacityRunner.format(range.lowerBound)))
    }

    @Test func theCoolDownLoadIsTheHighestPassSoFar() {
        var s = CapacitySearch(from: 1000, to: 100_000, precision: 0.05, integral: false)
        #expect(s.coolDownLoad == 1000, "nothing passed yet: the lowest load")
        s.record(.pass)
        s.record(.pass)
        s.record(.fail)
        #expect(s.coolDownLoad == 1500)
    }

    @Test func clientCountsStayWholeNumbers() {
        var s = CapacitySearch(from: 10, to: 10_000, precision: 0.01, integral: true)
        search(&s) { load, _, _ in load <= 777 ? .pass : .fail }
        #expect(s.steps.allSatisfy { $0.load == $0.load.rounded() })
        #expect(s.verdict == .found && s.maxSustainable! <= 777 && s.maxSustainable! >= 769)
    }

    // MARK: Judging a step

    func report(messageSeconds: ClosedRange<Double>, sent: UInt64, rttMicros: UInt64 = 500, lagNs: UInt64 = 1_000_000,
                cpu: Double = 40, open: Int = 2) -> IntervalReport {
        var m = MetricsShard()
        m.count(.messagesSent, sent)
        m.count(.messagesDelivered, sent)
        for _ in 0..<sent { m.histograms[LatencyMetric.roundTrip.rawValue].record(rttMicros) }
        return IntervalReport(elapsedSeconds: messageSeconds.upperBound, phase: "messages", messagePhaseSeconds: messageSeconds, interval: m,
                              totals: m, open: open, connecting: 0, reconnecting: 0, clients: 2, timerLagNs: lagNs,
                              processCPUPercent: cpu, clientLoopCPUPercent: cpu, loops: 2, residentBytes: 0, final: false)
    }

    var slo: ThresholdSpec {
        ThresholdSpec(metric: "round_trip", conditions: [ThresholdCondition(statistic: .percentile(99), comparison: .less, limit: 50_000, text: "p(99) < 50ms")])
    }
    var limits: CapacityResult.Limits { CapacityResult.Limits(errorRatio: 0.001, lostRatio: 0.001, sendRatio: 0.99) }

    @Test func onlyWholeIntervalsAfterTheWarmUpAreMeasured() {
        var w = StepWindow(warmupSeconds: 2, endSeconds: 6)
        w.add(report(messageSeconds: 0.5...1.5, sent: 100, rttMicros: 900_000))   // warm-up: not measured
        w.add(report(messageSeconds: 1.5...2.5, sent: 100, rttMicros: 900_000))   // straddles the warm-up's end
        w.add(report(messageSeconds: 2.5...3.5, sent: 100))
        w.add(report(messageSeconds: 3.5...4.5, sent: 100))
        w.add(report(messageSeconds: 4.5...5.5, sent: 100))
        w.add(report(messageSeconds: 5.5...6.5, sent: 100, rttMicros: 900_000))   // runs into the drain
        let step = StepJudge(slos: [slo], limits: limits).judge(w, number: 1, stage: .exponential, load: 100, intendedRate: 100, runFailure: nil)
        #expect(step.outcome == "pass", "\(step.reasons)")
        #expect(step.sent == 300 && step.measuredSeconds == 3 && step.achievedRate == 100)
        #expect(step.slos.first?.passed == true)
    }

    @Test func lateTimersMakeAFailingStepInvalidButNotAPassingOne() {
        var w = StepWindow(warmupSeconds: 0, endSeconds: 3)
        w.add(report(messageSeconds: 0...1, sent: 100, rttMicros: 90_000, lagNs: 25_000_000))
        let step = StepJudge(slos: [slo], limits: limits).judge(w, number: 1, stage: .binary, load: 100, intendedRate: 100, runFailure: nil)
        #expect(step.outcome == "invalid", "90 ms could be 2 × 25 ms of generator lag on top of a fine server")
        #expect(step.generator.saturated)
        #expect(step.reasons.first?.contains("timers ran 25 ms late") == true, "\(step.reasons)")

        var quick = StepWindow(warmupSeconds: 0, endSeconds: 3)
        quick.add(report(messageSeconds: 0...1, sent: 100, rttMicros: 900, lagNs: 25_000_000))
        let pass = StepJudge(slos: [slo], limits: limits).judge(quick, number: 1, stage: .binary, load: 100, intendedRate: 100, runFailure: nil)
        #expect(pass.outcome == "pass", "a late generator only adds latency: within the SLO anyway is a pass")
        #expect(pass.generator.saturated && pass.reasons.isEmpty)
    }

    @Test func aSaturatedStepStillFailsWhenItsLatencyIsFarBeyondWhatTheGeneratorAdds() {
        var far = StepWindow(warmupSeconds: 0, endSeconds: 3)
        far.add(report(messageSeconds: 0...1, sent: 100, rttMicros: 2_000_000, lagNs: 300_000_000))
        let a = StepJudge(slos: [slo], limits: limits).judge(far, number: 1, stage: .binary, load: 100, intendedRate: 100, runFailure: nil)
        #expect(a.outcome == "fail", "2 s is not 2 × 300 ms of generator lag: \(a.reasons)")
        #expect(a.generator.saturated)
        var near = StepWindow(warmupSeconds: 0, endSeconds: 3)
        near.add(report(messageSeconds: 0...1, sent: 100, rttMicros: 500_000, lagNs: 300_000_000))
        let b = StepJudge(slos: [slo], limits: limits).judge(near, number: 1, stage: .binary, load: 100, intendedRate: 100, runFailure: nil)
        #expect(b.outcome == "invalid", "500 ms could be the generator's own 2 × 300 ms")
    }

    @Test func aStepFailsOnItsSLOOnSendingTooLittleAndOnMissingClients() {
        var slow = StepWindow(warmupSeconds: 0, endSeconds: 3)
        slow.add(report(messageSeconds: 0...1, sent: 100, rttMicros: 80_000))
        let a = StepJudge(slos: [slo], limits: limits).judge(slow, number: 1, stage: .binary, load: 100, intendedRate: 100, runFailure: nil)
        #expect(a.outcome == "fail" && a.reasons == ["round_trip p(99) < 50ms: measured 80ms"])

        var short = StepWindow(warmupSeconds: 0, endSeconds: 3)
        short.add(report(messageSeconds: 0...1, sent: 900))
        let b = StepJudge(slos: [slo], limits: limits).judge(short, number: 1, stage: .binary, load: 1000, intendedRate: 1000, runFailure: nil)
        #expect(b.outcome == "fail" && b.reasons.first?.contains("sent 900/s, under 99% of the intended 1000/s") == true, "\(b.reasons)")

        var missing = StepWindow(warmupSeconds: 0, endSeconds: 3)
        missing.add(report(messageSeconds: 0...1, sent: 100, open: 1))
        let c = StepJudge(slos: [slo], limits: limits).judge(missing, number: 1, stage: .binary, load: 100, intendedRate: 100, runFailure: nil)
        #expect(c.outcome == "fail" && c.reasons == ["1 of 2 clients connected"])
    }

    /// Ten one-second intervals of 100 round trips each: `slow` of them at 80 ms, the others at 10 ms.
    func window(slow: Int) -> StepWindow {
        var w = StepWindow(warmupSeconds: 0, endSeconds: 10)
        for i in 0..<10 {
            w.add(report(messageSeconds: Double(i)...Double(i + 1), sent: 100, rttMicros: i < slow ? 80_000 : 10_000))
        }
        return w
    }

    @Test func aStepPassesFailsOrIsBorderlineByItsIntervalsBootstrapBounds() throws {
        let judge = StepJudge(slos: [slo], limits: limits)
        func judged(_ w: StepWindow, _ stage: CapacitySearch.Stage = .binary) -> CapacityResult.Step {
            judge.judge(w, number: 1, stage: stage, load: 100, intendedRate: 100, runFailure: nil)
        }
        let steady = judged(window(slow: 0))
        #expect(steady.outcome == "pass" && steady.reasons.isEmpty)
        let spread = try #require(steady.spread)
        #expect(spread.slo == "round_trip p(99) < 50ms" && spread.intervals == 10 && spread.decision == "pass")
        #expect(spread.min == spread.max && spread.high < 50_000 && spread.confidence == 0.9)

        let slow = judged(window(slow: 10))
        #expect(slow.outcome == "fail" && slow.reasons == ["round_trip p(99) < 50ms: measured 80ms"], "\(slow.reasons)")
        #expect(slow.spread?.low ?? 0 > 50_000, "even the lower bound misses the SLO")

        // One slow second in ten: the whole window's p99 is 80 ms, but a resample without that
        // second (a third of them) meets the SLO. Neither clearly held nor clearly missed.
        let noisy = judged(window(slow: 1))
        #expect(noisy.outcome == "borderline", "\(noisy.reasons)")
        #expect(noisy.reasons.first?.contains("borderline, measured 80ms, 90% bounds 10ms … 80ms") == true, "\(noisy.reasons)")
        let wide = try #require(noisy.spread)
        #expect(wide.min < 11_000 && wide.max > 79_000 && wide.median < 11_000, "the interval spread shows the one slow second")
        #expect(wide.low < 50_000 && wide.high > 50_000)

        // The same window run as the retry of a borderline step: the point estimate decides.
        #expect(judged(window(slow: 1), .retry).outcome == "fail")
        #expect(judged(window(slow: 1)) == noisy, "the bootstrap's seed makes a judgement repeatable")
    }

    @Test func theWindowKeepsAtMostSixHundredIntervalsPerMetricMergingNeighbours() {
        var w = StepWindow(warmupSeconds: 0, endSeconds: 700)
        for i in 0..<700 { w.add(report(messageSeconds: Double(i)...Double(i + 1), sent: 1)) }
        let bins = w.latencyIntervals["round_trip"]
        #expect(w.intervals == 700 && bins?.intervalCount == 700)
        #expect((bins?.bins.count ?? 0) <= StepWindow.maxIntervals && (bins?.bins.count ?? 0) >= StepWindow.maxIntervals / 2)
        #expect(bins?.bins.reduce(0) { $0 + $1.histogram.totalCount } == 700, "merged, never dropped")
    }

    @Test func missingClientsAreExplainedByTheStepsCommonestErrorsConnectPhaseIncluded() {
        var w = StepWindow(warmupSeconds: 0, endSeconds: 3)
        var refused = MetricsShard()
        refused.error(.connectionReset)
        refused.error(.connectionReset)
        refused.error(.upgradeRejected)
        w.add(IntervalReport(elapsedSeconds: 1, phase: "ramp-up", messagePhaseSeconds: nil, interval: refused, totals: refused, open: 1,
                             connecting: 0, reconnecting: 0, clients: 2, timerLagNs: 0, processCPUPercent: 0, clientLoopCPUPercent: 0,
                             loops: 2, residentBytes: 0, final: false))
        w.add(report(messageSeconds: 0...1, sent: 100, open: 1))
        let s = StepJudge(slos: [slo], limits: limits).judge(w, number: 1, stage: .binary, load: 2, intendedRate: 100, runFailure: nil)
        #expect(s.reasons == ["1 of 2 clients connected (errors: 2 connection_reset, 1 upgrade_rejected)"])
        #expect(s.errors == 0, "the connect phase's errors are not the window's")
    }

    // MARK: Conclusions

    func step(_ load: Double, _ outcome: String, p50: UInt64) -> CapacityResult.Step {
        let latency = RunSummary.Latency(count: 100, min: 1, p50: p50, p90: p50, p99: p50, p99_9: p50, max: p50, mean: Double(p50))
        let threshold = RunSummary.Threshold(metric: "round_trip", label: nil, condition: "p(99) < 50ms", observed: Double(p50), unit: "us",
                                             limit: 50_000, observedText: "", passed: outcome == "pass", abortedRun: false)
        return CapacityResult.Step(number: 1, stage: "binary", load: load, outcome: outcome, reasons: [], measuredSeconds: 10, intendedRate: load,
                                   achievedRate: load, receivedRate: load, sent: 1, delivered: 1, lost: 0, errors: 0, open: 2, clients: 2,
                                   latencyMicros: ["round_trip": latency], slos: [threshold],
                                   generator: .init(maxTimerLagMicros: 0, peakClientLoopCPUPercent: 0, peakProcessCPUPercent: 0, loops: 2, saturated: false),
                                   resultsFolder: nil)
    }

    @Test func theKneeIsWhereTheSLOFigureStaysHighOnlyFromThereUp() {
        // p99s (µs) against a 50 ms SLO: the knee needs ≥ 2 × the lowest and ≥ 5 ms, from there up.
        let steps = [step(1000, "pass", p50: 300), step(2000, "pass", p50: 9000), step(4000, "pass", p50: 700),
                     step(8000, "pass", p50: 1500), step(12000, "pass", p50: 20_000), step(14000, "pass", p50: 8000),
                     step(16000, "fail", p50: 90_000)]
        #expect(CapacityRunner.knee(steps) == 12000, "the noisy 2000 is not the knee: 4000 and 8000 are back down")
        #expect(CapacityRunner.knee([step(1000, "pass", p50: 300), step(2000, "pass", p50: 700)]) == nil,
                "twice the lowest, but far below the SLO: no bend worth the name")
        #expect(CapacityRunner.knee([step(1000, "pass", p50: 300), step(2000, "invalid", p50: 90_000)]) == nil, "invalid steps do not count")
    }

    func plan() -> CapacityPlan {
        let scenario = Scenario(name: "cap", target: .embedded, clients: 2, connectRate: 100, durationSeconds: 1,
                                message: MessageSpec(ratePerSecond: 1000, size: 64), loadModel: .open, thinkTimeSeconds: 0, seed: 1,
                                drainSeconds: 1, connectTimeoutSeconds: 1)
        return CapacityPlan(scenario: scenario, vary: .messageRate, sloTexts: ["round_trip p(99) < 50ms"], slos: [slo], from: 1000,
                            to: 64000, precision: 0.02, stepSeconds: 10, warmupSeconds: 2, limits: limits)
    }

    @Test func aGeneratorLimitedSearchSaysSoAndReportsNoKnee() throws {
        let runner = CapacityRunner(plan: plan(), options: RunOptions(progress: .silent))
        var search = CapacitySearch(from: 1000, to: 64000, precision: 0.02, integral: false, growth: 2)
        var result = runner.emptyResult(startedAt: Date())
        while let next = search.next {
            let outcome = next.load >= 4000 ? "invalid" : "pass"
            result.steps.append(step(next.load, outcome, p50: next.load >= 3000 ? 900 : 100))
            search.record(outcome == "pass" ? .pass : .invalid)
        }
        runner.conclude(&result, search: search, interrupted: false, unreachable: nil, startedAt: Date())
        #expect(result.verdict == "generator_limited")
        #expect(result.knee == nil && result.maxSustainable == nil)
        #expect((result.heldAtLeast ?? 0) >= 3900 && result.generatorLimit == 4000)
        #expect(result.conclusion.contains("the generator could not drive 4,000 messages/s"))
        let json = try JSONSerialization.jsonObject(with: try result.jsonData()) as! [String: Any]
        #expect(json["knee"] is NSNull && json["max_sustainable"] is NSNull, "unknown values are null, not left out")
        #expect(json["schema"] as? String == "stampede.capacity/1")
        #expect(try CapacityResult.read(try result.jsonData()) == result)
    }

    @Test func aStepHoldsOneLoadWhateverTheScenariosRateStages() {
        var scenario = Scenario(name: "cap", target: .embedded, clients: 10, connectRate: 100, durationSeconds: 60,
                                message: MessageSpec(ratePerSecond: 100, size: 64), loadModel: .open)
        scenario.message.stages = [RateStage(durationSeconds: 30, ratePerSecond: 2000)]
        for (vary, load, rate) in [(CapacityPlan.Vary.messageRate, 500.0, 500.0), (.clients, 20, 200)] {
            let plan = CapacityPlan(scenario: scenario, vary: vary, sloTexts: [], slos: [], from: 1, to: 1000, precision: 0.05,
                                    stepSeconds: 10, warmupSeconds: 2, limits: limits)
            let step = plan.stepScenario(load: load)
            #expect(step.message.stages.isEmpty && step.message.ratePerSecond == rate, "\(vary)")
        }
    }

    @Test func sloTextsParseOrSayWhatIsWrong() {
        let ok = try? ThresholdSpec.parseSLO("round_trip p(99) < 50ms").get()
        #expect(ok?.metric == "round_trip" && ok?.conditions.first?.limit == 50_000)
        #expect((try? ThresholdSpec.parseSLO("errors rate < 0.1%").get())?.conditions.first?.limit == 0.001)
        for (bad, says) in [("round_trp p(99) < 50ms", "did you mean 'round_trip'"), ("round_trip", "expected a metric and a condition"),
                            ("storms.recovery_p99 max < 5s", "end of a run"), ("round_trip p(99) < fast", "expected a duration")] {
            guard case .failure(let p) = ThresholdSpec.parseSLO(bad) else { Issue.record("\(bad) parsed"); continue }
            #expect(p.description.contains(says), "\(bad): \(p)")
        }
    }
}
