import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import Testing

/// report.html in a real browser: Debian's headless Chromium opens a small real run's report
/// (written by the run), a two-run comparison and a capacity report (`stampede report`), and
/// over the DevTools protocol (Tests/peers/cdp_page.py) we check that the page logged no console
/// message or error, threw nothing, made no request besides itself, and that its DOM holds the
/// charts and the numbers. Chromium comes from scripts/ensure-packages.sh --tests; the test
/// fails, not skips, without it.
@Suite(.serialized) struct ReportBrowserTests {
    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }

    struct PageLoad: Decodable {
        struct LogEntry: Decodable { var level: String?; var source: String?; var text: String? }
        var console: [[String: AnyCodableValue]]
        var exceptions: [String?]
        var log: [LogEntry]
        var requests: [String?]
        var dom: String
    }

    /// Whatever a console call's fields hold; only their presence matters here.
    struct AnyCodableValue: Decodable {
        init(from decoder: any Decoder) throws {}
    }

    func open(_ file: URL, python: String) throws -> PageLoad {
        let r = try runProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/cdp_page.py").path, file.absoluteString, "--timeout", "25"], timeout: 40)
        guard r.status == 0 else { throw PeerError("cdp_page.py \(file.lastPathComponent) failed (\(r.status)): \(r.stderr.suffix(2000))") }
        let page = try JSONDecoder().decode(PageLoad.self, from: Data(r.stdout.utf8))
        #expect(page.console.isEmpty, "console messages in \(file.path)")
        #expect(page.exceptions.isEmpty, "exceptions in \(file.path): \(page.exceptions)")
        #expect(page.log.isEmpty, "log entries in \(file.path): \(page.log.map { "\($0.level ?? "") \($0.text ?? "")" })")
        #expect(page.requests.isEmpty, "requests from \(file.path): \(page.requests)")
        #expect(page.dom.contains("<svg"))
        return page
    }

    static func thousands(_ n: UInt64) -> String {
        let d = String(n)
        return d.enumerated().map { i, c in (i > 0 && (d.count - i) % 3 == 0 ? "," : "") + String(c) }.joined()
    }

    @Test func reportsOpenInChromiumWithoutErrorsOrRequestsAndShowTheirChartsAndNumbers() throws {
        try #require(Self.chromium != nil, "chromium is not installed: run scripts/ensure-packages.sh --tests")
        let python = try peerPython("websockets")

        var s = chatScenario(name: "report <b>&", clients: 10, duration: 2, rate: 50)
        s.drainSeconds = 1
        s.reconnect = .delays([0, 0.2, 0.5])
        s.events = [ScenarioEvent(atSeconds: 0.5, kind: .storm(fraction: 0.5, mode: .reset))]
        let a = try run(s)
        let folder = try #require(a.resultsFolder)
        var plain = chatScenario(name: "report-baseline", clients: 10, duration: 2, rate: 50)
        plain.drainSeconds = 1
        let b = try #require(try run(plain).resultsFolder)

        // A run's own report.html.
        let page = try open(folder.appendingPathComponent("report.html"), python: python)
        for id in ["chart-latency-round_trip", "chart-spectrum-round_trip", "chart-messages", "chart-connections", "chart-errors", "chart-storm-1", "storms-table"] {
            #expect(page.dom.contains("id=\"\(id)\""), "\(id)")
        }
        let m = a.summary.messages
        #expect(page.dom.contains("sent \(Self.thousands(m.sent)) = delivered \(Self.thousands(m.delivered)) + failed \(Self.thousands(m.failed)) + lost \(Self.thousands(m.lost))"))
        #expect(page.dom.contains("report &lt;b&gt;&amp;") && !page.dom.contains("<b>"))

        // Two runs compared, and a capacity folder, through the command.
        let out = temporaryFolder("report-browser")
        let compare = out.appendingPathComponent("compare.html")
        let c = try runProcess(stampedeBinary.path, ["report", b.path, folder.path, "-o", compare.path], timeout: 60)
        #expect(c.status == 0, "\(c.stderr)")
        let comparePage = try open(compare, python: python)
        for id in ["verdicts", "percentiles", "figures", "chart-overlay-round_trip", "chart-overlay-spectrum-round_trip"] {
            #expect(comparePage.dom.contains("id=\"\(id)\""), "\(id)")
        }
        let capacity = out.appendingPathComponent("capacity")
        try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("Tests/StampedeReportTests/Fixtures/capacity-example"), to: capacity)
        let k = try runProcess(stampedeBinary.path, ["report", capacity.path], timeout: 60)
        #expect(k.status == 0 && k.stdout.contains(capacity.appendingPathComponent("report.html").path), "\(k.stderr)")
        let capacityPage = try open(capacity.appendingPathComponent("report.html"), python: python)
        for text in ["id=\"chart-capacity\"", "id=\"steps-table\"", "knee 8,000", "max sustainable 21,000", "SLO round_trip p(99) &lt; 50ms"] {
            #expect(capacityPage.dom.contains(text), "\(text)")
        }

        // Bad input: exit 2, naming the path; two folders need -o.
        let missing = try runProcess(stampedeBinary.path, ["report", "/nonexistent/run-7"], timeout: 60)
        #expect(missing.status == 2 && missing.stderr.contains("/nonexistent/run-7"), "\(missing.stderr)")
        let noOut = try runProcess(stampedeBinary.path, ["report", b.path, folder.path], timeout: 60)
        #expect(noOut.status == 2 && noOut.stderr.contains("-o"), "\(noOut.stderr)")
    }
}
