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
    /// The flow itself: connect steps, messages, and the rules that take received frames.
    public var flow = MessageFlow()
    /// A scheduled message with no reply by then is lost (`no_reply`).
    /// nil: a message waits for its reply until the drain ends (the chat protocol's way).
    public var replyTimeoutSeconds: Double? = 10
    /// Who a stamped broadcast is due to, for the fan-out's expected count.
    public var fanout: FanoutRule = .none

    public init() {}

    public typealias ConnectStep = MessageFlow.ConnectStep
    public typealias Expect = MessageFlow.Expect
    public typealias Capture = MessageFlow.Capture
    public typealias SendEntry = MessageFlow.SendEntry
    public typealias ReplyRule = MessageFlow.ReplyRule
    public typealias Measure = MessageFlow.Measure
    public typealias StampSource = MessageFlow.StampSource
    public typealias RespondRule = MessageFlow.RespondRule
    public typealias IgnoreRule = MessageFlow.IgnoreRule

    // The flow's parts, where the loader and the results read them.
    public var captures: [String] { get { flow.captures } set { flow.captures = newValue } }
    public var connect: [ConnectStep] { get { flow.connect } set { flow.connect = newValue } }
    public var sends: [SendEntry] { get { flow.sends } set { flow.sends = newValue } }
    public var replies: [ReplyRule] { get { flow.replies } set { flow.replies = newValue } }
    public var responds: [RespondRule] { get { flow.responds } set { flow.responds = newValue } }
    public var ignores: [IgnoreRule] { get { flow.ignores } set { flow.ignores = newValue } }

    /// A secret: its name in templates, and where its value comes from.
    public struct Secret: Sendable, Equatable {
        public var name: String
        public var source: TokenSource
        public init(name: String, source: TokenSource) { self.name = name; self.source = source }
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
        replies.filter { $0.measure != .none && $0.hasOwnMetrics }.flatMap { [$0.name, $0.name + "_uncorrected"] }
            + (connect.isEmpty ? [] : ["connect_flow"])
    }

    /// The named counter keys, in slot order: every reply, respond and ignore rule.
    public var counterKeys: [String] {
        replies.filter(\.hasOwnMetrics).map { "flow.\($0.name).matched" } + responds.map { "flow.respond.\($0.name)" } + ignores.map { "flow.ignore.\($0.name)" }
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

extension WebSocketFlowSpec {
    /// The chat protocol (`workload: chat`) as a declared flow: each message is the chat JSON
    /// `{"message","user","userID"}` whose text is the stamp padded to `messageSize` bytes (the
    /// userID stable per user, as a chat app's), and
    /// every broadcast's stamp is read back: the client's own is its round trip, anyone else's
    /// a fan-out. Its rule has no metrics of its own, so chat reports what it always has.
    public static func chat(messageSize: Int) -> WebSocketFlowSpec {
        var spec = WebSocketFlowSpec()
        // Both compile: the texts are fixed here, and every size a scenario allows fits `{stamp:N}`.
        if let template = try? MessageTemplate(text: #"{"message":"{stamp:\#(messageSize)}","user":"{user}","userID":"{user_uuid}"}"#) {
            spec.sends = [SendEntry(template: template)]
        }
        if let path = try? JSONPath(parsing: "$.message") {
            var rule = ReplyRule(name: "chat", match: FrameMatch([.contains(Array(#""message""#.utf8))]), measure: .stamp(.selector(.path(path))))
            rule.hasOwnMetrics = false
            spec.replies = [rule]
        }
        spec.fanout = .all
        spec.replyTimeoutSeconds = nil
        return spec
    }
}
