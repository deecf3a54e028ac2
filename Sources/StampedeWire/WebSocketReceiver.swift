/// Why a WebSocket connection must be failed, with the close code to send (RFC 6455 §7.4.1).
public enum WebSocketFailure: Sendable, Equatable {
    case protocolError(detail: StaticString)
    case invalidUTF8
    case messageTooBig

    public var closeCode: UInt16 {
        switch self {
        case .protocolError: 1002
        case .invalidUTF8: 1007
        case .messageTooBig: 1009
        }
    }

    public static func == (a: WebSocketFailure, b: WebSocketFailure) -> Bool {
        switch (a, b) {
        case (.invalidUTF8, .invalidUTF8), (.messageTooBig, .messageTooBig): true
        case (.protocolError(let x), .protocolError(let y)): x.description == y.description
        default: false
        }
    }
}

/// The receive side of one WebSocket connection as a value-type state machine: it is fed the
/// connection's buffered input and returns one event at a time, which the I/O layer acts on
/// (deliver, answer a ping, echo a close, fail). It never does I/O and never allocates, except
/// for the reassembly buffer of fragmented messages, whose capacity is kept.
public struct WebSocketReceiver: Sendable {
    public enum Role: Sendable { case client, server }

    /// What the input holds next. Ranges index the buffer passed to `next(_:)`; payloads are
    /// already unmasked in place.
    public enum Event: Sendable, Equatable {
        /// No complete frame at the start of the buffer.
        case needMore
        /// A whole message in one frame (text already validated as UTF-8).
        case message(WebSocketOpcode, payload: Range<Int>)
        /// The final fragment of a fragmented message arrived: the message is in `assembled`.
        case assembledMessage(WebSocketOpcode)
        /// A fragment was consumed into the reassembly buffer; nothing to deliver yet.
        case fragment
        case ping(payload: Range<Int>)
        case pong(payload: Range<Int>)
        /// A valid close frame. `code` is nil when the frame had no payload (1005 semantics).
        case close(code: UInt16?, reason: Range<Int>)
        case fail(WebSocketFailure)
    }

    public let role: Role
    /// Largest message (after reassembly) accepted; larger fails with 1009.
    public let maxMessageBytes: Int
    /// Reassembled fragmented message, valid after `.assembledMessage` until the next call.
    public private(set) var assembled: [UInt8] = []
    @usableFromInline var fragmentOpcode: WebSocketOpcode? = nil
    @usableFromInline var utf8 = UTF8Validator()
    @usableFromInline var clearAssembledOnNext = false

    public init(role: Role, maxMessageBytes: Int) {
        self.role = role
        self.maxMessageBytes = maxMessageBytes
    }

    /// Looks at the frame at the start of `buffer`; on an event other than `.needMore` and
    /// `.fail`, `consumed` is the frame's length and the caller drops that many bytes after acting.
    public mutating func next(_ buffer: UnsafeMutableRawBufferPointer) -> (event: Event, consumed: Int) {
        if clearAssembledOnNext {
            assembled.removeAll(keepingCapacity: true)
            clearAssembledOnNext = false
        }
        let header: WebSocketFrameHeader
        switch WebSocketFrameCodec.parseHeader(UnsafeRawBufferPointer(buffer)) {
        case .needMore: return (.needMore, 0)
        case .invalidLength: return (.fail(.protocolError(detail: "64-bit length with the top bit set")), 0)
        case .header(let h): header = h
        }
        if header.reservedBits != 0 { return (.fail(.protocolError(detail: "reserved bits set without an extension")), 0) }
        guard let opcode = header.opcode else { return (.fail(.protocolError(detail: "reserved opcode")), 0) }
        // §5.1: a server must fail unmasked client frames; a client must fail masked server frames.
        if header.masked != (role == .server) {
            return (.fail(.protocolError(detail: role == .server ? "unmasked client frame" : "masked server frame")), 0)
        }
        if opcode.isControl {
            if !header.fin { return (.fail(.protocolError(detail: "fragmented control frame")), 0) }
            if header.payloadLength > 125 { return (.fail(.protocolError(detail: "control frame payload over 125 bytes")), 0) }
        } else if header.payloadLength > maxMessageBytes {
            return (.fail(.messageTooBig), 0)
        }
        guard buffer.count >= header.frameLength else { return (.needMore, 0) }

        let start = header.headerLength
        let end = header.frameLength
        if header.masked {
            WebSocketFrameCodec.applyMask(UnsafeMutableRawBufferPointer(rebasing: buffer[start..<end]), maskKey: header.maskKey)
        }
        let payload = UnsafeRawBufferPointer(rebasing: buffer[start..<end])
        switch opcode {
        case .ping: return (.ping(payload: start..<end), end)
        case .pong: return (.pong(payload: start..<end), end)
        case .close:
            let event = closeEvent(payload, start: start)
            if case .fail = event { return (event, 0) }
            return (event, end)
        case .text, .binary:
            if fragmentOpcode != nil { return (.fail(.protocolError(detail: "new data frame inside a fragmented message")), 0) }
            if header.fin {
                if opcode == .text && !UTF8Validator.isValid(payload) { return (.fail(.invalidUTF8), 0) }
                return (.message(opcode, payload: start..<end), end)
            }
            fragmentOpcode = opcode
            utf8.reset()
            assembled.removeAll(keepingCapacity: true)
            return appendFragment(payload, fin: false, end: end)
        case .continuation:
            guard fragmentOpcode != nil else { return (.fail(.protocolError(detail: "continuation without a message")), 0) }
            return appendFragment(payload, fin: header.fin, end: end)
        }
    }

    private mutating func appendFragment(_ payload: UnsafeRawBufferPointer, fin: Bool, end: Int) -> (event: Event, consumed: Int) {
        guard let opcode = fragmentOpcode else { return (.fail(.protocolError(detail: "continuation without a message")), 0) }
        if assembled.count + payload.count > maxMessageBytes { return (.fail(.messageTooBig), 0) }
        if opcode == .text {
            // Fail fast on the fragment that breaks UTF-8, not only at the end (Autobahn 6.x).
            if !utf8.feed(payload) { return (.fail(.invalidUTF8), 0) }
            if fin && !utf8.isComplete { return (.fail(.invalidUTF8), 0) }
        }
        assembled.append(contentsOf: payload)
        guard fin else { return (.fragment, end) }
        fragmentOpcode = nil
        clearAssembledOnNext = true
        return (.assembledMessage(opcode), end)
    }

    private func closeEvent(_ payload: UnsafeRawBufferPointer, start: Int) -> Event {
        if payload.count == 0 { return .close(code: nil, reason: start..<start) }
        if payload.count == 1 { return .fail(.protocolError(detail: "close payload of one byte")) }
        let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
        if !WebSocketFrameCodec.isValidCloseCode(code) { return .fail(.protocolError(detail: "invalid close code")) }
        let reason = UnsafeRawBufferPointer(rebasing: payload[2...])
        if !UTF8Validator.isValid(reason) { return .fail(.invalidUTF8) }
        return .close(code: code, reason: (start + 2)..<(start + payload.count))
    }
}

/// The payload of a Close frame (RFC 6455 §5.5.1): empty, or a status code followed by an
/// optional UTF-8 reason. Our own reasons are static text, so building and writing one never
/// allocates.
public struct WebSocketClosePayload: Sendable, Equatable {
    /// nil: the empty body (no status code, §5.5.1 "there is no body").
    public let code: UInt16?
    /// Sent after the code; empty when `code` is nil.
    public let reason: StaticString

    public static let empty = WebSocketClosePayload(code: nil)

    /// A Close body with `code` and `reason` (at most 123 bytes: a control frame carries 125, §5.5).
    public init(code: UInt16?, reason: StaticString = "") {
        precondition(reason.hasPointerRepresentation && reason.utf8CodeUnitCount <= 123, "close reason over 123 bytes")
        precondition(code != nil || reason.utf8CodeUnitCount == 0, "a close reason needs a code")
        self.code = code
        self.reason = reason
    }

    /// Length of the body on the wire.
    public var count: Int { code == nil ? 0 : 2 + reason.utf8CodeUnitCount }

    /// Writes the body (code in network byte order, then the reason) at `out`; returns `count`.
    @discardableResult
    public func write(into out: UnsafeMutableRawPointer) -> Int {
        guard let code else { return 0 }
        out.storeBytes(of: UInt8(code >> 8), toByteOffset: 0, as: UInt8.self)
        out.storeBytes(of: UInt8(code & 0xFF), toByteOffset: 1, as: UInt8.self)
        let n = reason.utf8CodeUnitCount
        if n > 0 { (out + 2).copyMemory(from: reason.utf8Start, byteCount: n) }
        return 2 + n
    }

    /// Calls `body` with the body's bytes, built on the stack.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeTemporaryAllocation(byteCount: 125, alignment: 1) { buffer in
            let n = write(into: buffer.baseAddress!)
            return try body(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
        }
    }

    public static func == (a: WebSocketClosePayload, b: WebSocketClosePayload) -> Bool {
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in x.elementsEqual(y) } }
    }
}
