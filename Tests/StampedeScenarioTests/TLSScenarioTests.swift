import Foundation
import StampedeScenario
import Testing

/// The `tls:` block and the wss:// / https:// targets: defaults, every field, and each bad value
/// named by its field and line.
@Suite struct TLSScenarioTests {
    static func parse(_ yaml: String) throws(ScenarioError) -> Scenario { try ScenarioLoader.parse(yaml: yaml, file: "scenarios/tls.yaml") }

    static func failure(_ yaml: String) -> ScenarioError? {
        do { _ = try parse(yaml); return nil } catch { return error }
    }

    static func chat(_ target: String, _ tls: String = "") -> String {
        "target: \(target)\nclients: 10\nduration: 1s\n" + tls
    }

    /// A readable file for the path fields (only its readability is checked when loading): this
    /// test's own source.
    static let pem = #filePath

    @Test func secureSchemesSetTLSWithDefaultsAndPort443() throws {
        let s = try Self.parse(Self.chat("wss://chat.example.test/chat"))
        guard case .webSocket(let url) = s.target else { Issue.record("not a WebSocket target"); return }
        #expect(url.secure && url.port == 443 && url.host == "chat.example.test")
        #expect(s.tls == TLSSpec())
        #expect(s.target.description == "wss://chat.example.test:443/chat")
        let hub = try Self.parse(Self.chat("https://[::1]:5001/hub") + "workload: hub\nhub: {method: Echo}\n")
        guard case .http(let h) = hub.target else { Issue.record("not an http target"); return }
        #expect(h.secure && h.port == 5001 && hub.target.description == "https://[::1]:5001/hub")
        #expect(try Self.parse(Self.chat("ws://127.0.0.1:8765/chat")).tls == nil)
        #expect(try Self.parse(Self.chat("embedded")).tls == nil)
    }

    @Test func everyTLSFieldIsRead() throws {
        let s = try Self.parse(Self.chat("wss://127.0.0.1:8443/chat", """
            tls:
              ca_file: \(Self.pem)
              server_name: chat.example.test
              client_cert: \(Self.pem)
              client_key: \(Self.pem)
              min_version: 1.3
              alpn: [http/1.1]
              session_resumption: tickets
              resume_ratio: 0.25

            """))
        var expected = TLSSpec()
        expected.caFile = Self.pem
        expected.serverName = "chat.example.test"
        expected.clientCertificate = Self.pem
        expected.clientKey = Self.pem
        expected.minVersion = .tls13
        expected.alpn = ["http/1.1"]
        expected.sessionResumption = .tickets
        expected.resumeRatio = 0.25
        #expect(s.tls == expected)
    }

    @Test func embeddedTargetWithATLSBlockServesTLS() throws {
        let s = try Self.parse(Self.chat("embedded", "tls: {session_resumption: tickets}\n"))
        #expect(s.tls?.sessionResumption == .tickets)
        #expect(try Self.parse(Self.chat("embedded", "tls: {}\n")).tls == TLSSpec())
    }

    @Test(arguments: [
        (chat("ws://127.0.0.1:8765/chat", "tls: {}\n"), "tls", "only for wss:// and https:// targets"),
        (chat("wss://127.0.0.1/chat", "tls: {ca_file: /nonexistent/ca.pem}\n"), "tls.ca_file", "no such file: /nonexistent/ca.pem"),
        (chat("wss://127.0.0.1/chat", "tls: {verify: false, ca_file: \(pem)}\n"), "tls.ca_file", "not used with 'verify: false'"),
        (chat("wss://127.0.0.1/chat", "tls: {verify: maybe}\n"), "tls.verify", "expected true or false"),
        (chat("wss://127.0.0.1/chat", "tls: {client_key: \(pem)}\n"), "tls.client_key", "needs 'client_cert'"),
        (chat("wss://127.0.0.1/chat", "tls: {min_version: 1.1}\n"), "tls.min_version", "expected \"1.2\" or \"1.3\""),
        (chat("wss://127.0.0.1/chat", "tls: {alpn: [\"\"]}\n"), "tls.alpn[0]", "1 to 255 printable ASCII"),
        (chat("wss://127.0.0.1/chat", "tls: {session_resumption: always}\n"), "tls.session_resumption", "'off', 'tickets'"),
        (chat("wss://127.0.0.1/chat", "tls: {resume_ratio: 0.5}\n"), "tls.resume_ratio", "only with 'session_resumption: tickets'"),
        (chat("wss://127.0.0.1/chat", "tls: {session_resumption: tickets, resume_ratio: 1.5}\n"), "tls.resume_ratio", "1"),
        (chat("wss://127.0.0.1/chat", "tls: {server_name: \"bad name\"}\n"), "tls.server_name", "not a host name"),
        (chat("wss://127.0.0.1/chat", "tls: {cipher: x}\n"), "tls.cipher", "unknown field"),
        (chat("wss://127.0.0.1/chat", "tls: [1]\n"), "tls", "expected a mapping"),
        (chat("https://127.0.0.1/chat"), "target", "the chat workload needs 'embedded' or a ws:// or wss:// URL"),
    ])
    func badTLSValuesNameTheirFieldAndLine(yaml: String, field: String, message: String) throws {
        let e = try #require(Self.failure(yaml))
        #expect(e.field == field)
        #expect(e.message.contains(message), "\(e.message)")
        #expect(e.line == 4 || field == "target")
    }
}
