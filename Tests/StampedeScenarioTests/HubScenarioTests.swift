import Foundation
import StampedeScenario
import Testing

// MARK: - Helpers

/// A valid hub scenario; lines 1-6, the `hub:` key on line 5.
private let hubBase = """
    workload: hub
    target: embedded
    clients: 10
    duration: 1s
    hub:
      method: Echo

    """

/// `hubBase` with lines appended inside the `hub` section (the first on line 7).
private func hubPlus(_ lines: String...) -> String { hubBase + lines.map { "  " + $0 + "\n" }.joined() }

private func parse(_ yaml: String) throws(ScenarioError) -> Scenario {
    try ScenarioLoader.parse(yaml: yaml, file: "scenarios/hub-test.yaml")
}

private func failure(_ yaml: String) -> ScenarioError? {
    do {
        _ = try ScenarioLoader.parse(yaml: yaml, file: "scenarios/hub-test.yaml")
        return nil
    } catch {
        return error
    }
}

private func hub(_ yaml: String) throws -> HubSpec {
    try #require(try parse(yaml).hub)
}

/// The parsed arguments of `hub.arguments: <flow>`.
private func arguments(_ flow: String) throws -> [ArgumentTemplate] {
    try #require(try hub(hubPlus("arguments: \(flow)")).call).arguments
}

private func repositoryRoot() -> URL? {
    var directory = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent()
    while directory.path != "/" {
        if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
            return directory
        }
        directory.deleteLastPathComponent()
    }
    return nil
}

private func temporaryDirectory() throws -> URL {
    let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("stampede-hub-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

// MARK: - Whole scenarios

@Test func hubExampleFileLoads() throws {
    let root = try #require(repositoryRoot())
    let scenario = try ScenarioLoader.load(path: root.appendingPathComponent("scenarios/hub-echo.yaml").path)
    #expect(scenario.name == "hub-echo")
    #expect(scenario.workload == .hub)
    #expect(scenario.target == .embedded)
    #expect(scenario.clients == 100)
    #expect(scenario.connectRate == 500)
    #expect(scenario.durationSeconds == 10)
    #expect(scenario.message == MessageSpec(ratePerSecond: 200, size: 128))
    var expected = HubSpec(
        transports: [.webSockets, .serverSentEvents, .longPolling], protocolKind: .json, negotiateVersion: 1,
        skipNegotiation: false, accessToken: nil, tokenInQuery: false, keepAliveSeconds: 15, serverTimeoutSeconds: 30,
        handshakeTimeoutSeconds: 15,
        join: HubCall(method: "JoinGroup", arguments: [.text([.literal("room-"), .clientModulo(10)])]),
        operation: .invoke, call: HubCall(method: "Echo", arguments: [.stamp]), receiveMethod: "ReceiveMessage",
        clientResults: [ClientResult(method: "GetClientResult", value: "ok")], reconnect: .none,
        statefulReconnect: false)
    expected.expectedResult = .echo
    #expect(scenario.hub == expected)
}

@Test func expectedRepliesAreLoaded() throws {
    #expect(try hub(hubPlus("expect: echo")).expectedResult == .echo)
    #expect(try hub(hubPlus("expect: any")).expectedResult == .any)
    #expect(try hub(hubPlus("expect: {text: fine}")).expectedResult == .text("fine"))
    let bad = try #require(failure(hubPlus("expect: maybe")))
    #expect(bad.field == "hub.expect")
}

@Test func hubDefaultsAreApplied() throws {
    let scenario = try parse(hubBase)
    #expect(scenario.workload == .hub)
    #expect(scenario.hub == HubSpec(call: HubCall(method: "Echo", arguments: [])))
    let spec = try #require(scenario.hub)
    #expect(spec.transports == [.webSockets, .serverSentEvents, .longPolling])
    #expect(spec.protocolKind == .json)
    #expect(spec.negotiateVersion == 1)
    #expect(spec.keepAliveSeconds == 15 && spec.serverTimeoutSeconds == 30 && spec.handshakeTimeoutSeconds == 15)
    #expect(spec.operation == .invoke)
    #expect(spec.reconnect == .none)
    #expect(scenario.message == MessageSpec(ratePerSecond: 10, size: 128))
}

@Test func everyHubFieldIsRead() throws {
    let yaml = """
        workload: hub
        target: http://127.0.0.1:5000/hubs/chat?tenant=a
        clients: 10
        duration: 1s
        hub:
          transports: [long_polling, websockets]
          protocol: messagepack
          negotiate_version: 0
          skip_negotiation: false
          access_token: {file: /run/secrets/hub-token}
          token_in_query: true
          keep_alive: 500ms
          server_timeout: 1m
          handshake_timeout: 2
          join:
            method: AddToGroup
            arguments: ["g{client%3}", "{user}"]
          operation: stream
          method: Counter
          arguments: ["{stamp}", 10, 0.5, true, null, "n{sequence}"]
          receive: Tick
          client_results:
            Ask: "42"
            Confirm: "yes"
          reconnect: [0s, 1.5s, 1m]
          stateful_reconnect: false
        """
    let scenario = try parse(yaml)
    #expect(scenario.target == .http(url: WebSocketURL(host: "127.0.0.1", port: 5000, path: "/hubs/chat?tenant=a")))
    #expect(
        scenario.hub
            == HubSpec(
                transports: [.longPolling, .webSockets], protocolKind: .messagePack, negotiateVersion: 0,
                skipNegotiation: false, accessToken: .file("/run/secrets/hub-token"), tokenInQuery: true,
                keepAliveSeconds: 0.5, serverTimeoutSeconds: 60, handshakeTimeoutSeconds: 2,
                join: HubCall(method: "AddToGroup", arguments: [.text([.literal("g"), .clientModulo(3)]), .text([.user])]),
                operation: .stream,
                call: HubCall(
                    method: "Counter",
                    arguments: [.stamp, .integer(10), .number(0.5), .boolean(true), .null, .text([.literal("n"), .sequence])]),
                receiveMethod: "Tick",
                clientResults: [ClientResult(method: "Ask", value: "42"), ClientResult(method: "Confirm", value: "yes")],
                reconnect: .delays([0, 1.5, 60]), statefulReconnect: false))
}

@Test func emptyOptionalHubFieldsMeanTheirDefaults() throws {
    let spec = try hub(hubPlus("transports:", "access_token:", "join:", "arguments:", "receive:", "client_results:", "reconnect:"))
    #expect(spec == HubSpec(call: HubCall(method: "Echo", arguments: [])))
}

// MARK: - Workload, section and target

@Test func hubSectionIsRequiredForTheHubWorkload() throws {
    let error = try #require(failure("clients: 10\nduration: 1s\ntarget: embedded\nworkload: hub\n"))
    #expect(error.field == "hub")
    #expect(error.line == 4)
    #expect(error.column == 11)
    #expect(error.message.hasPrefix("missing required field 'hub': workload 'hub' needs a 'hub' section"))
}

@Test func hubSectionIsOnlyForTheHubWorkload() throws {
    for workloadLine in ["", "workload: chat\n"] {
        let yaml = workloadLine + "target: embedded\nclients: 10\nduration: 1s\nhub:\n  method: Echo\n"
        let error = try #require(failure(yaml))
        #expect(error.field == "hub")
        #expect(error.line == (workloadLine.isEmpty ? 4 : 5))
        #expect(error.column == 1)
        #expect(
            error.message
                == "only for workload hub (this scenario's workload is 'chat'): remove the section or set 'workload: hub'")
        #expect(error.description.contains("field 'hub': only for workload hub"))
    }
}

@Test func emptyHubSectionStillNeedsAMethod() throws {
    let error = try #require(failure("workload: hub\ntarget: embedded\nclients: 1\nduration: 1s\nhub:\n"))
    #expect(error.field == "hub.method")
    #expect(error.line == 5)
    #expect(error.message.hasPrefix("missing required field 'method'"))

    let notAMapping = try #require(failure("workload: hub\ntarget: embedded\nclients: 1\nduration: 1s\nhub: Echo\n"))
    #expect(notAMapping.field == "hub")
    #expect(notAMapping.line == 5)
    #expect(notAMapping.message == "expected a mapping of hub settings (like 'method: Echo'), got 'Echo'")
}

@Test(arguments: [
    ("http://127.0.0.1:5000/hub", "127.0.0.1", 5000, "/hub"),
    ("http://localhost", "localhost", 80, "/"),
    ("HTTP://[::1]:8080/chat?hub=x", "::1", 8080, "/chat?hub=x"),
    ("http://127.0.0.2:1?id=1", "127.0.0.2", 1, "/?id=1"),
])
func hubAcceptsLoopbackHttpTargets(url: String, host: String, port: Int, path: String) throws {
    let scenario = try parse(hubBase.replacingOccurrences(of: "target: embedded", with: "target: \(url)"))
    #expect(scenario.target == .http(url: WebSocketURL(host: host, port: port, path: path)))
}

@Test func httpTargetDescriptionIsTheHttpUrl() throws {
    let scenario = try parse(hubBase.replacingOccurrences(of: "target: embedded", with: "target: http://[::1]:5000/hub"))
    #expect(scenario.target.description == "http://[::1]:5000/hub")
    #expect(
        (try? ScenarioLoader.parseTarget("http://localhost:9/x").get())
            == .http(url: WebSocketURL(host: "localhost", port: 9, path: "/x")))
}

@Test(arguments: [
    ("http://10.0.0.01/hub", "'10.0.0.01' is not an IPv4 address: write four numbers from 0 to 255 without leading zeros"),
    ("http://exa mple.com/hub", "'exa mple.com' is not a host name: use letters, digits, '-' and '.' (IPv6 addresses go in brackets)"),
    ("https://127.0.0.1:0/hub", "expected a port from 1 to 65535 in the target URL, got '0'"),
    ("http://127.0.0.1:99999/", "expected a port from 1 to 65535 in the target URL, got '99999'"),
    ("http://127.0.0.1/hub#x", "a target URL cannot have a fragment ('#...')"),
    (
        "ws://127.0.0.1:5000/hub",
        "the hub workload needs 'embedded' or the hub's http:// or https:// URL (Stampede switches to ws:// or wss:// itself for the WebSockets transport), got a ws:// URL"
    ),
])
func hubRejectsOtherTargets(target: String, message: String) throws {
    let error = try #require(failure(hubBase.replacingOccurrences(of: "target: embedded", with: "target: \(target)")))
    #expect(error.field == "target")
    #expect(error.line == 2)
    #expect(error.column == 9)
    #expect(error.message == message)
}

@Test func chatRejectsHttpTargets() throws {
    let error = try #require(failure("workload: chat\ntarget: http://127.0.0.1:8765/chat\nclients: 1\nduration: 1s\n"))
    #expect(error.field == "target")
    #expect(error.line == 2)
    #expect(error.column == 9)
    #expect(
        error.message
            == "the chat workload needs 'embedded' or a ws:// or wss:// URL; an http:// target is a SignalR hub's URL, for 'workload: hub'")
}

@Test func targetProblemChecksOverridesToo() {
    let ws = Target.webSocket(url: WebSocketURL(host: "127.0.0.1", port: 1, path: "/"))
    let http = Target.http(url: WebSocketURL(host: "127.0.0.1", port: 1, path: "/"))
    #expect(ScenarioLoader.targetProblem(.embedded, workload: .chat) == nil)
    #expect(ScenarioLoader.targetProblem(.embedded, workload: .hub) == nil)
    #expect(ScenarioLoader.targetProblem(ws, workload: .chat) == nil)
    #expect(ScenarioLoader.targetProblem(http, workload: .hub) == nil)
    #expect(ScenarioLoader.targetProblem(http, workload: .chat) != nil)
    #expect(ScenarioLoader.targetProblem(ws, workload: .hub) != nil)
}

// MARK: - Keys

@Test func unknownKeysInTheHubSectionGetSuggestions() throws {
    let cases: [(String, String, String, Int)] = [
        ("protocl: json", "hub.protocl", "unknown field 'protocl'; did you mean 'protocol'?", 7),
        ("keepAlive: 5s", "hub.keepAlive", "unknown field 'keepAlive'; did you mean 'keep_alive'?", 7),
        ("join: {method: J, argments: []}", "hub.join.argments", "unknown field 'argments'; did you mean 'arguments'?", 7),
        ("access_token: {evn: HUB_TOKEN}", "hub.access_token.evn", "unknown field 'evn'; did you mean 'env'?", 7),
    ]
    for (line, field, message, lineNumber) in cases {
        let error = try #require(failure(hubPlus(line)))
        #expect(error.field == field)
        #expect(error.message == message)
        #expect(error.line == lineNumber)
    }

    let far = try #require(failure(hubPlus("payload_bytes: 3")))
    #expect(far.field == "hub.payload_bytes")
    #expect(far.message.hasPrefix("unknown field 'payload_bytes' (known fields: transports, protocol, negotiate_version,"))
}

@Test func hubSettingsAtTheTopLevelPointToTheHubSection() throws {
    let error = try #require(failure(hubBase + "protocol: messagepack\n"))
    #expect(error.line == 7)
    #expect(error.field == "protocol")
    #expect(error.message == "unknown field 'protocol'; it belongs inside the 'hub' section (hub.protocol)")
}

// MARK: - Transports and protocol

@Test func transportsMustBeANonEmptyListWithoutDuplicates() throws {
    #expect(try hub(hubPlus("transports: [long_polling]")).transports == [.longPolling])

    let empty = try #require(failure(hubPlus("transports: []")))
    #expect(empty.field == "hub.transports")
    #expect(empty.line == 7)
    #expect(empty.message == "expected at least one transport (leave the field out to allow all three)")

    let duplicate = try #require(failure(hubPlus("transports:", "  - websockets", "  - long_polling", "  - websockets")))
    #expect(duplicate.field == "hub.transports[2]")
    #expect(duplicate.line == 10)
    #expect(duplicate.message == "'websockets' is already listed")

    let unknown = try #require(failure(hubPlus("transports: [websocket]")))
    #expect(unknown.field == "hub.transports[0]")
    #expect(unknown.message == "expected one of 'websockets', 'server_sent_events', 'long_polling', got 'websocket'")

    let scalar = try #require(failure(hubPlus("transports: websockets")))
    #expect(scalar.field == "hub.transports")
    #expect(scalar.message.hasPrefix("expected a list of transports in the order to try them"))
}

@Test func messagePackCannotUseServerSentEvents() throws {
    let error = try #require(failure(hubPlus("protocol: messagepack", "transports:", "  - websockets", "  - server_sent_events")))
    #expect(error.field == "hub.transports")
    #expect(error.line == 10)
    #expect(
        error.message
            == "MessagePack cannot use server_sent_events (Server-Sent Events carry text only): remove it or use 'protocol: json'")

    // Order of the keys does not matter.
    let after = try #require(failure(hubPlus("transports: [server_sent_events]", "protocol: messagepack")))
    #expect(after.field == "hub.transports")

    // Without a transports list, MessagePack gets the transports that can carry it.
    let spec = try hub(hubPlus("protocol: messagepack"))
    #expect(spec.protocolKind == .messagePack)
    #expect(spec.transports == [.webSockets, .longPolling])

    let bad = try #require(failure(hubPlus("protocol: msgpack")))
    #expect(bad.field == "hub.protocol")
    #expect(bad.message == "expected one of 'json', 'messagepack', got 'msgpack'")
}

@Test func skipNegotiationNeedsWebSocketsAlone() throws {
    #expect(try hub(hubPlus("transports: [websockets]", "skip_negotiation: true")).skipNegotiation)
    #expect(try hub(hubPlus("skip_negotiation: false")).skipNegotiation == false)

    for transports in ["", "transports: [websockets, long_polling]", "transports: [long_polling]"] {
        let lines = transports.isEmpty ? ["skip_negotiation: true"] : [transports, "skip_negotiation: true"]
        let error = try #require(failure(hubBase + lines.map { "  \($0)\n" }.joined()))
        #expect(error.field == "hub.skip_negotiation")
        #expect(error.line == 6 + lines.count)
        #expect(error.message.hasPrefix("only possible when 'transports' is exactly [websockets]"))
    }
}

@Test func statefulReconnectNeedsWebSocketsAloneAndNegotiation() throws {
    #expect(try hub(hubPlus("transports: [websockets]", "stateful_reconnect: true")).statefulReconnect)

    let fallback = try #require(failure(hubPlus("stateful_reconnect: true")))
    #expect(fallback.field == "hub.stateful_reconnect")
    #expect(fallback.line == 7)
    #expect(fallback.message == "stateful reconnect works over WebSockets only: add 'transports: [websockets]'")

    let skipped = try #require(
        failure(hubPlus("transports: [websockets]", "skip_negotiation: true", "stateful_reconnect: true")))
    #expect(skipped.field == "hub.stateful_reconnect")
    #expect(skipped.line == 9)
    #expect(skipped.message.contains("negotiate"))
}

@Test(arguments: [
    ("negotiate_version: 2", "hub.negotiate_version", "expected an integer from 0 to 1, got '2'"),
    ("negotiate_version: \"1\"", "hub.negotiate_version", "expected an integer from 0 to 1, got '1'"),
    ("skip_negotiation: maybe", "hub.skip_negotiation", "expected true or false, got 'maybe'"),
    ("token_in_query: \"true\"", "hub.token_in_query", "expected true or false, got 'true'"),
    ("stateful_reconnect: 1", "hub.stateful_reconnect", "expected true or false, got '1'"),
    ("keep_alive: 0s", "hub.keep_alive", "expected a duration > 0 such as 500ms, 1.5s, 2m or 1h (a bare number means seconds), got '0s'"),
    ("server_timeout: soon", "hub.server_timeout", "expected a duration > 0 such as 500ms, 1.5s, 2m or 1h (a bare number means seconds), got 'soon'"),
    ("handshake_timeout: -1", "hub.handshake_timeout", "expected a duration > 0 such as 500ms, 1.5s, 2m or 1h (a bare number means seconds), got '-1'"),
    ("operation: call", "hub.operation", "expected one of 'invoke', 'send', 'stream', 'upload', 'none', got 'call'"),
])
func wrongHubValuesAreRejected(line: String, field: String, message: String) throws {
    let error = try #require(failure(hubPlus(line)))
    #expect(error.field == field)
    #expect(error.message == message)
    #expect(error.line == 7)
    #expect(error.column > 0)
}

// MARK: - Operation, method and calls

@Test func operationNoneNeedsNoMethodAndMakesNoCalls() throws {
    let yaml = "workload: hub\ntarget: embedded\nclients: 1\nduration: 1s\nmessage:\n  rate: 50\nhub:\n  operation: none\n"
    let scenario = try parse(yaml)
    #expect(scenario.hub?.operation == HubOperation.none)
    #expect(scenario.hub?.call == nil)
    #expect(scenario.message.ratePerSecond == 50)

    // A method given anyway is still checked, then unused.
    #expect(try hub(hubPlus("operation: none")).call == nil)
    let typo = try #require(failure(hubPlus("operation: none", "arguments: [\"{clinet}\"]")))
    #expect(typo.field == "hub.arguments[0]")
}

@Test(arguments: ["invoke", "send", "stream"])
func callingOperationsNeedAMethod(operation: String) throws {
    let yaml = "workload: hub\ntarget: embedded\nclients: 1\nduration: 1s\n# hub settings\nhub:\n  operation: \(operation)\n"
    let error = try #require(failure(yaml))
    #expect(error.field == "hub.method")
    #expect(error.line == 6)
    #expect(
        error.message
            == "missing required field 'method' (the hub method each client calls; or set 'operation: none' to only hold connections)")

    #expect(try hub(hubPlus("operation: \(operation)")).call == HubCall(method: "Echo", arguments: []))
}

@Test func methodNamesHaveNoWhitespaceOrControlCharacters() throws {
    #expect(try hub(hubBase.replacingOccurrences(of: "method: Echo", with: "method: Chat.Send_2")).call?.method == "Chat.Send_2")
    let cases: [(String, String)] = [
        ("method: Echo Back", "hub.method"),
        ("method: \"\"", "hub.method"),
        ("method: \"Echo\\t\"", "hub.method"),
        ("method: \"A\\u0007\"", "hub.method"),
        ("method: [Echo]", "hub.method"),
        ("method:", "hub.method"),
    ]
    for (line, field) in cases {
        let error = try #require(failure(hubBase.replacingOccurrences(of: "method: Echo", with: line)))
        #expect(error.field == field)
        #expect(error.line == 6)
        #expect(error.message.hasPrefix("expected a method name"))
    }
    for line in ["receive: Receive Message", "join: {method: \"Join Group\"}"] {
        let error = try #require(failure(hubPlus(line)))
        #expect(error.field == (line.hasPrefix("receive") ? "hub.receive" : "hub.join.method"))
        #expect(error.line == 7)
        #expect(error.message.hasPrefix("expected a method name without spaces or control characters"))
    }
}

@Test func joinNeedsAMappingWithAMethod() throws {
    #expect(try hub(hubPlus("join: {method: Join}")).join == HubCall(method: "Join", arguments: []))

    let noMethod = try #require(failure(hubPlus("join:", "  arguments: [a]")))
    #expect(noMethod.field == "hub.join.method")
    #expect(noMethod.line == 8)
    #expect(noMethod.message == "missing required field 'method'")

    let scalar = try #require(failure(hubPlus("join: JoinGroup")))
    #expect(scalar.field == "hub.join")
    #expect(scalar.message.hasPrefix("expected a mapping like {method: JoinGroup"))

    let stamp = try #require(failure(hubPlus("join: {method: Join, arguments: [x, \"{stamp}\"]}")))
    #expect(stamp.field == "hub.join.arguments[1]")
    #expect(stamp.line == 7)
    #expect(stamp.message == "'{stamp}' is only for the arguments of the scheduled call (hub.arguments), not for join")
}

// MARK: - Argument templates

@Test(arguments: [
    ("\"room-{client%10}\"", [TemplatePart.literal("room-"), .clientModulo(10)]),
    ("\"{client}\"", [.client]),
    ("\"{user}:{sequence}\"", [.user, .literal(":"), .sequence]),
    ("\"{{literal}}\"", [.literal("{literal}")]),
    ("\"a}}b{{\"", [.literal("a}b{")]),
    ("\"{{{client}}}\"", [.literal("{"), .client, .literal("}")]),
    ("\"{client%1}{client%1000000}\"", [.clientModulo(1), .clientModulo(1_000_000)]),
    ("plain text", [.literal("plain text")]),
    ("\"\"", []),
    ("\"{{stamp}}\"", [.literal("{stamp}")]),
    ("\"héllo {user} ✓\"", [.literal("héllo "), .user, .literal(" ✓")]),
])
func textArgumentsAreParsedIntoParts(written: String, parts: [TemplatePart]) throws {
    #expect(try arguments("[\(written)]") == [.text(parts)])
}

@Test func stampIsAWholeArgument() throws {
    #expect(try arguments("[\"{stamp}\", '{stamp}']") == [.stamp, .stamp])
    let error = try #require(failure(hubPlus("arguments: [a, \"id={stamp}\"]")))
    #expect(error.field == "hub.arguments[1]")
    #expect(error.line == 7)
    #expect(error.message == "'{stamp}' must be the whole argument: give it as an argument of its own, \"{stamp}\"")
}

@Test(arguments: [
    (
        "{foo}",
        "unknown placeholder '{foo}' (valid placeholders: {client}, {client%N}, {user}, {sequence}, and {stamp} as a whole argument; write '{{' and '}}' for literal braces)"
    ),
    (
        "{clinet}",
        "unknown placeholder '{clinet}'; did you mean '{client}'? (valid placeholders: {client}, {client%N}, {user}, {sequence}, and {stamp} as a whole argument; write '{{' and '}}' for literal braces)"
    ),
    ("{Client}", "unknown placeholder '{Client}'"),
    ("{ user }", "unknown placeholder '{ user }'"),
    ("{}", "unknown placeholder '{}'"),
    ("{client%0}", "expected {client%N} with N from 1 to 1000000, got '{client%0}'"),
    ("{client%1000001}", "expected {client%N} with N from 1 to 1000000, got '{client%1000001}'"),
    ("{client%}", "expected {client%N} with N from 1 to 1000000, got '{client%}'"),
    ("{client%-3}", "expected {client%N} with N from 1 to 1000000, got '{client%-3}'"),
    ("{client%99999999999999999999}", "expected {client%N} with N from 1 to 1000000, got '{client%99999999999999999999}'"),
    ("a{user", "unclosed '{' (write '{{' for a literal brace)"),
    ("a}b", "unmatched '}' (write '}}' for a literal brace)"),
])
func badTemplatesNameTheArgument(written: String, message: String) throws {
    let yaml = hubPlus("arguments:", "  - \"{stamp}\"", "  - \"\(written)\"")
    let error = try #require(failure(yaml))
    #expect(error.field == "hub.arguments[1]")
    #expect(error.line == 9)
    #expect(error.column == 7)
    #expect(error.message.hasPrefix(message))
}

@Test func scalarArgumentsKeepTheirYamlType() throws {
    #expect(
        try arguments("[42, -7, 0x10, 1.5, -2e3, true, false, no, null, ~, \"42\", 'true', 2024-01-02]")
            == [
                .integer(42), .integer(-7), .integer(16), .number(1.5), .number(-2000), .boolean(true), .boolean(false),
                .boolean(false), .null, .null, .text([.literal("42")]), .text([.literal("true")]),
                .text([.literal("2024-01-02")]),
            ])
    #expect(try arguments("[9223372036854775807]") == [.integer(Int64.max)])
    #expect(try arguments("[]") == [])
}

@Test func structuredOrNonFiniteArgumentsAreRejected() throws {
    let cases: [(String, String)] = [
        ("[{a: 1}]", "expected text, a number, true/false or null, got a mapping (arguments cannot be objects)"),
        ("[[1, 2]]", "expected text, a number, true/false or null, got a list (arguments cannot be lists)"),
        (
            "[{stamp}]",
            "expected text, a number, true/false or null, got a mapping: unquoted braces make a YAML mapping, so write \"{stamp}\" in quotes"
        ),
        ("[.nan]", "expected a finite number (JSON has no NaN or infinity), got '.nan'"),
        ("[-.inf]", "expected a finite number (JSON has no NaN or infinity), got '-.inf'"),
        ("[9223372036854775808]", "expected an integer from -9223372036854775808 to 9223372036854775807, got '9223372036854775808'"),
    ]
    for (flow, message) in cases {
        let error = try #require(failure(hubPlus("arguments: \(flow)")))
        #expect(error.field == "hub.arguments[0]")
        #expect(error.line == 7)
        #expect(error.message == message)
    }

    let blockStamp = try #require(failure(hubPlus("arguments:", "  - {client}")))
    #expect(blockStamp.field == "hub.arguments[0]")
    #expect(blockStamp.line == 8)
    #expect(blockStamp.message.hasSuffix("write \"{client}\" in quotes"))

    let notAList = try #require(failure(hubPlus("arguments: \"{stamp}\"")))
    #expect(notAList.field == "hub.arguments")
    #expect(notAList.message == "expected a list of arguments like [\"{stamp}\", 42], got '{stamp}'")
}

// MARK: - Client results, receive, reconnect

@Test func clientResultsMapMethodsToText() throws {
    let spec = try hub(hubPlus("receive: Deliver", "client_results:", "  Second: \"2\"", "  First: ''"))
    #expect(spec.receiveMethod == "Deliver")
    #expect(spec.clientResults == [ClientResult(method: "Second", value: "2"), ClientResult(method: "First", value: "")])

    let number = try #require(failure(hubPlus("client_results:", "  Ask: 42")))
    #expect(number.field == "hub.client_results.Ask")
    #expect(number.line == 8)
    #expect(number.message == "expected the text to answer with (quote numbers and booleans, as in \"42\"), got '42'")

    let duplicate = try #require(failure(hubPlus("client_results:", "  Ask: a", "  ask: b")))
    #expect(duplicate.field == "hub.client_results.ask")
    #expect(duplicate.line == 9)
    #expect(duplicate.message == "client method 'ask' is already given at line 8 (method names are case-insensitive)")

    let receive = try #require(failure(hubPlus("receive: Deliver", "client_results: {deliver: x}")))
    #expect(receive.field == "hub.client_results.deliver")
    #expect(receive.line == 8)
    #expect(receive.message.hasPrefix("'deliver' is also the 'receive' method"))

    let badName = try #require(failure(hubPlus("client_results: {\"Get Result\": x}")))
    #expect(badName.field == "hub.client_results")
    #expect(badName.message.hasPrefix("expected a method name without spaces"))

    let list = try #require(failure(hubPlus("client_results: [Ask]")))
    #expect(list.field == "hub.client_results")
    #expect(list.message.hasPrefix("expected a mapping of client method names to the text each answers with"))
}

@Test func reconnectIsNoneDefaultOrDelays() throws {
    #expect(try hub(hubPlus("reconnect: none")).reconnect == .none)
    #expect(try hub(hubPlus("reconnect: default")).reconnect == .signalRDefault)
    #expect(try hub(hubPlus("reconnect: [0s, 2s, 10s]")).reconnect == .delays([0, 2, 10]))
    #expect(try hub(hubPlus("reconnect: [0, 500ms]")).reconnect == .delays([0, 0.5]))

    for bad in ["always", "off", "5s", "\"none \""] {
        let error = try #require(failure(hubPlus("reconnect: \(bad)")))
        #expect(error.field == "hub.reconnect")
        #expect(error.line == 7)
        #expect(error.message.hasPrefix("expected 'none', 'default' (0s, 2s, 10s, 30s), a list of delays like [0s, 2s, 10s], or {exponential: "))
    }
    let unknownKey = try #require(failure(hubPlus("reconnect: {a: 1}")))
    #expect(unknownKey.field == "hub.reconnect.a")
    #expect(unknownKey.message.hasPrefix("unknown field 'a'"))
    let empty = try #require(failure(hubPlus("reconnect: []")))
    #expect(empty.message == "an empty list never reconnects: write 'reconnect: none' instead")

    let badDelay = try #require(failure(hubPlus("reconnect:", "  - 1s", "  - -2s")))
    #expect(badDelay.field == "hub.reconnect[1]")
    #expect(badDelay.line == 9)
    #expect(badDelay.message.hasPrefix("expected a duration ≥ 0"))
}

// MARK: - Access token

@Test func accessTokenIsALiteralAnEnvironmentVariableOrAFile() throws {
    #expect(try hub(hubPlus("access_token: abc.def-ghi")).accessToken == .literal("abc.def-ghi"))
    #expect(try hub(hubPlus("access_token: 12345")).accessToken == .literal("12345"))
    #expect(try hub(hubPlus("access_token: {env: HUB_TOKEN}")).accessToken == .environment("HUB_TOKEN"))
    #expect(try hub(hubPlus("access_token: {env: _t2}")).accessToken == .environment("_t2"))
    #expect(try hub(hubPlus("access_token:", "  file: secrets/token")).accessToken == .file("secrets/token"))
    #expect(try hub(hubPlus("access_token: {env: T}", "token_in_query: true")).tokenInQuery)
}

@Test func accessTokenErrorsNeverRepeatTheToken() throws {
    let secret = "s3cr3tTokenValue"
    let cases: [(String, String, String)] = [
        ("access_token: \"\"", "hub.access_token", "the access_token value is empty"),
        ("access_token: \"\(secret)\\r\\nX: y\"", "hub.access_token", "the access_token value cannot contain line breaks or NUL characters"),
        ("access_token: \"${HUB_TOKEN}\"", "hub.access_token", "the access_token value looks like a shell variable, but Stampede does not expand variables: use {env: NAME} to read the token from the environment"),
        ("access_token: $HUB_TOKEN", "hub.access_token", "the access_token value looks like a shell variable"),
        ("access_token: {Bearer \(secret)}", "hub.access_token", "unknown field (not repeated here); expected 'env', 'file'"),
        ("access_token: {\(secret): x}", "hub.access_token", "unknown field (not repeated here); expected 'env', 'file'"),
        ("access_token: {env: \"\(secret) x\"}", "hub.access_token.env", "expected the name of an environment variable (letters, digits and '_', not starting with a digit), as in {env: HUB_TOKEN}"),
        ("access_token: {env: 1\(secret)}", "hub.access_token.env", "expected the name of an environment variable"),
        ("access_token: {env: [a]}", "hub.access_token.env", "expected the name of an environment variable"),
        ("access_token: {file: \"\"}", "hub.access_token.file", "expected the path of a file holding the token, as in {file: secrets/hub-token}"),
        ("access_token: {env: A, file: b}", "hub.access_token", "give either 'env' or 'file', not both"),
        ("access_token: {}", "hub.access_token", "expected 'env' or 'file', as in {env: HUB_TOKEN}, got an empty mapping"),
        ("access_token: [\(secret)]", "hub.access_token", "expected a token, {env: NAME} or {file: PATH}, got a list"),
    ]
    for (line, field, message) in cases {
        let error = try #require(failure(hubPlus(line)))
        #expect(error.field == field, "\(line)")
        #expect(error.line == 7, "\(line)")
        #expect(error.message.hasPrefix(message), "\(line)")
        #expect(!error.description.contains(secret), "\(line)")
    }

    let needsToken = try #require(failure(hubPlus("token_in_query: true")))
    #expect(needsToken.field == "hub.token_in_query")
    #expect(needsToken.message == "there is no access_token to put in the query: add 'access_token'")
}

@Test func accessTokenAndAnAuthorizationHeaderConflict() throws {
    let yaml = hubPlus("access_token: {env: HUB_TOKEN}") + "headers:\n  authorization: Bearer x\n"
    let error = try #require(failure(yaml))
    #expect(error.field == "hub.access_token")
    #expect(error.line == 7)
    #expect(error.message == "both hub.access_token and the 'authorization' header are given: keep only one of them")

    // Without access_token, a hand-made header is fine.
    #expect(try parse(hubBase + "headers:\n  Authorization: Bearer x\n").headers.count == 1)
}

@Test func resolveTokenReadsLiteralsEnvironmentAndFiles() throws {
    #expect(try ScenarioLoader.resolveToken(.literal("abc")) == "abc")

    let name = "STAMPEDE_TEST_TOKEN_\(UUID().uuidString.replacingOccurrences(of: "-", with: "_"))"
    setenv(name, "from-env", 1)
    defer { unsetenv(name) }
    #expect(try ScenarioLoader.resolveToken(.environment(name)) == "from-env")

    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let cases: [(String, String)] = [("plain", "plain"), ("lf\n", "lf"), ("crlf\r\n", "crlf"), ("  spaced  \n", "  spaced  ")]
    for (index, (contents, token)) in cases.enumerated() {
        let path = directory.appendingPathComponent("token-\(index)").path
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try ScenarioLoader.resolveToken(.file(path)) == token)
    }
}

@Test func resolveTokenFailuresNameTheFieldButNeverTheToken() throws {
    func resolveFailure(_ source: TokenSource) -> ScenarioError? {
        do {
            _ = try ScenarioLoader.resolveToken(source, scenarioFile: "scenarios/x.yaml")
            return nil
        } catch {
            return error
        }
    }
    let missing = "STAMPEDE_TEST_UNSET_\(UUID().uuidString.replacingOccurrences(of: "-", with: "_"))"
    let unset = try #require(resolveFailure(.environment(missing)))
    #expect(unset.field == "hub.access_token")
    #expect(unset.file == "scenarios/x.yaml")
    #expect(unset.line == 0)
    #expect(unset.message == "environment variable '\(missing)' is not set")
    #expect(unset.description == "scenarios/x.yaml: field 'hub.access_token': environment variable '\(missing)' is not set")

    let emptyName = "STAMPEDE_TEST_EMPTY_\(UUID().uuidString.replacingOccurrences(of: "-", with: "_"))"
    setenv(emptyName, "", 1)
    defer { unsetenv(emptyName) }
    #expect(resolveFailure(.environment(emptyName))?.message == "environment variable '\(emptyName)' is empty")

    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let absent = directory.appendingPathComponent("absent").path
    let unreadable = try #require(resolveFailure(.file(absent)))
    #expect(unreadable.field == "hub.access_token")
    #expect(unreadable.message == "cannot read the token file '\(absent)': no such file")

    let secret = "s3cr3t-\(UUID().uuidString)"
    let cases: [(String, String)] = [
        ("", "is empty"), ("\n", "is empty"), ("\(secret)\n\n", "holds line breaks or NUL characters"),
        ("\(secret)\nsecond line", "holds line breaks or NUL characters"),
    ]
    for (index, (contents, problem)) in cases.enumerated() {
        let path = directory.appendingPathComponent("token-\(index)").path
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        let error = try #require(resolveFailure(.file(path)))
        #expect(error.field == "hub.access_token")
        #expect(error.message == "the token file '\(path)' \(problem)" + (problem.hasPrefix("holds") ? ", which cannot go into a header" : ""))
        #expect(!error.description.contains(secret))
    }

    let binary = directory.appendingPathComponent("binary").path
    try Data([0xFF, 0xFE, 0x00]).write(to: URL(fileURLWithPath: binary))
    #expect(resolveFailure(.file(binary))?.message == "the token file '\(binary)' is not UTF-8 text")

    let literal = try #require(resolveFailure(.literal("\(secret)\r\nX: 1")))
    #expect(literal.message == "the access_token value holds line breaks or NUL characters, which cannot go into a header")
    #expect(!literal.description.contains(secret))
}

@Test func exponentialReconnectWithJitterIsLoaded() throws {
    let s = try ScenarioLoader.parse(yaml: """
        workload: hub
        target: embedded
        clients: 1
        duration: 1s
        hub:
          method: Echo
          reconnect: {exponential: {initial: 500ms, max: 20s, attempts: 8, jitter: equal}}
        """, file: "r.yaml")
    #expect(s.hub?.reconnect == .exponential(initialSeconds: 0.5, maxSeconds: 20, attempts: 8, jitter: .equal))
}

@Test func exponentialReconnectRejectsUnknownSettings() {
    #expect(throws: ScenarioError.self) {
        try ScenarioLoader.parse(yaml: """
            workload: hub
            target: embedded
            clients: 1
            duration: 1s
            hub:
              method: Echo
              reconnect: {exponential: {intial: 1s}}
            """, file: "r.yaml")
    }
}

@Test func stormEventsAndChatReconnectAreLoaded() throws {
    let s = try ScenarioLoader.parse(yaml: """
        target: embedded
        clients: 10
        duration: 10s
        reconnect: [0s, 1s]
        events:
          - at: 5s
            storm: {fraction: 0.5, mode: close}
          - at: 2s
            storm: {}
        """, file: "storm.yaml")
    #expect(s.reconnect == .delays([0, 1]))
    #expect(s.events == [ScenarioEvent(atSeconds: 2, kind: .storm(fraction: 1, mode: .reset)),
                         ScenarioEvent(atSeconds: 5, kind: .storm(fraction: 0.5, mode: .close))])
}

@Test func stormEventsOutsideTheMessagePhaseOrWithBadFieldsAreRejected() throws {
    for (events, field) in [("- {at: 12s, storm: {}}", "events[0].at"), ("- {at: 1s, storm: {fraction: 2}}", "events[0].storm.fraction"),
                            ("- {at: 1s, storm: {mode: crash}}", "events[0].storm.mode"), ("- {at: 1s, strom: {}}", "events[0].strom")] {
        do {
            _ = try ScenarioLoader.parse(yaml: "target: embedded\nclients: 1\nduration: 10s\nevents:\n  \(events)\n", file: "e.yaml")
            Issue.record("\(events) was accepted")
        } catch {
            #expect(error.field == field, "\(events): \(error)")
            #expect(error.line == 5)
        }
    }
}

@Test func chatHeartbeatIsLoadedAndRefusedForHubs() throws {
    let s = try ScenarioLoader.parse(yaml: """
        target: embedded
        clients: 1
        duration: 1s
        heartbeat: {interval: 3m, text: heart, ping_interval: 20s, timeout: 60s}
        """, file: "h.yaml")
    #expect(s.heartbeat == Heartbeat(intervalSeconds: 180, text: "heart", pingIntervalSeconds: 20, timeoutSeconds: 60))
    #expect(throws: ScenarioError.self) {
        try ScenarioLoader.parse(yaml: "workload: hub\ntarget: embedded\nclients: 1\nduration: 1s\nhub: {method: Echo}\nheartbeat: {interval: 1s}\n", file: "h.yaml")
    }
}

@Test func whileDisconnectedIsLoaded() throws {
    let s = try ScenarioLoader.parse(yaml: "target: embedded\nclients: 1\nduration: 1s\nwhile_disconnected: queue\n", file: "w.yaml")
    #expect(s.whileDisconnected == .queue)
    // Hub clients honour it too.
    let hub = try ScenarioLoader.parse(
        yaml: "workload: hub\ntarget: embedded\nclients: 1\nduration: 1s\nhub: {method: Echo}\nwhile_disconnected: queue\n", file: "w.yaml")
    #expect(hub.whileDisconnected == .queue)
    #expect(throws: ScenarioError.self) {
        try ScenarioLoader.parse(yaml: "target: embedded\nclients: 1\nduration: 1s\nwhile_disconnected: buffer\n", file: "w.yaml")
    }
}

// MARK: - Redirect hosts

@Test func redirectHostsAreNamesAddressesOrWildcardSuffixesLowerCased() throws {
    let spec = try hub(hubPlus("redirect_hosts: [\"*.Service.SignalR.net\", app.example.test, 10.0.0.7, \"fd00::7\"]"))
    #expect(spec.redirectHosts == ["*.service.signalr.net", "app.example.test", "10.0.0.7", "fd00::7"])
    #expect(try hub(hubBase).redirectHosts == [])
}

@Test func aRedirectHostThatIsNotAHostIsAnErrorNamingItsLineAndIndex() throws {
    for bad in ["https://x.service.signalr.net", "x.example.net:443", "*", "*.", "a..b", "-a.example.net", "x.example.net/client", "**.net"] {
        let error = try #require(failure(hubPlus("redirect_hosts:", "  - ok.example.net", "  - \"\(bad)\"")), "\(bad) was accepted")
        #expect(error.field == "hub.redirect_hosts[1]", "\(bad)")
        #expect(error.line == 9, "\(bad)")
        #expect(error.message.hasPrefix("expected a host name (like 'app.example.net'), an address, or '*.' and a name"), "\(bad): \(error.message)")
    }
    let duplicate = try #require(failure(hubPlus("redirect_hosts: [a.test, A.test]")))
    #expect(duplicate.field == "hub.redirect_hosts[1]")
    #expect(duplicate.message == "'a.test' is already listed")
    let scalar = try #require(failure(hubPlus("redirect_hosts: \"*.service.signalr.net\"")))
    #expect(scalar.field == "hub.redirect_hosts")
    #expect(scalar.message.hasPrefix("expected a list of hosts a negotiate redirect may go to"))
}

@Test func aRedirectMayGoToTheTargetsHostLoopbackOrAListedHostOnly() throws {
    let spec = try hub(hubPlus("redirect_hosts: [\"*.service.signalr.net\", app.example.test]"))
    #expect(spec.allowsRedirect(to: "chat.service.signalr.net", targetHost: "app.local"))
    #expect(spec.allowsRedirect(to: "A.B.Service.SignalR.net", targetHost: "app.local"))
    #expect(spec.allowsRedirect(to: "app.example.test", targetHost: "app.local"))
    #expect(spec.allowsRedirect(to: "APP.local", targetHost: "app.local"))
    #expect(spec.allowsRedirect(to: "127.0.0.2", targetHost: "app.local") && spec.allowsRedirect(to: "::1", targetHost: "app.local"))
    #expect(!spec.allowsRedirect(to: "service.signalr.net", targetHost: "app.local"))
    #expect(!spec.allowsRedirect(to: "evilservice.signalr.net", targetHost: "app.local"))
    #expect(!spec.allowsRedirect(to: "chat.service.signalr.net.evil.test", targetHost: "app.local"))
    #expect(!spec.allowsRedirect(to: "x.app.example.test", targetHost: "app.local"))
    #expect(!spec.allowsRedirect(to: "10.0.0.7", targetHost: "app.local"))
    #expect(!spec.allowsRedirect(to: "localhost", targetHost: "app.local"))
}
