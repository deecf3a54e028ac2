import Foundation
import StampedeScenario
import StampedeWire
import Testing
import Yams

/// The scenario JSON Schema (docs/stampede.schema.json): `stampede schema` prints exactly the
/// docs file, every scenario in the repository meets it, and it agrees with the loader, judged
/// by Python's `jsonschema` (venv `schema`, Tests/peers/schema_check.py).
@Suite(.serialized)
struct SchemaTests {
    static let docsFile = repositoryRoot.appendingPathComponent("docs/stampede.schema.json")

    /// STAMPEDE_UPDATE_FIXTURES=1 rewrites the docs file from the binary's text (its source is
    /// Sources/StampedeScenario/stampede.schema.json).
    @Test func stampedeSchemaPrintsTheDocsFileByteForByte() throws {
        let r = try runProcess(stampedeBinary.path, ["schema"], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == ScenarioSchema.text)
        if ProcessInfo.processInfo.environment["STAMPEDE_UPDATE_FIXTURES"] == "1" {
            try Data(r.stdout.utf8).write(to: Self.docsFile)
        }
        #expect(try Data(contentsOf: Self.docsFile) == Data(r.stdout.utf8), "docs/stampede.schema.json differs from `stampede schema`")
    }

    @Test func everyScenarioInTheRepositoryMeetsTheSchema() throws {
        let folder = repositoryRoot.appendingPathComponent("scenarios")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".yaml") }.sorted()
        #expect(files.count > 20)
        var inputs: [(id: String, json: String)] = []
        for name in files {
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            #expect(text.hasPrefix("# yaml-language-server: $schema=../docs/stampede.schema.json\n"), "\(name) lacks the schema line")
            inputs.append((name, try #require(Self.json(yaml: text), "\(name) is not YAML")))
        }
        for (id, verdict) in try Self.validate(inputs) {
            #expect(verdict.valid, "\(id): \(verdict.error ?? "")")
        }
    }

    /// The loader refusals a schema cannot express, by category (the start of the loader's
    /// message, or its field), so the agreement below skips them as kinds, never case by case.
    static let beyondTheSchema: [(category: String, matches: @Sendable (ScenarioError) -> Bool)] = [
        // The stages' total against `duration`, and the load model and workload without an arrival rate.
        ("message.stages against other fields", {
            ["message.stages", "message.spike", "message.step"].contains($0.field)
                && ($0.message.hasPrefix("the stages take") || $0.message.hasPrefix("the closed model") || $0.message.hasPrefix("REST clients"))
        }),
        // A pattern checks the text of "200h" or "100GiB", not the amount it stands for.
        ("the limits of a duration or size written with a unit", {
            ($0.message.hasPrefix("expected a duration") || $0.message.hasPrefix("expected a size"))
                && $0.message.range(of: #"got '[^']*[A-Za-z]'$"#, options: .regularExpression) != nil
        }),
        ("the target URL: its syntax, and the schemes each workload takes", { $0.field == "target" }),
        ("source addresses: whether each is an address of this machine", { $0.field.hasPrefix("source_addresses") }),
        ("templates: the placeholders inside a text", {
            $0.message.contains("placeholder") || $0.message.contains("{stamp}") || $0.message.contains("{client%N}")
        }),
        ("a key given twice: a JSON object has each name once", { $0.message.hasPrefix("given more than once") }),
        ("rules between fields", { error in
            ["max must be at least initial", "after the end of the message phase", "to connect, more than the longest run"]
                .contains { error.message.contains($0) }
        }),
    ]

    /// For every input the loader accepts, the schema must accept it; for every input it refuses
    /// for a reason a schema can express (a type, an unknown name, an enum, a range), the schema
    /// must refuse it too. Inputs: the scenario fuzz corpus and broken_inputs.py's broken files.
    @Test func theSchemaAgreesWithTheLoader() throws {
        let python = try peerPython("schema")
        let script = repositoryRoot.appendingPathComponent("Tests/peers/schema_check.py").path
        let generated = try runProcess(python, [script, "cases"], timeout: 60)
        try #require(generated.status == 0, "\(generated.stderr)")
        let cases = try #require(try JSONSerialization.jsonObject(with: Data(generated.stdout.utf8)) as? [[String: String]])
        var texts = cases.compactMap { c in c["id"].flatMap { id in c["yaml"].map { (id, $0) } } }
        #expect(texts.count > 100)
        let corpus = repositoryRoot.appendingPathComponent("Tests/Fuzz/corpus/scenario")
        for name in try FileManager.default.contentsOfDirectory(atPath: corpus.path).sorted() {
            let data = try Data(contentsOf: corpus.appendingPathComponent(name))
            // The loader reads UTF-8 text only: other bytes never reach it (nor a schema).
            if let text = String(data: data, encoding: .utf8) { texts.append(("corpus \(name)", text)) }
        }

        var loader: [String: ScenarioError?] = [:]
        var inputs: [(id: String, json: String)] = []
        var notYAML = 0
        for (id, text) in texts {
            // YAML the loader's library cannot read has no JSON form to judge.
            guard let json = Self.json(yaml: text) else { notYAML += 1; continue }
            inputs.append((id, json))
            do { _ = try ScenarioLoader.parse(yaml: text, file: "scenario.yaml"); loader[id] = .some(nil) } catch { loader[id] = .some(error) }
        }
        var accepted = 0, refused = 0, skipped: [String: Int] = [:]
        for (id, verdict) in try Self.validate(inputs) {
            guard let outcome = loader[id] else { Issue.record("\(id): no loader outcome"); continue }
            guard let refusal = outcome else {
                accepted += 1
                #expect(verdict.valid, "\(id): the loader accepts it, the schema refuses it: \(verdict.error ?? "")")
                continue
            }
            refused += 1
            guard verdict.valid else { continue }
            if let category = Self.beyondTheSchema.first(where: { $0.matches(refusal) })?.category {
                skipped[category, default: 0] += 1
                continue
            }
            Issue.record("\(id): the loader refuses it (\(refusal.field): \(refusal.message)), the schema accepts it")
        }
        print("schema agreement: \(accepted) accepted by both, \(refused) refused by the loader, \(notYAML) not YAML; beyond the schema: \(skipped)")
        #expect(accepted > 10)
        #expect(refused > 100)
    }

    // MARK: Helpers

    /// The schema's verdicts, from one Python process for all inputs.
    static func validate(_ inputs: [(id: String, json: String)]) throws -> [(String, (valid: Bool, error: String?))] {
        let python = try peerPython("schema")
        let folder = temporaryFolder("schema")
        let file = folder.appendingPathComponent("inputs.jsonl")
        let lines = inputs.map { "{\"id\":\(jsonString($0.id)),\"doc\":\($0.json)}\n" }.joined()
        try Data(lines.utf8).write(to: file)
        let r = try runProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/schema_check.py").path, "validate", docsFile.path, file.path],
                               timeout: 300)
        guard r.status == 0 else { throw PeerError("schema_check.py validate failed (\(r.status)): \(r.stderr.suffix(2000))") }
        var verdicts: [(String, (valid: Bool, error: String?))] = []
        for line in r.stdout.split(separator: "\n") {
            guard let item = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], let id = item["id"] as? String,
                  let valid = item["valid"] as? Bool else { throw PeerError("unreadable verdict: \(line)") }
            verdicts.append((id, (valid, item["error"] as? String)))
        }
        guard verdicts.count == inputs.count else { throw PeerError("\(verdicts.count) verdicts for \(inputs.count) inputs") }
        return verdicts
    }

    /// The YAML document as JSON text, with the types the loader sees (Yams' YAML 1.1 tags), or
    /// nil when Yams cannot compose it. A key that is no scalar, or null, becomes a name no field
    /// has (with a space), as the loader refuses it everywhere.
    static func json(yaml: String) -> String? {
        let yaml = yaml.unicodeScalars.first == "\u{FEFF}" ? String(yaml.unicodeScalars.dropFirst()) : yaml
        guard let node = try? Yams.compose(yaml: yaml) else { return nil }
        return json(node)
    }

    static func json(_ node: Node) -> String {
        switch node {
        case .mapping(let m):
            let members = m.map { key, value -> String in
                let name: String
                if case .scalar(let s) = key, key.tag.rawValue != Tag.Name.null.rawValue { name = s.string } else { name = "not a field name" }
                return jsonString(name) + ":" + json(value)
            }
            return "{" + members.joined(separator: ",") + "}"
        case .sequence(let s):
            return "[" + s.map(json).joined(separator: ",") + "]"
        case .alias:
            return jsonString("*alias")
        case .scalar(let scalar):
            switch node.tag.rawValue {
            case Tag.Name.null.rawValue: return "null"
            case Tag.Name.bool.rawValue: return Bool.construct(from: scalar).map { $0 ? "true" : "false" } ?? jsonString(scalar.string)
            case Tag.Name.int.rawValue:
                if let i = Int.construct(from: scalar) { return String(i) }
                if let u = UInt64.construct(from: scalar) { return String(u) }
                // Beyond 64 bits the loader takes it as text only; as a JSON number, ranges refuse it as well.
                var digits = Substring(scalar.string.replacingOccurrences(of: "_", with: ""))
                if digits.first == "+" { digits = digits.dropFirst() }
                let magnitude = digits.first == "-" ? digits.dropFirst() : digits
                if let first = magnitude.first, first != "0", magnitude.allSatisfy({ $0.isASCII && $0.isNumber }) { return String(digits) }
            case Tag.Name.float.rawValue:
                // JSON has no NaN or infinity: those stay text, which no number field takes.
                if let d = Double.construct(from: scalar), d.isFinite { return "\(d)" }
            default: break
            }
            return jsonString(scalar.string)
        }
    }

    static func jsonString(_ text: String) -> String { JSONText.quoted(text) }
}
