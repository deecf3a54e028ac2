import Foundation
import Yams

/// Reads scenario files (YAML) into validated `Scenario` values.
///
/// Every problem, from a YAML syntax error to a misspelt key or an out-of-range number, becomes a
/// `ScenarioError` that names the file, the line and column, and the field, so users can fix the
/// file without guessing. Targets are restricted to loopback addresses: Stampede never sends load
/// to another machine.
public enum ScenarioLoader {
    /// The largest scenario file read: far above any real scenario, small enough that a wrong
    /// file (a log, /dev/zero, a 50 MB list) is refused at once instead of parsed.
    public static let maxFileBytes = 1 << 20

    /// Loads and validates a scenario file, with command-line overrides applied first.
    ///
    /// Besides the checks of `parse`, this looks outside the file: an access token read from
    /// an environment variable or a file must be there now, so that a run does not fail after
    /// it has started.
    ///
    /// - Parameters:
    ///   - path: Path of a YAML scenario file; it is stored, as given, in `Scenario.file`.
    ///   - overrides: Values from the command line (`--clients 200`), checked exactly as the
    ///     fields they replace; a problem with one names the flag.
    /// - Throws: `ScenarioError` when the file cannot be read (line 0) or is not a valid scenario.
    public static func load(path: String, overrides: [Override] = []) throws(ScenarioError) -> Scenario {
        let text = try readScenarioFile(path)
        return try parse(yaml: text, file: path, overrides: overrides, checksEnvironment: true)
    }

    /// Reads a regular file of at most `maxFileBytes`, as UTF-8 text, without ever reading more.
    private static func readScenarioFile(_ path: String) throws(ScenarioError) -> String {
        func failure(_ reason: String) -> ScenarioError {
            ScenarioError(file: path, line: 0, message: "cannot read scenario file: \(reason)")
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw failure(errno == ENOENT ? "no such file" : String(cString: strerror(errno))) }
        if (info.st_mode & S_IFMT) == S_IFDIR { throw failure("it is a directory") }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw failure("it is not a regular file") }
        guard info.st_size <= maxFileBytes else {
            throw failure("it is \(info.st_size) bytes; a scenario file may be at most \(maxFileBytes) bytes (1 MiB)")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw failure(String(cString: strerror(errno))) }
        defer { try? handle.close() }
        let data: Data
        do { data = try handle.read(upToCount: maxFileBytes + 1) ?? Data() } catch {
            throw failure(readFailureReason(error, path: path))
        }
        // The file may have grown since stat.
        guard data.count <= maxFileBytes else { throw failure("it is larger than \(maxFileBytes) bytes (1 MiB)") }
        guard let text = String(data: data, encoding: .utf8) else { throw failure("it is not valid UTF-8 text") }
        return text
    }

    /// Parses and validates the YAML text of a scenario.
    ///
    /// - Parameters:
    ///   - yaml: The scenario as YAML text.
    ///   - file: Used in error messages, as the default scenario name (its base name without
    ///     extension) and stored in `Scenario.file`.
    ///   - overrides: Command-line values that replace (or add) top-level fields before checking.
    ///   - checksEnvironment: Whether token variables and token files must exist now.
    /// - Throws: `ScenarioError` naming the line, column and field (or the flag) of the first problem found.
    public static func parse(yaml: String, file: String, overrides: [Override] = [], checksEnvironment: Bool = false) throws(ScenarioError) -> Scenario {
        // Some editors start UTF-8 files with a byte order mark, which libyaml rejects inside a String.
        let yaml = yaml.unicodeScalars.first == "\u{FEFF}" ? String(yaml.unicodeScalars.dropFirst()) : yaml
        guard yaml.utf8.count <= maxFileBytes else {
            throw ScenarioError(file: file, line: 0, message: "the scenario is larger than \(maxFileBytes) bytes (1 MiB)")
        }
        let document: Node?
        do {
            document = try Yams.compose(yaml: yaml)
        } catch let error as YamlError {
            throw syntaxError(error, file: file, yaml: yaml)
        } catch {
            throw ScenarioError(file: file, line: 1, message: "invalid YAML: \(error)")
        }
        guard var document else {
            throw ScenarioError(
                file: file, line: 1,
                message: "the scenario is empty: it needs at least 'target', 'clients' and 'duration'")
        }
        var flags: [String: String] = [:]
        if !overrides.isEmpty, case .mapping(let mapping) = document {
            document = applying(overrides, to: mapping)
            for o in overrides { flags[o.field] = o.flag }
        }
        return try Reader(file: file, flags: flags, checksEnvironment: checksEnvironment).scenario(from: document)
    }

    private static func readFailureReason(_ error: any Error, path: String) -> String {
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            return "no such file"
        }
        if isDirectory.boolValue {
            return "it is a directory"
        }
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain,
            let message = strerror(Int32(underlying.code))
        {
            return String(cString: message)
        }
        return nsError.localizedDescription
    }

    private static func syntaxError(_ error: YamlError, file: String, yaml: String) -> ScenarioError {
        switch error {
        case .scanner(let context, let problem, let mark, _),
            .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            var message = "invalid YAML: \(problem)"
            if case .composer = error, problem == "but found another document" {
                message = "invalid YAML: a scenario file holds a single document, but a second one starts here"
            } else if let context {
                message += " (\(context.text) at line \(context.mark.line))"
            }
            if line(mark.line, of: yaml).contains("\t") {
                message += "; YAML does not allow tabs for indentation, use spaces"
            }
            return ScenarioError(file: file, line: mark.line, column: mark.column, message: message)
        case .reader(let problem, let offset, _, _):
            let (line, column) = offset.map { position(ofCharacterOffset: $0, in: yaml) } ?? (1, 0)
            return ScenarioError(file: file, line: line, column: column, message: "invalid YAML: \(problem)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            // Yams reports the first occurrence of the first duplicated key, without its parent path.
            let key = duplicates.first ?? ""
            return ScenarioError(
                file: file, line: context.mark.line, column: context.mark.column, field: key,
                message: "given more than once (each field may appear only once in a mapping)")
        default:
            return ScenarioError(file: file, line: 1, message: "invalid YAML: \(error)")
        }
    }

    private static func line(_ number: Int, of text: String) -> Substring {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        return lines.indices.contains(number - 1) ? lines[number - 1] : ""
    }

    private static func position(ofCharacterOffset offset: Int, in text: String) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        for character in text.prefix(offset) {
            if character == "\n" {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return (line, column)
    }
}

/// A problem with a scenario file, located as precisely as possible.
///
/// `description` reads like a compiler diagnostic:
/// `scenarios/x.yaml:7:3: field 'message.rate': expected a number ≥ 0, got 'fast'`.
public struct ScenarioError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The scenario file's path as given (`Scenario.file`).
    public var file: String
    /// 1-based line of the offending key or value; 0 when unknown (e.g. the file is unreadable).
    public var line: Int
    /// 1-based column; 0 when unknown.
    public var column: Int
    /// Dotted path of the field, e.g. `message.rate`; "" for problems with the file as a whole.
    public var field: String
    /// What is wrong and, where possible, what is expected instead.
    public var message: String
    /// The command-line flag whose value is wrong (`--clients`), or "" for the file's own values.
    public var flag: String

    public init(file: String, line: Int, column: Int = 0, field: String = "", message: String, flag: String = "") {
        self.file = file
        self.line = line
        self.column = column
        self.field = field
        self.message = message
        self.flag = flag
    }

    public var description: String {
        if !flag.isEmpty { return "\(flag): \(message)" }
        var text = file.isEmpty ? "<scenario>" : file
        if line > 0 {
            text += ":\(line)"
            if column > 0 {
                text += ":\(column)"
            }
        }
        text += ": "
        if !field.isEmpty {
            text += "field '\(field)': "
        }
        return text + message
    }
}

/// Headers the WebSocket handshake writes itself (a second copy would make the request invalid),
/// lowercased, with a hint to append to the error.
private let reservedHeaders: [String: String] = [
    "host": "", "upgrade": "", "connection": "", "sec-websocket-key": "", "sec-websocket-version": "",
    "sec-websocket-extensions": "", "content-length": "", "transfer-encoding": "",
    "sec-websocket-protocol": " (use the 'subprotocol' field instead)",
]

extension Reader {

    func scenario(from root: Node) throws(ScenarioError) -> Scenario {
        guard case .mapping(let mapping) = root else {
            throw error(
                at: root, field: "", "expected a mapping of scenario fields (like 'clients: 100'), got \(describe(root))")
        }
        let fields = try Fields(
            mapping, path: "", known: Keys.topLevel, reader: self, misplaced: Keys.misplacedAtTopLevel)

        let name: String
        if let node = fields["name"] {
            name = try scenarioName(node)
        } else {
            name = try defaultName()
        }
        let target = try targetValue(try required("target", in: fields))
        var workload = Workload.chat
        if let node = fields["workload"] {
            workload = try choice(node, field: "workload")
        }
        let clients = try integer(try required("clients", in: fields), field: "clients", in: Limits.clients)
        var connectRate = 1000.0
        if let node = fields["connect_rate"] {
            connectRate = try number(node, field: "connect_rate", atLeast: Limits.slowestRate, maximum: Limits.connectRate)
        }
        // The ramp-up is part of the run: it must end within the longest run Stampede measures.
        let rampSeconds = Double(clients) / connectRate
        guard rampSeconds <= Limits.durationSeconds else {
            let node = fields["connect_rate"] ?? fields["clients"] ?? root
            throw error(at: node, field: fields["connect_rate"] != nil ? "connect_rate" : "clients",
                        "\(clients) clients at \(format(connectRate)) connections/s take \(format(rampSeconds.rounded()))s to connect, "
                            + "more than the longest run (\(format(Limits.durationSeconds / 3600))h\(origin(of: "clients"))): raise connect_rate")
        }
        let duration = try duration(try required("duration", in: fields), field: "duration", allowZero: false)
        let message = try messageSpec(fields["message"])
        var loadModel = LoadModel.open
        if let node = fields["load_model"] {
            loadModel = try choice(node, field: "load_model")
        }
        var thinkTime = 0.0
        if let node = fields["think_time"] {
            thinkTime = try self.duration(node, field: "think_time", allowZero: true)
        }
        var seed: UInt64 = 1
        if let node = fields["seed"] {
            seed = try seedValue(node)
        }
        var drain = 5.0
        if let node = fields["drain"] {
            drain = try self.duration(node, field: "drain", allowZero: true)
        }
        var connectTimeout = 10.0
        if let node = fields["connect_timeout"] {
            connectTimeout = try self.duration(node, field: "connect_timeout", allowZero: false)
        }
        let headers = try headerList(fields["headers"])
        var subprotocol: String?
        if let node = fields["subprotocol"] {
            let value = try string(node, field: "subprotocol", expecting: "a subprotocol name")
            guard !value.isEmpty, value.unicodeScalars.allSatisfy(isTokenCharacter) else {
                throw error(
                    at: node, field: "subprotocol",
                    "expected a subprotocol name made of letters, digits and !#$%&'*+-.^_`|~, got \(describe(node))")
            }
            subprotocol = value
        }
        var maxMessageBytes = 1 << 20
        if let node = fields["max_message_size"] {
            maxMessageBytes = try byteSize(node, field: "max_message_size", in: Limits.maxMessageBytes)
        }
        if message.size > maxMessageBytes {
            // Point at whichever of the two the user wrote; max_message_size is given whenever it is below 128.
            let sizeNode = fields["message"]?.mapping?["size"]
            let (node, field) = sizeNode.map { ($0, "message.size") } ?? (fields["max_message_size"] ?? root, "max_message_size")
            throw error(
                at: node, field: field,
                "message.size (\(message.size) bytes) is larger than max_message_size (\(maxMessageBytes) bytes), "
                    + "so every message would be refused: raise max_message_size or lower message.size")
        }
        let sourceAddresses = try sourceAddressList(fields["source_addresses"])

        if let problem = ScenarioLoader.targetProblem(target, workload: workload), let node = fields["target"] {
            throw error(at: node, field: "target", problem)
        }
        var hub: HubSpec?
        var rest: RestSpec?
        if workload != .rest, let keyNode = fields.keyNode("rest") {
            throw error(at: keyNode, field: "rest",
                        "only for workload rest (this scenario's workload is '\(workload.rawValue)'): remove the section or set 'workload: rest'")
        }
        switch workload {
        case .rest:
            guard let node = fields["rest"] else {
                throw error(at: fields["workload"] ?? root, field: "rest",
                            "missing required field 'rest': workload 'rest' needs a 'rest' section listing the 'resources' "
                                + "each client polls (see scenarios/rest-poll-etag.yaml)")
            }
            if let keyNode = fields.keyNode("hub") {
                throw error(at: keyNode, field: "hub", "only for workload hub (this scenario's workload is 'rest')")
            }
            rest = try restSpec(node)
            if rest?.token != nil, let header = headers.first(where: { $0.name.lowercased() == "authorization" }),
               let tokenNode = fields["rest"]?.mapping?["token"] {
                throw error(at: tokenNode, field: "rest.token", "both rest.token and the '\(header.name)' header are given: keep only one of them")
            }
        case .chat:
            if let keyNode = fields.keyNode("hub") {
                throw error(
                    at: keyNode, field: "hub",
                    "only for workload hub (this scenario's workload is '\(workload.rawValue)'): "
                        + "remove the section or set 'workload: hub'")
            }
        case .hub:
            guard let keyNode = fields.keyNode("hub"), let node = fields["hub"] else {
                throw error(
                    at: fields["workload"] ?? root, field: "hub",
                    "missing required field 'hub': workload 'hub' needs a 'hub' section naming at least the 'method' "
                        + "each client calls (see scenarios/hub-echo.yaml)")
            }
            let spec = try hubSpec(node, keyNode: keyNode)
            if spec.accessToken != nil, let header = headers.first(where: { $0.name.lowercased() == "authorization" }),
                let node = fields["hub"]?.mapping?["access_token"]
            {
                throw error(
                    at: node, field: "hub.access_token",
                    "both hub.access_token and the '\(header.name)' header are given: keep only one of them")
            }
            hub = spec
        }

        var scenario = Scenario(
            name: name, file: file, target: target, workload: workload, clients: clients, connectRate: connectRate,
            durationSeconds: duration, message: message, loadModel: loadModel, thinkTimeSeconds: thinkTime, seed: seed,
            drainSeconds: drain, connectTimeoutSeconds: connectTimeout, headers: headers, subprotocol: subprotocol,
            maxMessageBytes: maxMessageBytes, sourceAddresses: sourceAddresses, hub: hub)
        scenario.rest = rest
        if let node = fields["reconnect"] {
            guard workload == .chat else {
                throw error(at: node, field: "reconnect", workload == .hub ? "hub clients take their policy from 'hub.reconnect'"
                            : "REST clients open a new connection when they need one; there is nothing to reconnect")
            }
            scenario.reconnect = try reconnectSpec(node, field: "reconnect")
        }
        if let node = fields["while_disconnected"] {
            scenario.whileDisconnected = try choice(node, field: "while_disconnected")
        }
        if let node = fields["heartbeat"] {
            guard workload == .chat else {
                throw error(at: node, field: "heartbeat", workload == .hub ? "hub clients use 'hub.keep_alive' and 'hub.server_timeout'"
                            : "REST clients have no heartbeat: their polls are the traffic")
            }
            guard case .mapping(let m) = node else {
                throw error(at: node, field: "heartbeat", "expected {interval: 3m, text: heart, ping_interval: 20s, timeout: 60s}, got \(describe(node))")
            }
            let f = try Fields(m, path: "heartbeat", known: ["interval", "text", "ping_interval", "timeout"], reader: self)
            var h = Heartbeat()
            if let n = f["interval"] { h.intervalSeconds = try self.duration(n, field: "heartbeat.interval", allowZero: false) }
            if let n = f["text"] { h.text = try string(n, field: "heartbeat.text", expecting: "the heartbeat text") }
            if let n = f["ping_interval"] { h.pingIntervalSeconds = try self.duration(n, field: "heartbeat.ping_interval", allowZero: false) }
            if let n = f["timeout"] { h.timeoutSeconds = try self.duration(n, field: "heartbeat.timeout", allowZero: false) }
            scenario.heartbeat = h
        }
        if let node = fields["target_admin"] {
            scenario.targetAdmin = try adminEndpoint(node)
        }
        if let node = fields["events"] {
            scenario.events = try eventList(node, duration: duration, target: target, admin: scenario.targetAdmin)
        }
        return scenario
    }

    /// `events: [{at: 5s, storm: {fraction: 1.0, mode: reset}}, {at: 20s, server: {fault: drop}}, …]`
    private func eventList(_ node: Node, duration: Double, target: Target, admin: AdminEndpoint?) throws(ScenarioError) -> [ScenarioEvent] {
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

    /// `{fault: drop, mode: reset|close}`, `{fault: reject, for: 5s}` or `{fault: stall, for: 5s}`.
    private func serverFault(_ node: Node, field: String) throws(ScenarioError) -> ServerFault {
        let expecting = "{fault: drop, mode: reset|close}, {fault: reject, for: 5s} or {fault: stall, for: 5s}"
        let m = try mappingNode(node, field: field, expecting: expecting)
        let f = try Fields(m, path: field, known: ["fault", "mode", "for"], reader: self)
        guard let faultNode = f["fault"] else { throw error(at: node, field: "\(field).fault", "missing required field 'fault' (drop, reject or stall)") }
        let fault = try string(faultNode, field: "\(field).fault", expecting: "drop, reject or stall")
        switch fault {
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
            throw error(at: faultNode, field: "\(field).fault", "expected drop, reject or stall, got \(describe(faultNode))")
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

    /// The `rest` section: credentials, timing, limits and the resources with their processors.
    private func restSpec(_ node: Node) throws(ScenarioError) -> RestSpec {
        let m = try mappingNode(node, field: "rest", expecting: "a mapping with at least 'resources'")
        let f = try Fields(m, path: "rest", known: Keys.rest, reader: self)
        var spec = RestSpec()
        if let n = f["token"] { spec.token = try tokenSource(n, field: "rest.token") }
        if let n = f["interval"] { spec.intervalSeconds = try duration(n, field: "rest.interval", allowZero: false) }
        if let n = f["pool"] { spec.poolSize = try integer(n, field: "rest.pool", in: 1...64) }
        if let n = f["first_byte_timeout"] { spec.firstByteTimeoutSeconds = try duration(n, field: "rest.first_byte_timeout", allowZero: false) }
        if let n = f["response_timeout"] { spec.responseTimeoutSeconds = try duration(n, field: "rest.response_timeout", allowZero: false) }
        if let n = f["max_response_size"] { spec.maxResponseBytes = try byteSize(n, field: "rest.max_response_size", in: 1024...1_073_741_824) }
        if let n = f["redirects"] { spec.maxRedirects = try integer(n, field: "rest.redirects", in: 0...10) }
        if let n = f["staleness"] {
            let sm = try mappingNode(n, field: "rest.staleness", expecting: "{header: X-Changed-At} or {field: changed_at}")
            let sf = try Fields(sm, path: "rest.staleness", known: ["header", "field"], reader: self)
            switch (sf["header"], sf["field"]) {
            case (let h?, nil):
                let name = try string(h, field: "rest.staleness.header", expecting: "a header name")
                guard !name.isEmpty, name.unicodeScalars.allSatisfy(isTokenCharacter) else {
                    throw error(at: h, field: "rest.staleness.header", "expected a header name, got \(describe(h))")
                }
                spec.staleness = .header(name)
            case (nil, let j?):
                spec.staleness = .field(try string(j, field: "rest.staleness.field", expecting: "a top-level JSON field name"))
            default:
                throw error(at: n, field: "rest.staleness", "give either 'header' or 'field'")
            }
        }
        if let n = f["embedded"] {
            let em = try mappingNode(n, field: "rest.embedded", expecting: "{change_rate: 2, rate_limit: 300, body_size: 512, chunked: false, token: demo-token}")
            let ef = try Fields(em, path: "rest.embedded", known: ["change_rate", "rate_limit", "body_size", "chunked", "token"], reader: self)
            if let v = ef["change_rate"] { spec.embedded.changeRate = try number(v, field: "rest.embedded.change_rate", atLeast: 0, maximum: 1_000_000) }
            if let v = ef["rate_limit"] { spec.embedded.rateLimit = try integer(v, field: "rest.embedded.rate_limit", in: 1...100_000_000) }
            if let v = ef["body_size"] { spec.embedded.bodySize = try byteSize(v, field: "rest.embedded.body_size", in: 0...16_777_216) }
            if let v = ef["chunked"] { spec.embedded.chunked = try boolean(v, field: "rest.embedded.chunked") }
            if let v = ef["token"] { spec.embedded.token = try tokenSource(v, field: "rest.embedded.token") }
        }
        guard let resourcesNode = f["resources"] else {
            throw error(at: node, field: "rest.resources", "missing required field 'resources' (the paths each client polls)")
        }
        guard case .sequence(let items) = resourcesNode, !items.isEmpty else {
            throw error(at: resourcesNode, field: "rest.resources", "expected a list of resources like '- path: /api/items', got \(describe(resourcesNode))")
        }
        for (index, item) in items.enumerated() {
            let path = "rest.resources[\(index)]"
            if case .scalar = item {
                spec.resources.append(RestResource(path: try resourcePath(item, field: path)))
                continue
            }
            let rm = try mappingNode(item, field: path, expecting: "a path, or {path: /api/items, processors: [...]}")
            let rf = try Fields(rm, path: path, known: ["path", "processors"], reader: self)
            guard let p = rf["path"] else { throw error(at: item, field: "\(path).path", "missing required field 'path'") }
            var resource = RestResource(path: try resourcePath(p, field: "\(path).path"))
            if let list = rf["processors"] {
                resource.processors = try processors(list, field: "\(path).processors")
            }
            spec.resources.append(resource)
        }
        return spec
    }

    private func resourcePath(_ node: Node, field: String) throws(ScenarioError) -> String {
        let text = try string(node, field: field, expecting: "a path starting with '/'")
        guard text.hasPrefix("/"), !text.contains("#"),
              !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7F }) else {
            throw error(at: node, field: field, "expected a path starting with '/', without spaces, controls or '#' (percent-encode them), got \(describe(node))")
        }
        return text
    }

    /// `- {status: [200], means: changed, fields: [id], interval: 5s, stop: false}`
    private func processors(_ node: Node, field: String) throws(ScenarioError) -> [RestProcessor] {
        guard case .sequence(let items) = node, !items.isEmpty else {
            throw error(at: node, field: field, "expected a list like '- {status: [200], means: changed}', got \(describe(node))")
        }
        var result: [RestProcessor] = []
        for (index, item) in items.enumerated() {
            let path = "\(field)[\(index)]"
            let m = try mappingNode(item, field: path, expecting: "{status: [200], means: changed}")
            let f = try Fields(m, path: path, known: ["status", "means", "fields", "interval", "stop"], reader: self)
            guard let statusNode = f["status"] else { throw error(at: item, field: "\(path).status", "missing required field 'status'") }
            var statuses: [Int] = []
            if case .sequence(let codes) = statusNode {
                for (i, c) in codes.enumerated() { statuses.append(try integer(c, field: "\(path).status[\(i)]", in: 100...599)) }
            } else {
                statuses.append(try integer(statusNode, field: "\(path).status", in: 100...599))
            }
            guard !statuses.isEmpty else { throw error(at: statusNode, field: "\(path).status", "expected at least one status code") }
            guard let meansNode = f["means"] else {
                throw error(at: item, field: "\(path).means", "missing required field 'means' (changed, unchanged, rate_limited or auth_failure)")
            }
            var processor = RestProcessor(statuses: statuses, meaning: try choice(meansNode, field: "\(path).means"))
            if let n = f["fields"] {
                guard processor.meaning == .changed else {
                    throw error(at: n, field: "\(path).fields", "only a 'changed' processor reads the body")
                }
                guard case .sequence(let names) = n else { throw error(at: n, field: "\(path).fields", "expected a list of field names, got \(describe(n))") }
                for (i, name) in names.enumerated() {
                    processor.requiredFields.append(try string(name, field: "\(path).fields[\(i)]", expecting: "a JSON field name"))
                }
            }
            if let n = f["interval"] { processor.newIntervalSeconds = try duration(n, field: "\(path).interval", allowZero: false) }
            if let n = f["stop"] { processor.stops = try boolean(n, field: "\(path).stop") }
            result.append(processor)
        }
        return result
    }

    /// `target_admin: http://127.0.0.1:9100`, loopback only.
    private func adminEndpoint(_ node: Node) throws(ScenarioError) -> AdminEndpoint {
        let text = try string(node, field: "target_admin", expecting: "the admin URL of 'stampede serve --admin-port', like http://127.0.0.1:9100")
        guard case .success(let target) = parseTarget(text), case .http(let url) = target, url.path == "/" || url.path.isEmpty else {
            throw error(at: node, field: "target_admin", "expected a loopback URL like http://127.0.0.1:9100 (no path), got \(describe(node))")
        }
        return AdminEndpoint(host: url.host, port: url.port)
    }

    /// Only top-level fields are required; a missing one is reported at line 1 because the
    /// mapping itself may start below a comment header.
    private func required(_ key: String, in fields: Fields) throws(ScenarioError) -> Node {
        guard let node = fields[key] else {
            throw ScenarioError(file: file, line: 1, field: fields.fieldPath(key), message: "missing required field '\(key)'")
        }
        return node
    }

    // MARK: Fields

    private func scenarioName(_ node: Node) throws(ScenarioError) -> String {
        let name = try string(node, field: "name", expecting: "a name")
        guard isValidName(name) else {
            throw error(
                at: node, field: "name",
                "expected a name of 1 to \(Limits.nameLength) letters, digits, '.', '_' or '-', got \(describe(node))")
        }
        return name
    }

    private func defaultName() throws(ScenarioError) -> String {
        guard !file.isEmpty else { return "scenario" }
        var base = Substring(file.split(separator: "/").last ?? "")
        if let dot = base.lastIndex(of: "."), dot != base.startIndex {
            base = base[..<dot]
        }
        guard isValidName(base) else {
            throw ScenarioError(
                file: file, line: 1, field: "name",
                message: "the file name '\(base)' is not a valid scenario name (letters, digits, '.', '_' and '-' only); "
                    + "add a 'name:' field")
        }
        return String(base)
    }

    private func isValidName(_ name: some StringProtocol) -> Bool {
        !name.isEmpty && name.count <= Limits.nameLength
            && name.unicodeScalars.allSatisfy { $0.isASCII && (isAlphanumeric($0) || "._-".unicodeScalars.contains($0)) }
    }

    private func targetValue(_ node: Node) throws(ScenarioError) -> Target {
        let text = try string(node, field: "target", expecting: "'embedded' or a ws:// or http:// URL")
        switch parseTarget(text) {
        case .success(let target): return target
        case .failure(let problem): throw error(at: node, field: "target", problem.message)
        }
    }

    private func messageSpec(_ node: Node?) throws(ScenarioError) -> MessageSpec {
        var spec = MessageSpec(ratePerSecond: 10, size: 128)
        guard let node, !isNull(node) else { return spec }
        guard case .mapping(let mapping) = node else {
            throw error(at: node, field: "message", "expected a mapping with 'rate' and/or 'size', got \(describe(node))")
        }
        let fields = try Fields(mapping, path: "message", known: Keys.message, reader: self)
        if let rate = fields["rate"] {
            spec.ratePerSecond = try number(rate, field: "message.rate", atLeast: 0, maximum: Limits.messageRate)
            guard spec.ratePerSecond == 0 || spec.ratePerSecond >= Limits.slowestRate else {
                throw error(at: rate, field: "message.rate",
                            "expected 0 (no messages) or a rate from \(format(Limits.slowestRate)) to \(format(Limits.messageRate)) per second, got \(describe(rate))")
            }
        }
        if let size = fields["size"] {
            spec.size = try byteSize(size, field: "message.size", in: Limits.messageSize)
        }
        return spec
    }

    private func seedValue(_ node: Node) throws(ScenarioError) -> UInt64 {
        guard case .scalar(let scalar) = node, node.tag.rawValue == Tag.Name.int.rawValue,
            let seed = UInt64.construct(from: scalar)
        else {
            throw error(at: node, field: "seed", "expected an integer from 0 to \(UInt64.max), got \(describe(node))")
        }
        return seed
    }

    private func headerList(_ node: Node?) throws(ScenarioError) -> [Scenario.Header] {
        guard let node, !isNull(node) else { return [] }
        guard case .mapping(let mapping) = node else {
            throw error(at: node, field: "headers", "expected a mapping of header names to values, got \(describe(node))")
        }
        var headers: [Scenario.Header] = []
        var seen: [String: Int] = [:]
        for (keyNode, valueNode) in mapping {
            guard case .scalar(let key) = keyNode, !isNull(keyNode) else {
                throw error(at: keyNode, field: "headers", "expected a header name, got \(describe(keyNode))")
            }
            let name = key.string
            let field = "headers.\(name)"
            guard !name.isEmpty, name.unicodeScalars.allSatisfy(isTokenCharacter) else {
                throw error(
                    at: keyNode, field: field,
                    "expected a header name made of letters, digits and !#$%&'*+-.^_`|~, got \(describe(keyNode))")
            }
            let lowercased = name.lowercased()
            if let hint = reservedHeaders[lowercased] {
                throw error(at: keyNode, field: field, "header '\(name)' is set by Stampede itself\(hint)")
            }
            if let line = seen[lowercased] {
                throw error(
                    at: keyNode, field: field,
                    "header '\(name)' is already given at line \(line) (header names are case-insensitive)")
            }
            seen[lowercased] = keyNode.mark?.line ?? 0
            let value = try string(valueNode, field: field, expecting: "a header value (use \"\" for an empty one)")
            guard !value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
                throw error(at: valueNode, field: field, "a header value cannot contain line breaks or NUL characters")
            }
            headers.append(Scenario.Header(name: name, value: value))
        }
        return headers
    }

    private func sourceAddressList(_ node: Node?) throws(ScenarioError) -> [String] {
        guard let node, !isNull(node) else { return [] }
        guard case .sequence(let sequence) = node else {
            throw error(
                at: node, field: "source_addresses",
                "expected a list of IPv4 loopback addresses like [127.0.0.1, 127.0.0.2], got \(describe(node))")
        }
        var addresses: [String] = []
        var seen: [String: Int] = [:]
        for (index, item) in sequence.enumerated() {
            let field = "source_addresses[\(index)]"
            guard case .scalar(let scalar) = item, let octets = parseIPv4(scalar.string), octets[0] == 127 else {
                throw error(at: item, field: field, "expected an IPv4 loopback address (127.0.0.0/8), got \(describe(item))")
            }
            let address = scalar.string
            if let line = seen[address] {
                throw error(at: item, field: field, "address \(address) is already listed at line \(line)")
            }
            seen[address] = item.mark?.line ?? 0
            addresses.append(address)
        }
        return addresses
    }

}

// MARK: - Hub section

extension Reader {
    /// The `hub` section (workload `hub`). `keyNode` is the `hub:` key, where missing fields are reported.
    fileprivate func hubSpec(_ node: Node, keyNode: Node) throws(ScenarioError) -> HubSpec {
        let mapping: Node.Mapping
        switch node {
        case .mapping(let value): mapping = value
        case .scalar where isNull(node): mapping = Node.Mapping([])
        default:
            throw error(at: node, field: "hub", "expected a mapping of hub settings (like 'method: Echo'), got \(describe(node))")
        }
        let fields = try Fields(mapping, path: "hub", known: Keys.hub, reader: self)
        var spec = HubSpec()

        if let node = fields["protocol"] {
            spec.protocolKind = try choice(node, field: "hub.protocol")
        }
        if let node = fields["transports"], !isNull(node) {
            spec.transports = try transportList(node, protocolKind: spec.protocolKind)
        } else if spec.protocolKind == .messagePack {
            // Server-Sent Events carry text only; the official clients skip them for MessagePack too.
            spec.transports = [.webSockets, .longPolling]
        }
        if let node = fields["negotiate_version"] {
            spec.negotiateVersion = try integer(node, field: "hub.negotiate_version", in: 0...1)
        }
        if let node = fields["skip_negotiation"] {
            spec.skipNegotiation = try boolean(node, field: "hub.skip_negotiation")
            if spec.skipNegotiation, spec.transports != [.webSockets] {
                throw error(
                    at: node, field: "hub.skip_negotiation",
                    "only possible when 'transports' is exactly [websockets] (without negotiation there is no fallback "
                        + "to other transports): add 'transports: [websockets]'")
            }
        }
        if let node = fields["access_token"] {
            spec.accessToken = try tokenSource(node)
        }
        if let node = fields["token_in_query"] {
            spec.tokenInQuery = try boolean(node, field: "hub.token_in_query")
            if spec.tokenInQuery, spec.accessToken == nil {
                throw error(
                    at: node, field: "hub.token_in_query", "there is no access_token to put in the query: add 'access_token'")
            }
        }
        if let node = fields["keep_alive"] {
            spec.keepAliveSeconds = try duration(node, field: "hub.keep_alive", allowZero: false)
        }
        if let node = fields["server_timeout"] {
            spec.serverTimeoutSeconds = try duration(node, field: "hub.server_timeout", allowZero: false)
        }
        if let node = fields["handshake_timeout"] {
            spec.handshakeTimeoutSeconds = try duration(node, field: "hub.handshake_timeout", allowZero: false)
        }
        if let node = fields["join"] {
            spec.join = try hubCall(node, field: "hub.join")
        }
        if let node = fields["operation"] {
            spec.operation = try choice(node, field: "hub.operation")
        }
        // Method and arguments are checked even with `operation: none`, so typos don't wait for the next edit.
        var method: String?
        if let node = fields["method"] {
            method = try methodName(node, field: "hub.method")
        }
        var arguments: [ArgumentTemplate] = []
        if let node = fields["arguments"] {
            arguments = try argumentList(node, field: "hub.arguments", allowStamp: true)
        }
        if spec.operation != .none {
            guard let method else {
                throw error(
                    at: keyNode, field: "hub.method",
                    "missing required field 'method' (the hub method each client calls; "
                        + "or set 'operation: none' to only hold connections)")
            }
            spec.call = HubCall(method: method, arguments: arguments)
        }
        if let node = fields["receive"], !isNull(node) {
            spec.receiveMethod = try methodName(node, field: "hub.receive")
        }
        if let node = fields["client_results"] {
            spec.clientResults = try clientResultList(node, receiveMethod: spec.receiveMethod)
        }
        if let node = fields["reconnect"] {
            spec.reconnect = try reconnectSpec(node)
        }
        if let node = fields["upload_items"] {
            spec.uploadItems = try integer(node, field: "hub.upload_items", in: 0...1_000_000)
        }
        if let node = fields["expect"] {
            // `expect: echo` (the reply carries the call's stamp), `expect: any`, or `expect: {text: "ok"}`.
            if case .mapping(let m) = node {
                let f = try Fields(m, path: "hub.expect", known: ["text"], reader: self)
                guard let t = f["text"] else { throw error(at: node, field: "hub.expect", "expected 'any', 'echo' or {text: \"…\"}") }
                spec.expectedResult = .text(try string(t, field: "hub.expect.text", expecting: "the exact reply text"))
            } else {
                switch try string(node, field: "hub.expect", expecting: "'any', 'echo' or {text: \"…\"}") {
                case "any": spec.expectedResult = .any
                case "echo": spec.expectedResult = .echo
                default: throw error(at: node, field: "hub.expect", "expected 'any', 'echo' or {text: \"…\"}, got \(describe(node))")
                }
            }
        }
        if let node = fields["cancel_after_items"] {
            spec.cancelStreamAfterItems = try integer(node, field: "hub.cancel_after_items", in: 1...1_000_000)
        }
        if let node = fields["stateful_reconnect"] {
            spec.statefulReconnect = try boolean(node, field: "hub.stateful_reconnect")
            if spec.statefulReconnect {
                guard spec.transports == [.webSockets] else {
                    throw error(
                        at: node, field: "hub.stateful_reconnect",
                        "stateful reconnect works over WebSockets only: add 'transports: [websockets]'")
                }
                guard !spec.skipNegotiation else {
                    throw error(
                        at: node, field: "hub.stateful_reconnect",
                        "stateful reconnect is agreed in the negotiate request: remove 'skip_negotiation: true'")
                }
            }
        }
        return spec
    }

    private func transportList(_ node: Node, protocolKind: HubProtocolKind) throws(ScenarioError) -> [HubTransport] {
        let field = "hub.transports"
        guard case .sequence(let sequence) = node else {
            throw error(
                at: node, field: field,
                "expected a list of transports in the order to try them, like [websockets, server_sent_events, "
                    + "long_polling], got \(describe(node))")
        }
        guard !sequence.isEmpty else {
            throw error(at: node, field: field, "expected at least one transport (leave the field out to allow all three)")
        }
        var transports: [HubTransport] = []
        for (index, item) in sequence.enumerated() {
            let transport: HubTransport = try choice(item, field: "\(field)[\(index)]")
            if transports.contains(transport) {
                throw error(at: item, field: "\(field)[\(index)]", "'\(transport.rawValue)' is already listed")
            }
            if transport == .serverSentEvents, protocolKind == .messagePack {
                throw error(
                    at: item, field: field,
                    "MessagePack cannot use server_sent_events (Server-Sent Events carry text only): "
                        + "remove it or use 'protocol: json'")
            }
            transports.append(transport)
        }
        return transports
    }

    /// A literal token, `{env: NAME}` or `{file: PATH}`. No message here ever repeats what was written
    /// as the token (it may be the secret itself).
    private func tokenSource(_ node: Node, field: String = "hub.access_token") throws(ScenarioError) -> TokenSource? {
        switch node {
        case .scalar(let scalar):
            if isNull(node) { return nil }
            let token = scalar.string
            guard !token.isEmpty else {
                throw error(at: node, field: field, "the access_token value is empty")
            }
            guard !token.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
                throw error(at: node, field: field, "the access_token value cannot contain line breaks or NUL characters")
            }
            if token.hasPrefix("$"), isEnvironmentName(token.dropFirst().trimmingCharacters(in: CharacterSet(charactersIn: "{}"))) {
                throw error(
                    at: node, field: field,
                    "the access_token value looks like a shell variable, but Stampede does not expand variables: "
                        + "use {env: NAME} to read the token from the environment")
            }
            return .literal(token)
        case .mapping(let mapping):
            let fields = try Fields(mapping, path: field, known: Keys.accessToken, reader: self, hideUnknownKeys: true)
            switch (fields["env"], fields["file"]) {
            case (let env?, nil):
                guard case .scalar(let scalar) = env, !isNull(env), isEnvironmentName(scalar.string) else {
                    throw error(
                        at: env, field: "\(field).env",
                        "expected the name of an environment variable (letters, digits and '_', not starting with a digit), "
                            + "as in {env: HUB_TOKEN}\(describeUnlessText(env))")
                }
                return try available(.environment(scalar.string), at: env, field: "\(field).env")
            case (nil, let file?):
                guard case .scalar(let scalar) = file, !isNull(file), !scalar.string.isEmpty,
                    !scalar.string.unicodeScalars.contains("\0")
                else {
                    throw error(
                        at: file, field: "\(field).file",
                        "expected the path of a file holding the token, as in {file: secrets/hub-token}\(describeUnlessText(file))")
                }
                return try available(.file(scalar.string), at: file, field: "\(field).file")
            case (.some, .some):
                throw error(at: node, field: field, "give either 'env' or 'file', not both")
            case (nil, nil):
                throw error(at: node, field: field, "expected 'env' or 'file', as in {env: HUB_TOKEN}, got an empty mapping")
            }
        default:
            throw error(
                at: node, field: field,
                "expected a token, {env: NAME} or {file: PATH}, got \(describe(node))")
        }
    }

    /// The source itself, once its variable or file is there (when the scenario is about to run):
    /// a missing one is a bad scenario, reported at its line before any work starts.
    private func available(_ source: TokenSource, at node: Node, field: String) throws(ScenarioError) -> TokenSource {
        guard checksEnvironment else { return source }
        do { _ = try ScenarioLoader.resolveToken(source, scenarioFile: file, field: field) } catch {
            throw self.error(at: node, field: field, error.message)
        }
        return source
    }

    /// ", got a list" for structure, nothing for scalar text (which may be a misplaced secret).
    private func describeUnlessText(_ node: Node) -> String {
        if case .scalar = node, !isNull(node) { return "" }
        return ", got \(describe(node))"
    }

    private func hubCall(_ node: Node, field: String) throws(ScenarioError) -> HubCall? {
        if isNull(node) { return nil }
        guard case .mapping(let mapping) = node else {
            throw error(
                at: node, field: field,
                "expected a mapping like {method: JoinGroup, arguments: [\"room-{client%10}\"]}, got \(describe(node))")
        }
        let fields = try Fields(mapping, path: field, known: Keys.hubCall, reader: self)
        guard let methodNode = fields["method"] else {
            throw error(at: node, field: "\(field).method", "missing required field 'method'")
        }
        let method = try methodName(methodNode, field: "\(field).method")
        var arguments: [ArgumentTemplate] = []
        if let node = fields["arguments"] {
            arguments = try argumentList(node, field: "\(field).arguments", allowStamp: false)
        }
        return HubCall(method: method, arguments: arguments)
    }

    private func methodName(_ node: Node, field: String) throws(ScenarioError) -> String {
        let name = try string(node, field: field, expecting: "a method name")
        guard !name.isEmpty,
            !name.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control })
        else {
            throw error(at: node, field: field, "expected a method name without spaces or control characters, got \(describe(node))")
        }
        return name
    }

    private func argumentList(_ node: Node, field: String, allowStamp: Bool) throws(ScenarioError) -> [ArgumentTemplate] {
        if isNull(node) { return [] }
        guard case .sequence(let sequence) = node else {
            throw error(at: node, field: field, "expected a list of arguments like [\"{stamp}\", 42], got \(describe(node))")
        }
        var arguments: [ArgumentTemplate] = []
        for (index, item) in sequence.enumerated() {
            arguments.append(try argument(item, field: "\(field)[\(index)]", allowStamp: allowStamp))
        }
        return arguments
    }

    private func argument(_ node: Node, field: String, allowStamp: Bool) throws(ScenarioError) -> ArgumentTemplate {
        let expectation = "expected text, a number, true/false or null"
        switch node {
        case .mapping(let mapping):
            // `- {stamp}` unquoted is the YAML mapping {stamp: null}.
            if mapping.count == 1, let entry = mapping.first, case .scalar(let scalar) = entry.key, isNull(entry.value) {
                throw error(
                    at: node, field: field,
                    "\(expectation), got a mapping: unquoted braces make a YAML mapping, so write \"{\(scalar.string)}\" in quotes")
            }
            throw error(at: node, field: field, "\(expectation), got a mapping (arguments cannot be objects)")
        case .sequence:
            throw error(at: node, field: field, "\(expectation), got a list (arguments cannot be lists)")
        case .alias:
            throw error(at: node, field: field, "\(expectation), got \(describe(node))")
        case .scalar(let scalar):
            switch node.tag.rawValue {
            case Tag.Name.null.rawValue:
                return .null
            case Tag.Name.bool.rawValue:
                guard let value = Bool.construct(from: scalar) else { break }
                return .boolean(value)
            case Tag.Name.int.rawValue:
                guard let value = Int64.construct(from: scalar) else {
                    throw error(
                        at: node, field: field,
                        "expected an integer from \(Int64.min) to \(Int64.max), got \(describe(node))")
                }
                return .integer(value)
            case Tag.Name.float.rawValue:
                guard let value = Double.construct(from: scalar), value.isFinite else {
                    throw error(
                        at: node, field: field, "expected a finite number (JSON has no NaN or infinity), got \(describe(node))")
                }
                return .number(value)
            default:
                break
            }
            // Strings, and scalars of other kinds (timestamps, custom tags) as written.
            let text = scalar.string
            if text == "{stamp}" {
                guard allowStamp else {
                    throw error(
                        at: node, field: field,
                        "'{stamp}' is only for the arguments of the scheduled call (hub.arguments), not for join")
                }
                return .stamp
            }
            switch parseTemplate(text) {
            case .success(let parts): return .text(parts)
            case .failure(let problem): throw error(at: node, field: field, problem.message)
            }
        }
    }

    private func clientResultList(_ node: Node, receiveMethod: String?) throws(ScenarioError) -> [ClientResult] {
        let field = "hub.client_results"
        if isNull(node) { return [] }
        guard case .mapping(let mapping) = node else {
            throw error(
                at: node, field: field,
                "expected a mapping of client method names to the text each answers with, like {GetClientResult: ok}, "
                    + "got \(describe(node))")
        }
        var results: [ClientResult] = []
        var seen: [String: Int] = [:]
        for (keyNode, valueNode) in mapping {
            let method = try methodName(keyNode, field: field)
            let entryField = "\(field).\(method)"
            // SignalR clients look handlers up case-insensitively.
            let lowercased = method.lowercased()
            if let line = seen[lowercased] {
                throw error(
                    at: keyNode, field: entryField,
                    "client method '\(method)' is already given at line \(line) (method names are case-insensitive)")
            }
            if let receiveMethod, receiveMethod.lowercased() == lowercased {
                throw error(
                    at: keyNode, field: entryField,
                    "'\(method)' is also the 'receive' method: a client method either returns a result or carries stamps")
            }
            seen[lowercased] = keyNode.mark?.line ?? 0
            guard case .scalar(let scalar) = valueNode, valueNode.tag.rawValue == Tag.Name.str.rawValue else {
                throw error(
                    at: valueNode, field: entryField,
                    "expected the text to answer with (quote numbers and booleans, as in \"42\"), got \(describe(valueNode))")
            }
            results.append(ClientResult(method: method, value: scalar.string))
        }
        return results
    }

    private func reconnectSpec(_ node: Node, field: String = "hub.reconnect") throws(ScenarioError) -> ReconnectSpec {
        let form = "expected 'none', 'default' (0s, 2s, 10s, 30s), a list of delays like [0s, 2s, 10s], "
            + "or {exponential: {initial: 1s, max: 30s, attempts: 10, jitter: full}}"
        switch node {
        case .scalar(let scalar):
            if isNull(node) { return .none }
            guard node.tag.rawValue == Tag.Name.str.rawValue else { break }
            switch scalar.string {
            case "none": return .none
            case "default": return .signalRDefault
            default: break
            }
        case .mapping(let mapping):
            let outer = try Fields(mapping, path: field, known: ["exponential"], reader: self)
            guard let inner = outer["exponential"], case .mapping(let settings) = inner else { break }
            let path = "\(field).exponential"
            let f = try Fields(settings, path: path, known: ["initial", "max", "attempts", "jitter"], reader: self)
            let initial = try f["initial"].map { node throws(ScenarioError) in try duration(node, field: "\(path).initial", allowZero: false) } ?? 1
            let maxDelay = try f["max"].map { node throws(ScenarioError) in try duration(node, field: "\(path).max", allowZero: false) } ?? 30
            let attempts = try f["attempts"].map { node throws(ScenarioError) in try integer(node, field: "\(path).attempts", in: 1...1_000_000) } ?? 10
            var jitter = Jitter.full
            if let node = f["jitter"] { jitter = try choice(node, field: "\(path).jitter") }
            guard maxDelay >= initial else {
                throw error(at: f["max"] ?? inner, field: "\(path).max", "max must be at least initial")
            }
            return .exponential(initialSeconds: initial, maxSeconds: maxDelay, attempts: attempts, jitter: jitter)
        case .sequence(let sequence):
            guard !sequence.isEmpty else {
                throw error(at: node, field: field, "an empty list never reconnects: write 'reconnect: none' instead")
            }
            var delays: [Double] = []
            for (index, item) in sequence.enumerated() {
                delays.append(try duration(item, field: "\(field)[\(index)]", allowZero: true))
            }
            return .delays(delays)
        default:
            break
        }
        throw error(at: node, field: field, "\(form), got \(describe(node))")
    }
}

private func isEnvironmentName(_ text: some StringProtocol) -> Bool {
    guard let first = text.unicodeScalars.first, first == "_" || ("a"..."z").contains(first) || ("A"..."Z").contains(first)
    else { return false }
    return text.unicodeScalars.allSatisfy { $0 == "_" || isAlphanumeric($0) }
}

extension ScenarioLoader {
    /// Reads a hub access token where `source` says, at the start of a run.
    ///
    /// Errors name the field `hub.access_token` (and the variable or file), never the token itself.
    /// A file's single trailing newline (`\n` or `\r\n`) is removed.
    ///
    /// - Parameter scenarioFile: Used in error messages (`Scenario.file`).
    public static func resolveToken(_ source: TokenSource, scenarioFile: String = "", field: String = "hub.access_token") throws(ScenarioError) -> String {
        func failure(_ message: String) -> ScenarioError {
            ScenarioError(file: scenarioFile, line: 0, field: field, message: message)
        }
        let token: String
        let origin: String
        switch source {
        case .literal(let value):
            token = value
            origin = "the access_token value"
        case .environment(let name):
            guard let value = ProcessInfo.processInfo.environment[name] else {
                throw failure("environment variable '\(name)' is not set")
            }
            token = value
            origin = "environment variable '\(name)'"
        case .file(let path):
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw failure("cannot read the token file '\(path)': \(readFailureReason(error, path: path))")
            }
            guard var text = String(data: data, encoding: .utf8) else {
                throw failure("the token file '\(path)' is not UTF-8 text")
            }
            // "\r\n" is a single Character in Swift.
            if text.hasSuffix("\n") || text.hasSuffix("\r\n") {
                text.removeLast()
            }
            token = text
            origin = "the token file '\(path)'"
        }
        guard !token.isEmpty else {
            throw failure("\(origin) is empty")
        }
        guard !token.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
            throw failure("\(origin) holds line breaks or NUL characters, which cannot go into a header")
        }
        return token
    }
}
