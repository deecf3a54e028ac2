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

// MARK: - Hub section

extension Reader {
    /// The `hub` section (workload `hub`). `keyNode` is the `hub:` key, where missing fields are reported.
    func hubSpec(_ node: Node, keyNode: Node) throws(ScenarioError) -> HubSpec {
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
    func tokenSource(_ node: Node, field: String = "hub.access_token") throws(ScenarioError) -> TokenSource? {
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

    func reconnectSpec(_ node: Node, field: String = "hub.reconnect") throws(ScenarioError) -> ReconnectSpec {
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
