/// The SignalR handshake (HubProtocol.md; docs/protocols.md §3): always JSON + 0x1E, whichever hub
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
        var error: Range<Int>? = nil
        // An object with a `type` is a hub message, not a handshake response (docs/protocols.md §3).
        let valid = HubJSONScanner.scanObject(b, from: 0, to: n - 1) { key, escaped, value, kind in
            if HubJSONScanner.contentsEqual(b, key, hasEscape: escaped, "type") { return false }
            if HubJSONScanner.contentsEqual(b, key, hasEscape: escaped, "error") {
                switch kind {
                case .string: error = (value.lowerBound + 1)..<(value.upperBound - 1)
                case .null: error = nil
                default: return false
                }
            }
            return true
        }
        guard valid else { return .invalid }
        if let error { return .error(error) }
        return .success(consumed: n)
    }
}
