import Foundation
import StampedeScenario
import Testing

// MARK: - Helpers

private let minimal = """
    target: embedded
    clients: 10
    duration: 1s

    """

private func parse(_ yaml: String, file: String = "scenarios/test.yaml") throws(ScenarioError) -> Scenario {
    try ScenarioLoader.parse(yaml: yaml, file: file)
}

/// The error a scenario fails with, or nil if it loads.
private func failure(_ yaml: String, file: String = "scenarios/test.yaml") -> ScenarioError? {
    do {
        _ = try ScenarioLoader.parse(yaml: yaml, file: file)
        return nil
    } catch {
        return error
    }
}

/// `minimal` with one extra top-level line appended (on line 4).
private func minimalPlus(_ line: String) -> String { minimal + line + "\n" }

private func repositoryRoot() -> URL? {
    // Resolve symlinks first: a scratch package may link this file from the repository.
    var directory = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent()
    while directory.path != "/" {
        if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
            return directory
        }
        directory.deleteLastPathComponent()
    }
    return nil
}

// MARK: - Whole scenarios

@Test func defaultsAreApplied() throws {
    let scenario = try parse(minimal, file: "scenarios/quick-check.yaml")
    #expect(
        scenario
            == Scenario(
                name: "quick-check", file: "scenarios/quick-check.yaml", target: .embedded, workload: .chat, clients: 10,
                connectRate: 1000, durationSeconds: 1, message: MessageSpec(ratePerSecond: 10, size: 128),
                loadModel: .open, thinkTimeSeconds: 0, seed: 1, drainSeconds: 5, connectTimeoutSeconds: 10, headers: [],
                subprotocol: nil, maxMessageBytes: 1 << 20, sourceAddresses: []))
}

@Test func everyFieldIsRead() throws {
    let yaml = """
        name: full.v2
        target: ws://127.0.0.1:8765/chat?room=1
        workload: chat
        clients: 1_000
        connect_rate: 250.5
        duration: 2m
        message:
          rate: 0.5
          size: 1KiB
        load_model: closed
        think_time: 250ms
        seed: 18446744073709551615
        drain: 0
        connect_timeout: 1.5s
        headers:
          X-Test: "1"
          Authorization: Bearer abc def
          X-Empty: ""
        subprotocol: chat.v1
        max_message_size: 64KiB
        source_addresses: [127.0.0.1, 127.0.0.2]
        """
    let scenario = try parse(yaml, file: "elsewhere/ignored-name.yaml")
    #expect(
        scenario
            == Scenario(
                name: "full.v2", file: "elsewhere/ignored-name.yaml",
                target: .webSocket(url: WebSocketURL(host: "127.0.0.1", port: 8765, path: "/chat?room=1")),
                workload: .chat, clients: 1000, connectRate: 250.5, durationSeconds: 120,
                message: MessageSpec(ratePerSecond: 0.5, size: 1024), loadModel: .closed, thinkTimeSeconds: 0.25,
                seed: UInt64.max, drainSeconds: 0, connectTimeoutSeconds: 1.5,
                headers: [
                    .init(name: "X-Test", value: "1"), .init(name: "Authorization", value: "Bearer abc def"),
                    .init(name: "X-Empty", value: ""),
                ],
                subprotocol: "chat.v1", maxMessageBytes: 65536, sourceAddresses: ["127.0.0.1", "127.0.0.2"]))
}

@Test func emptyOptionalMappingsAndListsMeanNone() throws {
    let scenario = try parse(minimal + "message:\nheaders:\nsource_addresses: []\n")
    #expect(scenario.message == MessageSpec(ratePerSecond: 10, size: 128))
    #expect(scenario.headers.isEmpty)
    #expect(scenario.sourceAddresses.isEmpty)
}

@Test func openModelAllowsAConnectOnlyRateOfZeroAndClosedModelAcceptsThinkTime() throws {
    let connectOnly = try parse(minimal + "message:\n  rate: 0\n")
    #expect(connectOnly.message.ratePerSecond == 0)
    #expect(connectOnly.loadModel == .open)

    let closed = try parse(minimal + "load_model: closed\nthink_time: 100ms\n")
    #expect(closed.loadModel == .closed)
    #expect(closed.thinkTimeSeconds == 0.1)
}

@Test func emptyFileIsAnError() throws {
    let error = try #require(failure("# only a comment\n"))
    #expect(error.line == 1)
    #expect(error.field == "")
    #expect(error.message.contains("empty"))
}

@Test func topLevelMustBeAMapping() throws {
    let error = try #require(failure("- target: embedded\n"))
    #expect(error.line == 1)
    #expect(error.message == "expected a mapping of scenario fields (like 'clients: 100'), got a list")
}

// MARK: - Keys

@Test func unknownKeyIsAnErrorNamingLineAndField() throws {
    let error = try #require(failure("target: embedded\n  # indented comment\nclinets: 10\nduration: 1s\n"))
    #expect(error.line == 3)
    #expect(error.column == 1)
    #expect(error.field == "clinets")
    #expect(error.message == "unknown field 'clinets'; did you mean 'clients'?")
    #expect(
        error.description
            == "scenarios/test.yaml:3:1: field 'clinets': unknown field 'clinets'; did you mean 'clients'?")
}

@Test func unknownNestedKeyNamesItsDottedPath() throws {
    let error = try #require(failure(minimal + "message:\n  rate: 5\n  sise: 64\n"))
    #expect(error.line == 6)
    #expect(error.column == 3)
    #expect(error.field == "message.sise")
    #expect(error.message == "unknown field 'sise'; did you mean 'size'?")
}

@Test(arguments: [
    ("connectRate", "connect_rate"), ("maxMessageSize", "max_message_size"), ("thinktime", "think_time"),
    ("Seed", "seed"), ("load-model", "load_model"),
])
func misspeltKeysGetASuggestion(written: String, meant: String) throws {
    let error = try #require(failure(minimalPlus("\(written): 1")))
    #expect(error.line == 4)
    #expect(error.message == "unknown field '\(written)'; did you mean '\(meant)'?")
}

@Test func unknownKeyFarFromAnyKnownOneListsTheKnownFields() throws {
    let error = try #require(failure(minimalPlus("protocol_version: 3")))
    #expect(error.message.hasPrefix("unknown field 'protocol_version' (known fields: name, target, workload,"))
}

@Test func missingRequiredFieldIsReportedAtLineOne() throws {
    let yaml = """
        # A scenario header comment.

        target: embedded
        duration: 10s
        """
    let error = try #require(failure(yaml))
    #expect(error.line == 1)
    #expect(error.column == 0)
    #expect(error.field == "clients")
    #expect(error.message == "missing required field 'clients'")
    #expect(error.description == "scenarios/test.yaml:1: field 'clients': missing required field 'clients'")
}

@Test(arguments: ["target", "clients", "duration"])
func everyRequiredFieldIsRequired(field: String) throws {
    let yaml = minimal.split(separator: "\n").filter { !$0.hasPrefix(field + ":") }.joined(separator: "\n")
    let error = try #require(failure(yaml))
    #expect(error.field == field)
    #expect(error.message == "missing required field '\(field)'")
}

@Test func duplicateKeyIsAnError() throws {
    let error = try #require(failure(minimalPlus("clients: 20")))
    #expect(error.line == 2)
    #expect(error.field == "clients")
    #expect(error.message == "given more than once (each field may appear only once in a mapping)")
}

@Test func secondYamlDocumentIsAnError() throws {
    let error = try #require(failure(minimal + "---\nclients: 5\n"))
    #expect(error.line == 4)
    #expect(error.message == "invalid YAML: a scenario file holds a single document, but a second one starts here")
}

@Test func byteOrderMarkIsIgnored() throws {
    #expect(try parse("\u{FEFF}" + minimal).clients == 10)
}

// MARK: - YAML syntax

@Test func yamlSyntaxErrorReportsTheLine() throws {
    let error = try #require(failure("target: embedded\nclients: 10\n  duration: 1s\n"))
    #expect(error.line == 3)
    #expect(error.column > 0)
    #expect(error.field == "")
    #expect(error.message.hasPrefix("invalid YAML: "))
    #expect(error.description.hasPrefix("scenarios/test.yaml:3:"))
}

@Test func unclosedFlowListReportsALine() throws {
    let error = try #require(failure("target: embedded\nsource_addresses: [127.0.0.1\nclients: 10\n"))
    #expect(error.line >= 2)
    #expect(error.message.hasPrefix("invalid YAML: "))
}

@Test func tabIndentationErrorMentionsTabs() throws {
    let error = try #require(failure(minimal + "message:\n\trate: 5\n"))
    #expect(error.line == 5)
    #expect(error.message.contains("tabs"))
}

// MARK: - Value kinds

@Test(arguments: [
    ("clients: fast", "clients", "expected an integer from 1 to 1000000, got 'fast'"),
    ("clients: true", "clients", "expected an integer from 1 to 1000000, got 'true'"),
    ("clients: 10.5", "clients", "expected an integer from 1 to 1000000, got '10.5'"),
    ("clients: 0", "clients", "expected an integer from 1 to 1000000, got '0'"),
    ("clients: 1000001", "clients", "expected an integer from 1 to 1000000, got '1000001'"),
    ("clients: \"100\"", "clients", "expected an integer from 1 to 1000000, got '100'"),
    ("clients:", "clients", "expected an integer from 1 to 1000000, got nothing"),
    ("clients: [1, 2]", "clients", "expected an integer from 1 to 1000000, got a list"),
    // A mapping is a profile of connected clients (`clients: {start, stages}`).
    ("clients: {a: 1}", "clients.a", "unknown field 'a' (known fields: start, stages)"),
    ("connect_rate: 0", "connect_rate", "expected a number ≥ 0.001, got '0'"),
    ("connect_rate: .nan", "connect_rate", "expected a number ≥ 0.001, got '.nan'"),
    ("connect_rate: 1e9", "connect_rate", "expected a number ≥ 0.001 and ≤ 1000000, got '1e9'"),
    ("connect_rate: null", "connect_rate", "expected a number ≥ 0.001, got nothing"),
    ("message: 5", "message", "expected a mapping with 'rate' and/or 'size', got '5'"),
    ("workload: signalr", "workload", "expected one of 'chat', 'hub', 'rest', 'websocket', 'socketio', got 'signalr'"),
    ("load_model: half-open", "load_model", "expected one of 'open', 'closed', got 'half-open'"),
    ("seed: -1", "seed", "expected an integer from 0 to 18446744073709551615, got '-1'"),
    ("seed: 1.5", "seed", "expected an integer from 0 to 18446744073709551615, got '1.5'"),
    ("name: {x: 1}", "name", "expected a name, got a mapping"),
])
func wrongValuesAreRejectedNamingLineFieldAndValue(line: String, field: String, message: String) throws {
    let yaml = line.hasPrefix("clients:") ? minimal.replacingOccurrences(of: "clients: 10", with: line) : minimalPlus(line)
    let error = try #require(failure(yaml))
    #expect(error.field == field)
    #expect(error.message == message)
    #expect(error.line == (line.hasPrefix("clients:") ? 2 : 4))
    #expect(error.column > 0)
}

@Test func nestedValueErrorPointsAtTheValue() throws {
    let error = try #require(failure(minimal + "# messages\nmessage:\n  size: 128\n  rate: fast\n"))
    #expect(error.line == 7)
    #expect(error.column == 9)
    #expect(error.description == "scenarios/test.yaml:7:9: field 'message.rate': expected a number ≥ 0, got 'fast'")
}

@Test func numbersAcceptYamlIntegerAndFloatForms() throws {
    let scenario = try parse(minimal + "connect_rate: 2_500\nmessage:\n  rate: 1.5e2\nseed: 0xff\n")
    #expect(scenario.connectRate == 2500)
    #expect(scenario.message.ratePerSecond == 150)
    #expect(scenario.seed == 255)
}

@Test(arguments: [
    ("500ms", 0.5), ("1.5s", 1.5), ("2m", 120), ("1h", 3600), ("10", 10), ("2.5", 2.5), ("\"30\"", 30),
    ("250 ms", 0.25), (".5s", 0.5), ("0.001s", 0.001),
])
func durationsAcceptUnits(written: String, seconds: Double) throws {
    let scenario = try parse(minimal.replacingOccurrences(of: "duration: 1s", with: "duration: \(written)"))
    #expect(abs(scenario.durationSeconds - seconds) < 1e-9)
}

@Test(arguments: ["10 seconds", "-1s", "-5", "1.5.2s", "s", "1e3s", "fast", "1m30s", "0s", "0", "true", "[1s]", ""])
func malformedOrNonPositiveDurationsAreRejected(written: String) throws {
    let error = try #require(failure(minimal.replacingOccurrences(of: "duration: 1s", with: "duration: \(written)")))
    #expect(error.line == 3)
    #expect(error.field == "duration")
    #expect(error.message.hasPrefix("expected a duration > 0 such as 500ms, 1.5s, 2m or 1h (a bare number means seconds), got "))
}

@Test func zeroIsAllowedForThinkTimeAndDrainButNotForConnectTimeout() throws {
    let scenario = try parse(minimal + "think_time: 0ms\ndrain: 0s\n")
    #expect(scenario.thinkTimeSeconds == 0)
    #expect(scenario.drainSeconds == 0)

    let error = try #require(failure(minimalPlus("connect_timeout: 0s")))
    #expect(error.field == "connect_timeout")
    #expect(error.message.hasPrefix("expected a duration > 0"))
}

@Test func durationsLongerThanAWeekAreRejected() throws {
    let error = try #require(failure(minimalPlus("drain: 200h")))
    #expect(error.field == "drain")
    #expect(error.message == "expected a duration of at most 168h, got '200h'")
}

@Test(arguments: [
    ("125", 125), ("1MiB", 1 << 20), ("64KiB", 65536), ("2MB", 2_000_000), ("1 KB", 1000), ("0.5KiB", 512),
    ("1GiB", 1 << 30), ("4096B", 4096),
])
func maxMessageSizeAcceptsBytesAndUnits(written: String, bytes: Int) throws {
    #expect(try parse(minimal + "max_message_size: \(written)\nmessage:\n  size: 64\n").maxMessageBytes == bytes)
}

@Test(arguments: ["124", "2GiB", "1.5B", "big", "1TB", "-1KiB", "1mib", "1.5"])
func maxMessageSizeOutsideItsRangeOrFormIsRejected(written: String) throws {
    let error = try #require(failure(minimal + "max_message_size: \(written)\nmessage:\n  size: 64\n"))
    #expect(error.field == "max_message_size")
    #expect(error.line == 4)
    #expect(error.message.hasPrefix("expected a size from 125 to 1073741824 bytes"))
}

@Test func messageSizeHasItsOwnRange() throws {
    #expect(try parse(minimal + "message:\n  size: 64\n").message.size == MessageSpec.minimumSize)
    for size in ["63", "16777217", "nope"] {
        let error = try #require(failure(minimal + "max_message_size: 1GiB\nmessage:\n  size: \(size)\n"))
        #expect(error.field == "message.size")
        #expect(error.line == 6)
        #expect(error.message.hasPrefix("expected a size from 64 to 16777216 bytes"))
    }
}

@Test func messageSizeMustFitInMaxMessageSize() throws {
    let error = try #require(failure(minimal + "max_message_size: 1KiB\nmessage:\n  size: 2KiB\n"))
    #expect(error.field == "message.size")
    #expect(error.line == 6)
    #expect(error.message.contains("larger than max_message_size"))

    let defaultSize = try #require(failure(minimalPlus("max_message_size: 125")))
    #expect(defaultSize.field == "max_message_size")
    #expect(defaultSize.line == 4)
}

// MARK: - Target

@Test(arguments: [
    ("ws://127.0.0.1:8765/chat", "127.0.0.1", 8765, "/chat"),
    ("ws://localhost", "localhost", 80, "/"),
    ("ws://LocalHost:9/", "LocalHost", 9, "/"),
    ("ws://[::1]:9000/a/b?c=d&e", "::1", 9000, "/a/b?c=d&e"),
    ("ws://127.255.0.9:1234?x=1", "127.255.0.9", 1234, "/?x=1"),
    ("WS://127.0.0.2:65535/", "127.0.0.2", 65535, "/"),
])
func loopbackTargetsAreAccepted(url: String, host: String, port: Int, path: String) throws {
    let scenario = try parse(minimal.replacingOccurrences(of: "target: embedded", with: "target: \(url)"))
    #expect(scenario.target == .webSocket(url: WebSocketURL(host: host, port: port, path: path)))
}

@Test(arguments: [
    ("ws://10.0.0.1:80/", "10.0.0.1", 80, "/"), ("ws://example.com/", "example.com", 80, "/"),
    ("ws://192.168.1.1:8080/x", "192.168.1.1", 8080, "/x"), ("ws://[2001:db8::1]:80/", "2001:db8::1", 80, "/"),
    ("ws://127.0.0.1.nip.io/", "127.0.0.1.nip.io", 80, "/"), ("ws://localhost.example.com/", "localhost.example.com", 80, "/"),
    ("ws://0.0.0.0:80/", "0.0.0.0", 80, "/"), ("ws://[::]:80/", "::", 80, "/"), ("ws://[::ffff:10.0.0.1]/", "::ffff:10.0.0.1", 80, "/"),
    ("ws://staging-1.internal_net.example./chat", "staging-1.internal_net.example.", 80, "/chat"),
])
func anyHostNameOrAddressIsAcceptedAsTheTarget(url: String, host: String, port: Int, path: String) throws {
    let scenario = try parse(minimal.replacingOccurrences(of: "target: embedded", with: "target: \(url)"))
    #expect(scenario.target == .webSocket(url: WebSocketURL(host: host, port: port, path: path)))
}

@Test(arguments: [
    ("ws://0127.0.0.1/", "'0127.0.0.1' is not an IPv4 address: write four numbers from 0 to 255 without leading zeros"),
    ("ws://127.1/", "'127.1' is not an IPv4 address: write four numbers from 0 to 255 without leading zeros"),
    ("ws://128.0.0.256/", "'128.0.0.256' is not an IPv4 address: write four numbers from 0 to 255 without leading zeros"),
    ("ws://bad_host!/", "'bad_host!' is not a host name: use letters, digits, '-' and '.' (IPv6 addresses go in brackets)"),
    ("ws://-lead.example/", "'-lead.example' is not a host name: use letters, digits, '-' and '.' (IPv6 addresses go in brackets)"),
    ("ws://a..b/", "'a..b' is not a host name: use letters, digits, '-' and '.' (IPv6 addresses go in brackets)"),
    ("ws://[fe80::1%eth0]/", "'[fe80::1%eth0]' is not an IPv6 address (zone ids like %eth0 are not supported)"),
    ("ws://[not:v6:x]/", "'[not:v6:x]' is not an IPv6 address (zone ids like %eth0 are not supported)"),
])
func malformedTargetHostIsRejected(url: String, message: String) throws {
    let error = try #require(failure(minimal.replacingOccurrences(of: "target: embedded", with: "target: \(url)")))
    #expect(error.line == 1)
    #expect(error.column == 9)
    #expect(error.field == "target")
    #expect(error.message == message)
}

@Test(arguments: [
    ("ftp://127.0.0.1/", "unsupported scheme 'ftp://': target must be 'embedded', a ws:// or wss:// URL, or an http:// or https:// URL"),
    ("127.0.0.1:8765", "expected 'embedded', a ws[s]://HOST:PORT/PATH or an http[s]://HOST:PORT/PATH URL, got '127.0.0.1:8765'"),
    ("Embedded", "expected 'embedded', a ws[s]://HOST:PORT/PATH or an http[s]://HOST:PORT/PATH URL, got 'Embedded'"),
    ("wss://127.0.0.1:0/", "expected a port from 1 to 65535 in the target URL, got '0'"),
    ("ws://127.0.0.1:0/", "expected a port from 1 to 65535 in the target URL, got '0'"),
    ("ws://127.0.0.1:65536/", "expected a port from 1 to 65535 in the target URL, got '65536'"),
    ("ws://127.0.0.1:/", "expected a port from 1 to 65535 in the target URL, got ''"),
    ("ws://127.0.0.1:http/", "expected a port from 1 to 65535 in the target URL, got 'http'"),
    ("ws://::1:80/", "IPv6 addresses must be in brackets, as in ws://[::1]:8765/"),
    ("ws:///chat", "the target URL has no host"),
    ("ws://user@127.0.0.1/", "user names and passwords ('user@') are not supported in the target URL"),
    ("ws://127.0.0.1/chat#top", "a target URL cannot have a fragment ('#...')"),
    ("http://::1:80/", "IPv6 addresses must be in brackets, as in http://[::1]:8765/"),
    ("\"ws://127.0.0.1/a b\"", "the target URL's path may only contain printable ASCII without spaces (percent-encode the rest)"),
])
func malformedTargetsAreRejected(target: String, message: String) throws {
    let error = try #require(failure(minimal.replacingOccurrences(of: "target: embedded", with: "target: \(target)")))
    #expect(error.field == "target")
    #expect(error.line == 1)
    #expect(error.message == message)
}

// MARK: - Headers, subprotocol, source addresses, name

@Test func headersRejectBadNamesValuesAndHandshakeHeaders() throws {
    let cases: [(String, String, String)] = [
        ("\"Bad Name\": x", "headers.Bad Name", "expected a header name made of letters, digits and !#$%&'*+-.^_`|~, got 'Bad Name'"),
        ("X-Split: \"a\\r\\nInjected: 1\"", "headers.X-Split", "a header value cannot contain line breaks or NUL characters"),
        ("Host: example.com", "headers.Host", "header 'Host' is set by Stampede itself"),
        (
            "sec-websocket-protocol: chat", "headers.sec-websocket-protocol",
            "header 'sec-websocket-protocol' is set by Stampede itself (use the 'subprotocol' field, or 'websocket.subprotocols', instead)"
        ),
        ("X-Null:", "headers.X-Null", "expected a header value (use \"\" for an empty one), got nothing"),
    ]
    for (entry, field, message) in cases {
        let error = try #require(failure(minimal + "headers:\n  X-Fine: ok\n  \(entry)\n"))
        #expect(error.field == field)
        #expect(error.message == message)
        #expect(error.line == 6)
    }

    let duplicate = try #require(failure(minimal + "headers:\n  X-Id: 1\n  x-id: 2\n"))
    #expect(duplicate.line == 6)
    #expect(duplicate.message == "header 'x-id' is already given at line 5 (header names are case-insensitive)")

    let notAMapping = try #require(failure(minimal + "headers: [X-Test]\n"))
    #expect(notAMapping.field == "headers")
    #expect(notAMapping.message == "expected a mapping of header names to values, got a list")
}

@Test func headerValuesMayBeAnyScalar() throws {
    let scenario = try parse(minimal + "headers:\n  X-Number: 1\n  X-Bool: true\n")
    #expect(scenario.headers == [.init(name: "X-Number", value: "1"), .init(name: "X-Bool", value: "true")])
}

@Test func subprotocolMustBeAToken() throws {
    #expect(try parse(minimalPlus("subprotocol: v2.chat+json")).subprotocol == "v2.chat+json")
    for bad in ["\"chat, v2\"", "\"\"", "[a]"] {
        let error = try #require(failure(minimalPlus("subprotocol: \(bad)")))
        #expect(error.field == "subprotocol")
        #expect(error.line == 4)
    }
}

@Test func sourceAddressesMustBeDistinctLocalAddresses() throws {
    let ok = try parse(minimal + "source_addresses:\n  - 127.0.0.1\n  - 127.1.2.3\n")
    #expect(ok.sourceAddresses == ["127.0.0.1", "127.1.2.3"])

    // 198.51.100.7 (TEST-NET-2, RFC 5737) is not an address of this machine: binding to it fails.
    let foreign = try #require(failure(minimal + "source_addresses:\n  - 127.0.0.1\n  - 198.51.100.7\n"))
    #expect(foreign.field == "source_addresses[1]")
    #expect(foreign.line == 6)
    #expect(foreign.column == 5)
    #expect(foreign.message.hasPrefix("198.51.100.7 is not an address of this machine ("))
    #expect(foreign.message.hasSuffix("): a source address must be local"))

    let duplicate = try #require(failure(minimal + "source_addresses:\n  - 127.0.0.2\n  - 127.0.0.2\n"))
    #expect(duplicate.field == "source_addresses[1]")
    #expect(duplicate.message == "address 127.0.0.2 is already listed at line 5")

    #expect(try parse(minimalPlus("source_addresses: [\"::1\", 127.0.0.1]")).sourceAddresses == ["::1", "127.0.0.1"])
    for bad in ["[localhost]", "127.0.0.1", "[127.0.0.256]", "[[127.0.0.1]]"] {
        let error = try #require(failure(minimalPlus("source_addresses: \(bad)")))
        #expect(error.field.hasPrefix("source_addresses"))
        #expect(error.line == 4)
    }
}

@Test func nameDefaultsToTheFileBaseNameAndMustUseSafeCharacters() throws {
    #expect(try parse(minimal, file: "dir/My-Run.v2.yaml").name == "My-Run.v2")
    #expect(try parse(minimal, file: "plain").name == "plain")
    #expect(try parse(minimal, file: "").name == "scenario")
    #expect(try parse(minimalPlus("name: 2024"), file: "x.yaml").name == "2024")

    let spaced = try #require(failure(minimalPlus("name: my scenario")))
    #expect(spaced.field == "name")
    #expect(spaced.line == 4)
    #expect(spaced.message.hasPrefix("expected a name of 1 to 100 letters, digits, '.', '_' or '-', got 'my scenario'"))

    let slash = try #require(failure(minimalPlus("name: ../escape")))
    #expect(slash.field == "name")

    let badFileName = try #require(failure(minimal, file: "scenarios/my scenario.yaml"))
    #expect(badFileName.line == 1)
    #expect(badFileName.field == "name")
    #expect(badFileName.message.contains("add a 'name:' field"))
}

// MARK: - Errors and files

@Test func errorDescriptionOmitsWhatIsUnknown() {
    #expect(
        ScenarioError(file: "scenarios/x.yaml", line: 7, column: 3, field: "message.rate", message: "expected a number ≥ 0, got 'fast'")
            .description == "scenarios/x.yaml:7:3: field 'message.rate': expected a number ≥ 0, got 'fast'")
    #expect(ScenarioError(file: "a.yaml", line: 1, field: "clients", message: "m").description == "a.yaml:1: field 'clients': m")
    #expect(ScenarioError(file: "a.yaml", line: 2, column: 4, message: "m").description == "a.yaml:2:4: m")
    #expect(ScenarioError(file: "a.yaml", line: 0, message: "m").description == "a.yaml: m")
}

@Test func unreadableFileIsAnErrorWithoutALine() throws {
    let path = "/nonexistent-\(UUID().uuidString)/missing.yaml"
    do {
        _ = try ScenarioLoader.load(path: path)
        Issue.record("loading a missing file succeeded")
    } catch {
        #expect(error.file == path)
        #expect(error.line == 0)
        #expect(error.column == 0)
        #expect(error.field == "")
        #expect(error.message == "cannot read scenario file: no such file")
        #expect(error.description == "\(path): cannot read scenario file: no such file")
    }

    do {
        _ = try ScenarioLoader.load(path: NSTemporaryDirectory())
        Issue.record("loading a directory succeeded")
    } catch {
        #expect(error.line == 0)
        #expect(error.message.hasPrefix("cannot read scenario file: "))
    }
}

@Test func loadReadsTheFileAndKeepsThePathAsGiven() throws {
    let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("stampede-scenario-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let path = directory.appendingPathComponent("from-disk.yaml").path
    try (minimal + "clinets: 1\n").write(toFile: path, atomically: true, encoding: .utf8)

    do {
        _ = try ScenarioLoader.load(path: path)
        Issue.record("a file with an unknown key loaded")
    } catch {
        #expect(error.file == path)
        #expect(error.line == 4)
    }

    try minimal.write(toFile: path, atomically: true, encoding: .utf8)
    let scenario = try ScenarioLoader.load(path: path)
    #expect(scenario.file == path)
    #expect(scenario.name == "from-disk")
}

@Test func everyScenarioFileInTheRepositoryValidates() throws {
    let root = try #require(repositoryRoot(), "no Package.swift above \(#filePath)")
    let directory = root.appendingPathComponent("scenarios")
    let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".yaml") }.sorted()
    #expect(!files.isEmpty, "no scenarios/*.yaml in \(root.path)")
    for file in files {
        do {
            _ = try ScenarioLoader.load(path: directory.appendingPathComponent(file).path)
        } catch {
            Issue.record("\(error)")
        }
    }
}

@Test func readmeDemoScenarioIsAThousandClientBroadcast() throws {
    let root = try #require(repositoryRoot())
    let scenario = try ScenarioLoader.load(path: root.appendingPathComponent("scenarios/chat-broadcast.yaml").path)
    #expect(scenario.name == "chat-broadcast")
    #expect(scenario.target == .embedded)
    #expect(scenario.clients == 1000)
    #expect(scenario.connectRate == 1000)
    #expect(scenario.durationSeconds == 10)
    #expect(scenario.message == MessageSpec(ratePerSecond: 20, size: 128))
    #expect(scenario.loadModel == .open)
    #expect(scenario.seed == 42)
    #expect(scenario.drainSeconds == 5)
}

// MARK: - Any target

@Test func resolveDefaultsToFirstAndTakesEachPolicy() throws {
    #expect(try parse(minimal).resolve == .first)
    for policy in ResolvePolicy.allCases {
        #expect(try parse(minimalPlus("resolve: \(policy.rawValue)")).resolve == policy)
    }
}

@Test(arguments: ["both", "IPv4", "[all]", "1"])
func anUnknownResolvePolicyNamesItsLineAndField(value: String) throws {
    let error = try #require(failure(minimalPlus("resolve: \(value)")))
    #expect(error.field == "resolve")
    #expect(error.line == 4)
    #expect(error.message.hasPrefix("expected one of 'first', 'all', 'ipv4', 'ipv6'"), "\(error.message)")
}

@Test func aSourceAddressThatIsNotLocalIsRefusedAtValidationIPv4OrIPv6() throws {
    #expect(try parse(minimalPlus("source_addresses: [\"::1\"]")).sourceAddresses == ["::1"])
    // 2001:db8::/32 is the documentation prefix (RFC 3849): never an address of this machine.
    for address in ["198.51.100.7", "\"2001:db8::7\""] {
        let error = try #require(failure(minimalPlus("source_addresses: [\(address)]")))
        #expect(error.field == "source_addresses[0]")
        #expect(error.line == 4)
        #expect(error.message.contains("is not an address of this machine"), "\(error.message)")
    }
}
