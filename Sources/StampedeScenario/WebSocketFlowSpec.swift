import StampedeWire

/// The `websocket` section (workload `websocket`): a declared message flow for a WebSocket
/// server with its own protocol, compiled at load (paths, matches and templates parsed once),
/// so the clients only evaluate it.
public struct WebSocketFlowSpec: Sendable, Equatable {
    /// Offered in `Sec-WebSocket-Protocol`, in order.
    public var subprotocols: [String] = []
    /// Extra upgrade headers; their values may name secrets (`Bearer {token}`).
    public var headers: [Scenario.Header] = []
    /// Named secrets, usable as `{name}` in templates and headers; never written to results or logs.
    public var secrets: [Secret] = []
    /// Capture names in the order their steps define them: a capture's slot is its index here.
    public var captures: [String] = []
    /// After the upgrade, in order; the client is connected when the last step is done.
    public var connect: [ConnectStep] = []
    /// What one scheduled message is; several entries are picked by weight.
    public var sends: [SendEntry] = []
    /// Measured replies: each received frame goes to the first rule whose match holds.
    public var replies: [ReplyRule] = []
    /// Frames answered at once and not measured (application keep-alives).
    public var responds: [RespondRule] = []
    /// Frames recognised and dropped (counted).
    public var ignores: [IgnoreRule] = []
    /// A scheduled message with no reply by then is lost (`no_reply`).
    public var replyTimeoutSeconds: Double = 10
    /// Who a stamped broadcast is due to, for the fan-out's expected count.
    public var fanout: FanoutRule = .none

    public init() {}

    /// A secret: its name in templates, and where its value comes from.
    public struct Secret: Sendable, Equatable {
        public var name: String
        public var source: TokenSource
        public init(name: String, source: TokenSource) { self.name = name; self.source = source }
    }

    public enum ConnectStep: Sendable, Equatable {
        case send(MessageTemplate)
        case expect(Expect)
    }

    /// A connect step that waits for a frame.
    public struct Expect: Sendable, Equatable {
        public var match: FrameMatch
        /// Values taken from the matching frame, by capture slot.
        public var captures: [Capture] = []
        public var timeoutSeconds: Double = 10
        /// Any other frame (not taken by a respond or ignore rule) fails the step at once
        /// (`expect_mismatch`) instead of being counted unrecognised while the step waits.
        public var strict = false
        /// The match as written, for the step's error counts ("$.op = auth_ok").
        public var text: String
        public init(match: FrameMatch, text: String) { self.match = match; self.text = text }
    }

    public struct Capture: Sendable, Equatable {
        public var slot: Int
        public var selector: FieldSelector
        public init(slot: Int, selector: FieldSelector) { self.slot = slot; self.selector = selector }
    }

    public struct SendEntry: Sendable, Equatable {
        public var template: MessageTemplate
        public var weight: Int
        public init(template: MessageTemplate, weight: Int = 1) { self.template = template; self.weight = weight }
    }

    public struct ReplyRule: Sendable, Equatable {
        /// Its latency metric's key (and `<name>_uncorrected`).
        public var name: String
        public var match: FrameMatch
        public var measure: Measure
        public init(name: String, match: FrameMatch, measure: Measure) { self.name = name; self.match = match; self.measure = measure }
    }

    /// How a reply is tied to the message it answers.
    public enum Measure: Sendable, Equatable {
        /// The reply's value at `received` is the `{sequence}` the message carried at `sent`
        /// (decimal text, or a big-endian integer for a binary selector).
        case correlate(sent: FieldSelector, received: FieldSelector)
        /// The reply carries a stamp: the client's own feeds `round_trip`, another client's `fanout`.
        case stamp(StampSource)
        /// Counted, not measured.
        case none
    }

    public enum StampSource: Sendable, Equatable {
        case selector(FieldSelector)
        /// Found anywhere in the frame by its marker.
        case search
    }

    public struct RespondRule: Sendable, Equatable {
        public var name: String
        public var match: FrameMatch
        public var template: MessageTemplate
        public init(name: String, match: FrameMatch, template: MessageTemplate) { self.name = name; self.match = match; self.template = template }
    }

    public struct IgnoreRule: Sendable, Equatable {
        public var name: String
        public var match: FrameMatch
        public init(name: String, match: FrameMatch) { self.name = name; self.match = match }
    }

    /// Who should receive another client's stamped message.
    public enum FanoutRule: Sendable, Equatable {
        /// Unknown (a server's own routing): no expected count, nothing reported missing.
        case none
        /// Every other connected client.
        case all
        /// Every other client for which this template renders the same text (`{client%10}`:
        /// the ten rooms); counted as if every client of the group were connected.
        case same(MessageTemplate)
    }

    /// The latency metric keys the flow records, in slot order: each measured reply's
    /// `<name>` and `<name>_uncorrected`, then `connect_flow`.
    public var latencyKeys: [String] {
        replies.filter { $0.measure != .none }.flatMap { [$0.name, $0.name + "_uncorrected"] } + ["connect_flow"]
    }

    /// The named counter keys, in slot order: every reply, respond and ignore rule.
    public var counterKeys: [String] {
        replies.map { "flow.\($0.name).matched" } + responds.map { "flow.respond.\($0.name)" } + ignores.map { "flow.ignore.\($0.name)" }
    }
}

extension WebSocketFlowSpec {
    /// The slots of `{name}` values as the clients keep them: the captures', then the secrets'.
    public var namedSlots: [String] { captures + secrets.map(\.name) }

    /// Points every template's `{name}` at its slot in `namedSlots` (the reader has checked every name).
    mutating func bindNames() {
        let slots = namedSlots
        func bind(_ t: inout MessageTemplate) { try? t.bindNames(toSlots: slots) }
        for i in connect.indices { if case .send(var t) = connect[i] { bind(&t); connect[i] = .send(t) } }
        for i in sends.indices { bind(&sends[i].template) }
        for i in responds.indices { bind(&responds[i].template) }
    }
}

extension MessageTemplate {
    /// Whether the template writes a `{stamp}` (so a `stamp` reply rule can measure its message).
    public var carriesStamp: Bool { segments.contains(.placeholder(.stamp)) }
}

extension MessageTemplate.Placeholder {
    /// The message's `{sequence}` in any of its encodings: what `correlate` ties a reply to.
    public var isSequence: Bool { self == .sequence || self == .sequenceU16 || self == .sequenceU32 }
}
