import StampedeWire

/// Why an HTTP exchange ended without a complete response. After any of these the connection
/// cannot carry another request: message boundaries are lost, or the answer is abandoned.
public enum HTTPExchangeEnd: Sendable, Equatable {
    /// No response head by the first-byte deadline.
    case firstByteTimeout
    /// The response (head and body) was not complete by the whole-response deadline.
    case responseTimeout
    /// The response's bytes (head, body and chunk framing) exceed `maxResponseBytes`.
    case responseTooLarge
    /// The bytes are not an HTTP/1.1 response (RFC 9112), or its framing is broken.
    case invalidResponse(HTTPParseError)
    /// A `.events` body broke the event stream's limits.
    case invalidEventStream(SSEParseError)
    /// The connection closed before any byte of the response.
    case closedBeforeResponse
    /// The connection closed in the middle of the response.
    case closedMidResponse
    /// Bytes arrived while no request was outstanding: the peer is not answering our requests.
    case unsolicitedBytes
}

/// What the caller does with a response's body.
public enum HTTPExchangeBody: Sendable, Equatable {
    /// Consume it unread (only its size is bounded).
    case discard
    /// Report each de-framed piece as `.body` (a range of the buffer given).
    case pieces
    /// Keep it in `collectedBody`, available at `.complete` (a small body such as negotiate's).
    case collect
    /// Parse it as a Server-Sent Events stream and report each event (`.event`, `.heldEvent`).
    case events
}

/// What to do with a timer the exchange asked for.
public enum HTTPExchangeTimerStep: Sendable, Equatable {
    /// A stale deadline, or one that no longer matters: nothing to do.
    case nothing
    /// Arm a timer at this deadline and report it back when it passes.
    case armTimer(at: UInt64)
    /// The exchange timed out; close the connection.
    case ended(HTTPExchangeEnd)
}

/// One request/response exchange on a keep-alive HTTP/1.1 connection, as a value-type state
/// machine (see Session.swift for the conventions). The runtime renders and writes the request
/// itself (with `HTTPClientRequest` or its own prebuilt bytes), then tells the exchange with
/// `start`, feeds it the response bytes and pulls one action at a time with `next`.
///
/// The same value serves every exchange of a connection: after `.complete(reusable: true)` the
/// next `start` parses the next response; after `.complete(reusable: false)` or `.ended` the
/// connection must be closed, and a new connection starts with `reset()`.
///
/// Deadlines: `start` returns the first one to arm (the first-byte deadline, or the whole
/// response's if that comes first). When it passes the caller reports it with `timerFired`; if
/// the head has arrived by then the exchange asks for the whole-response deadline instead (one
/// timer per request rather than two). A deadline that is not the one the exchange waits for
/// is stale and ignored, so timers need not be cancelled.
public struct HTTPClientExchange: Sendable {
    /// Limits and timeouts for every exchange of the connection.
    public struct Configuration: Sendable {
        /// The head must have arrived this long after `start` (nil: no limit). "First byte" is
        /// the name users know; what is timed is the whole head, which is when the runtime can act.
        public var firstByteTimeoutNs: UInt64?
        /// The whole response must have arrived this long after `start` (nil: no limit).
        public var responseTimeoutNs: UInt64?
        /// Largest response accepted: head, body and chunk framing, counted as consumed.
        public var maxResponseBytes: Int
        /// Largest response head accepted (the parser's limit).
        public var maxHeadBytes: Int
        /// Largest event accepted in a `.events` body.
        public var maxEventBytes: Int
        /// One more header field whose value the head reports (`HTTPExchangeHead.watchedField`),
        /// found in the same walk over the fields; compared ignoring ASCII case.
        public var watchedField: [UInt8]?

        public init(firstByteTimeoutNs: UInt64? = nil, responseTimeoutNs: UInt64? = nil, maxResponseBytes: Int = .max,
                    maxHeadBytes: Int = 16 * 1024, maxEventBytes: Int = 1 << 20, watchedField: [UInt8]? = nil) {
            self.firstByteTimeoutNs = firstByteTimeoutNs
            self.responseTimeoutNs = responseTimeoutNs
            self.maxResponseBytes = max(0, maxResponseBytes)
            self.maxHeadBytes = maxHeadBytes
            self.maxEventBytes = maxEventBytes
            self.watchedField = watchedField
        }
    }

    /// One step of the response. Ranges index the buffer given to `next`; they stay valid until
    /// the caller drops the `consumed` bytes.
    public enum Action: Sendable, Equatable {
        /// Nothing more in these bytes; call again when more arrive.
        case needMore
        /// The final response head (1xx interim responses are skipped, RFC 9110 §15.2).
        case head(HTTPExchangeHead)
        /// A piece of the body (`.pieces`), chunk framing removed.
        case body(Range<Int>)
        /// A Server-Sent Event (`.events`) whose data is this range of the buffer.
        case event(Range<Int>)
        /// A Server-Sent Event (`.events`) whose data the exchange holds (`withHeldEvent`):
        /// it had several data lines or arrived across reads. Valid until the next call.
        case heldEvent
        /// The response is complete. `reusable`: the connection can carry the next request.
        case complete(reusable: Bool)
        /// The exchange failed; close the connection. Given once.
        case ended(HTTPExchangeEnd)
    }

    enum State: UInt8 { case idle, awaitingHead, body, failed }

    /// Where the data of a `.heldEvent` is.
    enum Held: Equatable { case none, assembled, carry(Range<Int>) }

    public let configuration: Configuration
    /// What is done with the current response's body. Set by `start`; the caller may change it
    /// when the head arrives (for example to collect only a 2xx body), before the next call.
    public var bodyHandling = HTTPExchangeBody.discard
    /// The current (or last) response's status; 0 until its head arrives.
    public private(set) var status = 0
    /// The body of the last `.collect` response; valid until the next `start`.
    public private(set) var collectedBody: [UInt8] = []
    /// The event-stream parser (its `eventType`, `lastEventID`, `reconnectionTime` describe the
    /// last event reported).
    public var eventParser: SSEParser { sse }

    var state = State.idle
    var parser: HTTPResponseParser
    var sse: SSEParser
    var responseBytes = 0
    var connectionClose = false
    /// The deadline the exchange waits for, and whether it is the whole-response one.
    var awaitedDeadline: UInt64? = nil
    var awaitingWholeDeadline = false
    var wholeDeadline: UInt64? = nil
    /// `.events`: bytes at the front of the next buffer that are the rest of a body piece the
    /// HTTP parser already consumed and the event parser has not.
    var pieceLeft = 0
    /// `.events`: body bytes the event parser has not consumed, copied out of the caller's
    /// buffer because an event continues in a later read; `carryStart` is its parse position.
    var carry: [UInt8] = []
    var carryStart = 0
    /// The event parser may have more events in `carry` (it has not yet asked for more).
    var carryPending = false
    var held = Held.none

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        parser = HTTPResponseParser(maxHeadBytes: configuration.maxHeadBytes)
        sse = SSEParser(maxEventBytes: configuration.maxEventBytes)
    }

    /// Whether a request is outstanding (started, not yet complete or ended).
    public var isInProgress: Bool { state == .awaitingHead || state == .body }

    /// Whether the response head has arrived for the exchange in progress.
    public var hasHead: Bool { state == .body }

    /// The deadline the exchange waits for, if any.
    public var deadline: UInt64? { awaitedDeadline }

    /// Forgets everything, for a new connection (keeps the configuration and the event
    /// stream's last event ID).
    public mutating func reset() {
        state = .idle
        parser.reset()
        sse.reset()
        status = 0
        responseBytes = 0
        connectionClose = false
        awaitedDeadline = nil
        wholeDeadline = nil
        clearEventState()
    }

    /// A request was written: expect its response. `method` matters only for HEAD, whose
    /// response has no body whatever its fields say (RFC 9112 §6.3 item 1). Returns the
    /// deadline to arm, if any. Only on an idle exchange (new, or after `.complete(reusable: true)`).
    public mutating func start(method: HTTPMethod = .get, body: HTTPExchangeBody = .discard, now: UInt64) -> UInt64? {
        precondition(state == .idle, "HTTPClientExchange.start while a response is outstanding or after a failure")
        state = .awaitingHead
        parser.nextResponseIsToHEAD = method == .head
        bodyHandling = body
        status = 0
        responseBytes = 0
        connectionClose = false
        collectedBody.removeAll(keepingCapacity: true)
        clearEventState()
        if body == .events { sse.reset() }
        let firstByte = configuration.firstByteTimeoutNs.map { now &+ $0 }
        wholeDeadline = configuration.responseTimeoutNs.map { now &+ $0 }
        switch (firstByte, wholeDeadline) {
        case (let f?, let w?):
            awaitedDeadline = min(f, w)
            awaitingWholeDeadline = w <= f
        case (let f?, nil):
            awaitedDeadline = f
            awaitingWholeDeadline = false
        case (nil, let w):
            awaitedDeadline = w
            awaitingWholeDeadline = true
        }
        return awaitedDeadline
    }

    /// A timer the exchange asked for has passed (`deadline` is the one it was armed at).
    public mutating func timerFired(deadline: UInt64, now: UInt64) -> HTTPExchangeTimerStep {
        guard isInProgress, let awaited = awaitedDeadline, deadline == awaited else { return .nothing }
        if !awaitingWholeDeadline && state == .body {
            // The head came in time; from now on only the whole response's deadline counts.
            awaitingWholeDeadline = true
            awaitedDeadline = wholeDeadline
            if let w = wholeDeadline { return .armTimer(at: w) }
            return .nothing
        }
        let end: HTTPExchangeEnd = state == .awaitingHead && !awaitingWholeDeadline ? .firstByteTimeout : .responseTimeout
        fail()
        return .ended(end)
    }

    /// The connection has closed, after every received byte was fed to `next` (until it
    /// answered `.needMore`). A body delimited by the close is complete; anything else cut
    /// short ends the exchange. Nil when no request was outstanding.
    public mutating func connectionClosed() -> Action? {
        guard isInProgress else { return nil }
        switch parser.endOfStream() {
        case .end?:
            finish()
            return .complete(reusable: false)
        case nil:
            fail()
            return .ended(.closedBeforeResponse)
        default:
            fail()
            return .ended(.closedMidResponse)
        }
    }

    /// The next action from `buffer`: everything received and not yet consumed, starting with
    /// the bytes left from the previous call. Act on it, drop `consumed` bytes, and call again
    /// (with what is left, even nothing) until it answers `.needMore`: a response that ends
    /// exactly at the end of the input is reported complete only when asked again.
    public mutating func next(_ buffer: UnsafeRawBufferPointer) -> (action: Action, consumed: Int) {
        switch state {
        case .idle: return buffer.isEmpty ? (.needMore, 0) : (end(.unsolicitedBytes), 0)
        case .failed: return (.needMore, 0)
        case .awaitingHead, .body: break
        }
        var offset = 0
        if bodyHandling == .events {
            if carryPending, let action = nextCarriedEvent() { return (action, 0) }
            if pieceLeft > 0 {
                let piece = 0..<pieceLeft
                pieceLeft = 0
                if let step = nextEvent(buffer, piece: piece) { return step }
                offset = piece.upperBound
            }
        } else if pieceLeft > 0 || !carry.isEmpty {
            // The caller stopped reading events mid-body: what the HTTP parser already consumed
            // is skipped, not parsed again.
            offset = pieceLeft
            clearEventState()
        }
        while true {
            let available = buffer.count - offset
            // In the body, the parser sees no byte beyond the size limit, so where the limit
            // falls does not depend on how the input was split (nor does what was reported).
            let visible = state == .body ? min(available, configuration.maxResponseBytes - responseBytes) : available
            let view = UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + visible)])
            let (event, used) = parser.next(view)
            let base = offset
            offset += used
            responseBytes += used
            if responseBytes > configuration.maxResponseBytes { return (end(.responseTooLarge), 0) }
            switch event {
            case .needMore:
                // The body decoder asks for more only once it has used up what it saw.
                if visible < available { return (end(.responseTooLarge), 0) }
                return (.needMore, offset)
            case .error(let e):
                return (end(.invalidResponse(e)), 0)
            case .head(let h):
                state = .body
                status = h.status
                connectionClose = h.connectionClose
                let facts = HTTPExchangeHead(h, in: view, watchedField: configuration.watchedField)
                return (.head(base == 0 ? facts : facts.shifted(by: base)), offset)
            case .body(let r):
                let piece = (base + r.lowerBound)..<(base + r.upperBound)
                switch bodyHandling {
                case .discard:
                    continue
                case .collect:
                    collectedBody.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[piece]))
                    continue
                case .pieces:
                    return (.body(piece), offset)
                case .events:
                    if !carry.isEmpty {
                        carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[piece]))
                        carryPending = true
                        guard let action = nextCarriedEvent() else { continue }
                        if case .ended = action { return (action, 0) }
                        return (action, offset)
                    }
                    if let step = nextEvent(buffer, piece: piece) { return step }
                    continue
                }
            case .end:
                finish()
                return (.complete(reusable: !connectionClose), offset)
            }
        }
    }

    /// The data of the last `.heldEvent`, until the next call.
    public func withHeldEvent<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch held {
        case .assembled: return try sse.assembled.withUnsafeBytes(body)
        case .carry(let r): return try carry.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[r])) }
        case .none: return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }

    // MARK: Internals

    private mutating func finish() {
        state = .idle
        awaitedDeadline = nil
        clearEventState()
    }

    private mutating func fail() {
        state = .failed
        awaitedDeadline = nil
    }

    private mutating func end(_ reason: HTTPExchangeEnd) -> Action {
        fail()
        return .ended(reason)
    }

    private mutating func clearEventState() {
        pieceLeft = 0
        carry.removeAll(keepingCapacity: true)
        carryStart = 0
        carryPending = false
        held = .none
    }
}
