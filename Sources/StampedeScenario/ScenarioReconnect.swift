import Yams

extension Reader {
    /// `reconnect`: `default` is the protocol's official client's (`defaultSpec`).
    func reconnectSpec(_ node: Node, field: String = "hub.reconnect", defaultSpec: ReconnectSpec = .signalRDefault) throws(ScenarioError) -> ReconnectSpec {
        let described = defaultSpec == .socketIODefault ? "1s doubling to 5s, ±50 %, unlimited" : "0s, 2s, 10s, 30s"
        let form = "expected 'none', 'default' (\(described)), a list of delays like [0s, 2s, 10s], "
            + "or {exponential: {initial: 1s, max: 30s, attempts: 10, jitter: full}}"
        switch node {
        case .scalar(let scalar):
            if isNull(node) { return .none }
            guard node.tag.rawValue == Tag.Name.str.rawValue else { break }
            switch scalar.string {
            case "none": return .none
            case "default": return defaultSpec
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
