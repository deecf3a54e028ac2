import Foundation
import StampedeReport

extension CapacityRunner {
    func emptyResult(startedAt: Date) -> CapacityResult {
        let s = plan.scenario
        return CapacityResult(
            scenario: s.name, scenarioFile: s.file, workload: s.workload.rawValue, target: s.target.description, vary: plan.varyText,
            unit: plan.unit, slos: plan.sloTexts, limits: plan.limits, stepSeconds: plan.stepSeconds, warmupSeconds: plan.warmupSeconds,
            from: plan.from, to: plan.to, precision: plan.precision, steps: [], verdict: "interrupted", maxSustainable: nil, knee: nil,
            heldAtLeast: nil, generatorLimit: nil, firstFailing: nil, firstFailingReasons: [], conclusion: "no step has run yet", partial: true,
            startedAt: iso8601(startedAt), endedAt: iso8601(startedAt), wallSeconds: 0, commandLine: options.commandLine)
    }

    /// Fills in the verdict, the answer, the knee and the sentence for people from the search so far.
    func conclude(_ r: inout CapacityResult, search: CapacitySearch, interrupted: Bool, unreachable: String?, startedAt: Date) {
        let now = Date()
        r.endedAt = iso8601(now)
        r.wallSeconds = ThresholdEvaluator.rounded(now.timeIntervalSince(startedAt))
        r.maxSustainable = search.maxSustainable
        r.heldAtLeast = search.highestPass
        r.generatorLimit = search.generatorLimit
        r.firstFailing = search.lowestFail
        r.firstFailingReasons = search.lowestFail.flatMap { load in r.steps.last { $0.load == load && $0.outcome == "fail" }?.reasons } ?? []
        // No knee when the generator was the limit: its latency is partly its own.
        r.knee = search.verdict == .generatorLimited ? nil : Self.knee(r.steps)
        let unit = plan.unit
        func f(_ v: Double?) -> String { v.map { Self.format($0) + " " + unit } ?? "–" }
        let why = r.firstFailingReasons.first.map { " (\($0))" } ?? ""
        if let unreachable {
            r.verdict = "unreachable"
            r.partial = true
            r.conclusion = "the first step could not reach the target: \(unreachable)"
            return
        }
        if interrupted || search.verdict == nil {
            r.verdict = "interrupted"
            r.partial = true
            r.conclusion = "interrupted after \(r.steps.count) step(s)"
                + (search.highestPass.map { "; the server held at least \(f($0))" } ?? "")
                + (search.lowestFail.map { "; \(f($0)) failed\(why)" } ?? "")
            return
        }
        r.partial = false
        r.verdict = search.verdict!.rawValue
        switch search.verdict! {
        case .found:
            r.conclusion = "holds \(f(r.maxSustainable)) within the SLOs (confirmed); \(f(r.firstFailing)) failed\(why)"
        case .aboveRange:
            r.conclusion = "held every load up to \(f(plan.to)), the top of the range: raise --to to find the limit"
        case .belowRange:
            r.conclusion = "the lowest load, \(f(plan.from)), already failed\(why): lower --from"
        case .unstable:
            // `unstable`: the loads where it both passed and failed are where its capacity wanders.
            let range = search.unstableRange.map { $0.lowerBound == $0.upperBound ? "at \(f($0.lowerBound))" : "between \(f($0.lowerBound)) and \(f($0.upperBound))" } ?? "near \(f(search.lowestFail))"
            r.conclusion = "the server is too unstable to give one number: \(range) it passed and failed by turns "
                + "(its capacity varies more than --precision \(ThresholdMeasure.trimmed(plan.precision * 100))%); "
                + "the highest load below that which passed is \(f(search.highestPass))"
        case .generatorLimited:
            let reason = r.steps.last { $0.outcome == "invalid" && $0.load == search.generatorLimit }?.reasons.first.map { " (\($0))" } ?? ""
            r.conclusion = "the generator could not drive \(f(search.generatorLimit))\(reason), so no knee is reported; the server held at least \(f(search.highestPass)). "
                + "Give the generator more cores (--loops) or more processes, or move the server to another host."
        }
    }

    /// The first latency SLO's interval spread for a step's progress line: "per s 3.1ms…48ms,
    /// 90% bounds 6ms…21ms"; empty without one. A server whose figure jumps from second to
    /// second shows it here before the search's answer does.
    func spreadText(_ step: CapacityResult.Step) -> String {
        guard let s = step.spread else { return "" }
        func t(_ v: Double) -> String { ThresholdMeasure.text(v, unit: "us") }
        return "  per s \(t(s.min))…\(t(s.max)), \(ThresholdMeasure.trimmed(s.confidence * 100))% bounds \(t(s.low))…\(t(s.high))"
    }

    /// Where the load–latency curve bends: the lowest load from which every higher step's figure
    /// for the first latency SLO (the statistic it judges, such as p99) stays at or above both twice
    /// the lowest figure of any step and a tenth of the SLO's limit. "Every higher step", so one
    /// noisy point is not a knee; "a tenth of the limit", so a rise from 0.3 to 0.7 ms is not one
    /// either. Nil without a latency SLO, when the curve never bends, or when it bends from the
    /// lowest load tried.
    static func knee(_ steps: [CapacityResult.Step]) -> Double? {
        var figure: [Double: Double] = [:]
        var limit = 0.0
        for s in steps where s.outcome != "invalid" {
            guard let slo = s.slos.first(where: { $0.unit == "us" }), let v = slo.observed else { continue }
            figure[s.load] = max(figure[s.load] ?? 0, v)
            limit = slo.limit
        }
        let loads = figure.keys.sorted()
        guard let lowest = figure.values.min(), loads.count >= 2 else { return nil }
        let bent = max(2 * lowest, limit / 10)
        var knee: Double?
        for load in loads.reversed() {
            guard figure[load]! >= bent else { break }
            knee = load
        }
        return knee == loads.first ? nil : knee
    }

    func iso8601(_ d: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: d)
    }
}
