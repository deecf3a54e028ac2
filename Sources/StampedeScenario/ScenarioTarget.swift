import Foundation

struct TargetProblem: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

func parseTarget(_ text: String) -> Result<Target, TargetProblem> {
    if text == "embedded" { return .success(.embedded) }
    guard let schemeEnd = text.range(of: "://") else {
        return .failure(
            TargetProblem("expected 'embedded', a ws[s]://HOST:PORT/PATH or an http[s]://HOST:PORT/PATH URL, got '\(text)'"))
    }
    let scheme = text[..<schemeEnd.lowerBound].lowercased()
    guard ["ws", "wss", "http", "https"].contains(scheme) else {
        return .failure(
            TargetProblem("unsupported scheme '\(scheme)://': target must be 'embedded', a ws:// or wss:// URL, or an http:// or https:// URL"))
    }
    let secure = scheme == "wss" || scheme == "https"
    let rest = text[schemeEnd.upperBound...]
    guard !rest.contains("#") else {
        return .failure(TargetProblem("a target URL cannot have a fragment ('#...')"))
    }
    let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
    let authority = rest[..<authorityEnd]
    var path = String(rest[authorityEnd...])
    guard !authority.contains("@") else {
        return .failure(TargetProblem("user names and passwords ('user@') are not supported in the target URL"))
    }

    var host: Substring
    var portText: Substring?
    if authority.hasPrefix("[") {
        guard let close = authority.firstIndex(of: "]") else {
            return .failure(TargetProblem("missing ']' after the IPv6 address in the target URL"))
        }
        host = authority[authority.index(after: authority.startIndex)..<close]
        guard isIPv6Literal(String(host)) else {
            return .failure(TargetProblem("'[\(host)]' is not an IPv6 address (zone ids like %eth0 are not supported)"))
        }
        let afterHost = authority[authority.index(after: close)...]
        if afterHost.hasPrefix(":") {
            portText = afterHost.dropFirst()
        } else if !afterHost.isEmpty {
            return .failure(TargetProblem("unexpected '\(afterHost)' after the host in the target URL"))
        }
    } else {
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2 else {
            return .failure(TargetProblem("IPv6 addresses must be in brackets, as in \(scheme)://[::1]:8765/"))
        }
        host = parts[0]
        portText = parts.count == 2 ? parts[1] : nil
    }
    guard !host.isEmpty else {
        return .failure(TargetProblem("the target URL has no host"))
    }

    var port = secure ? 443 : 80
    if let portText {
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCIIDigit), let value = Int(portText),
            (1...65535).contains(value)
        else {
            return .failure(TargetProblem("expected a port from 1 to 65535 in the target URL, got '\(portText)'"))
        }
        port = value
    }

    if !authority.hasPrefix("["), let problem = hostNameProblem(String(host)) {
        return .failure(TargetProblem(problem))
    }

    if path.isEmpty {
        path = "/"
    } else if path.hasPrefix("?") {
        path = "/" + path
    }
    // The path goes verbatim into the HTTP request line.
    guard path.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
        return .failure(TargetProblem("the target URL's path may only contain printable ASCII without spaces (percent-encode the rest)"))
    }
    let url = WebSocketURL(host: String(host), port: port, path: path, secure: secure)
    return .success(scheme.hasPrefix("http") ? .http(url: url) : .webSocket(url: url))
}

/// Why `host` (not bracketed) is neither a dotted-quad IPv4 address nor a DNS host name, or nil.
/// Digits-and-dots hosts must be exact dotted quads: "0127.0.0.1" or "127.1" name different
/// addresses to different parsers, and a resolver would read them as one of those.
func hostNameProblem(_ host: String) -> String? {
    if host.allSatisfy({ $0.isASCIIDigit || $0 == "." }) {
        return parseIPv4(host) == nil ? "'\(host)' is not an IPv4 address: write four numbers from 0 to 255 without leading zeros" : nil
    }
    // RFC 1123 section 2.1 host names: labels of letters, digits and hyphens, at most 63 bytes
    // each and 253 in all; underscores are common in internal names, so they are let through.
    let labels = host.split(separator: ".", omittingEmptySubsequences: false)
    let labelsOK = labels.enumerated().allSatisfy { i, label in
        (label.isEmpty && i == labels.count - 1 && i > 0)  // a trailing dot (an absolute name)
            || ((1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                && label.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" || $0 == "_" })
    }
    guard host.utf8.count <= 253, labelsOK else {
        return "'\(host)' is not a host name: use letters, digits, '-' and '.' (IPv6 addresses go in brackets)"
    }
    return nil
}

/// Whether `text` is an IPv6 address (no zone) as inet_pton reads it.
func isIPv6Literal(_ text: String) -> Bool {
    var bytes = [UInt8](repeating: 0, count: 16)
    return text.contains(":") && bytes.withUnsafeMutableBytes { inet_pton(AF_INET6, text, $0.baseAddress) } == 1
}

/// Dotted-quad IPv4 with no leading zeros (so "0127" can't be misread as octal).
func parseIPv4(_ text: String) -> [UInt8]? {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 4 else { return nil }
    var octets: [UInt8] = []
    for part in parts {
        guard (1...3).contains(part.count), part.allSatisfy(\.isASCIIDigit), part == "0" || part.first != "0",
            let octet = UInt8(part)
        else { return nil }
        octets.append(octet)
    }
    return octets
}

extension ScenarioLoader {
    /// Parses a target exactly as the `target` field is parsed (used for `--target` overrides).
    public static func parseTarget(_ text: String) -> Result<Target, TargetError> {
        switch StampedeScenario.parseTarget(text) {
        case .success(let t): .success(t)
        case .failure(let p): .failure(TargetError(message: p.message))
        }
    }

    /// Why a target string was refused.
    public struct TargetError: Error, Sendable { public var message: String }
}

extension ScenarioLoader {
    /// Why `target` cannot be used with `workload`, or nil when it can. The loader applies this to the
    /// `target` field; use it for `--target` overrides too.
    public static func targetProblem(_ target: Target, workload: Workload) -> String? {
        switch (workload, target) {
        case (_, .embedded), (.chat, .webSocket), (.websocket, .webSocket), (.hub, .http), (.rest, .http), (.socketio, .http): return nil
        case (.socketio, .webSocket):
            return "the socketio workload needs 'embedded' or the server's http:// or https:// base URL (Engine.IO starts "
                + "with long polling and switches to ws:// or wss:// itself), got a ws:// URL"
        case (.rest, .webSocket):
            return "the rest workload needs 'embedded' or the API's http:// or https:// base URL, got a ws:// URL"
        case (.chat, .http):
            return "the chat workload needs 'embedded' or a ws:// or wss:// URL; an http:// target is a SignalR hub's URL, "
                + "for 'workload: hub'"
        case (.websocket, .http):
            return "the websocket workload needs 'embedded' or a ws:// or wss:// URL, got an http:// URL"
        case (.hub, .webSocket):
            return "the hub workload needs 'embedded' or the hub's http:// or https:// URL (Stampede switches to ws:// or "
                + "wss:// itself for the WebSockets transport), got a ws:// URL"
        }
    }
}
