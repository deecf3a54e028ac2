import StampedeWire
import Yams

extension Keys {
    static let websocket = [
        "subprotocols", "headers", "secrets", "connect", "send", "replies", "respond", "ignore", "reply_timeout", "fanout",
    ]
    static let connectStep = ["send", "expect"]
    static let expect = ["match", "capture", "timeout", "strict"]
    static let sendEntry = ["text", "binary", "weight"]
    static let reply = ["name", "match", "correlate", "stamp"]
    static let correlate = ["sent", "received"]
    static let respond = ["name", "match", "send"]
    static let ignore = ["name", "match"]
    static let matchConditions = ["prefix", "contains", "between", "equals", "opcode", "bytes"]
    static let bytesCondition = ["offset", "hex", "mask"]
    static let selector = ["between", "offset", "length"]
}

/// What a flow's templates may name besides the built-in placeholders, as the reader goes
/// through the steps in order.
struct FlowNames: FlowNamesView {
    var secrets: [String] = []
    var captures: [String] = []
    /// Captures whose step comes later than the field being read (so not yet usable there).
    var later: Set<String> = []
}

extension Reader {
    /// The `websocket` section (workload `websocket`).
    func webSocketFlowSpec(_ node: Node, message: MessageSpec) throws(ScenarioError) -> WebSocketFlowSpec {
        let mapping = try mappingNode(node, field: "websocket", expecting: "a mapping with 'connect', 'send' and 'replies' (see docs/websocket.md)")
        let fields = try Fields(mapping, path: "websocket", known: Keys.websocket, reader: self)
        var spec = WebSocketFlowSpec()
        if let node = fields["subprotocols"] { spec.subprotocols = try subprotocolList(node) }
        if let node = fields["secrets"] { spec.secrets = try secretList(node, section: "websocket") }
        var names = FlowNames(secrets: spec.secrets.map(\.name))
        if let node = fields["headers"] {
            spec.headers = try headerList(node, path: "websocket.headers")
            let valueNodes = node.mapping.map { Array($0.values) } ?? []
            for (header, valueNode) in zip(spec.headers, valueNodes) {
                // Header values may name secrets only: they are sent before any step runs.
                let template = try textTemplate(valueNode, field: "websocket.headers.\(header.name)", names: FlowNames(secrets: names.secrets))
                if template.segments.contains(where: Self.isPerMessageValue) {
                    throw error(at: valueNode, field: "websocket.headers.\(header.name)", "a header value may name secrets only ({token}), not per-message values")
                }
            }
        }
        if let node = fields["connect"] { spec.connect = try connectSteps(node, names: &names, spec: &spec) }
        if let node = fields["send"] { spec.sends = try sendEntries(node, names: names) }
        if let node = fields["replies"] { spec.replies = try replyRules(node, sends: spec.sends, sendNode: fields["send"]) }
        if let node = fields["respond"] { spec.responds = try respondRules(node, names: names) }
        if let node = fields["ignore"] { spec.ignores = try ignoreRules(node) }
        if let node = fields["reply_timeout"] { spec.replyTimeoutSeconds = try duration(node, field: "websocket.reply_timeout", allowZero: false) }
        if let node = fields["fanout"] { spec.fanout = try fanoutRule(node) }
        spec.bindNames()

        // Every scheduled message must be able to end delivered: its reply is correlated, or stamped.
        if message.ratePerSecond > 0 {
            guard let sendNode = fields["send"], !spec.sends.isEmpty else {
                throw error(at: fields.keyNode("websocket") ?? node, field: "websocket.send",
                            "missing 'send': message.rate is \(format(message.ratePerSecond))/s, so the flow needs what one message is "
                                + "(or set message.rate: 0 to only hold connections)")
            }
            let measured = spec.replies.filter { $0.measure != .none }
            guard !measured.isEmpty else {
                throw error(at: fields["replies"] ?? sendNode, field: "websocket.replies",
                            "no reply rule measures a message (one with 'correlate' or 'stamp'), so no message could be delivered")
            }
            let stamped = measured.contains { if case .stamp = $0.measure { true } else { false } }
            let items = sendNode.sequence.map(Array.init) ?? []
            for (i, entry) in spec.sends.enumerated() {
                let correlates = spec.replies.contains {
                    if case .correlate(let sent, _) = $0.measure { entry.template.placeholder(at: sent)?.isSequence == true } else { false }
                }
                if !correlates && !(stamped && entry.template.carriesStamp) {
                    throw error(at: i < items.count ? items[i] : sendNode, field: "websocket.send[\(i)]",
                                "this message carries neither a {stamp} for a 'stamp' reply nor the {sequence} a 'correlate' reply reads, "
                                    + "so its reply could never be matched")
                }
            }
        }
        return spec
    }

    /// A placeholder other than a named secret or capture (`{stamp}`, `{client}` …).
    private static func isPerMessageValue(_ segment: MessageTemplate.Segment) -> Bool {
        guard case .placeholder(let p) = segment else { return false }
        if case .named = p { return false }
        return true
    }

    /// `fanout: none | all | {same: "{client%10}"}`.
    private func fanoutRule(_ node: Node) throws(ScenarioError) -> WebSocketFlowSpec.FanoutRule {
        let expectation = "none, all or {same: \"{client%10}\"} (every other client whose text is the same)"
        if case .mapping(let m) = node {
            let f = try Fields(m, path: "websocket.fanout", known: ["same"], reader: self)
            guard let same = f["same"] else { throw error(at: node, field: "websocket.fanout", "expected \(expectation)") }
            let template = try textTemplate(same, field: "websocket.fanout.same", names: FlowNames())
            for case .placeholder(let p) in template.segments {
                switch p {
                case .client, .clientModulo, .user: continue
                default: throw error(at: same, field: "websocket.fanout.same", "only {client}, {client%N} and {user} make a client's group, the same in every run")
                }
            }
            return .same(template)
        }
        switch try string(node, field: "websocket.fanout", expecting: expectation) {
        case "none": return .none
        case "all": return .all
        default: throw error(at: node, field: "websocket.fanout", "expected \(expectation), got \(describe(node))")
        }
    }

    private func subprotocolList(_ node: Node) throws(ScenarioError) -> [String] {
        let items: [Node] = node.sequence.map(Array.init) ?? [node]
        var result: [String] = []
        for (i, item) in items.enumerated() {
            let field = node.sequence != nil ? "websocket.subprotocols[\(i)]" : "websocket.subprotocols"
            let value = try string(item, field: field, expecting: "a subprotocol name")
            guard !value.isEmpty, value.unicodeScalars.allSatisfy(isTokenCharacter) else {
                throw error(at: item, field: field, "expected a subprotocol name made of letters, digits and !#$%&'*+-.^_`|~, got \(describe(item))")
            }
            result.append(value)
        }
        return result
    }

    /// A section's `secrets`: names to `{env: NAME}`, `{file: PATH}` or a literal.
    func secretList(_ node: Node, section: String) throws(ScenarioError) -> [WebSocketFlowSpec.Secret] {
        let mapping = try mappingNode(node, field: "\(section).secrets", expecting: "a mapping of names to {env: NAME}, {file: PATH} or a literal")
        var result: [WebSocketFlowSpec.Secret] = []
        for (keyNode, value) in mapping {
            let name = try string(keyNode, field: "\(section).secrets", expecting: "a secret's name")
            let field = "\(section).secrets.\(name)"
            try checkName(name, at: keyNode, field: field, what: "secret")
            guard let source = try tokenSource(value, field: field) else {
                throw error(at: value, field: field, "expected a value, {env: NAME} or {file: PATH}, got nothing")
            }
            result.append(.init(name: name, source: source))
        }
        return result
    }

    /// A name usable as `{name}`: letters, digits and '_', not a built-in placeholder.
    func checkName(_ name: String, at node: Node, field: String, what: String) throws(ScenarioError) {
        guard let first = name.unicodeScalars.first, first == "_" || ("a"..."z").contains(first) || ("A"..."Z").contains(first),
              name.unicodeScalars.allSatisfy({ $0 == "_" || isAlphanumeric($0) }) else {
            throw error(at: node, field: field, "expected a \(what) name of letters, digits and '_' (not starting with a digit), got \(describe(node))")
        }
        guard !MessageTemplate.builtinNames.contains(name) else {
            throw error(at: node, field: field, "'\(name)' is a built-in placeholder: choose another \(what) name")
        }
    }

    // MARK: Steps

    private func connectSteps(_ node: Node, names: inout FlowNames, spec: inout WebSocketFlowSpec) throws(ScenarioError) -> [WebSocketFlowSpec.ConnectStep] {
        guard case .sequence(let items) = node else {
            throw error(at: node, field: "websocket.connect", "expected a list of steps ('- send: …' or '- expect: …'), got \(describe(node))")
        }
        // Every capture is known up front, so a step that uses one defined later gets a precise error.
        names.later = []
        for item in items {
            if let expect = item.mapping?["expect"]?.mapping, let capture = expect["capture"]?.mapping {
                for key in capture.keys { if let n = key.string { names.later.insert(n) } }
            }
        }
        var steps: [WebSocketFlowSpec.ConnectStep] = []
        for (i, item) in items.enumerated() {
            let field = "websocket.connect[\(i)]"
            let m = try mappingNode(item, field: field, expecting: "'send: …' or 'expect: {match: …}'")
            let f = try Fields(m, path: field, known: Keys.connectStep, reader: self)
            switch (f["send"], f["expect"]) {
            case (let send?, nil):
                steps.append(.send(try stepTemplate(send, field: "\(field).send", names: names)))
            case (nil, let expect?):
                steps.append(.expect(try expectStep(expect, field: "\(field).expect", names: &names, spec: &spec)))
            case (.some, .some):
                throw error(at: item, field: field, "a step either sends or expects: split it into two steps")
            case (nil, nil):
                throw error(at: item, field: field, "expected 'send' or 'expect'")
            }
        }
        return steps
    }

    private func expectStep(_ node: Node, field: String, names: inout FlowNames, spec: inout WebSocketFlowSpec) throws(ScenarioError) -> WebSocketFlowSpec.Expect {
        let m = try mappingNode(node, field: field, expecting: "{match: {…}, capture: {…}, timeout: 5s}")
        let f = try Fields(m, path: field, known: Keys.expect, reader: self)
        guard let matchNode = f["match"] else { throw error(at: node, field: "\(field).match", "missing required field 'match'") }
        let (match, text) = try frameMatch(matchNode, field: "\(field).match")
        var expect = WebSocketFlowSpec.Expect(match: match, text: text)
        if let n = f["timeout"] { expect.timeoutSeconds = try duration(n, field: "\(field).timeout", allowZero: false) }
        if let n = f["strict"] { expect.strict = try boolean(n, field: "\(field).strict") }
        if let n = f["capture"] {
            let cm = try mappingNode(n, field: "\(field).capture", expecting: "a mapping of capture names to paths, like {session: $.session}")
            for (keyNode, value) in cm {
                let name = try string(keyNode, field: "\(field).capture", expecting: "a capture name")
                let cf = "\(field).capture.\(name)"
                try checkName(name, at: keyNode, field: cf, what: "capture")
                guard !names.secrets.contains(name) else { throw error(at: keyNode, field: cf, "'\(name)' is already a secret's name") }
                let selector = try fieldSelector(value, field: cf)
                let slot: Int
                if let existing = spec.captures.firstIndex(of: name) { slot = existing } else {
                    slot = spec.captures.count
                    spec.captures.append(name)
                }
                names.captures.append(name)
                expect.captures.append(.init(slot: slot, selector: selector))
            }
        }
        return expect
    }

    /// A connect step's or respond rule's `send`: text, or `{binary: HEX}` / `{text: …}`.
    private func stepTemplate(_ node: Node, field: String, names: FlowNames) throws(ScenarioError) -> MessageTemplate {
        if case .mapping(let m) = node {
            let f = try Fields(m, path: field, known: ["text", "binary"], reader: self)
            switch (f["text"], f["binary"]) {
            case (let t?, nil): return try textTemplate(t, field: "\(field).text", names: names)
            case (nil, let b?): return try binaryTemplate(b, field: "\(field).binary", names: names)
            default: throw error(at: node, field: field, "expected either 'text' or 'binary'")
            }
        }
        return try textTemplate(node, field: field, names: names)
    }

    private func sendEntries(_ node: Node, names: FlowNames) throws(ScenarioError) -> [WebSocketFlowSpec.SendEntry] {
        let items: [Node] = node.sequence.map(Array.init) ?? [node]
        var result: [WebSocketFlowSpec.SendEntry] = []
        let usable = FlowNames(secrets: names.secrets, captures: names.captures)
        for (i, item) in items.enumerated() {
            let field = node.sequence != nil ? "websocket.send[\(i)]" : "websocket.send"
            if case .mapping(let m) = item {
                let f = try Fields(m, path: field, known: Keys.sendEntry, reader: self)
                let template: MessageTemplate
                switch (f["text"], f["binary"]) {
                case (let t?, nil): template = try textTemplate(t, field: "\(field).text", names: usable)
                case (nil, let b?): template = try binaryTemplate(b, field: "\(field).binary", names: usable)
                default: throw error(at: item, field: field, "expected either 'text' or 'binary'")
                }
                var weight = 1
                if let w = f["weight"] { weight = try integer(w, field: "\(field).weight", in: 1...1_000_000) }
                result.append(.init(template: template, weight: weight))
            } else {
                result.append(.init(template: try textTemplate(item, field: field, names: usable)))
            }
        }
        return result
    }

    private func replyRules(_ node: Node, sends: [WebSocketFlowSpec.SendEntry], sendNode: Node?) throws(ScenarioError) -> [WebSocketFlowSpec.ReplyRule] {
        guard case .sequence(let items) = node else {
            throw error(at: node, field: "websocket.replies", "expected a list of rules ('- name: ack' with 'match'), got \(describe(node))")
        }
        var result: [WebSocketFlowSpec.ReplyRule] = []
        for (i, item) in items.enumerated() {
            let field = "websocket.replies[\(i)]"
            let m = try mappingNode(item, field: field, expecting: "{name: …, match: {…}, correlate: {…}} or with 'stamp'")
            let f = try Fields(m, path: field, known: Keys.reply, reader: self)
            guard let nameNode = f["name"] else { throw error(at: item, field: "\(field).name", "missing required field 'name' (the reply's latency metric)") }
            let name = try metricName(nameNode, field: "\(field).name", taken: result.map(\.name))
            guard let matchNode = f["match"] else { throw error(at: item, field: "\(field).match", "missing required field 'match'") }
            let (match, _) = try frameMatch(matchNode, field: "\(field).match")
            var measure = WebSocketFlowSpec.Measure.none
            switch (f["correlate"], f["stamp"]) {
            case (let c?, nil):
                let cm = try mappingNode(c, field: "\(field).correlate", expecting: "{sent: $.id, received: $.id}")
                let cf = try Fields(cm, path: "\(field).correlate", known: Keys.correlate, reader: self)
                guard let sentNode = cf["sent"], let receivedNode = cf["received"] else {
                    throw error(at: c, field: "\(field).correlate", "expected both 'sent' and 'received', as in {sent: $.id, received: $.id}")
                }
                let sent = try fieldSelector(sentNode, field: "\(field).correlate.sent")
                let received = try fieldSelector(receivedNode, field: "\(field).correlate.received")
                guard sends.contains(where: { $0.template.placeholder(at: sent)?.isSequence == true }) else {
                    throw error(at: sentNode, field: "\(field).correlate.sent",
                                sends.isEmpty ? "there is no 'send' message to correlate with"
                                    : "no send message has {sequence} (the value unique to each message) at \(describe(sentNode)): "
                                        + "correlate needs it there to tie each reply to its message")
                }
                measure = .correlate(sent: sent, received: received)
            case (nil, let s?):
                if s.string == "search" { measure = .stamp(.search) } else {
                    measure = .stamp(.selector(try fieldSelector(s, field: "\(field).stamp")))
                }
            case (.some, .some):
                throw error(at: item, field: field, "a reply is measured either by 'correlate' or by 'stamp', not both")
            case (nil, nil):
                break
            }
            result.append(.init(name: name, match: match, measure: measure))
        }
        return result
    }

    private func metricName(_ node: Node, field: String, taken: [String]) throws(ScenarioError) -> String {
        let name = try string(node, field: field, expecting: "a name")
        guard !name.isEmpty, name.count <= 64, name.unicodeScalars.allSatisfy({ $0 == "_" || isAlphanumeric($0) }),
              let first = name.unicodeScalars.first, !("0"..."9").contains(first) else {
            throw error(at: node, field: field, "expected a name of letters, digits and '_' (it names a latency metric), got \(describe(node))")
        }
        let builtIn = ThresholdMetricKind.latencyKeys.contains(name) && !ThresholdMetricKind.socketIOOnlyLatencyKeys.contains(name)
        guard !builtIn, name != "connect_flow", !name.hasSuffix("_uncorrected") else {
            throw error(at: node, field: field, "'\(name)' is the name of a built-in metric: choose another name")
        }
        guard !taken.contains(name) else { throw error(at: node, field: field, "the reply name '\(name)' is already used") }
        return name
    }

    private func respondRules(_ node: Node, names: FlowNames) throws(ScenarioError) -> [WebSocketFlowSpec.RespondRule] {
        guard case .sequence(let items) = node else {
            throw error(at: node, field: "websocket.respond", "expected a list of rules ('- match: …' with 'send'), got \(describe(node))")
        }
        var result: [WebSocketFlowSpec.RespondRule] = []
        let usable = FlowNames(secrets: names.secrets, captures: names.captures)
        for (i, item) in items.enumerated() {
            let field = "websocket.respond[\(i)]"
            let m = try mappingNode(item, field: field, expecting: "{match: {…}, send: …}")
            let f = try Fields(m, path: field, known: Keys.respond, reader: self)
            guard let matchNode = f["match"], let sendNode = f["send"] else {
                throw error(at: item, field: field, "expected both 'match' and 'send'")
            }
            let name = try f["name"].map { n throws(ScenarioError) in try metricName(n, field: "\(field).name", taken: result.map(\.name)) } ?? String(i)
            result.append(.init(name: name, match: try frameMatch(matchNode, field: "\(field).match").0,
                                template: try stepTemplate(sendNode, field: "\(field).send", names: usable)))
        }
        return result
    }

    private func ignoreRules(_ node: Node) throws(ScenarioError) -> [WebSocketFlowSpec.IgnoreRule] {
        guard case .sequence(let items) = node else {
            throw error(at: node, field: "websocket.ignore", "expected a list of rules ('- match: …'), got \(describe(node))")
        }
        var result: [WebSocketFlowSpec.IgnoreRule] = []
        for (i, item) in items.enumerated() {
            let field = "websocket.ignore[\(i)]"
            let m = try mappingNode(item, field: field, expecting: "{match: {…}}")
            let f = try Fields(m, path: field, known: Keys.ignore, reader: self)
            guard let matchNode = f["match"] else { throw error(at: item, field: "\(field).match", "missing required field 'match'") }
            let name = try f["name"].map { n throws(ScenarioError) in try metricName(n, field: "\(field).name", taken: result.map(\.name)) } ?? String(i)
            result.append(.init(name: name, match: try frameMatch(matchNode, field: "\(field).match").0))
        }
        return result
    }
}
