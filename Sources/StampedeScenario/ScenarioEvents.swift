import Foundation
import Yams

extension Reader {
    /// `events: [{at: 5s, storm: {fraction: 1.0, mode: reset}}, {at: 20s, server: {fault: drop}}, …]`
    func eventList(_ node: Node, duration: Double, target: Target, admin: AdminEndpoint?) throws(ScenarioError) -> [ScenarioEvent] {
        if isNull(node) { return [] }
        let example = "'- {at: 5s, storm: {fraction: 1.0}}' (or server, command, churn)"
        guard case .sequence(let items) = node else {
            throw error(at: node, field: "events", "expected a list of events like \(example), got \(describe(node))")
        }
        var events: [ScenarioEvent] = []
        let kinds = ["storm", "server", "command", "churn"]
        for (index, item) in items.enumerated() {
            let path = "events[\(index)]"
            guard case .mapping(let mapping) = item else {
                throw error(at: item, field: path, "expected an event like \(example), got \(describe(item))")
            }
            let f = try Fields(mapping, path: path, known: ["at"] + kinds, reader: self)
            guard let atNode = f["at"] else { throw error(at: item, field: "\(path).at", "missing required field 'at'") }
            let at = try self.duration(atNode, field: "\(path).at", allowZero: true)
            guard at < duration else {
                throw error(at: atNode, field: "\(path).at", "the event is at or after the end of the message phase (duration \(format(duration))s\(origin(of: "duration")))")
            }
            let present = kinds.filter { f[$0] != nil }
            guard present.count == 1, let kind = present.first, let body = f[kind] else {
                throw error(at: item, field: path, present.isEmpty
                    ? "expected one of 'storm', 'server', 'command' or 'churn' in the event"
                    : "an event does one thing; found \(present.map { "'\($0)'" }.joined(separator: " and ")): make them separate events")
            }
            let field = "\(path).\(kind)"
            let event: ScenarioEvent.Kind
            switch kind {
            case "storm": event = try stormEvent(body, field: field)
            case "server":
                if target != .embedded && admin == nil {
                    throw error(at: body, field: field,
                                "a server event needs the embedded target or 'target_admin: http://127.0.0.1:<port>' (the admin endpoint of 'stampede serve --admin-port')")
                }
                event = .server(try serverFault(body, field: field))
            case "command": event = .command(try externalCommand(body, field: field))
            default:
                let m = try mappingNode(body, field: field, expecting: "{rate: 10, for: 30s} (clients leaving and joining per second)")
                let cf = try Fields(m, path: field, known: ["rate", "for"], reader: self)
                guard let rateNode = cf["rate"] else { throw error(at: body, field: "\(field).rate", "missing required field 'rate' (clients per second)") }
                let rate = try number(rateNode, field: "\(field).rate", atLeast: Limits.slowestRate, maximum: Limits.connectRate)
                var length = duration - at
                if let n = cf["for"] { length = try self.duration(n, field: "\(field).for", allowZero: false) }
                event = .churn(ratePerSecond: rate, durationSeconds: min(length, duration - at))
            }
            events.append(ScenarioEvent(atSeconds: at, kind: event))
        }
        return events.sorted { $0.atSeconds < $1.atSeconds }
    }

    /// `{fraction: 0.5, mode: reset|close|stall, for: 20s}`; `for` is the stall's length.
    private func stormEvent(_ node: Node, field: String) throws(ScenarioError) -> ScenarioEvent.Kind {
        var fraction = 1.0
        var mode = StormMode.reset
        var stall = 0.0
        if !isNull(node) {
            let s = try mappingNode(node, field: field, expecting: "{fraction: 0…1, mode: reset|close|stall, for: 20s}")
            let sf = try Fields(s, path: field, known: ["fraction", "mode", "for"], reader: self)
            if let n = sf["fraction"] { fraction = try number(n, field: "\(field).fraction", above: 0, maximum: 1) }
            if let n = sf["mode"] { mode = try choice(n, field: "\(field).mode") }
            if let n = sf["for"] {
                guard mode == .stall else { throw error(at: n, field: "\(field).for", "'for' is the length of a stall; it needs 'mode: stall'") }
                stall = try self.duration(n, field: "\(field).for", allowZero: false)
            } else if mode == .stall {
                throw error(at: node, field: "\(field).for", "a stall needs its length, like 'for: 20s'")
            }
        }
        return .storm(fraction: fraction, mode: mode, stallSeconds: stall)
    }

    /// `{fault: drop, mode: reset|close}`, `{fault: reject, for: 5s}`, `{fault: stall, for: 5s}` or
    /// `{fault: delay, ms: 2}` (or `us: 300`).
    private func serverFault(_ node: Node, field: String) throws(ScenarioError) -> ServerFault {
        let expecting = "{fault: drop, mode: reset|close}, {fault: reject, for: 5s}, {fault: stall, for: 5s} or {fault: delay, ms: 2} (or us: 300)"
        let m = try mappingNode(node, field: field, expecting: expecting)
        let f = try Fields(m, path: field, known: ["fault", "mode", "for", "ms", "us"], reader: self)
        guard let faultNode = f["fault"] else { throw error(at: node, field: "\(field).fault", "missing required field 'fault' (drop, reject, stall or delay)") }
        let fault = try string(faultNode, field: "\(field).fault", expecting: "drop, reject, stall or delay")
        for key in ["ms", "us"] where fault != "delay" {
            if let n = f[key] { throw error(at: n, field: "\(field).\(key)", "'\(key)' belongs to 'fault: delay'") }
        }
        switch fault {
        case "delay":
            for key in ["mode", "for"] {
                if let n = f[key] { throw error(at: n, field: "\(field).\(key)", "a delay lasts until another delay event changes it; it takes only 'ms' or 'us'") }
            }
            if let n = f["us"] {
                if f["ms"] != nil { throw error(at: n, field: "\(field).us", "give the delay once, in 'ms' or in 'us', not both") }
                let us = try number(n, field: "\(field).us", atLeast: 0, maximum: 10_000_000)
                guard us == us.rounded() else { throw error(at: n, field: "\(field).us", "expected whole microseconds from 0 to 10000000, got \(describe(n))") }
                return .delay(microseconds: Int(us))
            }
            guard let n = f["ms"] else { throw error(at: node, field: "\(field).ms", "a delay needs its length in milliseconds, like 'ms: 2', or microseconds, like 'us: 300' (0 turns it off)") }
            let ms = try number(n, field: "\(field).ms", atLeast: 0, maximum: 10_000)
            guard ms == ms.rounded() else { throw error(at: n, field: "\(field).ms", "expected whole milliseconds from 0 to 10000 (or 'us' for microseconds), got \(describe(n))") }
            return .delay(microseconds: Int(ms) * 1000)
        case "drop":
            if let n = f["for"] { throw error(at: n, field: "\(field).for", "a drop is instantaneous; 'for' belongs to reject and stall") }
            var reset = true
            if let n = f["mode"] {
                let mode: StormMode = try choice(n, field: "\(field).mode")
                guard mode != .stall else { throw error(at: n, field: "\(field).mode", "expected 'reset' or 'close', got 'stall' (use 'fault: stall')") }
                reset = mode == .reset
            }
            return .drop(reset: reset)
        case "reject", "stall":
            if let n = f["mode"] { throw error(at: n, field: "\(field).mode", "'mode' belongs to 'fault: drop'") }
            guard let n = f["for"] else { throw error(at: node, field: "\(field).for", "a \(fault) needs its length, like 'for: 5s'") }
            let seconds = try self.duration(n, field: "\(field).for", allowZero: false)
            guard seconds <= 3600 else { throw error(at: n, field: "\(field).for", "expected at most 1h, got \(describe(n))") }
            return fault == "reject" ? .reject(seconds: seconds) : .stall(seconds: seconds)
        default:
            throw error(at: faultNode, field: "\(field).fault", "expected drop, reject, stall or delay, got \(describe(faultNode))")
        }
    }

    /// `command: "systemctl restart app"` or `{run: "…", timeout: 60s}`.
    private func externalCommand(_ node: Node, field: String) throws(ScenarioError) -> ExternalCommand {
        if case .scalar = node {
            let text = try string(node, field: field, expecting: "a shell command")
            guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { throw error(at: node, field: field, "the command is empty") }
            return ExternalCommand(command: text)
        }
        let m = try mappingNode(node, field: field, expecting: "a shell command or {run: \"./restart.sh\", timeout: 60s}")
        let f = try Fields(m, path: field, known: ["run", "timeout"], reader: self)
        guard let runNode = f["run"] else { throw error(at: node, field: "\(field).run", "missing required field 'run' (the shell command)") }
        let text = try string(runNode, field: "\(field).run", expecting: "a shell command")
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { throw error(at: runNode, field: "\(field).run", "the command is empty") }
        var command = ExternalCommand(command: text)
        if let n = f["timeout"] {
            command.timeoutSeconds = try self.duration(n, field: "\(field).timeout", allowZero: false)
            guard command.timeoutSeconds <= 3600 else { throw error(at: n, field: "\(field).timeout", "expected at most 1h, got \(describe(n))") }
        }
        return command
    }
}
