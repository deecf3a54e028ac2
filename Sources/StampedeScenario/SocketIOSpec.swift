import StampedeWire

/// The `socketio` section (workload `socketio`): Socket.IO 5 clients over Engine.IO 4, compiled
/// at load (templates and paths parsed once), so the clients only render and read them.
public struct SocketIOSpec: Sendable, Equatable {
    /// An Engine.IO transport.
    public enum Transport: String, Sendable, Equatable, CaseIterable {
        case polling, websocket
    }

    /// The Engine.IO endpoint's path (the official client's default).
    public var path = "/socket.io/"
    /// The namespace every client connects to ("/" is the main one).
    public var namespace = "/"
    /// `[polling, websocket]`: long polling, then the upgrade (the official client's default);
    /// `[websocket]` or `[polling]`: that transport only.
    public var transports: [Transport] = [.polling, .websocket]
    /// The CONNECT packet's auth payload, a JSON object (nil: none).
    public var auth: MessageTemplate? = nil
    /// Named secrets, usable as `{name}` in `auth` and emits; never written to results or logs.
    public var secrets: [WebSocketFlowSpec.Secret] = []
    /// Emits sent once the namespace is connected, in order (each waits for its ack when it asks for one).
    public var connect: [Emit] = []
    /// The scheduled message (nil: the clients only hold their connections).
    public var emit: Emit? = nil
    /// The event whose stamps measure `round_trip` (own) and `fanout` (other clients').
    public var receive: Receive? = nil
    /// After a drop: `default` is the official client's (`ReconnectSpec.socketIODefault`).
    public var reconnect: ReconnectSpec = .socketIODefault
    /// An emit that asked for an ack and has none by then is lost (`no_reply`).
    public var ackTimeoutSeconds: Double = 10

    public init() {}

    /// One emit: an event with its arguments, optionally asking for an ack.
    public struct Emit: Sendable, Equatable {
        /// The event's name (also the first element of `data`).
        public var event: String
        /// The whole JSON array `["event", args…]`, with a `{"_placeholder":true,"num":i}` per
        /// binary attachment after the arguments.
        public var data: MessageTemplate
        /// Ask for an ack: the packet carries an ack id, and the ack's arrival is measured (`ack`).
        public var ack: Bool
        /// Binary attachments, in order: sent as BINARY_EVENT with one binary message each.
        public var binary: [MessageTemplate]

        public init(event: String, data: MessageTemplate, ack: Bool = false, binary: [MessageTemplate] = []) {
            self.event = event; self.data = data; self.ack = ack; self.binary = binary
        }

        /// Whether the emit carries a `{stamp}` (in its arguments or an attachment).
        public var carriesStamp: Bool { data.carriesStamp || binary.contains { $0.carriesStamp } }
    }

    /// Received events of one name, whose stamp is read at a path.
    public struct Receive: Sendable, Equatable {
        public var event: String
        /// Where the stamp is, over the whole data array: the scenario's `$[0].text` (the first
        /// argument's) is `$[1].text` here. nil: the events are counted, not measured.
        public var stamp: JSONPath?

        public init(event: String, stamp: JSONPath? = nil) { self.event = event; self.stamp = stamp }
    }

    /// The slots of `{name}` values as the clients keep them: the secrets'.
    public var namedSlots: [String] { secrets.map(\.name) }

    /// Points every template's `{name}` at its slot in `namedSlots` (the reader has checked every name).
    mutating func bindNames() {
        let slots = namedSlots
        func bind(_ t: inout MessageTemplate) { try? t.bindNames(toSlots: slots) }
        func bindEmit(_ e: inout Emit) {
            bind(&e.data)
            for i in e.binary.indices { bind(&e.binary[i]) }
        }
        if var a = auth { bind(&a); auth = a }
        for i in connect.indices { bindEmit(&connect[i]) }
        if var e = emit { bindEmit(&e); emit = e }
    }
}
