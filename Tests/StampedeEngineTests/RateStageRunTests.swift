import Foundation
import StampedeEngine
import StampedeScenario
import StampedeWorkloads
import Synchronization
import Testing

/// `message.stages` end to end: the send rate a run achieves, as timeseries.csv records it,
/// follows the profile second by second, across every stage boundary.
@Suite(.serialized)
struct RateStageRunTests {
    @Test func achievedSendRateFollowsTheStagesInEveryInterval() throws {
        // 50 → 400/s over 3 s, 400/s for 3 s, down to 100/s over 3 s, then held for 3 s. 20
        // clients keep the embedded target's fan-out (8,000 frames/s at the peak) light enough
        // for a shared test machine, so the generator's timers run on time.
        var s = chatScenario(name: "rate-stages", clients: 20, duration: 12, rate: 50)
        s.message.stages = [RateStage(durationSeconds: 3, ratePerSecond: 400), RateStage(durationSeconds: 3, ratePerSecond: 400),
                            RateStage(durationSeconds: 3, ratePerSecond: 100)]
        s.drainSeconds = 2
        // Where the message phase starts on the elapsed_s axis (not on a whole second: the
        // ramp-up ends when it ends), from the engine's own interval reports.
        let phaseStart = Mutex<Double?>(nil)
        // How late the generator's timers ran in each interval (by its elapsed_s in milliseconds):
        // a send is made when its timer fires, so on a machine busy with other work a late timer
        // moves sends into the next interval. On a quiet machine this is well under a millisecond.
        let lateness = Mutex<[Int: Double]>([:])
        var options = RunOptions(loops: 2, resultsRoot: temporaryFolder(s.name), progress: .silent)
        options.intervalObserver = { r in
            lateness.withLock { $0[Int((r.elapsedSeconds * 1000).rounded())] = Double(r.timerLagNs) / 1e9 }
            guard let m = r.messagePhaseSeconds else { return }
            phaseStart.withLock { $0 = $0 ?? r.elapsedSeconds - m.upperBound }
        }
        let o = try RunEngine(scenario: s, options: options).run()
        #expect(o.exitCode == 0)
        #expect(o.summary.messages.lost == 0)
        let start = try #require(phaseStart.withLock { $0 })
        let folder = try #require(o.resultsFolder)
        let csv = try String(contentsOf: folder.appendingPathComponent("timeseries.csv"), encoding: .utf8)
        let lines = csv.split(separator: "\n").map { $0.split(separator: ",").map(String.init) }
        let header = try #require(lines.first)
        let elapsedColumn = try #require(header.firstIndex(of: "elapsed_s"))
        let sentColumn = try #require(header.firstIndex(of: "messages_sent"))
        let targetColumn = try #require(header.firstIndex(of: "target_rate"))
        #expect(header.last == "target_rate")
        let rows = lines.dropFirst().map { row in (elapsed: Double(row[elapsedColumn])!, sent: Double(row[sentColumn])!, target: Double(row[targetColumn])!) }
        let profile = RateProfile(s.message)
        let late = lateness.withLock { $0 }
        let boundaries = s.message.stages.indices.map { i in s.message.stages[...i].reduce(0) { $0 + $1.durationSeconds } }
        var checked = 0
        for (previous, row) in zip(rows, rows.dropFirst()) {
            // Only intervals wholly inside the message phase: the first and last are partly ramp-up and drain.
            let a = previous.elapsed - start, b = row.elapsed - start
            guard a >= 0, b <= s.durationSeconds else { continue }
            let intended = profile.messages(fromSeconds: a, toSeconds: b)
            // Linear stages: the highest rate in [a, b] is at an end or at a stage boundary inside.
            let peak = ([a, b] + boundaries.filter { $0 > a && $0 < b }).map { profile.rate(atSeconds: $0) }.max()!
            // elapsed_s is written to the millisecond: each bound may be 0.5 ms off, a fraction of a
            // message. Sends delayed by late timers at either bound move across it.
            let rounding = peak * 0.001
            let delayed = peak * ((late[Int((previous.elapsed * 1000).rounded())] ?? 0) + (late[Int((row.elapsed * 1000).rounded())] ?? 0))
            #expect(abs(row.sent - intended) <= max(0.02 * intended, 1) + rounding + delayed,
                    "interval \(a)–\(b) s: sent \(row.sent), intended \(intended), timers late by up to \(delayed / peak) s")
            #expect(abs(row.target * (b - a) - intended) <= 0.01 * intended + rounding,
                    "target_rate \(row.target) over \(a)–\(b) s, intended \(intended)")
            checked += 1
        }
        // About ten one-second intervals; fewer when a busy machine stretches them.
        #expect(checked >= 2)
    }
}
