import Foundation
import Yams

// MARK: - Scalars

func isNull(_ node: Node) -> Bool {
    node.tag.rawValue == Tag.Name.null.rawValue
}

/// How a value appears in "got ..." messages.
func describe(_ node: Node) -> String {
    switch node {
    case .mapping: return "a mapping"
    case .sequence: return "a list"
    case .alias: return "an alias"
    case .scalar(let scalar):
        if isNull(node) { return "nothing" }
        let text = scalar.string
        return text.count > 60 ? "'\(text.prefix(57))...'" : "'\(text)'"
    }
}

func format(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
}

/// A non-negative decimal such as "12" or "1.5": no sign, exponent, or digit separators.
private func parseDecimal(_ text: some StringProtocol) -> Double? {
    let digits = text.filter { $0 != "." }
    guard !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit), text.count - digits.count <= 1 else { return nil }
    return Double(String(text))
}

/// Seconds from a duration as scenarios write it: "30s", "500ms", "2m", "1h", or plain seconds; nil if it is none.
public func parseDuration(_ text: String) -> Double? {
    let text = text.trimmingCharacters(in: .whitespaces)
    // "ms" must be tried before "m" and "s".
    let units: [(suffix: String, seconds: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
    for unit in units where text.hasSuffix(unit.suffix) {
        let amount = text.dropLast(unit.suffix.count).trimmingCharacters(in: .whitespaces)
        return parseDecimal(amount).map { $0 * unit.seconds }
    }
    return parseDecimal(text)
}

func parseByteSize(_ text: String) -> Int? {
    let text = text.trimmingCharacters(in: .whitespaces)
    // Longer suffixes first: "KiB" also ends in "B".
    let units: [(suffix: String, bytes: Double)] = [
        ("KiB", 1024), ("MiB", 1_048_576), ("GiB", 1_073_741_824),
        ("KB", 1000), ("MB", 1_000_000), ("GB", 1_000_000_000), ("B", 1),
    ]
    var amount: Double?
    if let unit = units.first(where: { text.hasSuffix($0.suffix) }) {
        amount = parseDecimal(text.dropLast(unit.suffix.count).trimmingCharacters(in: .whitespaces)).map { $0 * unit.bytes }
    } else {
        amount = parseDecimal(text)
    }
    guard let amount, amount == amount.rounded(), amount < 1e15 else { return nil }
    return Int(amount)
}

/// RFC 7230 `tchar`.
func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
    scalar.isASCII && (isAlphanumeric(scalar) || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar))
}

func isAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
    ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

// MARK: - Templates

struct TemplateProblem: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

private let templatePlaceholders = "{client}, {client%N}, {user}, {sequence}, and {stamp} as a whole argument"

/// Literal text with `{client}`, `{client%N}`, `{user}` and `{sequence}`; `{{` and `}}` are literal braces.
func parseTemplate(_ text: String) -> Result<[TemplatePart], TemplateProblem> {
    let scalars = Array(text.unicodeScalars)
    var parts: [TemplatePart] = []
    var literal = String.UnicodeScalarView()
    func flush() {
        if !literal.isEmpty {
            parts.append(.literal(String(literal)))
            literal = String.UnicodeScalarView()
        }
    }
    var index = 0
    while index < scalars.count {
        let scalar = scalars[index]
        let next = index + 1 < scalars.count ? scalars[index + 1] : nil
        if scalar == "{", next == "{" {
            literal.append("{")
            index += 2
        } else if scalar == "}", next == "}" {
            literal.append("}")
            index += 2
        } else if scalar == "}" {
            return .failure(TemplateProblem("unmatched '}' (write '}}' for a literal brace)"))
        } else if scalar == "{" {
            guard let close = scalars[(index + 1)...].firstIndex(of: "}") else {
                return .failure(TemplateProblem("unclosed '{' (write '{{' for a literal brace)"))
            }
            let name = String(String.UnicodeScalarView(scalars[(index + 1)..<close]))
            switch placeholder(name) {
            case .success(let part):
                flush()
                parts.append(part)
            case .failure(let problem):
                return .failure(problem)
            }
            index = close + 1
        } else {
            literal.append(scalar)
            index += 1
        }
    }
    flush()
    return .success(parts)
}

private func placeholder(_ name: String) -> Result<TemplatePart, TemplateProblem> {
    switch name {
    case "client": return .success(.client)
    case "user": return .success(.user)
    case "sequence": return .success(.sequence)
    case "stamp":
        return .failure(TemplateProblem("'{stamp}' must be the whole argument: give it as an argument of its own, \"{stamp}\""))
    default: break
    }
    if name.hasPrefix("client%") {
        let digits = name.dropFirst("client%".count)
        guard !digits.isEmpty, digits.count <= 7, digits.allSatisfy(\.isASCIIDigit), let modulus = Int(digits),
            (1...1_000_000).contains(modulus)
        else {
            return .failure(TemplateProblem("expected {client%N} with N from 1 to 1000000, got '{\(name)}'"))
        }
        return .success(.clientModulo(modulus))
    }
    var message = "unknown placeholder '{\(name)}'"
    if let suggestion = closestKey(to: name, in: ["client", "user", "sequence", "stamp"]) {
        message += "; did you mean '{\(suggestion)}'?"
    }
    return .failure(
        TemplateProblem(message + " (valid placeholders: \(templatePlaceholders); write '{{' and '}}' for literal braces)"))
}

// MARK: - Suggestions

/// The known key closest to a misspelt one, if within two edits (camelCase is compared as snake_case).
func closestKey(to key: String, in known: [String]) -> String? {
    let candidates = [key, snakeCased(key)]
    var best: (key: String, distance: Int)?
    for knownKey in known {
        let distance = candidates.map { editDistance($0, knownKey) }.min() ?? Int.max
        if distance <= 2, distance < (best?.distance ?? Int.max) {
            best = (knownKey, distance)
        }
    }
    return best?.key
}

private func snakeCased(_ text: String) -> String {
    var result = ""
    for character in text {
        if character.isUppercase {
            if !result.isEmpty { result += "_" }
            result += character.lowercased()
        } else {
            result.append(character == "-" ? "_" : character)
        }
    }
    return result
}

/// Levenshtein distance.
private func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    guard !a.isEmpty else { return b.count }
    guard !b.isEmpty else { return a.count }
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
        current[0] = i
        for j in 1...b.count {
            let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
            current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
        }
        swap(&previous, &current)
    }
    return previous[b.count]
}
