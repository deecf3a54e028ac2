extension MessagePackHubProtocol {
    /// Writes MessagePack values for `HubValueWriter`: arguments, stream items, results.
    /// Integers and lengths use their smallest encoding, as msgpack-csharp (the .NET server's
    /// serializer) does.
    public struct ValueWriter: HubValueWriter {
        var sink: HubByteSink
        /// Items in the current container (keys in maps, values elsewhere): the count its
        /// header needs once the closure is done.
        var elements = 0
        /// A key was just written: the next value is its map value and is not counted.
        var afterKey = false
        var depth = 0
        /// End of the first top-level value, for single-value slots (item, result).
        var firstValueEnd = -1

        init(sink: HubByteSink) { self.sink = sink }

        @inline(__always)
        mutating func beginValue() {
            if afterKey { afterKey = false } else { elements += 1 }
        }

        @inline(__always)
        mutating func endValue() {
            if depth == 0 && elements == 1 && firstValueEnd < 0 { firstValueEnd = sink.pos }
        }

        public mutating func string(_ utf8: UnsafeRawBufferPointer) {
            beginValue()
            stringItem(utf8)
            endValue()
        }

        public mutating func string(_ literal: StaticString) {
            literal.withUTF8Buffer { string(UnsafeRawBufferPointer($0)) }
        }

        public mutating func paddedString(prefix: UnsafeRawBufferPointer, totalLength: Int, pad: UInt8) {
            beginValue()
            let total = max(totalLength, prefix.count)
            stringHeader(total)
            sink.bytes(prefix)
            sink.fill(pad, count: total - prefix.count)
            endValue()
        }

        public mutating func int(_ value: Int64) {
            beginValue()
            if value >= 0 {
                unsignedItem(UInt64(value))
            } else if value >= -32 {
                sink.byte(UInt8(truncatingIfNeeded: value))  // negative fixint 0xE0…0xFF
            } else if value >= Int64(Int8.min) {
                sink.byte(0xD0)
                sink.bigEndian(Int8(value))
            } else if value >= Int64(Int16.min) {
                sink.byte(0xD1)
                sink.bigEndian(Int16(value))
            } else if value >= Int64(Int32.min) {
                sink.byte(0xD2)
                sink.bigEndian(Int32(value))
            } else {
                sink.byte(0xD3)
                sink.bigEndian(value)
            }
            endValue()
        }

        public mutating func uint(_ value: UInt64) {
            beginValue()
            unsignedItem(value)
            endValue()
        }

        public mutating func double(_ value: Double) {
            beginValue()
            sink.byte(0xCB)
            sink.bigEndian(value.bitPattern)
            endValue()
        }

        public mutating func bool(_ value: Bool) {
            beginValue()
            sink.byte(value ? 0xC3 : 0xC2)
            endValue()
        }

        public mutating func null() {
            beginValue()
            sink.byte(0xC0)
            endValue()
        }

        public mutating func array(_ body: (inout Self) -> Void) {
            container(fix: 0x90, wide16: 0xDC, wide32: 0xDD, body)
        }

        public mutating func object(_ body: (inout Self) -> Void) {
            container(fix: 0x80, wide16: 0xDE, wide32: 0xDF, body)
        }

        /// The count is known only after `body` ran: one header byte is reserved, and for more
        /// than 15 items the contents are moved to make room for the 3- or 5-byte header.
        mutating func container(fix: UInt8, wide16: UInt8, wide32: UInt8, _ body: (inout Self) -> Void) {
            beginValue()
            let headerAt = sink.pos
            sink.byte(fix)
            let saved = elements
            elements = 0
            depth += 1
            body(&self)
            depth -= 1
            let n = elements
            elements = saved
            afterKey = false
            patchHeader(at: headerAt, count: n, fix: fix, wide16: wide16, wide32: wide32)
            endValue()
        }

        mutating func patchHeader(at headerAt: Int, count n: Int, fix: UInt8, wide16: UInt8, wide32: UInt8) {
            guard !sink.failed else { return }
            if n <= 15 {
                sink.out[headerAt] = fix | UInt8(n)
                return
            }
            let size = n <= 0xFFFF ? 2 : 4
            guard sink.openGap(at: headerAt + 1, size) else { return }
            sink.out[headerAt] = size == 2 ? wide16 : wide32
            for k in 0..<size {
                sink.out[headerAt + 1 + k] = UInt8(truncatingIfNeeded: n >> (8 * (size - 1 - k)))
            }
        }

        public mutating func key(_ utf8: UnsafeRawBufferPointer) {
            elements += 1
            stringItem(utf8)
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

        /// A binary value (`bin 8/16/32`), which the .NET binder maps to `byte[]`.
        public mutating func binary(_ bytes: UnsafeRawBufferPointer) {
            beginValue()
            let n = bytes.count
            if n <= 0xFF {
                sink.byte(0xC4)
                sink.byte(UInt8(n))
            } else if n <= 0xFFFF {
                sink.byte(0xC5)
                sink.bigEndian(UInt16(n))
            } else {
                sink.byte(0xC6)
                sink.bigEndian(UInt32(truncatingIfNeeded: n))
            }
            sink.bytes(bytes)
            endValue()
        }

        // MARK: Encodings

        mutating func unsignedItem(_ v: UInt64) {
            if v <= 0x7F {
                sink.byte(UInt8(v))
            } else if v <= 0xFF {
                sink.byte(0xCC)
                sink.byte(UInt8(v))
            } else if v <= 0xFFFF {
                sink.byte(0xCD)
                sink.bigEndian(UInt16(v))
            } else if v <= 0xFFFF_FFFF {
                sink.byte(0xCE)
                sink.bigEndian(UInt32(v))
            } else {
                sink.byte(0xCF)
                sink.bigEndian(v)
            }
        }

        mutating func stringHeader(_ n: Int) {
            if n <= 31 {
                sink.byte(0xA0 | UInt8(n))
            } else if n <= 0xFF {
                sink.byte(0xD9)
                sink.byte(UInt8(n))
            } else if n <= 0xFFFF {
                sink.byte(0xDA)
                sink.bigEndian(UInt16(n))
            } else if n <= 0xFFFF_FFFF {
                sink.byte(0xDB)
                sink.bigEndian(UInt32(n))
            } else {
                sink.failed = true  // not representable; cannot happen for a real buffer
            }
        }

        mutating func stringItem(_ utf8: UnsafeRawBufferPointer) {
            stringHeader(utf8.count)
            sink.bytes(utf8)
        }

        mutating func arrayHeader(_ n: Int) {
            if n <= 15 {
                sink.byte(0x90 | UInt8(n))
            } else if n <= 0xFFFF {
                sink.byte(0xDC)
                sink.bigEndian(UInt16(n))
            } else {
                sink.byte(0xDD)
                sink.bigEndian(UInt32(truncatingIfNeeded: n))
            }
        }

        mutating func invocationIdItem(_ id: HubInvocationID) {
            id.withUTF8 { stringItem($0) }
        }

        /// Runs a closure that should write exactly one value: none becomes nil, extra values are cut.
        mutating func singleValue(_ body: (inout Self) -> Void) {
            elements = 0
            afterKey = false
            firstValueEnd = -1
            body(&self)
            if elements == 0 {
                sink.byte(0xC0)
            } else if elements > 1 && !sink.failed && firstValueEnd >= 0 {
                sink.pos = firstValueEnd
            }
        }
    }

    // MARK: Message writers

    /// Writes the body with `body`, then its VarInt prefix in front. One prefix byte is
    /// reserved; a body of 128 bytes or more is moved right to fit the longer prefix, which
    /// keeps the output at the start of `out` without measuring the body twice.
    static func frame(_ out: UnsafeMutableRawBufferPointer, _ body: (inout ValueWriter) -> Void) -> Int? {
        var w = ValueWriter(sink: HubByteSink(out, at: 1))
        body(&w)
        guard !w.sink.failed else { return nil }
        let length = w.sink.pos - 1
        guard length <= maxBodyLength, w.sink.openGap(at: 1, lengthPrefixSize(length) - 1) else { return nil }
        _ = writeLengthPrefix(length, into: out)
        return w.sink.pos
    }

    /// Invocation `[1, {}, Id|nil, Target, [Args], [StreamIds]]`. Without `invocationId` the
    /// server sends nothing back (`send`). The default empty `streamIds` writes the 6-item form
    /// the official clients send; nil writes the 5-item form (valid, one byte shorter).
    public static func writeInvocation(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID? = nil, target: HubString,
                                       streamIds: UnsafeBufferPointer<UInt64>? = UnsafeBufferPointer(start: nil, count: 0),
                                       arguments: (inout ValueWriter) -> Void) -> Int? {
        writeInvocationMessage(into: out, type: 1, invocationId: invocationId, target: target, streamIds: streamIds, arguments: arguments)
    }

    /// StreamInvocation `[4, {}, Id, Target, [Args], [StreamIds]]`; `streamIds` as for Invocation.
    public static func writeStreamInvocation(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID, target: HubString,
                                             streamIds: UnsafeBufferPointer<UInt64>? = UnsafeBufferPointer(start: nil, count: 0),
                                             arguments: (inout ValueWriter) -> Void) -> Int? {
        writeInvocationMessage(into: out, type: 4, invocationId: invocationId, target: target, streamIds: streamIds, arguments: arguments)
    }

    static func writeInvocationMessage(into out: UnsafeMutableRawBufferPointer, type: UInt8, invocationId: HubInvocationID?,
                                       target: HubString, streamIds: UnsafeBufferPointer<UInt64>?,
                                       arguments: (inout ValueWriter) -> Void) -> Int? {
        frame(out) { w in
            w.sink.byte(streamIds == nil ? 0x95 : 0x96)
            w.sink.byte(type)
            w.sink.byte(0x80)  // headers: always an empty map
            if let invocationId { w.invocationIdItem(invocationId) } else { w.sink.byte(0xC0) }
            target.withUTF8 { w.stringItem($0) }
            w.array(arguments)
            if let streamIds {
                w.arrayHeader(streamIds.count)
                for id in streamIds {
                    w.stringHeader(HubDecimal.digitCount(id))
                    w.sink.decimal(id)
                }
            }
        }
    }

    /// StreamItem `[2, {}, Id, Item]`. `item` writes one value (none writes nil; values after
    /// the first are dropped).
    public static func writeStreamItem(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID,
                                       item: (inout ValueWriter) -> Void) -> Int? {
        frame(out) { w in
            w.sink.byte(0x94)
            w.sink.byte(0x02)
            w.sink.byte(0x80)
            w.invocationIdItem(invocationId)
            w.singleValue(item)
        }
    }

    /// Void Completion `[3, {}, Id, 2]`.
    public static func writeCompletion(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID) -> Int? {
        frame(out) { w in
            w.sink.byte(0x94)
            w.sink.byte(0x03)
            w.sink.byte(0x80)
            w.invocationIdItem(invocationId)
            w.sink.byte(0x02)
        }
    }

    /// Error Completion `[3, {}, Id, 1, Error]`.
    public static func writeCompletion(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID, error: HubString) -> Int? {
        frame(out) { w in
            w.sink.byte(0x95)
            w.sink.byte(0x03)
            w.sink.byte(0x80)
            w.invocationIdItem(invocationId)
            w.sink.byte(0x01)
            error.withUTF8 { w.stringItem($0) }
        }
    }

    /// Completion with a result (which may be nil) `[3, {}, Id, 3, Result]`.
    public static func writeCompletion(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID,
                                       result: (inout ValueWriter) -> Void) -> Int? {
        frame(out) { w in
            w.sink.byte(0x95)
            w.sink.byte(0x03)
            w.sink.byte(0x80)
            w.invocationIdItem(invocationId)
            w.sink.byte(0x03)
            w.singleValue(result)
        }
    }

    /// CancelInvocation `[5, {}, Id]`.
    public static func writeCancelInvocation(into out: UnsafeMutableRawBufferPointer, invocationId: HubInvocationID) -> Int? {
        frame(out) { w in
            w.sink.byte(0x93)
            w.sink.byte(0x05)
            w.sink.byte(0x80)
            w.invocationIdItem(invocationId)
        }
    }

    /// Ping: always exactly `[6]` (`02 91 06` framed); Ping carries no headers.
    public static func writePing(into out: UnsafeMutableRawBufferPointer) -> Int? {
        frame(out) { w in
            w.sink.byte(0x91)
            w.sink.byte(0x06)
        }
    }

    /// Close `[7, Error|nil]`, or `[7, Error|nil, true]` when reconnecting is allowed. No headers.
    public static func writeClose(into out: UnsafeMutableRawBufferPointer, error: HubString? = nil, allowReconnect: Bool = false) -> Int? {
        frame(out) { w in
            w.sink.byte(allowReconnect ? 0x93 : 0x92)
            w.sink.byte(0x07)
            if let error { error.withUTF8 { w.stringItem($0) } } else { w.sink.byte(0xC0) }
            if allowReconnect { w.sink.byte(0xC3) }
        }
    }

    /// Ack `[8, SequenceId]` (stateful reconnect).
    public static func writeAck(into out: UnsafeMutableRawBufferPointer, sequenceId: UInt64) -> Int? {
        frame(out) { w in
            w.sink.byte(0x92)
            w.sink.byte(0x08)
            w.unsignedItem(sequenceId)
        }
    }

    /// Sequence `[9, SequenceId]` (stateful reconnect).
    public static func writeSequence(into out: UnsafeMutableRawBufferPointer, sequenceId: UInt64) -> Int? {
        frame(out) { w in
            w.sink.byte(0x92)
            w.sink.byte(0x09)
            w.unsignedItem(sequenceId)
        }
    }
}
