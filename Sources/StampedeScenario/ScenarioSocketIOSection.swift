import StampedeWire
import Yams

extension Keys {
    static let socketio = ["path", "namespace", "transports", "auth", "secrets", "connect", "emit", "receive", "reconnect", "ack_timeout"]
    static let socketioEmit = ["event", "args", "ack", "binary"]
    static let socketioReceive = ["event", "stamp"]
    /// Event names the Socket.IO libraries keep for themselves (socket.io's RESERVED_EVENTS).
    static let reservedSocketIOEvents: Set<String> = ["connect", "connect_error", "disconnect", "disconnecting", "newListener", "removeListener"]
}

extension Reader {
    /// The `socketio` section (workload `socketio`).
    func socketIOSpec(_ node: Node, message: MessageSpec) throws(ScenarioError) -> SocketIOSpec {
        let mapping = try mappingNode(node, field: "socketio", expecting: "a mapping with 'namespace', 'emit' and 'receive' (see scenarios/socketio-chat.yaml)")
        let fields = try Fields(mapping, path: "socketio", known: Keys.socketio, reader: self)
        var spec = SocketIOSpec()
        if let n = fields["path"] { spec.path = try urlPart(n, field: "socketio.path", what: "a path") }
        if let n = fields["namespace"] { spec.namespace = try urlPart(n, field: "socketio.namespace", what: "a namespace") }
        if let n = fields["transports"] { spec.transports = try transportList(n) }
        if let n = fields["secrets"] { spec.secrets = try secretList(n, section: "socketio") }
        let names = FlowNames(secrets: spec.secrets.map(\.name))
        if let n = fields["auth"] {
            _ = try mappingNode(n, field: "socketio.auth", expecting: "a mapping, the CONNECT packet's auth object, like {token: \"{token}\"}")
            spec.auth = try jsonTemplate(try jsonText(n, field: "socketio.auth"), at: n, field: "socketio.auth", names: names)
        }
        if let n = fields["connect"] {
            guard case .sequence(let items) = n else {
                throw error(at: n, field: "socketio.connect", "expected a list of steps ('- emit: {event: join, args: [room]}'), got \(describe(n))")
            }
            for (i, item) in items.enumerated() {
                let field = "socketio.connect[\(i)]"
                let m = try mappingNode(item, field: field, expecting: "'emit: {event: …, args: […]}'")
                let f = try Fields(m, path: field, known: ["emit"], reader: self)
                guard let e = f["emit"] else { throw error(at: item, field: "\(field).emit", "missing required field 'emit'") }
                spec.connect.append(try socketIOEmit(e, field: "\(field).emit", names: names))
            }
        }
        if let n = fields["emit"] { spec.emit = try socketIOEmit(n, field: "socketio.emit", names: names) }
        if let n = fields["receive"] { spec.receive = try socketIOReceive(n) }
        if let n = fields["reconnect"] { spec.reconnect = try reconnectSpec(n, field: "socketio.reconnect", defaultSpec: .socketIODefault) }
        if let n = fields["ack_timeout"] { spec.ackTimeoutSeconds = try duration(n, field: "socketio.ack_timeout", allowZero: false) }
        spec.bindNames()

        // Every scheduled emit must be able to end delivered: by its ack, or by its stamp read back.
        let stamped = spec.receive?.stamp != nil
        if let emit = spec.emit, let emitNode = fields["emit"] {
            if stamped, !emit.carriesStamp {
                throw error(at: emitNode, field: "socketio.emit", "socketio.receive reads a stamp, but the emit carries no {stamp} to read back")
            }
            if !emit.ack, !stamped {
                throw error(at: emitNode, field: "socketio.emit",
                            "this emit asks for no ack and no 'receive' reads its stamp back, so it could never be delivered: "
                                + "add 'ack: true', or a 'receive: {event: …, stamp: $[0].text}' for an emit that carries {stamp}")
            }
        } else if message.ratePerSecond > 0 {
            throw error(at: fields.keyNode("socketio") ?? node, field: "socketio.emit",
                        "missing 'emit': message.rate is \(format(message.ratePerSecond))/s, so each client needs the event it emits "
                            + "(or set message.rate: 0 to only hold connections)")
        }
        return spec
    }

    /// A path or namespace: starts with "/", no spaces, "?", "#" or "," (the packet's namespace separator).
    private func urlPart(_ node: Node, field: String, what: String) throws(ScenarioError) -> String {
        let text = try string(node, field: field, expecting: "\(what) starting with /")
        guard text.hasPrefix("/"), text.count <= 256,
              !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7F || "?#,\"\\%".unicodeScalars.contains($0) }) else {
            throw error(at: node, field: field, "expected \(what) starting with / (printable ASCII, without spaces, ?, #, %, \", \\ or ,), got \(describe(node))")
        }
        return text
    }

    private func transportList(_ node: Node) throws(ScenarioError) -> [SocketIOSpec.Transport] {
        let form = "[polling, websocket] (long polling, then the upgrade: the official client's default), [websocket] or [polling]"
        guard case .sequence(let items) = node else { throw error(at: node, field: "socketio.transports", "expected \(form), got \(describe(node))") }
        var list: [SocketIOSpec.Transport] = []
        for (i, item) in items.enumerated() { list.append(try choice(item, field: "socketio.transports[\(i)]")) }
        guard list == [.polling, .websocket] || list == [.websocket] || list == [.polling] else {
            throw error(at: node, field: "socketio.transports", "expected \(form), got \(list.map(\.rawValue))")
        }
        return list
    }

    private func socketIOEmit(_ node: Node, field: String, names: FlowNames) throws(ScenarioError) -> SocketIOSpec.Emit {
        let m = try mappingNode(node, field: field, expecting: "{event: say, args: [{text: \"{stamp}\"}], ack: true}")
        let f = try Fields(m, path: field, known: Keys.socketioEmit, reader: self)
        guard let eventNode = f["event"] else { throw error(at: node, field: "\(field).event", "missing required field 'event'") }
        let event = try eventName(eventNode, field: "\(field).event")
        var parts = [jsonString(event)]
        if let a = f["args"] {
            let items: [Node] = a.sequence.map(Array.init) ?? [a]
            for (i, item) in items.enumerated() { parts.append(try jsonText(item, field: a.sequence != nil ? "\(field).args[\(i)]" : "\(field).args")) }
        }
        var binary: [MessageTemplate] = []
        if let b = f["binary"] {
            let items: [Node] = b.sequence.map(Array.init) ?? [b]
            for (i, item) in items.enumerated() {
                binary.append(try binaryTemplate(item, field: b.sequence != nil ? "\(field).binary[\(i)]" : "\(field).binary", names: names))
                parts.append("{\"_placeholder\":true,\"num\":\(i)}")
            }
        }
        let data = try jsonTemplate("[" + parts.joined(separator: ",") + "]", at: f["args"] ?? node, field: "\(field).args", names: names)
        let ack = try f["ack"].map { n throws(ScenarioError) in try boolean(n, field: "\(field).ack") } ?? false
        return SocketIOSpec.Emit(event: event, data: data, ack: ack, binary: binary)
    }

    private func socketIOReceive(_ node: Node) throws(ScenarioError) -> SocketIOSpec.Receive {
        let m = try mappingNode(node, field: "socketio.receive", expecting: "{event: said, stamp: $[0].text}")
        let f = try Fields(m, path: "socketio.receive", known: Keys.socketioReceive, reader: self)
        guard let eventNode = f["event"] else { throw error(at: node, field: "socketio.receive.event", "missing required field 'event'") }
        var receive = SocketIOSpec.Receive(event: try eventName(eventNode, field: "socketio.receive.event"))
        if let s = f["stamp"] {
            let text = try string(s, field: "socketio.receive.stamp", expecting: "a path into the event's arguments, like $[0].text")
            let form = "a path into the event's arguments starting with the argument's index, like $[0].text (the first argument's text)"
            let path: JSONPath
            do { path = try JSONPath(parsing: text) } catch { throw self.error(at: s, field: "socketio.receive.stamp", "\(error.description): expected \(form)") }
            guard case .index(let n)? = path.steps.first, let close = text.firstIndex(of: "]") else {
                throw error(at: s, field: "socketio.receive.stamp", "expected \(form), got \(describe(s))")
            }
            // The arguments follow the event's name in the packet's array: argument n is element n + 1.
            do { receive.stamp = try JSONPath(parsing: "$[\(n + 1)" + text[close...]) } catch {
                throw self.error(at: s, field: "socketio.receive.stamp", "expected \(form), got \(describe(s))")
            }
        }
        return receive
    }

    private func eventName(_ node: Node, field: String) throws(ScenarioError) -> String {
        let name = try string(node, field: field, expecting: "an event name")
        guard !name.isEmpty, name.utf8.count <= 256, !name.contains("{"), !name.contains("}") else {
            throw error(at: node, field: field, "expected an event name (1 to 256 bytes, without { or }), got \(describe(node))")
        }
        guard !Keys.reservedSocketIOEvents.contains(name) else {
            throw error(at: node, field: field, "'\(name)' is reserved by Socket.IO itself: choose another event name")
        }
        return name
    }

    private func jsonTemplate(_ text: String, at node: Node, field: String, names: FlowNames) throws(ScenarioError) -> MessageTemplate {
        let template: MessageTemplate
        do { template = try MessageTemplate(text: text) } catch { throw self.error(at: node, field: field, error.description) }
        return try checkedTemplate(template, at: node, field: field, names: names)
    }

    /// A YAML value as JSON template text: mappings and lists as JSON, strings quoted and escaped
    /// with their placeholders kept (`"room-{client%10}"`), numbers, booleans and null as JSON.
    func jsonText(_ node: Node, field: String, depth: Int = 0) throws(ScenarioError) -> String {
        guard depth < 32 else { throw error(at: node, field: field, "nested more than 32 levels deep") }
        switch node {
        case .mapping(let m):
            var members: [String] = []
            for (key, value) in m {
                let name = try string(key, field: field, expecting: "a member name")
                members.append(jsonString(name) + ":" + (try jsonText(value, field: "\(field).\(name)", depth: depth + 1)))
            }
            return "{" + members.joined(separator: ",") + "}"
        case .sequence(let s):
            var items: [String] = []
            for (i, item) in s.enumerated() { items.append(try jsonText(item, field: "\(field)[\(i)]", depth: depth + 1)) }
            return "[" + items.joined(separator: ",") + "]"
        case .scalar(let scalar):
            if isNull(node) { return "null" }
            switch node.tag.rawValue {
            case Tag.Name.bool.rawValue: return Bool.construct(from: scalar).map { $0 ? "true" : "false" } ?? jsonString(scalar.string)
            case Tag.Name.int.rawValue: return Int.construct(from: scalar).map(String.init) ?? jsonString(scalar.string)
            case Tag.Name.float.rawValue:
                guard let d = Double.construct(from: scalar), d.isFinite else { throw error(at: node, field: field, "JSON has no \(scalar.string)") }
                return d.description
            default: return jsonString(scalar.string)
            }
        case .alias:
            throw error(at: node, field: field, "expected a value, got an alias")
        }
    }

    /// A JSON string literal of `text` (braces kept: they are the template's placeholders).
    func jsonString(_ text: String) -> String { JSONText.quoted(text) }
}
