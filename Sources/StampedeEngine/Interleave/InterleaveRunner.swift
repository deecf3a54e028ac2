import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One side of an interleaved set as the command line gave it.
public struct InterleaveSideSetup: Sendable {
    public var side: InterleaveSide
    /// The target its runs load, passed to each as `--target` (a URL, or `embedded`).
    public var target: String
    /// Where its server listens, waited for after `command` starts (needed with a command).
    public var host: String?
    public var port: Int?
    /// Started with `/bin/sh -c` before each of this side's runs and stopped after it.
    public var command: String?

    public init(side: InterleaveSide, target: String, host: String? = nil, port: Int? = nil, command: String? = nil) {
        self.side = side; self.target = target; self.host = host; self.port = port; self.command = command
    }
}

/// The signal that asked an interleaved set to stop, stored by a signal handler (so: an atomic).
public final class InterleaveInterrupt: Sendable {
    let number = Atomic<Int32>(0)
    public init() {}
    public func raise(_ signal: Int32) { number.store(signal, ordering: .relaxed) }
    /// The signal received, or nil.
    public var signal: Int32? { let s = number.load(ordering: .relaxed); return s == 0 ? nil : s }
}

/// Makes an interleaved set's runs: each one `stampede run` in a child process, each side's
/// server (when it has a command) started before its run and stopped after it, `runs.json`
/// rewritten after every run.
public struct InterleaveRunner: Sendable {
    public enum Outcome: Sendable {
        case completed(InterleaveRecord)
        case failed(InterleaveFailure, InterleaveRecord)
        case interrupted(InterleaveRecord)
    }

    public var plan: InterleavePlan
    /// The scenario file, as handed to `stampede run`, and the scenario's name for runs.json.
    public var scenarioPath: String
    public var scenarioName: String
    public var baseline: InterleaveSideSetup
    public var current: InterleaveSideSetup
    /// Flags added to every `stampede run` (`--duration 5s`, …).
    public var runArguments: [String] = []
    public var readyTimeout: Double = 30
    /// The `stampede` executable the runs use.
    public var executable: String
    public var interrupt: InterleaveInterrupt
    /// Receives one line per finished run (`pair 2/5 current: … (exit 0)`).
    public var log: @Sendable (String) -> Void

    public init(plan: InterleavePlan, scenarioPath: String, scenarioName: String, baseline: InterleaveSideSetup,
                current: InterleaveSideSetup, executable: String, interrupt: InterleaveInterrupt, log: @escaping @Sendable (String) -> Void) {
        self.plan = plan; self.scenarioPath = scenarioPath; self.scenarioName = scenarioName
        self.baseline = baseline; self.current = current; self.executable = executable
        self.interrupt = interrupt; self.log = log
    }

    enum StepResult {
        case ran(InterleaveRecord.Run, shown: String)
        case failed(InterleaveFailure)
        /// Stopped by a signal; the run, when it still wrote its results.
        case interrupted(InterleaveRecord.Run?)
    }

    func setup(_ side: InterleaveSide) -> InterleaveSideSetup { side == .baseline ? baseline : current }

    public func run() -> Outcome {
        var record = InterleaveRecord(scenario: scenarioName)
        func stop(_ outcome: (InterleaveRecord) -> Outcome) -> Outcome {
            record.partial = true
            try? record.write(to: plan.runsFile)
            return outcome(record)
        }
        // Each side's address is resolved once, here: the readiness poll never looks names up.
        var probes: [InterleaveSide: ReadinessProbe] = [:]
        for s in [baseline, current] where s.command != nil {
            guard let host = s.host, let port = s.port else {
                return .failed(InterleaveFailure("\(s.side): a server command needs a target with a host and port"), record)
            }
            switch ReadinessProbe.resolve(host: host, port: port) {
            case .success(let p): probes[s.side] = p
            case .failure(let f): return .failed(InterleaveFailure("\(s.side): \(f)"), record)
            }
        }
        do {
            for side in InterleaveSide.allCases {
                try FileManager.default.createDirectory(at: plan.resultsFolder(side), withIntermediateDirectories: true)
            }
            try record.write(to: plan.runsFile)
        } catch {
            return .failed(InterleaveFailure("cannot write to \(displayPath(plan.root)): \(error.localizedDescription)"), record)
        }
        for step in plan.steps {
            if interrupt.signal != nil { return stop { .interrupted($0) } }
            switch runStep(step, probe: probes[step.side]) {
            case .ran(let run, let shown):
                record.record(run, for: step)
                do { try record.write(to: plan.runsFile) } catch {
                    return stop { .failed(InterleaveFailure("cannot write \(displayPath(plan.runsFile)): \(error.localizedDescription)"), $0) }
                }
                log("pair \(step.pair)/\(plan.pairs) \(step.side): \(shown) (exit \(run.exit))")
            case .failed(let f):
                return stop { .failed(f, $0) }
            case .interrupted(let run):
                if let run { record.record(run, for: step) }
                return stop { .interrupted($0) }
            }
        }
        return .completed(record)
    }

    /// One run: its side's server up (when it has a command), the run, the server stopped.
    func runStep(_ step: InterleaveStep, probe: ReadinessProbe?) -> StepResult {
        let s = setup(step.side)
        let name = "pair \(step.pair) \(step.side)"
        var server: GroupProcess? = nil
        // Never leave a server running, whatever happens to the run.
        defer { server?.stopGroup() }
        if let command = s.command, let probe {
            if probe.accepts() {
                return .failed(InterleaveFailure("\(name): \(probe.address) already accepts connections before the \(step.side) command started; stop what listens there"))
            }
            let logFile = plan.serverLog(step.side, pair: step.pair)
            do {
                server = try GroupProcess(["/bin/sh", "-c", command], output: logFile.path, errors: logFile.path,
                                          environment: ["STAMPEDE_SIDE": step.side.rawValue, "STAMPEDE_PAIR": String(step.pair)])
            } catch { return .failed(InterleaveFailure("\(name): \(error)")) }
            if let problem = waitUntilReady(server!, probe: probe) {
                if problem.isEmpty { return .interrupted(nil) }
                return .failed(InterleaveFailure("\(name): the \(step.side) server command \(problem); its output: \(displayPath(logFile))"))
            }
        }
        return runChild(step, name: name, target: s.target)
    }

    /// Nil once the probe connects; "" when interrupted; else what went wrong.
    func waitUntilReady(_ server: GroupProcess, probe: ReadinessProbe) -> String? {
        let deadline = Date().addingTimeInterval(readyTimeout)
        while true {
            if interrupt.signal != nil { return "" }
            if let exit = server.poll() { return "ended (\(exit)) before \(probe.address) accepted a connection" }
            if probe.accepts() { return nil }
            if Date() >= deadline {
                return "did not get \(probe.address) to accept a connection within \(String(format: "%g", readyTimeout))s (--ready-timeout)"
            }
            usleep(50_000)
        }
    }

    /// `stampede run` in a child; its results folder from its last stdout line. Its stderr goes
    /// to the run's log (so this command prints one line per run), its stdout is added after.
    func runChild(_ step: InterleaveStep, name: String, target: String) -> StepResult {
        let outPath = NSTemporaryDirectory() + "stampede-interleave-\(getpid())-\(step.pair)-\(step.side).out"
        defer { unlink(outPath) }
        let logFile = plan.runLog(step.side, pair: step.pair)
        let argv = [executable, "run", scenarioPath, "--results", plan.resultsFolder(step.side).path, "--target", target, "--quiet"] + runArguments
        let child: GroupProcess
        do { child = try GroupProcess(argv, output: outPath, errors: logFile.path) } catch { return .failed(InterleaveFailure("\(name): \(error)")) }
        let exit = waitForRun(child)
        // Worker processes the run may have left behind go with it.
        if child.groupAlive { child.stopGroup() }
        let output = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let messages = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
        try? Data((messages + output).utf8).write(to: logFile)
        let last = output.split(separator: "\n").last.map(String.init) ?? ""
        let shown = last.hasPrefix("results: ") ? String(last.dropFirst("results: ".count)) : nil
        let code: Int32? = if case .exited(let c) = exit { c } else { nil }
        let run = shown.map { InterleaveRecord.Run(folder: recordedPath($0), exit: code ?? -1, target: target) }
        if interrupt.signal != nil { return .interrupted(run) }
        guard let run, let shown, let code, [0, 98, 99].contains(code) else {
            let why = shown == nil ? "\(exit), no 'results:' line" : "\(exit)"
            let lastError = messages.split(separator: "\n").last { $0.hasPrefix("error") }.map { ": \($0)" } ?? ""
            return .failed(InterleaveFailure("\(name) failed (\(why))\(lastError); its output: \(displayPath(logFile))"))
        }
        return .ran(run, shown: shown)
    }

    /// Waits for the run to end; a signal we received is passed on once, and a run that does
    /// not end within a minute of it is killed.
    func waitForRun(_ child: GroupProcess) -> ChildExit {
        var forwardedAt: Date? = nil
        while true {
            if let exit = child.poll() { return exit }
            if let s = interrupt.signal, forwardedAt == nil { child.send(s); forwardedAt = Date() }
            if let f = forwardedAt, Date().timeIntervalSince(f) > 60 { child.stopGroup(grace: 0) }
            usleep(20_000)
        }
    }

    /// A run's folder as runs.json keeps it: relative to the folder holding runs.json when it
    /// is inside it (so the set can be moved), else absolute.
    func recordedPath(_ shown: String) -> String {
        let cwd = FileManager.default.currentDirectoryPath
        let absolute = URL(fileURLWithPath: shown.hasPrefix("/") ? shown : cwd + "/" + shown).standardizedFileURL.path
        let root = plan.root.absoluteURL.standardizedFileURL.path
        return absolute.hasPrefix(root + "/") ? String(absolute.dropFirst(root.count + 1)) : absolute
    }
}

/// `url` relative to the working directory when inside it, for messages.
func displayPath(_ url: URL) -> String {
    let cwd = FileManager.default.currentDirectoryPath
    let p = url.absoluteURL.standardizedFileURL.path
    return p.hasPrefix(cwd + "/") ? String(p.dropFirst(cwd.count + 1)) : p
}
