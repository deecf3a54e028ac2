/// A declared message flow, compiled (the scenario's `websocket` section without its
/// handshake and secrets): what a connection does after the upgrade, what one scheduled message
/// is, and which rule takes each received frame. Pure data and pure functions over frames; a
/// connection's progress through it is `MessageFlowSession` (StampedeSession).
public struct MessageFlow: Sendable, Equatable {
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

    public init() {}

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
        /// Whether the rule has its own latency metric and counter (the built-in chat flow's
        /// one rule has not: chat reports `round_trip` and `fanout` only).
        public var hasOwnMetrics = true
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

    /// Where a received frame goes once the connect steps are done.
    public enum FrameClass: Sendable, Equatable {
        case reply(Int)
        case respond(Int)
        case ignore(Int)
        case unrecognised
    }

    /// The first rule that takes this frame: replies, then respond rules, then ignore rules.
    public func classify(_ payload: UnsafeRawBufferPointer, isText: Bool) -> FrameClass {
        for (i, rule) in replies.enumerated() where rule.match.holds(payload, isText: isText) { return .reply(i) }
        for (i, rule) in responds.enumerated() where rule.match.holds(payload, isText: isText) { return .respond(i) }
        for (i, rule) in ignores.enumerated() where rule.match.holds(payload, isText: isText) { return .ignore(i) }
        return .unrecognised
    }

    /// The sequence number a correlated reply names at `selector`: decimal text, or a big-endian
    /// integer for a byte selector. Nil when absent or not a number.
    public static func sequence(in payload: UnsafeRawBufferPointer, at selector: FieldSelector) -> UInt32? {
        guard let range = selector.extract(payload), !range.isEmpty else { return nil }
        var value: UInt64 = 0
        if case .bytes = selector {
            for i in range { value = value << 8 | UInt64(payload[i]) }
            return UInt32(truncatingIfNeeded: value)
        }
        guard range.count <= 10 else { return nil }
        for i in range {
            let c = payload[i]
            guard c >= 48 && c <= 57 else { return nil }
            value = value * 10 + UInt64(c - 48)
        }
        return value <= UInt64(UInt32.max) ? UInt32(value) : nil
    }

    /// A frame's stamp, where the rule says it is.
    public static func stamp(in payload: UnsafeRawBufferPointer, _ source: StampSource) -> MessageStamp? {
        switch source {
        case .search: return FlowStamp.search(payload)
        case .selector(let selector):
            guard let range = selector.extract(payload) else { return nil }
            return FlowStamp.parse(UnsafeRawBufferPointer(rebasing: payload[range]))
        }
    }
}

extension MessageTemplate {
    /// Whether the template writes a `{stamp}` (so a `stamp` reply rule can measure its message).
    public var carriesStamp: Bool {
        segments.contains { if case .placeholder(.stamp) = $0 { true } else if case .placeholder(.paddedStamp) = $0 { true } else { false } }
    }
}

extension MessageTemplate.Placeholder {
    /// The message's `{sequence}` in any of its encodings: what `correlate` ties a reply to.
    public var isSequence: Bool { self == .sequence || self == .sequenceU16 || self == .sequenceU32 }
}
