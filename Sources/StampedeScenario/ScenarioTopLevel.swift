import Yams

extension Reader {
    func scenario(from root: Node) throws(ScenarioError) -> Scenario {
        guard case .mapping(let mapping) = root else {
            throw error(
                at: root, field: "", "expected a mapping of scenario fields (like 'clients: 100'), got \(describe(root))")
        }
        let fields = try Fields(
            mapping, path: "", known: Keys.topLevel, reader: self, misplaced: Keys.misplacedAtTopLevel)
        if fields["populations"] != nil { return try scenarioWithPopulations(root: root, fields: fields) }

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
        let clientsNode = try required("clients", in: fields)
        let clientProfile = try clientProfile(clientsNode)
        let clients: Int
        if let clientProfile { clients = clientProfile.peak } else { clients = try integer(clientsNode, field: "clients", in: Limits.clients) }
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
        try checkRateStages(message, fields: fields, duration: duration, loadModel: loadModel, workload: workload)
        try checkClientProfile(clientProfile, node: clientsNode, duration: duration, workload: workload)
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
        var websocket: WebSocketFlowSpec?
        if workload != .websocket, let keyNode = fields.keyNode("websocket") {
            throw error(at: keyNode, field: "websocket",
                        "only for workload websocket (this scenario's workload is '\(workload.rawValue)'): remove the section or set 'workload: websocket'")
        }
        var socketio: SocketIOSpec?
        if workload != .socketio, let keyNode = fields.keyNode("socketio") {
            throw error(at: keyNode, field: "socketio",
                        "only for workload socketio (this scenario's workload is '\(workload.rawValue)'): remove the section or set 'workload: socketio'")
        }
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
        case .websocket:
            guard let node = fields["websocket"] else {
                throw error(at: fields["workload"] ?? root, field: "websocket",
                            "missing required field 'websocket': workload 'websocket' needs a 'websocket' section with the flow's "
                                + "'send' message and 'replies' (see docs/websocket.md and scenarios/websocket-pubsub.yaml)")
            }
            if let keyNode = fields.keyNode("hub") {
                throw error(at: keyNode, field: "hub", "only for workload hub (this scenario's workload is 'websocket')")
            }
            websocket = try webSocketFlowSpec(node, message: message)
            if let spec = websocket, !spec.subprotocols.isEmpty, let node = fields["subprotocol"] {
                throw error(at: node, field: "subprotocol", "both subprotocol and websocket.subprotocols are given: keep only websocket.subprotocols")
            }
        case .socketio:
            guard let node = fields["socketio"] else {
                throw error(at: fields["workload"] ?? root, field: "socketio",
                            "missing required field 'socketio': workload 'socketio' needs a 'socketio' section with the event each "
                                + "client emits (see scenarios/socketio-chat.yaml)")
            }
            if let keyNode = fields.keyNode("hub") {
                throw error(at: keyNode, field: "hub", "only for workload hub (this scenario's workload is 'socketio')")
            }
            if let n = fields["subprotocol"] {
                throw error(at: n, field: "subprotocol", "Socket.IO's WebSocket transport offers no subprotocol: remove it")
            }
            socketio = try socketIOSpec(node, message: message)
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
        scenario.clientProfile = clientProfile
        scenario.websocket = websocket
        scenario.socketio = socketio
        if let websocket {
            scenario.declaredMetrics = ThresholdNames(latencies: Set(websocket.latencyKeys), counters: Set(websocket.counterKeys))
        }
        if let node = fields["resolve"] {
            scenario.resolve = try choice(node, field: "resolve")
        }
        if let node = fields["reconnect"] {
            guard workload == .chat || workload == .websocket else {
                throw error(at: node, field: "reconnect", workload == .hub ? "hub clients take their policy from 'hub.reconnect'"
                            : workload == .socketio ? "Socket.IO clients take their policy from 'socketio.reconnect'"
                            : "REST clients open a new connection when they need one; there is nothing to reconnect")
            }
            scenario.reconnect = try reconnectSpec(node, field: "reconnect")
        }
        if let node = fields["while_disconnected"] {
            scenario.whileDisconnected = try choice(node, field: "while_disconnected")
        }
        if let node = fields["heartbeat"] {
            guard workload == .chat || workload == .websocket else {
                throw error(at: node, field: "heartbeat", workload == .hub ? "hub clients use 'hub.keep_alive' and 'hub.server_timeout'"
                            : workload == .socketio ? "Socket.IO's server pings and its clients answer (the server's pingInterval and pingTimeout)"
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
        if let node = fields["tls"] {
            scenario.tls = try tlsSpec(node, target: target)
        } else if target.isSecure {
            scenario.tls = TLSSpec()
        }
        if let node = fields["target_admin"] {
            scenario.targetAdmin = try adminEndpoint(node)
        }
        if let node = fields["events"] {
            scenario.events = try eventList(node, duration: duration, target: target, admin: scenario.targetAdmin)
            // The hub server does not act out a delay yet; there it would silently do nothing.
            if workload == .hub, scenario.events.contains(where: { if case .server(.delay) = $0.kind { true } else { false } }) {
                throw error(at: node, field: "events", "'fault: delay' is acted out by the chat and REST servers only, not yet by the hub")
            }
        }
        if let node = fields["thresholds"] {
            scenario.thresholds = try thresholdList(node, messageSeconds: duration, names: scenario.declaredMetrics)
        }
        return scenario
    }

    /// `target_admin: http://127.0.0.1:9100`, loopback only.
    private func adminEndpoint(_ node: Node) throws(ScenarioError) -> AdminEndpoint {
        let text = try string(node, field: "target_admin", expecting: "the admin URL of 'stampede serve --admin-port', like http://127.0.0.1:9100")
        guard case .success(let target) = parseTarget(text), case .http(let url) = target, url.path == "/" || url.path.isEmpty,
              // The admin switch only ever listens on loopback (`serve --admin-port`): faults are sent nowhere else.
              url.host.lowercased() == "localhost" || url.host == "::1" || parseIPv4(url.host).map({ $0[0] == 127 }) == true
        else {
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

    func scenarioName(_ node: Node) throws(ScenarioError) -> String {
        let name = try string(node, field: "name", expecting: "a name")
        guard isValidName(name) else {
            throw error(
                at: node, field: "name",
                "expected a name of 1 to \(Limits.nameLength) letters, digits, '.', '_' or '-', got \(describe(node))")
        }
        return name
    }

    func defaultName() throws(ScenarioError) -> String {
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

    func isValidName(_ name: some StringProtocol) -> Bool {
        !name.isEmpty && name.count <= Limits.nameLength
            && name.unicodeScalars.allSatisfy { $0.isASCII && (isAlphanumeric($0) || "._-".unicodeScalars.contains($0)) }
    }

    private func targetValue(_ node: Node) throws(ScenarioError) -> Target {
        let text = try string(node, field: "target", expecting: "'embedded' or a ws://, wss://, http:// or https:// URL")
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
            spec.ratePerSecond = try messageRate(rate, field: "message.rate")
        }
        let profiles = Keys.rateProfiles.filter { fields[$0] != nil }
        if profiles.count > 1 {
            throw error(at: fields[profiles[1]]!, field: "message.\(profiles[1])",
                        "message.\(profiles[0]) and message.\(profiles[1]) both give the rate over time: keep one")
        }
        if let key = profiles.first {
            // With a profile, `rate` is where it starts from: a ramp from nothing unless given.
            if fields["rate"] == nil { spec.ratePerSecond = 0 }
            let node = fields[key]!
            switch key {
            case "spike": spec.stages = try rateSpike(node, base: spec.ratePerSecond)
            case "step": spec.stages = try rateStep(node, base: spec.ratePerSecond)
            default: spec.stages = try rateStages(node)
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
}
