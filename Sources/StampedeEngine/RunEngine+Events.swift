import CStampedeLinux
import Foundation
import StampedeLoop
import StampedeMetrics
import StampedeReport
import StampedeScenario
import StampedeServers
import StampedeWire
import StampedeWorkloads
import Synchronization

// The scenario's events (storms, server faults, commands, churn) and what each did to the clients.
extension RunEngine {
    /// Merges every loop's view of each storm (read once, at the end).
    func collectStorms() -> [StormRecord] {
        var merged: [StormShard] = []
        for g in groups {
            for (n, shard) in g.storms().enumerated() {
                if n >= merged.count { merged.append(StormShard()) }
                merged[n].add(shard)
            }
        }
        return scenario.events.enumerated().compactMap { index, event in
            guard event.measuresRecovery else { return nil }
            var fraction: Double? = nil
            if case .storm(let f, _, _) = event.kind { fraction = f }
            return StormRecord(number: index + 1, atSeconds: event.atSeconds, kind: event.kindName, mode: event.detail, fraction: fraction,
                               shard: index < merged.count ? merged[index] : StormShard(), window: eventBook.windows[index] ?? EventWindow(),
                               command: eventBook.commandRuns[index]?.finished, faultError: eventBook.faultErrors[index])
        }
    }

    // MARK: Events

    /// Starts event `index` at its own instant `atNs` on every loop, so recovery times share one origin.
    func start(_ event: ScenarioEvent, index: Int, atNs: UInt64) {
        if event.measuresRecovery {
            _ = collectInterval(final: false)  // what came before belongs to the previous window
            eventBook.currentWindow = index
        }
        switch event.kind {
        case .storm(let fraction, let mode, let stall):
            let stallNs = nanoseconds(stall)
            for g in groups { g.storm(index: index, atNs: atNs, fraction: fraction, mode: mode, stallNs: stallNs) }
        case .server(let fault):
            if event.measuresRecovery {
                for g in groups { g.watch(index: index, atNs: atNs) }
            }
            if let problem = applyServerFault(fault) {
                eventBook.faultErrors[index] = problem
                warnings.append("event \(index + 1) (server \(fault)): \(problem)")
            }
        case .command(let command):
            for g in groups { g.watch(index: index, atNs: atNs) }
            let folder = scenario.file.isEmpty ? "" : URL(fileURLWithPath: scenario.file).deletingLastPathComponent().path
            eventBook.commandRuns[index] = ExternalCommandRun(number: index + 1, command: command, workingDirectory: folder)
        case .churn(let rate, let length):
            eventBook.activeChurns.append(ChurnState(ratePerSecond: rate, endNs: atNs + nanoseconds(length), lastNs: atNs))
        }
    }

    /// A churn event under way: clients due to leave and rejoin are handed out to the loops once
    /// per tick, the fraction carried over.
    struct ChurnState {
        var ratePerSecond: Double
        var endNs: UInt64
        var lastNs: UInt64
        var carry = 0.0
        var rotation = 0
    }

    func runChurn(until phaseEndNs: UInt64) {
        guard !eventBook.activeChurns.isEmpty else { return }
        let now = EventLoop.now()
        for c in eventBook.activeChurns.indices {
            let until = min(now, eventBook.activeChurns[c].endNs, phaseEndNs)
            guard until > eventBook.activeChurns[c].lastNs else { continue }
            eventBook.activeChurns[c].carry += eventBook.activeChurns[c].ratePerSecond * Double(until - eventBook.activeChurns[c].lastNs) / 1e9
            eventBook.activeChurns[c].lastNs = until
            let due = Int(eventBook.activeChurns[c].carry)
            guard due > 0 else { continue }
            eventBook.activeChurns[c].carry -= Double(due)
            for (i, share) in evenShares(of: due, over: groups.count, rotation: eventBook.activeChurns[c].rotation) {
                groups[i].churn(count: share)
            }
            eventBook.activeChurns[c].rotation += 1
        }
        eventBook.activeChurns.removeAll { $0.lastNs >= $0.endNs }
    }
}
