import StampedeWire

// The SignalR hub protocol above the transport (docs/protocols.md §3–§6), as a value type: the
// handshake, keep-alive and the server timeout, stateful reconnect's numbering, acknowledgement,
// replay and duplicate skipping, and the server's Close. The transport under it (WebSocket
// frames, an SSE event stream, long-poll bodies) hands it the hub bytes as one stream; what the
// messages mean (calls, streams, client results) is the workload's business.

/// How a hub protocol session ended. Ranges index the buffer given to the `next` call that
/// answered it.
public enum HubSessionEnd: Sendable, Equatable {
    /// The server answered the handshake with `{"error":"…"}` (§3): the error text's contents.
    case handshakeRejected(error: Range<Int>)
    /// Not a handshake response (§3): invalid JSON, a hub message, a non-string error, or no
    /// 0x1E within the message size limit.
    case handshakeInvalid
    /// A message that breaks the protocol (§7), or one over the message size limit.
    case protocolError(HubProtocolError)
    /// Stateful reconnect: the server's Sequence is above the next id we expect (§6).
    case sequenceAhead
    /// The server's Close message (§4): its error text, and whether it allows reconnecting (§6).
    case closedByServer(error: Range<Int>?, allowReconnect: Bool)
    /// Nothing received for the server timeout (§5).
    case serverTimeout
}

/// One step of reading received hub bytes.
public enum HubSessionAction: Sendable, Equatable {
    /// No complete message (or handshake response) at the start of the buffer.
    case needMore
    /// The server accepted the handshake; hub messages follow.
    case handshakeCompleted
    /// A message of types 1–5 for the workload. Its ranges index the buffer given; with stateful
    /// reconnect it is new (not a replay of one already delivered).
    case message(HubMessage)
    /// A message the session consumed itself: Ping, Ack, Sequence, an unknown type, a replayed
    /// duplicate, or a numbered message before the server's Sequence after a resume.
    case skipped
    /// The session ended (given once); the caller closes the transport.
    case ended(HubSessionEnd)
}

/// What to do with a message the caller asked the session to send.
public enum HubSendResult: Sendable, Equatable {
    /// Write `out[0..<count]` on the transport now.
    case write(count: Int)
    /// Kept in the replay buffer only: the transport is being reopened, and the message goes
    /// out with the replay after the resume (§6).
    case held
    /// Nothing to send: the message did not fit `out`, or, while resuming, it did not fit the
    /// replay buffer's cap (it was neither numbered nor kept).
    case notSent
}

/// What one keep-alive check asks for (§5, §6): at most a Ping and an Ack, written one after
/// the other into the caller's buffer, each to be sent as its own transport message.
public struct HubKeepAliveStep: Sendable, Equatable {
    /// Nothing was received for the server timeout: the session ended with `.serverTimeout`.
    public var serverTimedOut = false
    /// A Ping's bytes in the buffer given.
    public var ping: Range<Int>? = nil
    /// An Ack's bytes in the buffer given (stateful reconnect).
    public var ack: Range<Int>? = nil

    public init(serverTimedOut: Bool = false, ping: Range<Int>? = nil, ack: Range<Int>? = nil) {
        self.serverTimedOut = serverTimedOut; self.ping = ping; self.ack = ack
    }
}

/// The hub protocol of one client connection, generic over the hub protocol codec (JSON or
/// MessagePack) so the per-message path is specialised.
///
/// Receiving follows `WebSocketReceiver`: the caller keeps the hub bytes received so far (one
/// stream, whatever transport messages carried them), calls `next`, acts on the answer, drops
/// `consumed` bytes and asks again until `.needMore`. Sending: the caller writes a message with
/// the codec's writers through `send` (types 1–5, which stateful reconnect numbers) or asks the
/// session for its own messages (handshake, Ping, Ack, Sequence, Close).
public struct HubProtocolSession<Codec: HubProtocolCodec> {
    public struct Configuration: Sendable {
        /// Largest hub message (and handshake response) accepted, framing excluded.
        public var maxMessageLength: Int
        /// Send a Ping after this long without sending anything (§5).
        public var keepAliveIntervalNs: UInt64
        /// End after this long without receiving anything (§5).
        public var serverTimeoutNs: UInt64
        /// False on long polling, which has neither pings nor the server timeout (§2, §5).
        public var keepAlive: Bool
        /// Most bytes of unacknowledged messages kept for replay (stateful reconnect, §6).
        public var maxReplayBytes: Int

        public init(maxMessageLength: Int, keepAliveIntervalNs: UInt64 = 15_000_000_000, serverTimeoutNs: UInt64 = 30_000_000_000,
                    keepAlive: Bool = true, maxReplayBytes: Int = 8 << 20) {
            self.maxMessageLength = maxMessageLength; self.keepAliveIntervalNs = keepAliveIntervalNs
            self.serverTimeoutNs = serverTimeoutNs; self.keepAlive = keepAlive; self.maxReplayBytes = maxReplayBytes
        }
    }

    enum State: UInt8 { case awaitingHandshake, open, ended }

    public let configuration: Configuration
    var state = State.awaitingHandshake
    /// Negotiate agreed to stateful reconnect and the handshake asked for version 2 (§6).
    public private(set) var isStateful = false
    /// The transport dropped and is being reopened with the same id; the connection stays up.
    public private(set) var isResuming = false
    /// When a hub message was last sent and when data was last received (§5).
    public private(set) var lastSentNs: UInt64 = 0
    public private(set) var lastReceivedNs: UInt64 = 0
    /// Stateful reconnect's bookkeeping (§6), made when the handshake asks for stateful
    /// reconnect (or at its first write): a session without it carries one nil reference.
    /// Copied before a write when shared, so the session keeps value semantics.
    var book: HubStatefulBook? = nil

    /// Numbered messages (types 1–5) sent and received on this logical connection (§6).
    public private(set) var sentSequence: UInt64 {
        get { book?.sentSequence ?? 0 }
        _modify { yield &writableBook.sentSequence }
    }
    public private(set) var receivedSequence: UInt64 {
        get { book?.receivedSequence ?? 0 }
        _modify { yield &writableBook.receivedSequence }
    }
    var ackedReceived: UInt64 {
        get { book?.ackedReceived ?? 0 }
        _modify { yield &writableBook.ackedReceived }
    }
    /// The unacknowledged numbered messages, back to back; `replayEnds[i]` is where message
    /// `replayFirstId + i` ends (ids are consecutive).
    var replay: [UInt8] {
        get { book?.replay ?? [] }
        _modify { yield &writableBook.replay }
    }
    var replayEnds: [Int] {
        get { book?.replayEnds ?? [] }
        _modify { yield &writableBook.replayEnds }
    }
    var replayFirstId: UInt64 {
        get { book?.replayFirstId ?? 1 }
        _modify { yield &writableBook.replayFirstId }
    }
    /// A numbered message did not fit the replay cap while the transport was up: the replay
    /// has a hole, so this connection can no longer resume.
    public private(set) var replayOverflowed: Bool {
        get { book?.replayOverflowed ?? false }
        _modify { yield &writableBook.replayOverflowed }
    }
    /// After a resume, numbered messages before the server's Sequence are ignored; then the
    /// replays of messages already received are skipped (§6).
    var awaitingSequence: Bool {
        get { book?.awaitingSequence ?? false }
        _modify { yield &writableBook.awaitingSequence }
    }
    var duplicatesToSkip: UInt64 {
        get { book?.duplicatesToSkip ?? 0 }
        _modify { yield &writableBook.duplicatesToSkip }
    }

    /// The book, made now if there is none, copied first if another session shares it.
    var writableBook: HubStatefulBook {
        mutating get {
            if !isKnownUniquelyReferenced(&book) { book = book.map(HubStatefulBook.init(copying:)) ?? HubStatefulBook() }
            if let b = book { return b }
            let made = HubStatefulBook()
            book = made
            return made
        }
    }

    public init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    /// The handshake completed and the session has not ended.
    public var isOpen: Bool { state == .open }
    public var hasEnded: Bool { state == .ended }

    /// How many unacknowledged messages are kept for replay, and their bytes.
    public var replayCount: Int { replayEnds.count }
    public var replayBytes: Int { replay.count }

    // MARK: Handshake

    /// Writes the handshake request (§3), JSON whatever the hub protocol; version 2 asks for
    /// stateful reconnect, which only WebSockets after a negotiate that agreed to it may do.
    public mutating func handshakeRequest(statefulReconnect: Bool, now: UInt64, into out: UnsafeMutableRawBufferPointer) -> Int? {
        isStateful = statefulReconnect
        // The bookkeeping exists only when stateful reconnect is asked for, made here rather
        // than on the first message.
        if statefulReconnect { _ = writableBook } else { book = nil }
        guard let n = HubHandshake.writeRequest(protocolName: Codec.protocolName, version: statefulReconnect ? 2 : 1, into: out) else { return nil }
        lastSentNs = now
        return n
    }

    // MARK: Receiving

    /// Data arrived on the transport (any, even a partial message): the server timeout starts
    /// again (§5). Also after a stall ends, so a client that stopped reading judges from then.
    public mutating func dataReceived(now: UInt64) {
        lastReceivedNs = now
    }

    /// Reads the handshake response or the hub message at the start of `buffer`. After an
    /// answer other than `.needMore` and `.ended`, drop `consumed` bytes and ask again.
    public mutating func next(_ buffer: UnsafeRawBufferPointer) -> (action: HubSessionAction, consumed: Int) {
        switch state {
        case .ended:
            return (.needMore, 0)
        case .awaitingHandshake:
            // The handshake counts against the message size limit too (§5), judged as for a
            // JSON record so that where the input was split does not change the answer.
            guard let length = JSONHubProtocol.recordLength(buffer) else {
                return buffer.count > configuration.maxMessageLength ? end(.handshakeInvalid) : (.needMore, 0)
            }
            if length - 1 > configuration.maxMessageLength { return end(.handshakeInvalid) }
            switch HubHandshake.parseResponse(UnsafeRawBufferPointer(rebasing: buffer[0..<length])) {
            case .needMore:
                return (.needMore, 0)
            case .success(let consumed):
                state = .open
                return (.handshakeCompleted, consumed)
            case .error(let error):
                return end(.handshakeRejected(error: error))
            case .invalid:
                return end(.handshakeInvalid)
            }
        case .open:
            if buffer.isEmpty { return (.needMore, 0) }
            switch Codec.parse(buffer, maxMessageLength: configuration.maxMessageLength) {
            case .needMore:
                return (.needMore, 0)
            case .failure(let error):
                return end(.protocolError(error))
            case .message(let message, let consumed):
                return (received(message), consumed)
            }
        }
    }

    mutating func end(_ how: HubSessionEnd) -> (action: HubSessionAction, consumed: Int) {
        state = .ended
        return (.ended(how), 0)
    }

    /// Stateful bookkeeping, then what the message is for.
    mutating func received(_ m: HubMessage) -> HubSessionAction {
        let numbered = m.type >= HubMessageType.invocation.rawValue && m.type <= HubMessageType.cancelInvocation.rawValue
        if isStateful {
            if numbered {
                if awaitingSequence { return .skipped }
                if duplicatesToSkip > 0 { duplicatesToSkip -= 1; return .skipped }
                receivedSequence += 1
            } else if m.type == HubMessageType.ack.rawValue {
                acknowledge(upTo: m.sequenceId)
                return .skipped
            } else if m.type == HubMessageType.sequence.rawValue {
                let expected = receivedSequence + 1
                guard m.sequenceId <= expected else { return end(.sequenceAhead).action }
                awaitingSequence = false
                duplicatesToSkip = expected - m.sequenceId
                return .skipped
            }
        }
        if numbered { return .message(m) }
        if m.type == HubMessageType.close.rawValue {
            return end(.closedByServer(error: m.error, allowReconnect: m.allowReconnect)).action
        }
        return .skipped
    }

    // MARK: Keep-alive

    /// When the next keep-alive check has something to do: the Ping falls due or the server
    /// timeout passes. nil before the handshake, after the end, or without keep-alive.
    public var keepAliveDeadline: UInt64? {
        guard state == .open, configuration.keepAlive else { return nil }
        return min(lastSentNs &+ configuration.keepAliveIntervalNs, lastReceivedNs &+ configuration.serverTimeoutNs)
    }

    /// A keep-alive check at `now` (the caller checks about once a second, which also paces
    /// the Acks, coalesced as §6 describes). A check whose deadline went by without effect —
    /// something was sent or received since it was asked for — finds nothing due.
    public mutating func keepAliveCheck(now: UInt64, into out: UnsafeMutableRawBufferPointer) -> HubKeepAliveStep {
        var step = HubKeepAliveStep()
        guard state == .open, configuration.keepAlive else { return step }
        if now >= lastReceivedNs && now - lastReceivedNs >= configuration.serverTimeoutNs {
            state = .ended
            step.serverTimedOut = true
            return step
        }
        var used = 0
        if now >= lastSentNs && now - lastSentNs >= configuration.keepAliveIntervalNs,
           let n = Codec.writePing(into: out) {
            lastSentNs = now
            step.ping = 0..<n
            used = n
        }
        if isStateful && !isResuming && receivedSequence > ackedReceived {
            let id = receivedSequence
            ackedReceived = id
            if let n = Codec.writeAck(into: UnsafeMutableRawBufferPointer(rebasing: out[used...]), sequenceId: id) {
                lastSentNs = now
                step.ack = used..<(used + n)
            }
        }
        return step
    }

    // MARK: Sending

    /// Sends a message of types 1–5 that `write` puts at the start of `out` (returning its
    /// length, or nil when it does not fit). With stateful reconnect it is numbered and kept
    /// until the server acknowledges it; while the transport is being reopened it waits there.
    @inline(__always)
    public mutating func send(now: UInt64, into out: UnsafeMutableRawBufferPointer,
                              _ write: (UnsafeMutableRawBufferPointer) -> Int?) -> HubSendResult {
        guard let n = write(out) else { return .notSent }
        return send(UnsafeRawBufferPointer(rebasing: out[0..<n]), now: now)
    }

    /// Sends a message of types 1–5 the caller already wrote; `.write(count:)` is its whole
    /// length. For callers whose writing reads state the session's owner would be borrowing.
    public mutating func send(_ message: UnsafeRawBufferPointer, now: UInt64) -> HubSendResult {
        if isStateful {
            if !keepForReplay(message) { return .notSent }
            sentSequence += 1
            if isResuming { return .held }
        }
        lastSentNs = now
        return .write(count: message.count)
    }

    /// Keeps a numbered message for replay; false when it must not be sent at all.
    mutating func keepForReplay(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if replayOverflowed { return true }
        guard replay.count + bytes.count <= configuration.maxReplayBytes else {
            // While resuming there is no way to send it other than the replay: it is dropped
            // before being numbered, so the numbering stays the server's.
            if isResuming { return false }
            replayOverflowed = true
            replay = []
            replayEnds = []
            return true
        }
        if replayEnds.isEmpty { replayFirstId = sentSequence + 1 }
        replay.append(contentsOf: bytes)
        replayEnds.append(replay.count)
        return true
    }

    /// The Close message (§4) a client sends before closing its transport. The session keeps
    /// reading: the server may still answer what was in flight.
    public mutating func close(now: UInt64, into out: UnsafeMutableRawBufferPointer) -> Int? {
        guard let n = Codec.writeClose(into: out, error: nil, allowReconnect: false) else { return nil }
        lastSentNs = now
        return n
    }

    // MARK: Stateful reconnect

    /// Drops the replay-buffered messages the server acknowledged (§6).
    mutating func acknowledge(upTo id: UInt64) {
        guard !replayEnds.isEmpty, id >= replayFirstId else { return }
        let dropCount = Int(min(id - replayFirstId + 1, UInt64(replayEnds.count)))
        let dropBytes = replayEnds[dropCount - 1]
        replay.removeFirst(dropBytes)
        replayEnds.removeFirst(dropCount)
        for i in replayEnds.indices { replayEnds[i] -= dropBytes }
        replayFirstId += UInt64(dropCount)
    }

    /// Whether a dropped transport can be reopened with the same id instead of reconnecting:
    /// stateful, past the handshake, not already resuming, and the replay is whole.
    public var canResume: Bool { isStateful && state == .open && !isResuming && !replayOverflowed }

    /// The transport dropped and is being reopened (§6): numbered messages wait in the replay
    /// buffer, and those received before the server's Sequence will be ignored.
    public mutating func beginResume() {
        isResuming = true
        awaitingSequence = true
    }

    /// The transport is back: writes the Sequence that tells the server where our numbering
    /// resumes (the oldest unacknowledged id, or the next one). Then send `forEachReplayMessage`.
    public mutating func resumed(now: UInt64, into out: UnsafeMutableRawBufferPointer) -> Int? {
        isResuming = false
        let first = replayEnds.isEmpty ? sentSequence + 1 : replayFirstId
        guard let n = Codec.writeSequence(into: out, sequenceId: first) else { return nil }
        lastSentNs = now
        return n
    }

    /// Calls `body` with each unacknowledged message, oldest first, for the replay after a
    /// resume (each its own transport message, as when it was first sent).
    public func forEachReplayMessage(_ body: (UnsafeRawBufferPointer) -> Void) {
        replay.withUnsafeBytes { bytes in
            var start = 0
            for end in replayEnds {
                body(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
                start = end
            }
        }
    }
}

/// Stateful reconnect's bookkeeping for one `HubProtocolSession` (§6): sequence numbers, the
/// replay buffer of unacknowledged messages and the resume's skipping.
final class HubStatefulBook {
    var sentSequence: UInt64 = 0
    var receivedSequence: UInt64 = 0
    var ackedReceived: UInt64 = 0
    var replay: [UInt8] = []
    var replayEnds: [Int] = []
    var replayFirstId: UInt64 = 1
    var replayOverflowed = false
    var awaitingSequence = false
    var duplicatesToSkip: UInt64 = 0

    init() {}

    init(copying o: HubStatefulBook) {
        sentSequence = o.sentSequence; receivedSequence = o.receivedSequence; ackedReceived = o.ackedReceived
        replay = o.replay; replayEnds = o.replayEnds; replayFirstId = o.replayFirstId
        replayOverflowed = o.replayOverflowed; awaitingSequence = o.awaitingSequence; duplicatesToSkip = o.duplicatesToSkip
    }
}
