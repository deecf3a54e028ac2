import Foundation
@testable import StampedeReport
import Testing

/// The statistics over runs (`compare --baseline … --current …` and `--history`) on values
/// small enough to check by hand, and the verdict rule on synthetic percentiles.
@Suite struct RunLevelStatisticsTests {
    @Test func mannWhitneyIsExactForSmallSamplesAndBoundedByTheirSize() {
        // Full separation: 2 of C(10, 5) = 252 arrangements are as extreme (one each way).
        #expect(abs(RunLevelStatistics.mannWhitneyP([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) - 2.0 / 252) < 1e-12)
        // Three a side can never reach 0.05: full separation is 2 of C(6, 3) = 20.
        #expect(abs(RunLevelStatistics.mannWhitneyP([1, 2, 3], [4, 5, 6]) - 0.1) < 1e-12)
        // Interleaved values: no evidence either way.
        #expect(RunLevelStatistics.mannWhitneyP([1, 3, 5, 7, 9], [2, 4, 6, 8, 10]) > 0.5)
        // One swap (U = 1): 2 × 2/252.
        #expect(abs(RunLevelStatistics.mannWhitneyP([1, 2, 3, 4, 6], [5, 7, 8, 9, 10]) - 4.0 / 252) < 1e-12)
        #expect(RunLevelStatistics.mannWhitneyP([], [1]) == 1)
    }

    @Test func mannWhitneyDistributionCountsEveryArrangement() {
        // C(n+m, n) arrangements in all, symmetric around n·m/2.
        let d = RunLevelStatistics.uDistribution(5, 7)
        #expect(d.reduce(0, +) == 792)
        #expect(d == d.reversed())
        #expect(RunLevelStatistics.uDistribution(30, 30).count == 901)
    }

    @Test func mannWhitneyWithTiesUsesTheNormalApproximation() {
        // Ties everywhere: nothing to tell apart.
        #expect(RunLevelStatistics.mannWhitneyP([5, 5, 5], [5, 5, 5]) == 1)
        // Separated but tied within sides: clearly apart with enough values.
        let p = RunLevelStatistics.mannWhitneyP([Double](repeating: 1, count: 10), [Double](repeating: 2, count: 10))
        #expect(p < 0.001)
    }

    @Test func aPredictionIntervalWidensWithTheHistorysSpreadAndIsSymmetricInTheLogarithm() throws {
        let tight = try #require(RunLevelStatistics.predictionInterval([100, 101, 99, 100, 100]))
        let loose = try #require(RunLevelStatistics.predictionInterval([80, 120, 100, 90, 110]))
        #expect(tight.high - tight.low < loose.high - loose.low)
        #expect(abs(loose.high / loose.center - loose.center / loose.low) < 1e-9)
        #expect(loose.low < 80 && loose.high > 120)
        #expect(RunLevelStatistics.predictionInterval([100, 100]) == nil)
        #expect(RunLevelStatistics.predictionInterval([100, 0, 100]) == nil)
    }

    @Test func tQuantilesMatchTheTableAndApproachTheNormal() {
        #expect(RunLevelStatistics.tQuantile(level: 0.95, df: 4) == 2.776)
        #expect(abs(RunLevelStatistics.tQuantile(level: 0.95, df: 200) - 1.97) < 0.01)
        #expect(RunLevelStatistics.tQuantile(level: 0.95, df: 0) == .infinity)
    }

    @Test func theHierarchicalBootstrapCoversAKnownShiftAndIsDeterministic() {
        // Five runs a side, each run's replicates spread ±2 % around its own value; current 20 % up.
        func runs(_ centers: [Double]) -> [[Double]] { centers.map { c in [c] + (0..<50).map { c * (0.98 + 0.04 * Double($0) / 49) } } }
        let base = runs([100, 103, 97, 101, 99]), cur = runs([120, 123, 117, 121, 119])
        let ci = RunLevelStatistics.hierarchicalChange(baseline: base, current: cur, resamples: 2000, seed: 1)
        #expect(ci.low > 0.10 && ci.high < 0.30 && ci.low < 0.20 && ci.high > 0.20)
        #expect(ci == RunLevelStatistics.hierarchicalChange(baseline: base, current: cur, resamples: 2000, seed: 1))
        let same = RunLevelStatistics.hierarchicalChange(baseline: base, current: runs([100, 103, 97, 101, 99]), resamples: 2000, seed: 1)
        #expect(same.low < 0 && same.high > 0)
        #expect(RunLevelStatistics.hierarchicalChange(baseline: [], current: cur) == (0, 0))
    }

    @Test func pairedRunsCancelWhatTheMachineDidToBothRunsOfAPair() {
        // The machine's level moves from pair to pair (100 → 140 → 90 …), each current run 10 % above its baseline.
        let base = [100.0, 140, 90, 120, 105], cur = base.map { $0 * 1.10 }.enumerated().map { $1 * (1 + 0.01 * Double($0 % 2)) }
        let p = RunLevelStatistics.pairedChange(baseline: base, current: cur)
        #expect(p.low > 0.08 && p.high < 0.13 && abs(p.change - 0.104) < 0.01)
        // Unpaired, the same runs are far from significant: the level's moves swamp 10 %.
        #expect(RunLevelStatistics.mannWhitneyP(base, cur) > 0.2)
        #expect(RunLevelStatistics.pairedChange(baseline: [100], current: [110]) == (0, 0, 0))
        #expect(RunLevelStatistics.pairedChange(baseline: [100, 0], current: [110, 120]) == (0, 0, 0))
    }

    @Test func pairsAreJudgedByTheirIntervalWithoutMannWhitney() {
        let rule = RunSetRule(tolerance: 0.05)
        let (v, why) = rule.verdict(runs: Self.percentile(change: 10, low: 6, high: 14, p: nil), p99: nil, baselineCount: 5, currentCount: 5)
        #expect(v == .slower && why.contains("paired"))
        #expect(rule.verdict(runs: Self.percentile(change: 10, low: -1, high: 21, p: nil), p99: nil, baselineCount: 5, currentCount: 5).0 == .noChange)
    }

    static func percentile(change: Double, low: Double, high: Double, p: Double?, name: String = "p50") -> RunSetPercentile {
        RunSetPercentile(name: name, baselineRuns: [100], currentRuns: [100], baselineMedian: 100, currentMedian: 100 * (1 + change / 100),
                         changePct: change, lowPct: low, highPct: high, pValue: p)
    }

    @Test func severalRunsAreSlowerOnlyWhenSignificantAndBeyondTheTolerance() {
        let rule = RunSetRule(tolerance: 0.05)
        // Significant both ways, beyond 5 %: slower.
        #expect(rule.verdict(runs: Self.percentile(change: 10, low: 4, high: 16, p: 0.008), p99: nil, baselineCount: 5, currentCount: 5).0 == .slower)
        // The bootstrap says so but Mann–Whitney does not (5 a side): no change, marked ~.
        let notTested = rule.verdict(runs: Self.percentile(change: 10, low: 4, high: 16, p: 0.15), p99: nil, baselineCount: 5, currentCount: 5)
        #expect(notTested.0 == .noChange && notTested.1.contains("~"))
        // Three a side: the test cannot reach 5 %, so the bootstrap interval decides.
        #expect(rule.verdict(runs: Self.percentile(change: 10, low: 4, high: 16, p: 0.1), p99: nil, baselineCount: 3, currentCount: 3).0 == .slower)
        // Significant but within the tolerance: no change.
        #expect(rule.verdict(runs: Self.percentile(change: 3, low: 1, high: 5, p: 0.008), p99: nil, baselineCount: 5, currentCount: 5).0 == .noChange)
        #expect(rule.verdict(runs: Self.percentile(change: -12, low: -18, high: -6, p: 0.008), p99: nil, baselineCount: 5, currentCount: 5).0 == .faster)
        // The middle stayed, the tail moved far and significantly: spread changed.
        let tail = Self.percentile(change: 60, low: 30, high: 90, p: 0.008, name: "p99")
        #expect(rule.verdict(runs: Self.percentile(change: 1, low: -2, high: 4, p: 0.6), p99: tail, baselineCount: 5, currentCount: 5).0 == .spreadChanged)
    }

    @Test func againstAHistoryARunIsSlowerOnlyAboveThePredictionIntervalAndTheTolerance() {
        let rule = RunSetRule(tolerance: 0.05)
        #expect(rule.verdict(history: Self.percentile(change: 12, low: -8, high: 9, p: nil), p99: nil).0 == .slower)
        #expect(rule.verdict(history: Self.percentile(change: 8, low: -8, high: 9, p: nil), p99: nil).0 == .noChange)
        // Outside a very tight history, but by less than the tolerance.
        #expect(rule.verdict(history: Self.percentile(change: 4, low: -1, high: 1, p: nil), p99: nil).0 == .noChange)
        #expect(rule.verdict(history: Self.percentile(change: -12, low: -8, high: 9, p: nil), p99: nil).0 == .faster)
    }
}
