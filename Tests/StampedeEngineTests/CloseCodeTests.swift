import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import Testing

/// A server's Close code and reason reach the results (`close_codes`), for a server we did not
/// write, on 127.0.0.1.
@Suite(.serialized)
struct CloseCodeTests {
    @Test func chatClientsCountAServersCloseCodeAndReason() throws {
        let python = try peerPython("websockets")
        let server = try BackgroundProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/closing_server.py").path,
                                                    "--port", "0", "--code", "4401", "--reason", "auth first", "--max-seconds", "120"])
        defer { server.stop() }
        let line = try server.waitForLine(prefix: "LISTENING ", timeout: 30)
        let port = try #require(Int(line.dropFirst("LISTENING ".count)))
        let s = chatScenario(name: "closing-server", target: .webSocket(url: WebSocketURL(host: "127.0.0.1", port: port, path: "/")),
                             clients: 20, duration: 1, rate: 20)
        let o = try run(s)
        let codes = try #require(o.summary.closeCodes)
        // Every connection the server accepted, it closed once with its code and reason.
        #expect(o.summary.connections.connected >= 1)
        #expect(codes == ["4401 auth first": o.summary.connections.connected])
        #expect(o.summary.errors["closed_with_error"] == o.summary.connections.connected)
        let written = try RunSummary.decode(from: Data(contentsOf: o.resultsFolder!.appendingPathComponent("summary.json")))
        #expect(written.closeCodes == codes)
        #expect(SummaryText.render(o.summary).contains("× 4401 auth first"))
    }
}
