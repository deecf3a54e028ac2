/// Why an event stream was abandoned.
public enum SSEParseError: Error, Sendable, Equatable {
    /// A line longer than the parser's line limit.
    case lineTooLong
    /// An event whose joined data would exceed `maxEventBytes`.
    case eventTooLarge
}

/// Incremental Server-Sent Events parser (WHATWG HTML §9.2.6 "Interpreting an event stream")
/// for the de-chunked body of a `text/event-stream` response.
///
/// Calling convention (as for the HTTP parsers): pass all unconsumed body bytes, starting with
/// those left over from the previous call; act on the event; drop `consumed` bytes.
///
/// Zero copy: an event with a single data line is reported as a range of the buffer. While such
/// an event is incomplete its bytes are not consumed (so the caller's buffer must be able to
/// hold one event, up to about twice the line limit), and bytes already examined are not
/// examined again. An event with several data lines is joined into `assembled`, a buffer whose
/// capacity is kept, and reported as `.assembledEvent`.
///
/// Offsets, not addresses, are what carry over between calls, so the bytes may move: with an
/// HTTP body, feed each de-chunked body piece straight from the receive buffer while nothing is
/// pending, and copy only an unconsumed tail into a side buffer to which the next pieces are
/// appended. ASP.NET flushes one event per chunk, so the copy is rare.
///
/// Bytes are not UTF-8 decoded: data is passed through as received (the spec's decoder would
/// replace invalid sequences with U+FFFD), and field names compare byte for byte.
public struct SSEParser: Sendable {
    /// One step of the event stream.
    public enum Event: Sendable, Equatable {
        case needMore
        /// An event whose data is `buffer[data]` (its only data line's value).
        case event(data: Range<Int>)
        /// An event whose data is in `assembled` until the next call.
        case assembledEvent
        /// The stream is unusable (limits exceeded); drop the request.
        case error(SSEParseError)
    }

    /// Largest event data accepted.
    public let maxEventBytes: Int
    /// Longest line accepted (a data line carries a field name and colon besides the data).
    public let maxLineBytes: Int
    /// Data of the last `.assembledEvent`, joined with LF; valid until the next call.
    public private(set) var assembled: [UInt8] = []
    /// The `event:` name of the last dispatched event; empty means the default "message".
    public private(set) var eventType: [UInt8] = []
    /// The stream's last event ID (`id:` without NUL), which persists across events and `reset()`.
    public private(set) var lastEventID: [UInt8] = []
    /// The last valid `retry:` value, in milliseconds.
    public private(set) var reconnectionTime: Int? = nil

    var pendingType: [UInt8] = []
    var scanPos = 0
    var lineStart = 0
    /// The previous line ended with a CR that was the last byte seen: an LF next belongs to it.
    var skipLF = false
    var atStreamStart = true
    var dataLines = 0
    /// The single data value of the current event, still in the caller's buffer.
    var candidate: Range<Int>? = nil
    var candidateLineStart = 0
    var clearAssembledOnNext = false
    var failure: SSEParseError? = nil

    /// `maxLineBytes` defaults to `maxEventBytes` plus room for a field name and colon.
    public init(maxEventBytes: Int = 1 << 20, maxLineBytes: Int? = nil) {
        self.maxEventBytes = min(max(0, maxEventBytes), 1 << 40)
        self.maxLineBytes = HTTPBytes.clampLimit(maxLineBytes ?? self.maxEventBytes + 256)
    }

    /// The next event from `buffer` (see the type's calling convention).
    public mutating func next(_ buffer: UnsafeRawBufferPointer) -> (event: Event, consumed: Int) {
        if let failure { return (.error(failure), 0) }
        if clearAssembledOnNext {
            assembled.removeAll(keepingCapacity: true)
            clearAssembledOnNext = false
        }
        let n = buffer.count
        if atStreamStart {
            // The UTF-8 decode step strips one leading BOM (Encoding §4.1 "UTF-8 decode").
            var k = 0
            while k < 3 && k < n && buffer[k] == Self.bom[k] { k += 1 }
            if k < 3 && k == n { return (.needMore, 0) }
            if k == 3 {
                scanPos = 3
                lineStart = 3
            }
            atStreamStart = false
        }
        var pos = scanPos
        while true {
            if skipLF {
                if pos == n { break }
                if buffer[pos] == HTTPBytes.lf {
                    pos += 1
                    lineStart = pos
                    // The retained-region check below ran without this LF when the CR ended
                    // the previous read; redo it with the LF so that zero copy does not depend
                    // on where a CRLF was split (found by the sse fuzz target).
                    if let c = candidate, pos - candidateLineStart > maxLineBytes {
                        append(buffer, c)
                        candidate = nil
                    }
                }
                skipLF = false
            }
            guard let e = HTTPBytes.firstLineBreak(in: buffer, from: pos, to: n) else {
                pos = n
                if n - lineStart > maxLineBytes { return fail(.lineTooLong) }
                break
            }
            var after = e + 1
            if buffer[e] == HTTPBytes.cr {
                if after < n {
                    if buffer[after] == HTTPBytes.lf { after += 1 }
                } else {
                    skipLF = true
                }
            }
            let line = lineStart..<e
            if line.count > maxLineBytes { return fail(.lineTooLong) }
            pos = after
            lineStart = after
            if line.isEmpty {
                // Blank line: dispatch, unless no data line came (then only the type resets).
                guard dataLines > 0 else {
                    pendingType.removeAll(keepingCapacity: true)
                    continue
                }
                let event: Event
                if let c = candidate {
                    event = .event(data: c)
                } else {
                    event = .assembledEvent
                    clearAssembledOnNext = true
                }
                swap(&eventType, &pendingType)
                pendingType.removeAll(keepingCapacity: true)
                dataLines = 0
                candidate = nil
                scanPos = 0
                lineStart = 0
                return (event, after)
            }
            if let error = processField(buffer, line) { return fail(error) }
            // Keep the retained region bounded: if many other lines follow a lone data line
            // before the blank line, give up zero copy for this event.
            if let c = candidate, after - candidateLineStart > maxLineBytes {
                append(buffer, c)
                candidate = nil
            }
        }
        scanPos = pos
        let keep = candidate != nil ? candidateLineStart : lineStart
        scanPos -= keep
        lineStart -= keep
        candidateLineStart -= keep
        if let c = candidate { candidate = (c.lowerBound - keep)..<(c.upperBound - keep) }
        return (.needMore, keep)
    }

    /// Forgets the stream in progress for a new request (keeping `lastEventID`, which a
    /// reconnecting EventSource sends back as Last-Event-ID, and buffer capacity). A pending
    /// incomplete event is discarded, as at the end of a stream.
    public mutating func reset() {
        assembled.removeAll(keepingCapacity: true)
        eventType.removeAll(keepingCapacity: true)
        pendingType.removeAll(keepingCapacity: true)
        scanPos = 0
        lineStart = 0
        skipLF = false
        atStreamStart = true
        dataLines = 0
        candidate = nil
        candidateLineStart = 0
        clearAssembledOnNext = false
        failure = nil
    }

    static let bom = HTTPStaticBytes("\u{FEFF}")

    private mutating func fail(_ error: SSEParseError) -> (event: Event, consumed: Int) {
        failure = error
        return (.error(error), 0)
    }

    /// One non-blank line (§9.2.6 "process the field").
    private mutating func processField(_ buf: UnsafeRawBufferPointer, _ line: Range<Int>) -> SSEParseError? {
        let s = line.lowerBound
        if buf[s] == HTTPBytes.colon { return nil } // comment (ASP.NET opens with ":\r\n")
        let colon = HTTPBytes.firstIndex(of: HTTPBytes.colon, in: buf, from: s, to: line.upperBound)
        let name = s..<(colon ?? line.upperBound)
        var valueStart = line.upperBound
        if let colon {
            valueStart = colon + 1
            // Only one space after the colon is part of the syntax; more belong to the value.
            if valueStart < line.upperBound && buf[valueStart] == HTTPBytes.sp { valueStart += 1 }
        }
        let value = valueStart..<line.upperBound
        switch name.count {
        case 4 where Self.matches(buf, name, "data"):
            if dataLines == 0 {
                if value.count > maxEventBytes { return .eventTooLarge }
                candidate = value
                candidateLineStart = s
            } else {
                if let c = candidate {
                    append(buf, c)
                    candidate = nil
                }
                if assembled.count + 1 + value.count > maxEventBytes { return .eventTooLarge }
                assembled.append(HTTPBytes.lf)
                append(buf, value)
            }
            dataLines += 1
        case 5 where Self.matches(buf, name, "event"):
            pendingType.removeAll(keepingCapacity: true)
            Self.append(buf, value, to: &pendingType)
        case 2 where Self.matches(buf, name, "id"):
            if HTTPBytes.firstIndex(of: 0, in: buf, from: value.lowerBound, to: value.upperBound) == nil {
                lastEventID.removeAll(keepingCapacity: true)
                Self.append(buf, value, to: &lastEventID)
            }
        case 5 where Self.matches(buf, name, "retry"):
            if let ms = HTTPFieldValue.decimal(in: buf, value) { reconnectionTime = ms }
        default:
            break // unknown fields are ignored
        }
        return nil
    }

    private mutating func append(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>) {
        Self.append(buf, range, to: &assembled)
    }

    private static func append(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>, to array: inout [UInt8]) {
        guard !range.isEmpty else { return }
        UnsafeRawBufferPointer(rebasing: buf[range]).withMemoryRebound(to: UInt8.self) { array.append(contentsOf: $0) }
    }

    /// Field names are case-sensitive (§9.2.6 compares them with "is").
    private static func matches(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>, _ name: StaticString) -> Bool {
        HTTPBytes.equals(buf, range, name)
    }
}
