import Foundation
@testable import StampedeScenario
import Testing

/// The schema names what the loader reads: its field names, enums and threshold metrics come
/// from the loader's own lists, so neither can change without the other (SchemaTests in
/// StampedeEngineTests then judges whole files with Python's jsonschema).
struct SchemaKeysTests {
    static var schema: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(ScenarioSchema.text.utf8))) as? [String: Any] ?? [:]
    }

    /// The object schema at a dotted path of properties, through `$ref`s and `anyOf`s (a section
    /// that may also be null is `anyOf: [null, object]`).
    static func object(_ path: String) -> [String: Any]? {
        var node: [String: Any]? = schema
        for name in path.split(separator: ".") where !name.isEmpty {
            node = (node.flatMap(objectSchema)?["properties"] as? [String: Any])?[String(name)] as? [String: Any]
        }
        return node.flatMap(objectSchema)
    }

    static func objectSchema(_ node: [String: Any]) -> [String: Any]? {
        if node["properties"] != nil { return node }
        if let ref = node["$ref"] as? String, ref.hasPrefix("#/$defs/"),
           let target = (schema["$defs"] as? [String: Any])?[String(ref.dropFirst("#/$defs/".count))] as? [String: Any] {
            return objectSchema(target)
        }
        for case let option as [String: Any] in node["anyOf"] as? [Any] ?? [] {
            if let found = objectSchema(option) { return found }
        }
        return nil
    }

    static func keys(_ path: String) -> Set<String> {
        Set((object(path)?["properties"] as? [String: Any])?.keys.map { $0 } ?? [])
    }

    static func enumValues(_ path: String, _ field: String) -> Set<String> {
        var node = (object(path)?["properties"] as? [String: Any])?[field] as? [String: Any]
        if let items = node?["items"] as? [String: Any] { node = items }
        return Set((node?["enum"] as? [Any] ?? []).compactMap { $0 as? String })
    }

    @Test func theSchemaIsDraft2020WithAdditionalPropertiesRefused() throws {
        #expect(Self.schema["$schema"] as? String == "https://json-schema.org/draft/2020-12/schema")
        #expect(Self.schema["additionalProperties"] as? Bool == false)
        // target and clients too, unless the scenario has populations (a rule in allOf).
        #expect(Set(Self.schema["required"] as? [String] ?? []) == ["duration"])
        #expect(ScenarioSchema.text.hasSuffix("}\n"))
    }

    @Test func everySectionNamesExactlyTheFieldsTheLoaderReads() {
        #expect(Self.keys("") == Set(Keys.topLevel))
        let population = (Self.schema["$defs"] as? [String: Any])?["population"] as? [String: Any]
        #expect(Set((population?["properties"] as? [String: Any])?.keys.map { $0 } ?? []) == Set(Keys.population))
        let profile = (Self.schema["$defs"] as? [String: Any])?["clientProfile"] as? [String: Any]
        #expect(Set((profile?["properties"] as? [String: Any])?.keys.map { $0 } ?? []) == Set(Keys.clientProfile))
        #expect(Self.keys("message") == Set(Keys.message))
        #expect(Self.keys("hub") == Set(Keys.hub))
        #expect(Self.keys("rest") == Set(Keys.rest))
        #expect(Self.keys("websocket") == Set(Keys.websocket))
        #expect(Self.keys("socketio") == Set(Keys.socketio))
        #expect(Self.keys("tls") == Set(Reader.tlsKeys))
        #expect(Self.keys("heartbeat") == ["interval", "text", "ping_interval", "timeout"])
    }

    @Test func everyEnumListsTheLoadersChoices() {
        #expect(Self.enumValues("", "workload") == Set(Workload.allCases.map(\.rawValue)))
        #expect(Self.enumValues("", "load_model") == Set(LoadModel.allCases.map(\.rawValue)))
        #expect(Self.enumValues("", "resolve") == Set(ResolvePolicy.allCases.map(\.rawValue)))
        #expect(Self.enumValues("", "while_disconnected") == Set(DisconnectedSends.allCases.map(\.rawValue)))
        #expect(Self.enumValues("hub", "operation") == Set(HubOperation.allCases.map(\.rawValue)))
        #expect(Self.enumValues("hub", "protocol") == Set(HubProtocolKind.allCases.map(\.rawValue)))
        #expect(Self.enumValues("tls", "session_resumption") == Set(TLSSpec.SessionResumption.allCases.map(\.rawValue)))
    }

    @Test func thresholdNamesOutsideFlowsAreTheBuiltInMetrics() throws {
        let defs = try #require(Self.schema["$defs"] as? [String: Any])
        let builtIn = try #require(defs["thresholdsBuiltIn"] as? [String: Any])
        let object = try #require((builtIn["anyOf"] as? [Any])?.compactMap { $0 as? [String: Any] }.first { $0["propertyNames"] != nil })
        let pattern = try #require((object["propertyNames"] as? [String: Any])?["pattern"] as? String)
        let regex = try Regex(pattern)
        for name in ThresholdMetricKind.allNames {
            #expect(name.wholeMatch(of: regex) != nil, "\(name)")
            #expect("\(name)@steady".wholeMatch(of: regex) != nil, "\(name)@steady")
        }
        for name in ["round_trips", "errors.nope", "counters.", "round_trip@", "latency"] {
            #expect(name.wholeMatch(of: regex) == nil, "\(name)")
        }
    }

    @Test func limitsAreTheLoaders() throws {
        let top = try #require(Self.object("")?["properties"] as? [String: Any])
        let clients = try #require(top["clients"] as? [String: Any])
        #expect(clients["minimum"] as? Int == Limits.clients.lowerBound && clients["maximum"] as? Int == Limits.clients.upperBound)
        let connect = try #require(top["connect_rate"] as? [String: Any])
        #expect(connect["minimum"] as? Double == Limits.slowestRate && connect["maximum"] as? Double == Limits.connectRate)
        let defs = try #require(Self.schema["$defs"] as? [String: Any])
        let durations = try #require((defs["duration"] as? [String: Any])?["anyOf"] as? [[String: Any]])
        #expect(durations.first?["minimum"] as? Double == Limits.shortestDuration && durations.first?["maximum"] as? Double == Limits.durationSeconds)
        let rates = try #require((defs["messageRate"] as? [String: Any])?["anyOf"] as? [[String: Any]])
        #expect(rates.last?["minimum"] as? Double == Limits.slowestRate && rates.last?["maximum"] as? Double == Limits.messageRate)
    }
}
