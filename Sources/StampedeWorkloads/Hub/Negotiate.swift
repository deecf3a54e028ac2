import Foundation
import StampedeScenario

/// What a negotiate response says (docs/protocols.md §1). Parsed once per connection attempt,
/// so Foundation's JSON parser is fine here (it is never used per message).
public enum NegotiateResponse: Sendable, Equatable {
    /// Connect with `id=<connectionId>` (version 0) or `id=<connectionToken>` (version 1).
    case connect(NegotiatedConnection)
    /// Azure SignalR Service style: negotiate again at `url`, with `accessToken` as the bearer.
    case redirect(url: String, accessToken: String?)
    /// The server refused with an `error` text (sent with HTTP 200).
    case error(String)
}

public struct NegotiatedConnection: Sendable, Equatable {
    public var connectionId: String
    /// The `id` query value every later request carries (secret for version 1).
    public var idForRequests: String
    public var negotiateVersion: Int
    /// Transports the server offers, with the transfer formats each supports.
    public var transports: [(transport: HubTransport, formats: [String])]
    public var useStatefulReconnect: Bool

    public static func == (a: NegotiatedConnection, b: NegotiatedConnection) -> Bool {
        a.connectionId == b.connectionId && a.idForRequests == b.idForRequests && a.negotiateVersion == b.negotiateVersion
            && a.useStatefulReconnect == b.useStatefulReconnect
            && a.transports.map { "\($0.transport.rawValue):\($0.formats)" } == b.transports.map { "\($0.transport.rawValue):\($0.formats)" }
    }

    /// Whether the server offers `transport` with the transfer format `protocolKind` needs
    /// (Text for JSON, Binary for MessagePack).
    public func offers(_ transport: HubTransport, for protocolKind: HubProtocolKind) -> Bool {
        let format = protocolKind == .json ? "Text" : "Binary"
        return transports.contains { $0.transport == transport && $0.formats.contains(format) }
    }
}

public struct NegotiateParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    init(_ d: String) { description = d }
}

extension NegotiateResponse {
    /// Parses a negotiate response body. `askedStatefulReconnect` guards against a server that
    /// turns it on unasked (the clients fail then).
    public static func parse(_ body: [UInt8], askedStatefulReconnect: Bool) -> Result<NegotiateResponse, NegotiateParseError> {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return .failure(NegotiateParseError("negotiate response is not a JSON object"))
        }
        if object["ProtocolVersion"] != nil {
            return .failure(NegotiateParseError("detected a connection attempt to an ASP.NET SignalR (not Core) server"))
        }
        if let error = object["error"] as? String { return .success(.error(error)) }
        if let url = object["url"] as? String {
            return .success(.redirect(url: url, accessToken: object["accessToken"] as? String))
        }
        guard let connectionId = object["connectionId"] as? String else {
            return .failure(NegotiateParseError("negotiate response has no connectionId"))
        }
        let version = (object["negotiateVersion"] as? Int) ?? 0
        let token = object["connectionToken"] as? String
        if version >= 1 && token == nil { return .failure(NegotiateParseError("negotiate version 1 response has no connectionToken")) }
        let stateful = (object["useStatefulReconnect"] as? Bool) ?? false
        if stateful && !askedStatefulReconnect {
            return .failure(NegotiateParseError("server enabled stateful reconnect that was not requested"))
        }
        var transports: [(HubTransport, [String])] = []
        for entry in (object["availableTransports"] as? [[String: Any]]) ?? [] {
            guard let name = entry["transport"] as? String else { continue }
            let formats = (entry["transferFormats"] as? [String]) ?? []
            switch name {
            case "WebSockets": transports.append((.webSockets, formats))
            case "ServerSentEvents": transports.append((.serverSentEvents, formats))
            case "LongPolling": transports.append((.longPolling, formats))
            default: continue  // unknown transports are skipped, as the official clients do
            }
        }
        return .success(.connect(NegotiatedConnection(
            connectionId: connectionId, idForRequests: version >= 1 ? token! : connectionId, negotiateVersion: version,
            transports: transports, useStatefulReconnect: stateful)))
    }
}

/// A parsed `http://host:port/path?query` hub URL (loopback only, checked by the caller).
public struct HubURL: Sendable, Equatable {
    public var host: String
    public var port: Int
    /// Path without the query, e.g. "/hub".
    public var path: String
    /// Query without "?" (kept for negotiate and every later request), e.g. "hub=chat".
    public var query: String

    public init(host: String, port: Int, path: String, query: String) {
        self.host = host; self.port = port; self.path = path; self.query = query
    }

    /// The hub at a parsed target URL: its path split at the first "?".
    public init(_ url: WebSocketURL) {
        let parts = url.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        self.init(host: url.host, port: url.port, path: String(parts[0]), query: parts.count > 1 ? String(parts[1]) : "")
    }

    /// Parses an absolute `http://` URL (`https://` when `secure`: a negotiate redirect keeps
    /// the run's scheme, since its TLS settings are the run's); nil for anything else. A
    /// redirect URL comes from a server, so it gets the same strict parser as the scenario's
    /// `target` (`ScenarioLoader.parseTarget`): no user info, fragment, bad port or space.
    public static func parse(_ text: String, secure: Bool) -> HubURL? {
        guard case .success(.http(let url)) = ScenarioLoader.parseTarget(text), url.secure == secure else { return nil }
        return HubURL(url)
    }

    /// `path/negotiate?query&negotiateVersion=N[&useStatefulReconnect=true]`: negotiate is appended
    /// to the path, existing query items are kept.
    public func negotiateTarget(version: Int, statefulReconnect: Bool) -> String {
        let base = path.hasSuffix("/") ? String(path.dropLast()) : path
        var items = query.isEmpty ? [] : [query]
        items.append("negotiateVersion=\(version)")
        if statefulReconnect { items.append("useStatefulReconnect=true") }
        return base + "/negotiate?" + items.joined(separator: "&")
    }

    /// `path?query&id=<id>[&access_token=<token>]` for transport requests.
    public func transportTarget(id: String?, accessToken: String?) -> String {
        var items = query.isEmpty ? [] : [query]
        if let id { items.append("id=" + percentEncoded(id)) }
        if let t = accessToken { items.append("access_token=" + percentEncoded(t)) }
        return path + (items.isEmpty ? "" : "?" + items.joined(separator: "&"))
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
func percentEncoded(_ s: String) -> String {
    var out = ""
    for b in s.utf8 {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            out.unicodeScalars.append(Unicode.Scalar(b))
        default:
            out += "%" + String(b, radix: 16, uppercase: true).leftPad2()
        }
    }
    return out
}

extension String {
    fileprivate func leftPad2() -> String { count < 2 ? "0" + self : self }
}
