/// The SignalR handshake (HubProtocol.md; reference §3): always JSON + 0x1E, whichever hub
/// protocol follows it.
public enum HubHandshake {
    /// What `parseResponse` found.
    public enum Response: Sendable, Equatable {
        /// No 0x1E yet: keep buffering (cap the buffer yourself).
        case needMore
        /// `{}` (extra properties such as `minorVersion` ignored). `consumed` includes the 0x1E;
        /// any bytes after it in the same buffer are already hub messages.
        case success(consumed: Int)
        /// `{"error":"…"}`: the range of the error text contents (escapes raw) in the buffer.
        /// The server closes the connection after sending it.
        case error(Range<Int>)
        /// Not a handshake response: invalid JSON, not an object, a non-string `error`, or an
        /// object with a `type` property (a hub message where the response should be).
        case invalid
    }

    /// `{"protocol":"json","version":1}` + 0x1E; pass `MessagePackHubProtocol.protocolName` for
    /// MessagePack (the request is JSON even then). Version 2 only when negotiate returned
    /// `useStatefulReconnect:true`.
    public static func writeRequest(protocolName: StaticString, version: Int = 1, into out: UnsafeMutableRawBufferPointer) -> Int? {
        var sink = HubByteSink(out)
        sink.ascii("{\"protocol\":\"")
        sink.ascii(protocolName)
        sink.ascii("\",\"version\":")
        if version < 0 { sink.byte(0x2D) }
        sink.decimal(UInt64(version.magnitude))
        sink.byte(0x7D)
        sink.byte(JSONHubProtocol.recordSeparator)
        return sink.result
    }

    /// Server side: `{}` + 0x1E, or `{"error":"…"}` + 0x1E.
    public static func writeResponse(into out: UnsafeMutableRawBufferPointer, error: HubString? = nil) -> Int? {
        var w = JSONHubProtocol.ValueWriter(sink: HubByteSink(out))
        w.sink.byte(0x7B)
        if let error {
            w.sink.ascii("\"error\":")
            error.withUTF8 { w.quoted($0) }
        }
        w.sink.byte(0x7D)
        w.sink.byte(JSONHubProtocol.recordSeparator)
        return w.sink.result
    }

    /// Reads the server's handshake response at the start of `buffer`.
    public static func parseResponse(_ buffer: UnsafeRawBufferPointer) -> Response {
        guard let n = JSONHubProtocol.recordLength(buffer) else { return .needMore }
        let b = buffer
        let end = n - 1
        var i = 0
        HubJSONScanner.skipWhitespace(b, &i, end)
        guard i < end, b[i] == 0x7B else { return .invalid }
        i += 1
        HubJSONScanner.skipWhitespace(b, &i, end)
        guard i < end else { return .invalid }
        var error: Range<Int>? = nil
        if b[i] == 0x7D {
            i += 1
        } else {
            while true {
                let keyStart = i + 1
                var escaped = false
                guard HubJSONScanner.scanString(b, &i, end, hasEscape: &escaped) else { return .invalid }
                let key = keyStart..<(i - 1)
                HubJSONScanner.skipWhitespace(b, &i, end)
                guard i < end, b[i] == 0x3A else { return .invalid }
                i += 1
                HubJSONScanner.skipWhitespace(b, &i, end)
                let valueStart = i
                guard let kind = HubJSONScanner.scanValue(b, &i, end, depth: 1) else { return .invalid }
                if HubJSONScanner.contentsEqual(b, key, hasEscape: escaped, "type") { return .invalid }
                if HubJSONScanner.contentsEqual(b, key, hasEscape: escaped, "error") {
                    switch kind {
                    case .string: error = (valueStart + 1)..<(i - 1)
                    case .null: error = nil
                    default: return .invalid
                    }
                }
                HubJSONScanner.skipWhitespace(b, &i, end)
                guard i < end else { return .invalid }
                if b[i] == 0x2C {
                    i += 1
                    HubJSONScanner.skipWhitespace(b, &i, end)
                    continue
                }
                guard b[i] == 0x7D else { return .invalid }
                i += 1
                break
            }
        }
        HubJSONScanner.skipWhitespace(b, &i, end)
        guard i == end else { return .invalid }
        if let error { return .error(error) }
        return .success(consumed: n)
    }
}
