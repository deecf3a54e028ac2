import StampedeWire
import Yams

extension Reader {
    /// A text template, its named placeholders checked against the secrets and the captures set so far.
    func checkedTemplate(_ template: MessageTemplate, at node: Node, field: String, names: some FlowNamesView) throws(ScenarioError) -> MessageTemplate {
        for name in template.namedPlaceholders where !names.secrets.contains(name) && !names.captures.contains(name) {
            if names.later.contains(name) {
                throw error(at: node, field: field, "the capture {\(name)} is used before the step that sets it")
            }
            let known = (MessageTemplate.builtinNames + names.secrets + names.captures).map { "{\($0)}" }.joined(separator: ", ")
            throw error(at: node, field: field, "unknown placeholder {\(name)}: it is no capture or secret (known: \(known); write {{ for a literal brace)")
        }
        return template
    }

    func textTemplate(_ node: Node, field: String, names: some FlowNamesView) throws(ScenarioError) -> MessageTemplate {
        let text = try string(node, field: field, expecting: "a message text")
        let template: MessageTemplate
        do { template = try MessageTemplate(text: text) } catch { throw self.error(at: node, field: field, error.description) }
        return try checkedTemplate(template, at: node, field: field, names: names)
    }

    func binaryTemplate(_ node: Node, field: String, names: some FlowNamesView) throws(ScenarioError) -> MessageTemplate {
        let text = try string(node, field: field, expecting: "hex bytes such as \"82 0a {sequence:u16} {stamp}\"")
        let template: MessageTemplate
        do { template = try MessageTemplate(binaryHex: text) } catch { throw self.error(at: node, field: field, error.description) }
        return try checkedTemplate(template, at: node, field: field, names: names)
    }

    /// A `match:` mapping: every condition must hold. Returns it and a short text for error counts.
    func frameMatch(_ node: Node, field: String) throws(ScenarioError) -> (FrameMatch, String) {
        let m = try mappingNode(node, field: field, expecting: "a mapping of conditions, like {$.op: ack} or {prefix: RECEIPT}")
        var conditions: [FrameMatch.Condition] = []
        var texts: [String] = []
        var between: (Node, FieldSelector)?
        var equals: (Node, [UInt8])?
        for (keyNode, value) in m {
            let key = try string(keyNode, field: field, expecting: "a path like $.op, or prefix, contains, between, equals, opcode or bytes")
            let f = "\(field).\(key)"
            if key.hasPrefix("$") {
                let path = try jsonPath(key, at: keyNode, field: f)
                let expected = try scalarText(value, field: f)
                conditions.append(.equals(.path(path), Array(expected.utf8)))
                texts.append("\(key) = \(expected)")
                continue
            }
            switch key {
            case "prefix", "contains":
                let text = try string(value, field: f, expecting: "the text to look for")
                guard !text.isEmpty else { throw error(at: value, field: f, "expected a text that is not empty") }
                conditions.append(key == "prefix" ? .prefix(Array(text.utf8)) : .contains(Array(text.utf8)))
                texts.append("\(key) \(text.debugDescription)")
            case "between":
                between = (value, try betweenSelector(value, field: f))
            case "equals":
                equals = (value, Array(try scalarText(value, field: f).utf8))
            case "opcode":
                let text = try string(value, field: f, expecting: "text or binary")
                guard text == "text" || text == "binary" else { throw error(at: value, field: f, "expected text or binary, got \(describe(value))") }
                conditions.append(.opcode(isText: text == "text"))
                texts.append("opcode \(text)")
            case "bytes":
                let bm = try mappingNode(value, field: f, expecting: "{offset: 0, hex: \"40\", mask: \"f0\"}")
                let bf = try Fields(bm, path: f, known: Keys.bytesCondition, reader: self)
                let offset = try bf["offset"].map { n throws(ScenarioError) in try integer(n, field: "\(f).offset", in: 0...1 << 24) } ?? 0
                guard let hexNode = bf["hex"] else { throw error(at: value, field: "\(f).hex", "missing required field 'hex'") }
                let bytes = try hexBytes(hexNode, field: "\(f).hex")
                var mask = [UInt8](repeating: 0xFF, count: bytes.count)
                if let maskNode = bf["mask"] {
                    mask = try hexBytes(maskNode, field: "\(f).mask")
                    guard mask.count == bytes.count else {
                        throw error(at: maskNode, field: "\(f).mask", "the mask has \(mask.count) bytes, 'hex' has \(bytes.count): give one mask byte per byte")
                    }
                }
                conditions.append(.masked(offset: offset, bytes: bytes, mask: mask))
                texts.append("bytes at \(offset)")
            default:
                let suggestion = closestKey(to: key, in: Keys.matchConditions).map { "; did you mean '\($0)'?" } ?? ""
                throw error(at: keyNode, field: f, "unknown condition '\(key)'\(suggestion) (a path starts with '$', as in $.op; "
                            + "other conditions: \(Keys.matchConditions.joined(separator: ", ")))")
            }
        }
        switch (between, equals) {
        case let ((_, selector)?, (_, value)?):
            conditions.append(.equals(selector, value))
            texts.append("between = \(String(decoding: value, as: UTF8.self))")
        case let ((node, _)?, nil):
            throw error(at: node, field: "\(field).between", "'between' needs 'equals': the text the part between must be")
        case let (nil, (node, _)?):
            throw error(at: node, field: "\(field).equals", "'equals' needs 'between' (for a JSON value, write the path as the key: {$.op: ack})")
        case (nil, nil):
            break
        }
        guard !conditions.isEmpty else { throw error(at: node, field: field, "expected at least one condition, like {$.op: ack}") }
        return (FrameMatch(conditions), texts.joined(separator: ", "))
    }

    /// Where a value is in a frame: a path, `{between: [START, END]}` or `{offset: N, length: L}`.
    func fieldSelector(_ node: Node, field: String) throws(ScenarioError) -> FieldSelector {
        if case .scalar = node, let text = node.string, text.hasPrefix("$") {
            return .path(try jsonPath(text, at: node, field: field))
        }
        guard case .mapping(let m) = node else {
            throw error(at: node, field: field, "expected a path like $.id, {between: [START, END]} or {offset: N, length: L}, got \(describe(node))")
        }
        let f = try Fields(m, path: field, known: Keys.selector, reader: self)
        if let b = f["between"] {
            guard f["offset"] == nil, f["length"] == nil else { throw error(at: node, field: field, "give 'between' or 'offset' and 'length', not both") }
            return try betweenSelector(b, field: "\(field).between")
        }
        guard let o = f["offset"], let l = f["length"] else {
            throw error(at: node, field: field, "expected {between: [START, END]} or both 'offset' and 'length'")
        }
        return .bytes(offset: try integer(o, field: "\(field).offset", in: 0...1 << 24), length: try integer(l, field: "\(field).length", in: 1...8))
    }

    private func betweenSelector(_ node: Node, field: String) throws(ScenarioError) -> FieldSelector {
        guard case .sequence(let items) = node, items.count == 2,
              let start = items[items.startIndex].string, let end = items[items.index(after: items.startIndex)].string, !start.isEmpty, !end.isEmpty
        else {
            throw error(at: node, field: field, "expected two texts [START, END], like [\"receipt-id:\", \"\\n\"], got \(describe(node))")
        }
        return .between(start: Array(start.utf8), end: Array(end.utf8))
    }

    private func jsonPath(_ text: String, at node: Node, field: String) throws(ScenarioError) -> JSONPath {
        do { return try JSONPath(parsing: text) } catch { throw self.error(at: node, field: field, error.description) }
    }

    /// A scalar compared as text: a string as written, a number as written, true/false/null.
    private func scalarText(_ node: Node, field: String) throws(ScenarioError) -> String {
        guard case .scalar(let scalar) = node else { throw error(at: node, field: field, "expected a value to compare with, got \(describe(node))") }
        return isNull(node) ? "null" : scalar.string
    }

    private func hexBytes(_ node: Node, field: String) throws(ScenarioError) -> [UInt8] {
        let text = try string(node, field: field, expecting: "hex bytes like \"40\"")
        let digits = text.unicodeScalars.filter { $0 != " " }
        guard !digits.isEmpty, digits.count % 2 == 0, digits.allSatisfy({ $0.properties.isASCIIHexDigit }) else {
            throw error(at: node, field: field, "expected an even number of hex digits (spaces allowed), got \(describe(node))")
        }
        var bytes: [UInt8] = []
        var i = digits.startIndex
        while i < digits.endIndex {
            let j = digits.index(after: i)
            bytes.append(UInt8(String(String.UnicodeScalarView(digits[i...j])), radix: 16) ?? 0)
            i = digits.index(after: j)
        }
        return bytes
    }
}

/// The names a template may use at the point the reader is at.
protocol FlowNamesView {
    var secrets: [String] { get }
    var captures: [String] { get }
    /// Captures set by a later step (an error to use here, with its own message).
    var later: Set<String> { get }
}
