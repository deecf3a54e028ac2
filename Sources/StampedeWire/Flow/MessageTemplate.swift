/// A compiled message template: literal bytes and placeholders, parsed once by the scenario
/// loader and rendered per send by `render(into:_:)` without allocating.
///
/// Text templates: `{stamp}`, `{client}`, `{client%N}`, `{sequence}`, `{user}`, `{uuid}`,
/// `{random_hex:N}`, and any other `{name}` as a capture or secret (`.named`, checked by
/// `bindNames`). `{{` writes `{`, and the first `}` after it is taken as its partner (`{{x}}`
/// and `{{x}` both write `{x}`); any other `}` is literal, so JSON's `}}` stays `}}`. A `{` not
/// followed by a letter or `_` is literal, so JSON needs no escaping.
///
/// Binary templates: hex bytes (whitespace between bytes ignored) and fixed-width
/// `{sequence:u16}`, `{sequence:u32}`, `{client:u16}`, `{client:u32}` (big-endian, truncated to
/// the width), `{stamp}` (`FlowStamp`'s 28 bytes), `{random:N}` (N random bytes).
public struct MessageTemplate: Sendable, Equatable {
    public enum Encoding: Sendable, Equatable { case text, binary }

    public enum Placeholder: Sendable, Equatable {
        case stamp, client, clientModulo(Int), sequence, user, uuid, randomHex(Int)
        /// `{stamp:N}`: the text stamp, then `x` up to N bytes (a message text of a fixed size).
        case paddedStamp(Int)
        /// `{user_uuid}`: a UUID made from the `{user}` name: the same for a client all run long,
        /// another for the user who takes its place after churn (a chat app's userID).
        case userUUID
        case sequenceU16, sequenceU32, clientU16, clientU32, randomBytes(Int)
        /// A capture or a secret (text only).
        case named(String)
    }

    public enum Segment: Sendable, Equatable {
        case literal([UInt8])
        case placeholder(Placeholder)
    }

    /// Names the template language gives a meaning; a capture or secret must not take one.
    public static let builtinNames = ["stamp", "client", "sequence", "user", "user_uuid", "uuid", "random_hex", "random"]

    public let encoding: Encoding
    public let segments: [Segment]
    /// The `.named` placeholders' names, each once, in order of first use.
    public let namedPlaceholders: [String]

    /// `segments` flattened for rendering, one op per segment: trivial values (no reference
    /// counting in the render loop), literals as ranges of `literalBytes`.
    var ops: [Op]
    let literalBytes: [UInt8]
    /// Column of each `namedPlaceholders` entry's first use, for `bindNames`' error.
    let namedColumns: [Int]

    enum Op: Sendable, Equatable {
        case literal(start: Int, count: Int)
        case textStamp, paddedTextStamp(Int), userUUID, binaryStamp, client, clientModulo(Int), sequence, user, uuid, randomHex(Int)
        case sequenceU16, sequenceU32, clientU16, clientU32, randomBytes(Int)
        case named(slot: Int)
    }

    /// Compiles a text template. Unknown names become `.named`: the loader checks them with `bindNames`.
    public init(text: String) throws(FlowSyntaxError) {
        try self.init(parsing: Array(text.utf8), encoding: .text)
    }

    /// Compiles a binary template written in hex.
    public init(binaryHex: String) throws(FlowSyntaxError) {
        try self.init(parsing: Array(binaryHex.utf8), encoding: .binary)
    }

    /// Points every `.named` placeholder at its index in `slots` (the scenario's secrets and
    /// captures, in the order the workload keeps their values in `TemplateValues.named`).
    /// Until this is called a name's slot is its index in `namedPlaceholders`.
    /// Throws `.undeclaredName` for the first name `slots` does not have.
    public mutating func bindNames(toSlots slots: [String]) throws(FlowSyntaxError) {
        var slotOf: [Int] = []
        for (k, name) in namedPlaceholders.enumerated() {
            guard let s = slots.firstIndex(of: name) else { throw .undeclaredName(name, column: namedColumns[k]) }
            slotOf.append(s)
        }
        for (k, segment) in segments.enumerated() {
            if case .placeholder(.named(let name)) = segment, let local = namedPlaceholders.firstIndex(of: name) {
                ops[k] = .named(slot: slotOf[local])
            }
        }
    }

    init(parsing b: [UInt8], encoding: Encoding) throws(FlowSyntaxError) {
        var parser = TemplateParser(bytes: b, encoding: encoding)
        try parser.run()
        self.encoding = encoding
        self.segments = parser.segments
        var ops: [Op] = [], literals: [UInt8] = [], names: [String] = [], columns: [Int] = []
        for (k, segment) in parser.segments.enumerated() {
            switch segment {
            case .literal(let bytes):
                ops.append(.literal(start: literals.count, count: bytes.count))
                literals += bytes
            case .placeholder(.named(let name)):
                if !names.contains(name) { names.append(name); columns.append(parser.columns[k]) }
                ops.append(.named(slot: names.firstIndex(of: name) ?? 0))
            case .placeholder(let p):
                ops.append(Self.op(p, encoding))
            }
        }
        self.ops = ops
        self.literalBytes = literals
        self.namedPlaceholders = names
        self.namedColumns = columns
    }

    static func op(_ p: Placeholder, _ encoding: Encoding) -> Op {
        switch p {
        case .stamp: encoding == .text ? .textStamp : .binaryStamp
        case .paddedStamp(let n): .paddedTextStamp(n)
        case .userUUID: .userUUID
        case .client: .client
        case .clientModulo(let n): .clientModulo(n)
        case .sequence: .sequence
        case .user: .user
        case .uuid: .uuid
        case .randomHex(let n): .randomHex(n)
        case .sequenceU16: .sequenceU16
        case .sequenceU32: .sequenceU32
        case .clientU16: .clientU16
        case .clientU32: .clientU32
        case .randomBytes(let n): .randomBytes(n)
        case .named: .named(slot: 0)
        }
    }
}
