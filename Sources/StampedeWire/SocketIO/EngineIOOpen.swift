/// The open packet's JSON, the server's first answer (docs/protocols.md §8):
/// `{"sid":…,"upgrades":["websocket"],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}`.
public struct EngineIOOpen: Sendable, Equatable {
    /// The session id every later request of this connection names (`sid=`).
    public var sid: String
    /// The transports the client may upgrade to ("websocket").
    public var upgrades: [String]
    /// The server pings this often; the client gives up after `pingIntervalMs + pingTimeoutMs` of silence.
    public var pingIntervalMs: Int
    public var pingTimeoutMs: Int
    /// The most bytes the server takes in one polling body or WebSocket message.
    public var maxPayload: Int

    public init(sid: String, upgrades: [String], pingIntervalMs: Int, pingTimeoutMs: Int, maxPayload: Int) {
        self.sid = sid; self.upgrades = upgrades; self.pingIntervalMs = pingIntervalMs
        self.pingTimeoutMs = pingTimeoutMs; self.maxPayload = maxPayload
    }

    /// Reads the open packet's JSON (the data after the "0"); nil unless it is one object with a
    /// string `sid`, non-negative integer `pingInterval`, `pingTimeout` and `maxPayload`, and
    /// (when present) an array of strings `upgrades`. Unknown members are ignored.
    public static func parse(_ json: UnsafeRawBufferPointer) -> EngineIOOpen? {
        var sid: String?, upgrades: [String] = [], interval: Int?, timeout: Int?, maxPayload: Int?
        let ok = HubJSONScanner.scanObject(json, from: 0, to: json.count) { key, escaped, value, kind in
            guard !escaped else { return true }
            switch Self.name(json, key) {
            case "sid":
                guard kind == .string else { return false }
                sid = String(decoding: UnsafeRawBufferPointer(rebasing: json[value.lowerBound + 1..<value.upperBound - 1]), as: UTF8.self)
            case "upgrades":
                guard kind == .array, let list = Self.strings(json, value) else { return false }
                upgrades = list
            case "pingInterval": interval = Self.integer(json, value, kind); return interval != nil
            case "pingTimeout": timeout = Self.integer(json, value, kind); return timeout != nil
            case "maxPayload": maxPayload = Self.integer(json, value, kind); return maxPayload != nil
            default: break
            }
            return true
        }
        guard ok, let sid, !sid.isEmpty, let interval, let timeout, let maxPayload else { return nil }
        return EngineIOOpen(sid: sid, upgrades: upgrades, pingIntervalMs: interval, pingTimeoutMs: timeout, maxPayload: maxPayload)
    }

    /// Writes the JSON (without the packet's "0"); the count, nil when `out` is too small.
    public func write(into out: UnsafeMutableRawBufferPointer) -> Int? {
        let list = upgrades.map { "\"\($0)\"" }.joined(separator: ",")
        let text = "{\"sid\":\"\(sid)\",\"upgrades\":[\(list)],\"pingInterval\":\(pingIntervalMs),\"pingTimeout\":\(pingTimeoutMs),\"maxPayload\":\(maxPayload)}"
        let bytes = Array(text.utf8)
        guard bytes.count <= out.count else { return nil }
        bytes.withUnsafeBytes { out.copyMemory(from: $0) }
        return bytes.count
    }

    static func name(_ json: UnsafeRawBufferPointer, _ key: Range<Int>) -> String {
        key.count > 16 ? "" : String(decoding: UnsafeRawBufferPointer(rebasing: json[key]), as: UTF8.self)
    }

    /// A non-negative integer of at most 15 digits (milliseconds, bytes), else nil.
    static func integer(_ json: UnsafeRawBufferPointer, _ value: Range<Int>, _ kind: HubJSONKind) -> Int? {
        guard kind == .number, !value.isEmpty, value.count <= 15 else { return nil }
        var n = 0
        for i in value {
            guard HubJSONScanner.isDigit(json[i]) else { return nil }
            n = n * 10 + Int(json[i] - 0x30)
        }
        return n
    }

    /// The elements of an array of strings (escapes as written), else nil.
    static func strings(_ json: UnsafeRawBufferPointer, _ value: Range<Int>) -> [String]? {
        var p = value.lowerBound + 1
        let end = value.upperBound - 1
        var out: [String] = []
        HubJSONScanner.skipWhitespace(json, &p, end)
        while p < end {
            let start = p
            guard HubJSONScanner.scanValue(json, &p, end, depth: 1) == .string else { return nil }
            out.append(String(decoding: UnsafeRawBufferPointer(rebasing: json[start + 1..<p - 1]), as: UTF8.self))
            HubJSONScanner.skipWhitespace(json, &p, end)
            if p < end {
                guard json[p] == 0x2C else { return nil }
                p += 1
                HubJSONScanner.skipWhitespace(json, &p, end)
            }
        }
        return out
    }
}
