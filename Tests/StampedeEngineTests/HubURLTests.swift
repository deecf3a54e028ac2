import StampedeScenario
import StampedeWorkloads
import Testing

/// A negotiate redirect's URL comes from a server, so the hub client parses it with the
/// scenario `target` parser: whatever that parser refuses, a redirect cannot carry.
@Suite struct HubURLTests {
    static let refused = [
        "http://127.0.0.1:0/hub", "http://127.0.0.1:65536/hub", "http://127.0.0.1:99999/hub", "http://127.0.0.1:/hub",
        "http://127.0.0.1:-1/hub", "http://127.0.0.1:+80/hub", "http://127.0.0.1: 80/hub", "http://127.0.0.1:http/hub",
        "http://127.0.0.1/h ub", "http://127.0.0.1/hub?a=b c", "http://127.0.0.1/hub\r\nX-Injected: 1",
        "http://user@127.0.0.1/hub", "http://user:pass@127.0.0.1:8080/hub", "http://127.0.0.1/hub#fragment",
        "http://::1:80/hub", "http://[::1/hub", "http://[fe80::1%eth0]/hub", "http://[::1]x/hub", "http:///hub",
        "http://127.1/hub", "http://0127.0.0.1/hub", "http://bad_host!/hub", "ftp://127.0.0.1/hub", "127.0.0.1/hub",
    ]

    @Test(arguments: refused)
    func redirectURLsTheTargetParserRefusesAreRefused(_ text: String) {
        #expect(throws: (any Error).self) { try ScenarioLoader.parseTarget(text).get() }
        #expect(HubURL.parse(text, secure: false) == nil)
        #expect(HubURL.parse(text.replacingFirst("http://", with: "https://"), secure: true) == nil)
    }

    @Test func redirectKeepsTheRunsSchemeAndSplitsPathFromQuery() {
        #expect(HubURL.parse("http://127.0.0.1:5000/hubs/chat?hub=chat&x=1", secure: false)
            == HubURL(host: "127.0.0.1", port: 5000, path: "/hubs/chat", query: "hub=chat&x=1"))
        #expect(HubURL.parse("HTTP://[::1]/hub", secure: false) == HubURL(host: "::1", port: 80, path: "/hub", query: ""))
        #expect(HubURL.parse("https://127.0.0.1?x=1", secure: true) == HubURL(host: "127.0.0.1", port: 443, path: "/", query: "x=1"))
        // A redirect never changes the run's TLS settings.
        #expect(HubURL.parse("https://127.0.0.1/hub", secure: false) == nil)
        #expect(HubURL.parse("http://127.0.0.1/hub", secure: true) == nil)
        // A WebSocket URL is a target, but not a hub's base URL.
        #expect(HubURL.parse("ws://127.0.0.1/hub", secure: false) == nil)
    }
}

extension String {
    fileprivate func replacingFirst(_ prefix: String, with replacement: String) -> String {
        hasPrefix(prefix) ? replacement + dropFirst(prefix.count) : self
    }
}
