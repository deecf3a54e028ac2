import StampedeMetrics
import StampedeReport
import StampedeScenario

/// One capacity step's measured window: the intervals of the message phase after the warm-up,
/// gathered from the engine's interval reports (`RunOptions.intervalObserver`) as the step runs.
/// Only whole intervals inside the window count, so ramps and the drain are never measured.
/// Besides the window's totals it keeps each latency metric's intervals apart (`latencyIntervals`),
/// so the judge can see how much a statistic moves from one second to the next.
struct StepWindow: Sendable {
    /// Intervals kept apart per latency metric: past this many, neighbours are merged pairwise
    /// (memory stays bounded however long the step; the bootstrap then draws 2-, 4- … second blocks).
    static let maxIntervals = 600
    let warmupSeconds: Double
    let endSeconds: Double
    var shard = MetricsShard()
    var seconds = 0.0
    var intervals = 0
    var maxTimerLagNs: UInt64 = 0
    var peakClientLoopCPUPercent = 0.0
    var peakProcessCPUPercent = 0.0
    var loops = 0
    var open = 0
    var clients = 0
    /// Each latency metric's measured intervals (by metric key, as `MetricsShard.latencyHistogram(key:)`),
    /// only those with samples.
    var latencyIntervals: [String: IntervalBins] = [:]
    /// Errors by class (`ErrorClass` raw values) of every interval up to the window's end, the
    /// connect phase included: where a refused connection is counted.
    var errorsUpToEnd: [UInt64] = []

    init(warmupSeconds: Double, endSeconds: Double) {
        self.warmupSeconds = warmupSeconds
        self.endSeconds = endSeconds
    }

    /// Two counts by error class added up (an empty one is none yet).
    static func summed(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        a.isEmpty ? b : zip(a, b).map { $0 &+ $1 }
    }

    mutating func add(_ r: IntervalReport) {
        if r.messagePhaseSeconds.map({ $0.upperBound <= endSeconds + 0.001 }) ?? true {
            errorsUpToEnd = Self.summed(errorsUpToEnd, r.interval.errors)
        }
        // An interval ending just past the phase's end (the engine ticks every 100 ms) saw part of
        // the drain: left out, as is one starting before the warm-up was over.
        guard r.phase == "messages", let m = r.messagePhaseSeconds, m.lowerBound >= warmupSeconds - 0.001,
              m.upperBound <= endSeconds + 0.001 else { return }
        shard.add(r.interval)
        for (key, h) in r.interval.latenciesWithSamples {
            latencyIntervals[key, default: IntervalBins(maxBins: Self.maxIntervals)]
                .add(HistogramLogInterval(startSeconds: m.lowerBound, lengthSeconds: m.upperBound - m.lowerBound, histogram: h))
        }
        seconds += m.upperBound - m.lowerBound
        intervals += 1
        maxTimerLagNs = max(maxTimerLagNs, r.timerLagNs)
        peakClientLoopCPUPercent = max(peakClientLoopCPUPercent, r.clientLoopCPUPercent)
        peakProcessCPUPercent = max(peakProcessCPUPercent, r.processCPUPercent)
        loops = r.loops
        open = r.open
        clients = r.clients
    }
}

/// How a step is judged: its SLOs, and the limits every step must stay within.
///
/// A latency SLO is judged with stated confidence: besides the whole window's statistic, a
/// bootstrap over the window's intervals (`SLOBounds`) gives its one-sided `confidence` bounds.
/// The SLO holds when the worse bound meets it, fails when even the better bound misses it, and
/// is borderline in between: the step is then `borderline` and run again (stage `retry`), and the
/// retry is decided by the point estimate alone.
struct StepJudge {
    var slos: [ThresholdSpec]
    var limits: CapacityResult.Limits
    /// Bootstrap resamples per latency SLO, and the seed that makes them repeatable.
    var resamples = 400
    var seed: UInt64 = 0x5EED
    /// One-sided confidence of each bound (0.9: the 10th and 90th percentiles of the resamples).
    var confidence = 0.9
    /// Client loops busier than this share of their cores mean the generator is the limit.
    static let saturatedLoopCPUShare = GeneratorDelay.busyLoopCPUShare

    /// " (errors: 320 connection_reset, 12 upgrade_rejected)": the step's commonest error classes
    /// (at most three), which say how the missing clients were refused; "" when there were none.
    static func commonestErrors(_ errors: [UInt64]) -> String {
        let top = errors.indices.filter { errors[$0] > 0 }.sorted { errors[$0] != errors[$1] ? errors[$0] > errors[$1] : $0 < $1 }.prefix(3)
        let named = top.compactMap { i in ErrorClass(rawValue: i).map { "\(errors[i]) \($0.key)" } }
        return named.isEmpty ? "" : " (errors: \(named.joined(separator: ", ")))"
    }

    /// The step's figures and verdict. `intendedRate` is messages per second across all clients.
    func judge(_ w: StepWindow, number: Int, stage: CapacitySearch.Stage, load: Double, intendedRate: Double,
               runFailure: String?) -> CapacityResult.Step {
        let m = w.shard
        let sent = m[.messagesSent], delivered = m[.messagesDelivered], lost = m[.messagesLost]
        let errors = m.errors.reduce(0, &+)
        let seconds = w.seconds
        func perSecond(_ n: UInt64) -> Double { seconds > 0 ? ThresholdEvaluator.rounded(Double(n) / seconds) : 0 }
        var evaluator = ThresholdEvaluator(slos)
        let sloResults = evaluator.finish(totals: m, storms: [], messageSeconds: seconds) ?? []
        let bounds = SLOBounds.judge(sloResults, specs: slos, window: w, resamples: resamples, seed: seed, confidence: confidence,
                                     byPointEstimate: stage == .retry)
        var invalid: [String] = []
        var failed: [String] = []
        var borderline: [String] = []

        let lagMs = Double(w.maxTimerLagNs) / 1e6
        if w.maxTimerLagNs > RunEngine.saturationTimerLagNs {
            invalid.append("generator saturated: timers ran \(ThresholdMeasure.trimmed(lagMs)) ms late")
        }
        if w.loops > 0, w.peakClientLoopCPUPercent >= Self.saturatedLoopCPUShare * 100 * Double(w.loops) {
            invalid.append("generator saturated: client loops at \(Int(w.peakClientLoopCPUPercent))% CPU of \(w.loops * 100)%")
        }
        if let runFailure { failed.append(runFailure) }
        if w.intervals == 0 {
            failed.append("no whole interval after the warm-up (the step ended early)")
        }
        if w.open < w.clients { failed.append("\(w.open) of \(w.clients) clients connected" + Self.commonestErrors(w.errorsUpToEnd)) }
        for (r, b) in zip(sloResults, bounds) {
            switch b.decision {
            case .pass: break
            case .fail: failed.append("\(r.metric) \(r.condition): measured \(r.observedText)")
            case .borderline: borderline.append("\(r.metric) \(r.condition): borderline, measured \(r.observedText), \(b.boundsText)")
            }
        }
        if sent > 0, Double(errors) > limits.errorRatio * Double(sent) {
            failed.append("errors \(errors) of \(sent) sent (limit \(ThresholdMeasure.trimmed(limits.errorRatio * 100))%)")
        } else if sent == 0, errors > 0 {
            failed.append("\(errors) errors")
        }
        if sent > 0, Double(lost) > limits.lostRatio * Double(sent) {
            failed.append("lost \(lost) of \(sent) sent (limit \(ThresholdMeasure.trimmed(limits.lostRatio * 100))%)")
        }
        // The schedule's own granularity: a window may miss up to one message per client at each edge.
        let intendedCount = intendedRate * seconds
        if intendedRate > 0, seconds > 0, Double(sent) + Double(w.clients) < limits.sendRatio * intendedCount {
            failed.append("sent \(Int(perSecond(sent)))/s, under \(ThresholdMeasure.trimmed(limits.sendRatio * 100))% of the intended \(ThresholdMeasure.trimmed(intendedRate))/s")
        }

        var latency: [String: RunSummary.Latency] = [:]
        // Built-in and named (a WebSocket flow's `ack`) alike.
        for (key, h) in m.latenciesWithSamples { latency[key] = ResultsWriter.latencySummary(h) }
        // A saturated generator only ever adds latency (every latency is measured from the
        // intended send time): a step that passes anyway is a pass. One that fails is the
        // generator's doing unless the miss is beyond what it can add: at most its worst timer
        // lag to a send and as much to the read of the reply.
        let saturated = !invalid.isEmpty
        let lagMicros = Double(w.maxTimerLagNs) / 1000
        // Clients the server turned away (refused, reset, an upgrade answered with an error)
        // are its doing however late the generator's timers ran.
        let turnedAway = w.open < w.clients && [ErrorClass.connectRefused, .connectionReset, .upgradeRejected].contains {
            $0.rawValue < w.errorsUpToEnd.count && w.errorsUpToEnd[$0.rawValue] > 0
        }
        let clearlyServer = turnedAway
            || zip(sloResults, bounds).contains { $1.decision == .fail && GeneratorDelay.failsBeyondLag($0, lagMicros: lagMicros) }
        if failed.isEmpty || clearlyServer {
            if saturated && !failed.isEmpty { failed.append("the generator was saturated too (\(invalid.joined(separator: "; "))), but that does not turn clients away or add more than twice its lag") }
            invalid = []
        }
        let outcome: CapacitySearch.Outcome = !invalid.isEmpty ? .invalid : !failed.isEmpty ? .fail : !borderline.isEmpty ? .borderline : .pass
        var step = CapacityResult.Step(
            number: number, stage: stage.rawValue, load: load, outcome: outcome.rawValue, reasons: invalid + failed + borderline,
            measuredSeconds: ThresholdEvaluator.rounded(seconds), intendedRate: ThresholdEvaluator.rounded(intendedRate),
            achievedRate: perSecond(sent), receivedRate: perSecond(delivered &+ m[.fanoutReceived]),
            sent: sent, delivered: delivered, lost: lost, errors: errors, open: w.open, clients: w.clients,
            latencyMicros: latency, slos: sloResults,
            generator: .init(maxTimerLagMicros: w.maxTimerLagNs / 1000, peakClientLoopCPUPercent: ThresholdEvaluator.rounded(w.peakClientLoopCPUPercent),
                             peakProcessCPUPercent: ThresholdEvaluator.rounded(w.peakProcessCPUPercent), loops: w.loops, saturated: saturated),
            resultsFolder: nil)
        step.spread = zip(sloResults, bounds).lazy.compactMap { r, b in b.spread(of: r) }.first
        return step
    }
}
