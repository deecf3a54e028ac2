import Yams

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
        if let node = fields["redirect_hosts"] {
            spec.redirectHosts = try redirectHostList(node)
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

    /// `hub.redirect_hosts`: names, addresses or `*.suffix` patterns, lower-cased.
    private func redirectHostList(_ node: Node) throws(ScenarioError) -> [String] {
        let field = "hub.redirect_hosts"
        let expectation = "a list of hosts a negotiate redirect may go to, like [\"*.service.signalr.net\"]"
        if isNull(node) { return [] }
        guard case .sequence(let sequence) = node else { throw error(at: node, field: field, "expected \(expectation), got \(describe(node))") }
        guard sequence.count <= 100 else { throw error(at: node, field: field, "at most 100 hosts, got \(sequence.count)") }
        var hosts: [String] = []
        for (index, item) in sequence.enumerated() {
            let itemField = "\(field)[\(index)]"
            let text = try string(item, field: itemField, expecting: "a host name, an address or '*.' and a name").lowercased()
            let name = text.hasPrefix("*.") ? String(text.dropFirst(2)) : text
            guard Self.isHostName(name) || (!text.hasPrefix("*.") && isIPv6Literal(name)) else {
                throw error(
                    at: item, field: itemField,
                    "expected a host name (like 'app.example.net'), an address, or '*.' and a name (like '*.service.signalr.net'; "
                        + "no scheme, port or path), got \(describe(item))")
            }
            if hosts.contains(text) { throw error(at: item, field: itemField, "'\(text)' is already listed") }
            hosts.append(text)
        }
        return hosts
    }

    /// Letters, digits and hyphens in dot-separated labels of 1 to 63 characters, 253 at most.
    static func isHostName(_ text: String) -> Bool {
        guard (1...253).contains(text.utf8.count) else { return false }
        return text.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                && label.utf8.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "-") }
        }
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
}
