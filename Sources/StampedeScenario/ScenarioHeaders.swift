import Yams
import Glibc

/// Headers the WebSocket handshake writes itself (a second copy would make the request invalid),
/// lowercased, with a hint to append to the error.
private let reservedHeaders: [String: String] = [
    "host": "", "upgrade": "", "connection": "", "sec-websocket-key": "", "sec-websocket-version": "",
    "sec-websocket-extensions": "", "content-length": "", "transfer-encoding": "",
    "sec-websocket-protocol": " (use the 'subprotocol' field, or 'websocket.subprotocols', instead)",
]

extension Reader {
    /// `headers:` (or `websocket.headers:`, `path` the field's name).
    func headerList(_ node: Node?, path: String = "headers") throws(ScenarioError) -> [Scenario.Header] {
        guard let node, !isNull(node) else { return [] }
        guard case .mapping(let mapping) = node else {
            throw error(at: node, field: path, "expected a mapping of header names to values, got \(describe(node))")
        }
        var headers: [Scenario.Header] = []
        var seen: [String: Int] = [:]
        for (keyNode, valueNode) in mapping {
            guard case .scalar(let key) = keyNode, !isNull(keyNode) else {
                throw error(at: keyNode, field: path, "expected a header name, got \(describe(keyNode))")
            }
            let name = key.string
            let field = "\(path).\(name)"
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

    func sourceAddressList(_ node: Node?) throws(ScenarioError) -> [String] {
        guard let node, !isNull(node) else { return [] }
        guard case .sequence(let sequence) = node else {
            throw error(
                at: node, field: "source_addresses",
                "expected a list of local IPv4 or IPv6 addresses like [127.0.0.1, 127.0.0.2], got \(describe(node))")
        }
        var addresses: [String] = []
        var seen: [String: Int] = [:]
        for (index, item) in sequence.enumerated() {
            let field = "source_addresses[\(index)]"
            guard case .scalar(let scalar) = item, parseIPv4(scalar.string) != nil || isIPv6Literal(scalar.string) else {
                throw error(at: item, field: field, "expected a local IPv4 or IPv6 address, got \(describe(item))")
            }
            let address = scalar.string
            if let problem = localAddressProblem(address) {
                throw error(at: item, field: field, "\(address) is not an address of this machine (\(problem)): a source address must be local")
            }
            if let line = seen[address] {
                throw error(at: item, field: field, "address \(address) is already listed at line \(line)")
            }
            seen[address] = item.mark?.line ?? 0
            addresses.append(address)
        }
        return addresses
    }
}

/// Why binding a TCP socket to `address` (an IPv4 or IPv6 literal), port 0, fails, or nil when it
/// works: the test the kernel applies to a connection's source address, made once at validation.
func localAddressProblem(_ address: String) -> String? {
    var hints = addrinfo()
    hints.ai_flags = AI_NUMERICHOST
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var list: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(address, "0", &hints, &list) == 0, let info = list else { return "not an address" }
    defer { freeaddrinfo(list) }
    let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return String(cString: strerror(errno)) }
    defer { close(fd) }
    return bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 ? nil : String(cString: strerror(errno))
}
