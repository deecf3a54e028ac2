import StampedeScenario
import Testing

/// The `rest` section: every field loads as written, defaults fill the rest, and every mistake
/// names its line and field.
@Test func aRestScenarioLoadsWithItsProcessors() throws {
    let s = try ScenarioLoader.parse(yaml: """
        workload: rest
        target: http://127.0.0.1:8080/api
        clients: 10
        duration: 5s
        rest:
          token: {env: API_TOKEN}
          interval: 250ms
          pool: 2
          first_byte_timeout: 2s
          response_timeout: 4s
          max_response_size: 64KiB
          redirects: 2
          staleness: {field: changed_at}
          resources:
            - /plain
            - path: /items?per_page=10
              processors:
                - {status: [200, 203], means: changed, fields: [id]}
                - {status: 304, means: unchanged, interval: 5s}
                - {status: [410], means: changed, stop: true}
        """, file: "rest.yaml")
    let r = try #require(s.rest)
    #expect(s.workload == .rest)
    #expect(r.token == .environment("API_TOKEN"))
    #expect(r.intervalSeconds == 0.25 && r.poolSize == 2 && r.firstByteTimeoutSeconds == 2 && r.responseTimeoutSeconds == 4)
    #expect(r.maxResponseBytes == 65536 && r.maxRedirects == 2 && r.staleness == .field("changed_at"))
    #expect(r.resources[0] == RestResource(path: "/plain", processors: RestProcessor.defaults))
    #expect(r.resources[1].path == "/items?per_page=10")
    #expect(r.resources[1].processors == [
        RestProcessor(statuses: [200, 203], meaning: .changed, requiredFields: ["id"]),
        RestProcessor(statuses: [304], meaning: .unchanged, newIntervalSeconds: 5),
        RestProcessor(statuses: [410], meaning: .changed, stops: true),
    ])
}

@Test func restMistakesNameTheirLineAndField() throws {
    let head = "workload: rest\ntarget: embedded\nclients: 1\nduration: 5s\n"
    let cases: [(String, String, Int)] = [
        ("rest:\n  interval: 1s\n", "rest.resources", 6),
        ("rest:\n  resources: [items]\n", "rest.resources[0]", 6),
        ("rest:\n  resources:\n    - path: /a\n      processors: [{status: [200]}]\n", "rest.resources[0].processors[0].means", 8),
        ("rest:\n  resources:\n    - path: /a\n      processors: [{status: [99], means: changed}]\n", "rest.resources[0].processors[0].status[0]", 8),
        ("rest:\n  resources:\n    - path: /a\n      processors: [{status: 304, means: unchanged, fields: [x]}]\n", "rest.resources[0].processors[0].fields", 8),
        ("rest:\n  pool: 0\n  resources: [/a]\n", "rest.pool", 6),
        ("rest:\n  staleness: {header: X, field: y}\n  resources: [/a]\n", "rest.staleness", 6),
        ("rest:\n  resources: [/a]\n  retries: 3\n", "rest.retries", 7),
    ]
    for (section, field, line) in cases {
        do {
            _ = try ScenarioLoader.parse(yaml: head + section, file: "r.yaml")
            Issue.record("accepted: \(section)")
        } catch {
            #expect(error.field == field, "\(section): \(error)")
            #expect(error.line == line, "\(section): \(error)")
        }
    }
    #expect(throws: ScenarioError.self) { try ScenarioLoader.parse(yaml: head, file: "r.yaml") }  // no rest section
    #expect(throws: ScenarioError.self) {
        try ScenarioLoader.parse(yaml: "target: embedded\nclients: 1\nduration: 5s\nrest: {resources: [/a]}\n", file: "r.yaml")
    }
    #expect(throws: ScenarioError.self) {
        try ScenarioLoader.parse(yaml: "workload: rest\ntarget: ws://127.0.0.1:1/x\nclients: 1\nduration: 5s\nrest: {resources: [/a]}\n", file: "r.yaml")
    }
}
