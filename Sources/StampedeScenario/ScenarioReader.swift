import Yams

enum Keys {
    static let topLevel = [
        "name", "target", "workload", "clients", "connect_rate", "duration", "message", "load_model", "think_time",
        "seed", "drain", "connect_timeout", "headers", "subprotocol", "max_message_size", "source_addresses", "resolve", "hub",
        "events", "reconnect", "heartbeat", "while_disconnected", "target_admin", "rest",
        "tls", "thresholds", "websocket", "socketio", "populations",
    ]
    static let rest = [
        "token", "interval", "pool", "first_byte_timeout", "response_timeout", "max_response_size", "redirects", "staleness",
        "resources", "embedded",
    ]
    static let message = ["rate", "size", "stages", "spike", "step"]
    static let hub = [
        "transports", "protocol", "negotiate_version", "skip_negotiation", "access_token", "token_in_query", "keep_alive",
        "server_timeout", "handshake_timeout", "join", "operation", "method", "arguments", "receive", "client_results",
        "reconnect", "stateful_reconnect", "upload_items", "cancel_after_items", "expect", "redirect_hosts",
    ]
    static let hubCall = ["method", "arguments"]
    static let accessToken = ["env", "file"]
    /// Hub settings written at the top level by mistake, with where they belong.
    static let misplacedAtTopLevel = Dictionary(uniqueKeysWithValues: hub.map { ($0, "; it belongs inside the 'hub' section (hub.\($0))") })
}

enum Limits {
    static let clients = 1...1_000_000
    static let messageSize = MessageSpec.minimumSize...16_777_216
    static let maxMessageBytes = 125...1_073_741_824
    // Upper bounds keep later arithmetic (nanosecond timestamps, message counts) far from overflow.
    static let durationSeconds = 7.0 * 24 * 3600
    /// The shortest non-zero duration: timers are nanoseconds, but a period shorter than this
    /// only makes a loop spin (a REST interval of 1e-12 s is a poll every 0 ns).
    static let shortestDuration = 0.001
    /// Rates: at least one event per 1,000 s, so every derived interval (clients ÷ rate) stays
    /// within nanosecond arithmetic, and at most what one machine could ever do.
    static let slowestRate = 0.001
    static let connectRate = 1_000_000.0
    static let messageRate = 10_000_000.0
    static let nameLength = 100
}

/// The keys of one YAML mapping, checked against the keys it may contain.
struct Fields {
    /// Dotted path of the mapping itself; "" at the top level.
    let path: String
    private var values: [String: Node] = [:]
    private var keys: [String: Node] = [:]

    /// - Parameters:
    ///   - misplaced: Keys that belong elsewhere, with the hint to append to the error.
    ///   - hideUnknownKeys: Never repeat an unknown key unless it is a near miss of a known one (the
    ///     mapping may hold a secret, e.g. `access_token: {Bearer abc}` is a mapping with one key).
    init(
        _ mapping: Node.Mapping, path: String, known: [String], reader: Reader, misplaced: [String: String] = [:],
        hideUnknownKeys: Bool = false
    ) throws(ScenarioError) {
        self.path = path
        for (keyNode, value) in mapping {
            guard case .scalar(let scalar) = keyNode, !isNull(keyNode) else {
                throw reader.error(at: keyNode, field: path, "expected a field name, got \(describe(keyNode))")
            }
            let key = scalar.string
            guard known.contains(key) else {
                let suggestion = closestKey(to: key, in: known)
                let knownList = known.map { "'\($0)'" }.joined(separator: ", ")
                if hideUnknownKeys, suggestion == nil {
                    throw reader.error(at: keyNode, field: path, "unknown field (not repeated here); expected \(knownList)")
                }
                var message = "unknown field '\(key)'"
                if let hint = misplaced[key] {
                    message += hint
                } else if let suggestion {
                    message += "; did you mean '\(suggestion)'?"
                } else {
                    message += " (known fields: \(known.joined(separator: ", ")))"
                }
                throw reader.error(at: keyNode, field: fieldPath(key), message)
            }
            values[key] = value
            keys[key] = keyNode
        }
    }

    subscript(key: String) -> Node? { values[key] }

    /// The node of the key itself, to point at a field that is present but not allowed.
    func keyNode(_ key: String) -> Node? { keys[key] }

    func fieldPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
}

/// Turns the composed YAML tree into a `Scenario`, throwing at the first invalid value.
struct Reader {
    let file: String
    /// Top-level fields given on the command line, with their flags.
    var flags: [String: String] = [:]
    /// Whether token variables and files must exist now (a file about to run), or only be well formed.
    var checksEnvironment = false

    func error(at node: Node, field: String, _ message: String) -> ScenarioError {
        // Only a command-line value has no mark (see ScenarioLoader.applying).
        if node.mark == nil, let flag = flags[field] {
            return ScenarioError(file: file, line: 0, field: field, message: message, flag: flag)
        }
        return ScenarioError(file: file, line: node.mark?.line ?? 0, column: node.mark?.column ?? 0, field: field, message: message)
    }

    /// ", from --duration" when a command-line value set `field`, for messages about other fields.
    func origin(of field: String) -> String {
        flags[field].map { ", from \($0)" } ?? ""
    }
}

extension Reader {
    // MARK: Value kinds

    /// Any non-null scalar, as written: `name: 2024` is the name "2024".
    func string(_ node: Node, field: String, expecting expectation: String) throws(ScenarioError) -> String {
        guard case .scalar(let scalar) = node, !isNull(node) else {
            throw error(at: node, field: field, "expected \(expectation), got \(describe(node))")
        }
        return scalar.string
    }

    func choice<Choice: RawRepresentable<String> & CaseIterable>(
        _ node: Node, field: String
    ) throws(ScenarioError) -> Choice {
        let options = Choice.allCases.map(\.rawValue)
        let expectation = "one of \(options.map { "'\($0)'" }.joined(separator: ", "))"
        let text = try string(node, field: field, expecting: expectation)
        guard let value = Choice(rawValue: text) else {
            throw error(at: node, field: field, "expected \(expectation), got \(describe(node))")
        }
        return value
    }

    func integer(_ node: Node, field: String, in range: ClosedRange<Int>) throws(ScenarioError) -> Int {
        guard case .scalar(let scalar) = node, node.tag.rawValue == Tag.Name.int.rawValue,
            let value = Int.construct(from: scalar), range.contains(value)
        else {
            throw error(
                at: node, field: field,
                "expected an integer from \(range.lowerBound) to \(range.upperBound), got \(describe(node))")
        }
        return value
    }

    func number(_ node: Node, field: String, above minimum: Double, maximum: Double) throws(ScenarioError) -> Double {
        try number(node, field: field, lowerBound: "> \(format(minimum))", maximum: maximum) { $0 > minimum }
    }

    func number(_ node: Node, field: String, atLeast minimum: Double, maximum: Double) throws(ScenarioError) -> Double {
        try number(node, field: field, lowerBound: "≥ \(format(minimum))", maximum: maximum) { $0 >= minimum }
    }

    /// The upper bound is only mentioned once exceeded: it is far above any sensible value.
    func number(
        _ node: Node, field: String, lowerBound: String, maximum: Double, isAboveLowerBound: (Double) -> Bool
    ) throws(ScenarioError) -> Double {
        guard let value = numericValue(node), value.isFinite, isAboveLowerBound(value) else {
            throw error(at: node, field: field, "expected a number \(lowerBound), got \(describe(node))")
        }
        guard value <= maximum else {
            throw error(
                at: node, field: field, "expected a number \(lowerBound) and ≤ \(format(maximum)), got \(describe(node))")
        }
        return value
    }

    /// A plain YAML int or float; quoted strings, booleans and nulls are not numbers.
    func numericValue(_ node: Node) -> Double? {
        guard case .scalar(let scalar) = node else { return nil }
        switch node.tag.rawValue {
        case Tag.Name.int.rawValue: return Int.construct(from: scalar).map(Double.init)
        case Tag.Name.float.rawValue: return Double.construct(from: scalar)
        default: return nil
        }
    }

    /// Seconds, from a number or a string such as "500ms", "1.5s", "2m" or "1h".
    func duration(_ node: Node, field: String, allowZero: Bool) throws(ScenarioError) -> Double {
        let bound = allowZero ? "≥ 0" : "> 0"
        let form = "a duration \(bound) such as 500ms, 1.5s, 2m or 1h (a bare number means seconds)"
        let seconds: Double
        if let number = numericValue(node) {
            seconds = number
        } else if case .scalar(let scalar) = node, node.tag.rawValue == Tag.Name.str.rawValue,
            let parsed = parseDuration(scalar.string)
        {
            seconds = parsed
        } else {
            throw error(at: node, field: field, "expected \(form), got \(describe(node))")
        }
        guard seconds.isFinite, allowZero ? seconds >= 0 : seconds > 0 else {
            throw error(at: node, field: field, "expected \(form), got \(describe(node))")
        }
        guard seconds == 0 || seconds >= Limits.shortestDuration else {
            throw error(at: node, field: field, "expected \(allowZero ? "0 or " : "")a duration of at least 1ms, got \(describe(node))")
        }
        guard seconds <= Limits.durationSeconds else {
            throw error(
                at: node, field: field,
                "expected a duration of at most \(format(Limits.durationSeconds / 3600))h, got \(describe(node))")
        }
        return seconds
    }

    /// Bytes, from an integer or a string such as "64KiB" or "1MB".
    func byteSize(_ node: Node, field: String, in range: ClosedRange<Int>) throws(ScenarioError) -> Int {
        var bytes: Int?
        if case .scalar(let scalar) = node {
            switch node.tag.rawValue {
            case Tag.Name.int.rawValue: bytes = Int.construct(from: scalar)
            case Tag.Name.str.rawValue: bytes = parseByteSize(scalar.string)
            default: bytes = nil
            }
        }
        guard let bytes, range.contains(bytes) else {
            throw error(
                at: node, field: field,
                "expected a size from \(range.lowerBound) to \(range.upperBound) bytes, as a number of bytes "
                    + "or with a unit (B, KiB, MiB, GiB, KB, MB, GB), got \(describe(node))")
        }
        return bytes
    }

    func boolean(_ node: Node, field: String) throws(ScenarioError) -> Bool {
        guard case .scalar(let scalar) = node, node.tag.rawValue == Tag.Name.bool.rawValue,
            let value = Bool.construct(from: scalar)
        else {
            throw error(at: node, field: field, "expected true or false, got \(describe(node))")
        }
        return value
    }

    func mappingNode(_ node: Node, field: String, expecting: String) throws(ScenarioError) -> Node.Mapping {
        guard case .mapping(let m) = node else { throw error(at: node, field: field, "expected \(expecting), got \(describe(node))") }
        return m
    }
}
