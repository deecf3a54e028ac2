import CStampedeLinux
import Foundation
import StampedeFleet
import StampedeLoop
import StampedeMetrics
import StampedeReport
import StampedeScenario
import StampedeServers
import StampedeWire
import StampedeWorkloads
import Synchronization

// The engine's clock: every 100 ms a tick reads the groups' gauges; every second their
// measurements are merged into the totals, a time-series row and the progress line.
extension RunEngine {
    // MARK: Ticks and intervals

    struct TickState {
        var open = 0, inFlight = 0, notYetStarted = 0, outstanding: UInt64 = 0
        /// Counts since the last interval boundary (not yet in `totals`).
        var sentSinceInterval: UInt64 = 0, fanoutSinceInterval: UInt64 = 0
    }

    /// Sleeps 100 ms, then reads every group's gauges; on a second boundary merges their measurements.
    func tick() -> TickState {
        Thread.sleep(forTimeInterval: 0.1)
        if EventLoop.now() - lastIntervalNs >= 1_000_000_000 { _ = collectInterval(final: false) }
        var s = GroupState()
        for g in groups { s.add(g.state()) }
        checkWorkers()
        gauges.peakOpen = max(gauges.peakOpen, s.open)
        lastOpen = s.open
        return TickState(open: s.open, inFlight: s.inFlight, notYetStarted: s.notYetStarted, outstanding: s.outstanding,
                         sentSinceInterval: s.sent, fanoutSinceInterval: s.fanout)
    }

    /// Takes each group's measurements since the last boundary (resetting them there), merges
    /// them, adds them to the totals, and appends a time-series row.
    func collectInterval(final: Bool) -> MetricsShard {
        let now = EventLoop.now()
        var merged = MetricsShard()
        var open = 0, connecting = 0, reconnecting = 0
        var lag: UInt64 = 0
        var boundarySum: UInt64 = 0, boundaries: UInt64 = 0
        for (i, g) in groups.enumerated() {
            let d = g.takeInterval()
            if d.boundaryNs > 0 { boundarySum &+= d.boundaryNs; boundaries += 1 }
            merged.add(d.metrics)
            open += d.open
            connecting += d.connecting
            reconnecting += d.reconnecting
            lag = max(lag, d.timerLagNs)
            gauges.cpuSeen[i] = d.loopCPUNs
            if d.processCPUNs > 0 { gauges.workerProcessCPUNs[i] = d.processCPUNs }
            if d.residentBytes > 0 { gauges.workerResidentBytes[i] = d.residentBytes }
        }
        let loopCPUNs = gauges.cpuSeen.values.reduce(0, +)
        let processCPUNs = generatorCPUNs()
        let wall = Double(now - lastIntervalNs)
        var processPercent = 0.0, loopPercent = 0.0
        if wall >= 0.5e9 && gauges.lastProcessCPUNs > 0 {
            processPercent = Double(processCPUNs &- gauges.lastProcessCPUNs) / wall * 100
            loopPercent = Double(loopCPUNs &- gauges.clientLoopCPUNs) / wall * 100
            gauges.peakProcessCPUPercent = max(gauges.peakProcessCPUPercent, processPercent)
            gauges.peakLoopCPUPercent = max(gauges.peakLoopCPUPercent, loopPercent)
        }
        gauges.lastProcessCPUNs = processCPUNs
        gauges.clientLoopCPUNs = loopCPUNs
        totals.add(merged)
        addProfileFanoutDue(sent: merged[.messagesSent], open: open)
        // Each latency metric's interval histogram, as an .hlog line (skipping empty ones), onto its file.
        for (m, line) in HistogramLog.lines(of: merged, startSeconds: seconds(lastIntervalNs &- runStartNs), lengthSeconds: seconds(now &- lastIntervalNs)) {
            spool?.append(line: line, toLog: ResultsWriter.hlogFileName(m))
        }
        for (key, line) in HistogramLog.namedLines(of: merged, startSeconds: seconds(lastIntervalNs &- runStartNs), lengthSeconds: seconds(now &- lastIntervalNs)) {
            spool?.append(line: line, toLog: ResultsWriter.hlogFileName(named: key))
        }
        thresholdBoundary(merged, fromNs: lastIntervalNs, toNs: now, final: final)
        let rssNow = generatorResidentBytes()
        // The interval belongs to the window of the latest event before it (or to the baseline).
        if let current = eventBook.currentWindow {
            eventBook.windows[current, default: EventWindow()].add(connectPhaseOf: merged)
            eventBook.windows[current]!.messagesLost += merged[.messagesLost]
            eventBook.windows[current]!.peakProcessCPUPercent = max(eventBook.windows[current]!.peakProcessCPUPercent, processPercent)
            eventBook.windows[current]!.peakClientLoopCPUPercent = max(eventBook.windows[current]!.peakClientLoopCPUPercent, loopPercent)
            eventBook.windows[current]!.peakResidentBytes = max(eventBook.windows[current]!.peakResidentBytes, rssNow)
        } else {
            eventBook.baselineWindow.add(connectPhaseOf: merged)
        }
        gauges.peakOpen = max(gauges.peakOpen, open)
        gauges.peakRSS = max(gauges.peakRSS, rssNow)
        let elapsed = seconds(now - runStartNs)
        if phase == .messages || phase == .drain {
            gauges.maxTimerLagNs = max(gauges.maxTimerLagNs, lag)
            // Timers more than 10 ms late mean the generator, not the server, is adding latency;
            // kept up (GeneratorDelay.sustainedIntervals), the generator counts as saturated.
            if lag > Self.saturationTimerLagNs {
                warnings.append(String(format: "generator: timers ran %.1f ms late at %.0f s; latency figures include generator delay", Double(lag) / 1e6, elapsed))
            }
            // Whole intervals only: a short one (an event's boundary) has no CPU figure.
            if wall >= 0.5e9 {
                let wasBusy = gauges.saturation.sustainedBusyLoops
                let loops = groups.reduce(0) { $0 + $1.loopCount }
                gauges.saturation.add(timerLagNs: lag, clientLoopCPUPercent: loopPercent, loops: loops)
                if !wasBusy && gauges.saturation.sustainedBusyLoops {
                    warnings.append(String(format: "generator: client loops at %.0f%% CPU of %d%% for %d s at %.0f s; latency figures include generator delay",
                                           loopPercent, loops * 100, GeneratorDelay.sustainedIntervals, elapsed))
                }
            }
        }
        let shown = kind.progressLatency(merged)
        var rtt = merged.histograms[shown[0].rawValue]
        for m in shown.dropFirst() where merged.histograms[m.rawValue].totalCount > 0 { rtt.add(merged.histograms[m.rawValue]) }
        let fan = merged.histograms[LatencyMetric.fanout.rawValue]
        var sample = IntervalSample(
            elapsedSeconds: elapsed, openConnections: open, messagesSent: merged[.messagesSent],
            messagesReceived: merged[.messagesDelivered] + merged[.fanoutReceived],
            errors: merged.errors.reduce(0, +),
            p50Micros: rtt.totalCount > 0 ? rtt.latencyValue(atPercentile: 50) : 0,
            p99Micros: rtt.totalCount > 0 ? rtt.latencyValue(atPercentile: 99) : 0)
        sample.connecting = connecting
        sample.reconnecting = reconnecting
        sample.errorsByClass = merged.errors
        sample.targetRate = targetRate(fromNs: lastIntervalNs, toNs: now)
        if !final || sample.messagesSent + sample.messagesReceived + sample.errors > 0 { spool?.append(row: sample) }
        // The span the interval's counts cover: from the loops' swap at the last boundary to
        // theirs now. On a busy machine a loop runs the swap tens of milliseconds after the
        // engine asked for it, by different amounts at the two ends; dividing the counts by the
        // engine's own span would read a rate a few per cent off (a capacity step's send ratio).
        let boundary = boundaries > 0 ? boundarySum / boundaries : now
        defer { lastBoundaryNs = boundary }
        if let observer = options.intervalObserver {
            let from = signedSeconds(lastBoundaryNs, since: messageStartNs)
            let messagePhase: ClosedRange<Double>? = messageStartNs == 0 ? nil
                : from...max(from, signedSeconds(boundary, since: messageStartNs))
            var report = IntervalReport(elapsedSeconds: elapsed, phase: phase.rawValue, messagePhaseSeconds: messagePhase, interval: merged, totals: totals,
                                        open: open, connecting: connecting, reconnecting: reconnecting, clients: scenario.clients, timerLagNs: lag,
                                    processCPUPercent: processPercent, clientLoopCPUPercent: loopPercent, loops: groups.reduce(0) { $0 + $1.loopCount },
                                    residentBytes: rssNow, final: final)
            report.population = options.population?.name
            observer(report)
        }
        let dt = max(seconds(now - lastIntervalNs), 0.001)
        lastIntervalNs = now
        progress.show(ProgressLine(elapsed: elapsed, phase: phase.rawValue, open: open, clients: scenario.clients,
                                   sentPerSecond: Double(sample.messagesSent) / dt, receivedPerSecond: Double(sample.messagesReceived) / dt,
                                   p50Micros: sample.p50Micros, p99Micros: sample.p99Micros, fanoutP99Micros: fan.totalCount > 0 ? fan.latencyValue(atPercentile: 99) : 0,
                                   errors: totals.errors.reduce(0, +),
                                   targetPerSecond: scenario.message.stages.isEmpty ? nil : sample.targetRate))
        return merged
    }

    /// Open model: the messages per second the schedule intended over the interval from `fromNs`
    /// to `toNs` (`message.rate` or `message.stages`, counted within the message phase only), so
    /// timeseries.csv shows the target beside what was sent; 0 without an arrival rate.
    func targetRate(fromNs: UInt64, toNs: UInt64) -> Double {
        guard messageStartNs > 0, toNs > fromNs, scenario.loadModel == .open, scenario.workload != .rest else { return 0 }
        let phase = seconds(messageEndNs &- messageStartNs)
        let a = min(max(signedSeconds(fromNs, since: messageStartNs), 0), phase)
        let b = min(max(signedSeconds(toNs, since: messageStartNs), 0), phase)
        return rateProfile.messages(fromSeconds: a, toSeconds: b) / seconds(toNs - fromNs)
    }

    /// `a - b` in seconds, negative when `a` is earlier.
    func signedSeconds(_ a: UInt64, since b: UInt64) -> Double { a >= b ? seconds(a - b) : -seconds(b - a) }

    /// CPU of the whole generator: this process and its workers (as of their last interval).
    func generatorCPUNs() -> UInt64 { cs_process_cpu_ns() + gauges.workerProcessCPUNs.values.reduce(0, +) }

    /// Resident memory of the whole generator: this process and its workers (as of their last interval).
    func generatorResidentBytes() -> UInt64 { processResidentBytes() + gauges.workerResidentBytes.values.reduce(0, +) }
}

/// This process's resident memory (/proc/self/statm), bytes; 0 if unreadable.
func processResidentBytes() -> UInt64 {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = UInt64(fields[1]) else { return 0 }
    return pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))
}
