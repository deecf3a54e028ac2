import Yams

extension ScenarioLoader {
    /// A scenario field given on the command line (`--clients 200`).
    ///
    /// The value is placed into the parsed document as if it were written in the file, as a plain
    /// YAML scalar, so it meets exactly the checks of the field it replaces (ranges, units,
    /// cross-field rules such as events inside the duration). A problem with it names the flag.
    public struct Override: Sendable, Equatable {
        /// The flag as the user typed it, for messages: `--clients`.
        public var flag: String
        /// The top-level scenario field it replaces: `clients`.
        public var field: String
        /// The text after the flag, as given.
        public var value: String

        public init(flag: String, field: String, value: String) {
            self.flag = flag
            self.field = field
            self.value = value
        }

        /// The `stampede run` flags that replace a scenario field, with the field each replaces.
        public static let fieldsByFlag: [String: String] = ["--target": "target", "--clients": "clients", "--duration": "duration"]

        /// The override a flag makes, or nil when the flag replaces no scenario field.
        public init?(flag: String, value: String) {
            guard let field = Self.fieldsByFlag[flag] else { return nil }
            self.init(flag: flag, field: field, value: value)
        }
    }

    /// The document with each override's field replaced, or added when the file leaves it out.
    ///
    /// The new value nodes carry no source mark: that is how the reader tells them from the
    /// file's own values when it reports a problem.
    static func applying(_ overrides: [Override], to mapping: Node.Mapping) -> Node {
        var pairs = mapping.map { ($0.key, $0.value) }
        for o in overrides {
            // A plain scalar resolves like one in the file: "5" is an int, "5s" a string, ".nan" a float.
            let value = Node(o.value, .implicit, .plain)
            if let i = pairs.firstIndex(where: { $0.0.string == o.field }) {
                pairs[i].1 = value
            } else {
                pairs.append((Node(o.field), value))
            }
        }
        return .mapping(Node.Mapping(pairs, mapping.tag, mapping.style, mapping.mark))
    }
}
