extension JSONHubProtocol {
    /// Writes JSON values for `HubValueWriter`: arguments, stream items, results.
    /// Separators are placed by the writer, so a closure only lists values (and keys in objects).
    public struct ValueWriter: HubValueWriter {
        var sink: HubByteSink
        /// Elements written in the current container (keys in objects, values elsewhere).
        var elements = 0
        /// A key was just written: the next value belongs to it and needs no comma.
        var afterKey = false
        var depth = 0
        /// End of the first top-level value, for single-value slots (item, result).
        var firstValueEnd = -1

        init(sink: HubByteSink) { self.sink = sink }

        @inline(__always)
        mutating func beginValue() {
            if afterKey {
                afterKey = false
            } else {
                if elements > 0 { sink.byte(0x2C) }
                elements += 1
            }
        }

        @inline(__always)
        mutating func endValue() {
            if depth == 0 && elements == 1 && firstValueEnd < 0 { firstValueEnd = sink.pos }
        }

        public mutating func string(_ utf8: UnsafeRawBufferPointer) {
            beginValue()
            quoted(utf8)
            endValue()
        }

        public mutating func string(_ literal: StaticString) {
            literal.withUTF8Buffer { string(UnsafeRawBufferPointer($0)) }
        }

        public mutating func paddedString(prefix: UnsafeRawBufferPointer, totalLength: Int, pad: UInt8) {
            beginValue()
            sink.byte(0x22)
            escaped(prefix)
            let padCount = totalLength - prefix.count
            if padCount > 0 {
                if Self.needsEscape(pad) {
                    for _ in 0..<padCount { escapeByte(pad) }
                } else {
                    sink.fill(pad, count: padCount)
                }
            }
            sink.byte(0x22)
            endValue()
        }

        public mutating func int(_ value: Int64) {
            beginValue()
            if value < 0 { sink.byte(0x2D) }
            sink.decimal(value.magnitude)
            endValue()
        }

        public mutating func uint(_ value: UInt64) {
            beginValue()
            sink.decimal(value)
            endValue()
        }

        public mutating func double(_ value: Double) {
            beginValue()
            if value.isFinite {
                HubDouble.write(value, into: &sink)
            } else {
                sink.ascii("null")
            }
            endValue()
        }

        public mutating func bool(_ value: Bool) {
            beginValue()
            if value { sink.ascii("true") } else { sink.ascii("false") }
            endValue()
        }

        public mutating func null() {
            beginValue()
            sink.ascii("null")
            endValue()
        }

        public mutating func array(_ body: (inout Self) -> Void) {
            container(open: 0x5B, close: 0x5D, body)
        }

        public mutating func object(_ body: (inout Self) -> Void) {
            container(open: 0x7B, close: 0x7D, body)
        }

        mutating func container(open: UInt8, close: UInt8, _ body: (inout Self) -> Void) {
            beginValue()
            sink.byte(open)
            let saved = elements
            elements = 0
            depth += 1
            body(&self)
            depth -= 1
            elements = saved
            afterKey = false
            sink.byte(close)
            endValue()
        }

        public mutating func key(_ utf8: UnsafeRawBufferPointer) {
            if elements > 0 { sink.byte(0x2C) }
            elements += 1
            quoted(utf8)
            sink.byte(0x3A)
            afterKey = true
        }

        public mutating func key(_ literal: StaticString) {
            literal.withUTF8Buffer { key(UnsafeRawBufferPointer($0)) }
        }

        public mutating func raw(_ encoded: UnsafeRawBufferPointer) {
            beginValue()
            sink.bytes(encoded)
            endValue()
        }

        // MARK: Escaping

        @inline(__always)
        static func needsEscape(_ b: UInt8) -> Bool { b < 0x20 || b == 0x22 || b == 0x5C }

        mutating func quoted(_ s: UnsafeRawBufferPointer) {
            sink.byte(0x22)
            escaped(s)
            sink.byte(0x22)
        }

        /// Copies runs of plain bytes and escapes `"`, `\` and C0 controls (RFC 8259 §7);
        /// escaping 0x1E is what keeps the record separator out of message text.
        mutating func escaped(_ s: UnsafeRawBufferPointer) {
            var run = 0
            for i in 0..<s.count where Self.needsEscape(s[i]) {
                sink.bytes(UnsafeRawBufferPointer(rebasing: s[run..<i]))
                escapeByte(s[i])
                run = i + 1
            }
            sink.bytes(UnsafeRawBufferPointer(rebasing: s[run..<s.count]))
        }

        mutating func escapeByte(_ b: UInt8) {
            sink.byte(0x5C)
            switch b {
            case 0x22, 0x5C: sink.byte(b)
            case 0x08: sink.byte(0x62)
            case 0x0C: sink.byte(0x66)
            case 0x0A: sink.byte(0x6E)
            case 0x0D: sink.byte(0x72)
            case 0x09: sink.byte(0x74)
            default:
                let hex: StaticString = "0123456789abcdef"
                sink.ascii("u00")
                sink.byte(hex.utf8Start[Int(b >> 4)])
                sink.byte(hex.utf8Start[Int(b & 0x0F)])
            }
        }
    }

    // MARK: Message writers

    /// Invocation. The official clients' order: `{"type":1,"invocationId":"0","target":"Send","arguments":[…]}`.
    /// Without `invocationId` the server sends nothing back (`send`). Empty or nil `streamIds`
    /// omit the property, as the TypeScript client does.
    public static func writeInvocation(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID? = nil, target: HubString,
                                       streamIds: UnsafeBufferPointer<UInt64>? = nil,
                                       arguments: (inout ValueWriter) -> Void) -> Int? {
        writeInvocationMessage(into: out, type: "{\"type\":1", invocationId: invocationId, target: target, streamIds: streamIds, arguments: arguments)
    }

    /// StreamInvocation: the server answers with StreamItems, then a Completion.
    public static func writeStreamInvocation(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID, target: HubString,
                                             streamIds: UnsafeBufferPointer<UInt64>? = nil,
                                             arguments: (inout ValueWriter) -> Void) -> Int? {
        writeInvocationMessage(into: out, type: "{\"type\":4", invocationId: invocationId, target: target, streamIds: streamIds, arguments: arguments)
    }

    static func writeInvocationMessage(into out: UnsafeMutableRawBufferPointer, type: StaticString, invocationId: HubInvocationID?,
                                       target: HubString, streamIds: UnsafeBufferPointer<UInt64>?,
                                       arguments: (inout ValueWriter) -> Void) -> Int? {
        var w = ValueWriter(sink: HubByteSink(out))
        w.sink.ascii(type)
        if let invocationId { w.invocationIdProperty(invocationId) }
        w.sink.ascii(",\"target\":")
        target.withUTF8 { w.quoted($0) }
        w.sink.ascii(",\"arguments\":[")
        arguments(&w)
        w.sink.byte(0x5D)
        if let streamIds, !streamIds.isEmpty {
            w.sink.ascii(",\"streamIds\":[")
            for (k, id) in streamIds.enumerated() {
                if k > 0 { w.sink.byte(0x2C) }
                w.sink.byte(0x22)
                w.sink.decimal(id)
                w.sink.byte(0x22)
            }
            w.sink.byte(0x5D)
        }
        return w.finish()
    }

    /// StreamItem: `{"type":2,"invocationId":"…","item":…}`. `item` writes one value
    /// (none writes null; values after the first are dropped).
    public static func writeStreamItem(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID,
                                       item: (inout ValueWriter) -> Void) -> Int? {
        var w = ValueWriter(sink: HubByteSink(out))
        w.sink.ascii("{\"type\":2")
        w.invocationIdProperty(invocationId)
        w.sink.ascii(",\"item\":")
        w.singleValue(item)
        return w.finish()
    }

    /// Void Completion: `{"type":3,"invocationId":"…"}` (no `result` property).
    public static func writeCompletion(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID) -> Int? {
        var w = ValueWriter(sink: HubByteSink(out))
        w.sink.ascii("{\"type\":3")
        w.invocationIdProperty(invocationId)
        return w.finish()
    }

    /// Error Completion: `{"type":3,"invocationId":"…","error":"…"}`.
    public static func writeCompletion(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID, error: HubString) -> Int? {
        var w = ValueWriter(sink: HubByteSink(out))
        w.sink.ascii("{\"type\":3")
        w.invocationIdProperty(invocationId)
        w.sink.ascii(",\"error\":")
        error.withUTF8 { w.quoted($0) }
        return w.finish()
    }

    /// Completion with a result (which may be null): `{"type":3,"invocationId":"…","result":…}`.
    public static func writeCompletion(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID,
                                       result: (inout ValueWriter) -> Void) -> Int? {
        var w = ValueWriter(sink: HubByteSink(out))
        w.sink.ascii("{\"type\":3")
        w.invocationIdProperty(invocationId)
        w.sink.ascii(",\"result\":")
        w.singleValue(result)
        return w.finish()
    }

    /// CancelInvocation: `{"type":5,"invocationId":"…"}`.
    public static func writeCancelInvocation(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID) -> Int? {
        var w = ValueWriter(sink: HubByteSink(out))
        w.sink.ascii("{\"type\":5")
        w.invocationIdProperty(invocationId)
        return w.finish()
    }

    /// Ping: `{"type":6}` + 0x1E.
    public static func writePing(into out: UnsafeMutableRawBufferPointer) -> Int? {
        var w = ValueWriter(sink: HubByteSink(out))
        w.sink.ascii("{\"type\":6")
        return w.finish()
    }

    /// Close: `{"type":7}`, with `"error"` and `"allowReconnect":true` when given (a false
    /// allowReconnect is omitted, as the .NET server does).
    public static func writeClose(into out: UnsafeMutableRawBufferPointer, error: HubString? = nil, allowReconnect: Bool = false) -> Int? {
        var w = ValueWriter(sink: HubByteSink(out))
        w.sink.ascii("{\"type\":7")
        if let error {
            w.sink.ascii(",\"error\":")
            error.withUTF8 { w.quoted($0) }
        }
        if allowReconnect { w.sink.ascii(",\"allowReconnect\":true") }
        return w.finish()
    }

    /// Ack (stateful reconnect): `{"type":8,"sequenceId":N}`.
    public static func writeAck(into out: UnsafeMutableRawBufferPointer, sequenceId: UInt64) -> Int? {
        writeSequenced(into: out, type: "{\"type\":8,\"sequenceId\":", sequenceId)
    }

    /// Sequence (stateful reconnect): `{"type":9,"sequenceId":N}`.
    public static func writeSequence(into out: UnsafeMutableRawBufferPointer, sequenceId: UInt64) -> Int? {
        writeSequenced(into: out, type: "{\"type\":9,\"sequenceId\":", sequenceId)
    }

    static func writeSequenced(into out: UnsafeMutableRawBufferPointer, type: StaticString, _ sequenceId: UInt64) -> Int? {
        var w = ValueWriter(sink: HubByteSink(out))
        w.sink.ascii(type)
        w.sink.decimal(sequenceId)
        return w.finish()
    }
}

extension JSONHubProtocol.ValueWriter {
    mutating func invocationIdProperty(_ id: HubInvocationID) {
        sink.ascii(",\"invocationId\":")
        id.withUTF8 { quoted($0) }
    }

    /// Runs a closure that should write exactly one value: none becomes null, extra values are cut.
    mutating func singleValue(_ body: (inout Self) -> Void) {
        elements = 0
        afterKey = false
        firstValueEnd = -1
        body(&self)
        if elements == 0 {
            sink.ascii("null")
        } else if elements > 1 && !sink.failed && firstValueEnd >= 0 {
            sink.pos = firstValueEnd
        }
    }

    /// Closes the envelope and the record.
    mutating func finish() -> Int? {
        sink.byte(0x7D)
        sink.byte(JSONHubProtocol.recordSeparator)
        return sink.result
    }
}
