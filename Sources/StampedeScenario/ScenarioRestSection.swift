import Yams

extension Reader {
    /// The `rest` section: credentials, timing, limits and the resources with their processors.
    func restSpec(_ node: Node) throws(ScenarioError) -> RestSpec {
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
}
