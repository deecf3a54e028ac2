import StampedeLoop
import StampedeScenario
import StampedeWorkloads

/// Drives any text through everything a scenario meets before a run sends a byte: parsing,
/// validation with command-line overrides, the run plan, and the schedule arithmetic at its
/// extremes. Used by the libFuzzer target `scenario` (Fuzz/scenario) and by the suite, which
/// replays the fuzz corpus: no input may reach a Swift runtime trap.
///
/// Lines at the top of the text of the form `#--flag value` are command-line overrides
/// (`#--clients 0`, `#--duration nan`, `#--loops 300`); to YAML they are comments.
public enum ScenarioProbe {
    public enum Outcome: Sendable, Equatable {
        /// Refused with a message that names the file position, field or flag.
        case rejected(String)
        /// Accepted; the plan a run would use.
        case planned(RunPlan)
    }

    /// The overrides written as `#--flag value` lines at the top of `text`, and `--loops` apart.
    public static func commandLine(in text: String) -> (overrides: [ScenarioLoader.Override], loops: String?) {
        var overrides: [ScenarioLoader.Override] = []
        var loops: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            guard line.hasPrefix("#--") else { break }
            let words = line.dropFirst().split(separator: " ", maxSplits: 1)
            let flag = String(words[0]), value = words.count > 1 ? String(words[1]) : ""
            if flag == "--loops" {
                loops = value
            } else if let o = ScenarioLoader.Override(flag: flag, value: value) {
                overrides.append(o)
            }
        }
        return (overrides, loops)
    }

    /// Parses, validates and plans `text`; a trap anywhere on the way is the bug this looks for.
    public static func run(_ text: String) -> Outcome {
        let (overrides, loopsText) = commandLine(in: text)
        var loops = 2
        if let loopsText {
            guard let n = Int(loopsText), RunPlan.loopRange.contains(n) else { return .rejected("--loops: must be from 1 to 256") }
            loops = n
        }
        let scenario: Scenario
        do { scenario = try ScenarioLoader.parse(yaml: text, file: "probe.yaml", overrides: overrides) } catch {
            return .rejected(error.description)
        }
        let plan = RunPlan(scenario: scenario, loops: loops, openFilesLimit: 20_000, canSpawnTarget: true)
        exerciseSchedule(scenario, plan: plan)
        return .planned(plan)
    }

    /// The timer arithmetic a run does, at its extremes: the last client's connect and first
    /// send, the last message of the phase, reconnect delays, heartbeats, hub and REST timers.
    static func exerciseSchedule(_ s: Scenario, plan: RunPlan) {
        let start: UInt64 = 1 << 40  // a monotonic clock some days after boot
        var schedule = plan.schedule(for: s, startNs: start)
        var random = FastRandom(seed: s.seed)
        let last = s.clients - 1
        _ = schedule.connectTime(start: start, globalIndex: last)
        let first = schedule.firstSend(globalIndex: last, random: &random)
        if schedule.paces, first < schedule.endNs {
            let slot = schedule.sendSlot(globalIndex: last)
            let sequence = schedule.sequencesDue(slot: slot, now: schedule.endNs)
            _ = schedule.intended(slot: slot, sequence: sequence)
        }
        _ = schedule.nextAfterReply(now: schedule.endNs)
        _ = schedule.beginMessages(startNs: start, endNs: start + plan.durationNs)
        for spec in [s.reconnect, s.hub?.reconnect ?? .none] {
            var timeline = ReconnectTimeline()
            for _ in 0..<64 { guard timeline.failed(atNs: start, policy: ReconnectPolicy(spec), unitRandom: 0.999) != nil else { break } }
        }
        if let h = s.heartbeat {
            _ = start + nanoseconds(h.intervalSeconds ?? 0) + nanoseconds(h.pingIntervalSeconds ?? 0) + nanoseconds(h.timeoutSeconds ?? 0)
        }
        if let hub = s.hub {
            _ = start + nanoseconds(hub.keepAliveSeconds) + nanoseconds(hub.serverTimeoutSeconds) + nanoseconds(hub.handshakeTimeoutSeconds)
        }
        if let rest = s.rest {
            _ = start + nanoseconds(rest.intervalSeconds) + nanoseconds(rest.firstByteTimeoutSeconds) + nanoseconds(rest.responseTimeoutSeconds)
            for r in rest.resources { for p in r.processors { _ = nanoseconds(p.newIntervalSeconds ?? 0) } }
        }
        for offset in plan.eventOffsetsNs { _ = start + offset + plan.durationNs }
    }
}
