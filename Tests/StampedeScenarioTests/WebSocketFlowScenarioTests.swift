import StampedeScenario
import StampedeWire
import Testing

/// A valid flow scenario: the issue's pub/sub example (the `websocket:` key on line 6).
private let pubsub = """
    workload: websocket
    target: ws://127.0.0.1:9000/ws
    clients: 10
    duration: 1s
    message: {rate: 20}
    websocket:
      subprotocols: [pubsub.v1]
      headers: {X-Tenant: t1}
      secrets: {token: s3cret}
      connect:
        - expect: {match: {$.type: welcome}, capture: {session: $.session}, timeout: 5s}
        - send: '{"op":"auth","token":"{token}","session":"{session}"}'
        - expect: {match: {$.op: auth_ok}, timeout: 5s}
        - send: '{"op":"subscribe","channel":"room-{client%10}"}'
        - expect: {match: {$.op: subscribed}}
      send:
        - text: '{"op":"publish","channel":"room-{client%10}","id":{sequence},"data":{"stamp":"{stamp}"}}'
      replies:
        - name: ack
          match: {$.op: ack}
          correlate: {sent: $.id, received: $.id}
        - name: event
          match: {$.op: event}
          stamp: $.data.stamp
      respond:
        - match: {$.type: ping}
          send: '{"type":"pong"}'
      ignore:
        - match: {$.type: presence}
      reply_timeout: 10s

    """

private func parse(_ yaml: String) throws(ScenarioError) -> Scenario {
    try ScenarioLoader.parse(yaml: yaml, file: "scenarios/flow-test.yaml")
}

private func failure(_ yaml: String) -> ScenarioError? {
    do {
        _ = try parse(yaml)
        return nil
    } catch {
        return error
    }
}

/// `pubsub` with one line replaced.
private func pubsub(replacing old: String, with new: String) -> String {
    precondition(pubsub.contains(old), "no line \(old)")
    return pubsub.replacingOccurrences(of: old, with: new)
}

@Suite struct WebSocketFlowScenarioTests {
    @Test func theIssuesPubSubFlowLoadsWithEveryPart() throws {
        let s = try parse(pubsub)
        #expect(s.workload == .websocket)
        let flow = try #require(s.websocket)
        #expect(flow.subprotocols == ["pubsub.v1"])
        #expect(flow.headers == [Scenario.Header(name: "X-Tenant", value: "t1")])
        #expect(flow.captures == ["session"])
        #expect(flow.connect.count == 5)
        #expect(flow.sends.count == 1)
        #expect(flow.replies.map(\.name) == ["ack", "event"])
        #expect(flow.latencyKeys == ["ack", "ack_uncorrected", "event", "event_uncorrected", "connect_flow"])
        #expect(flow.responds.count == 1 && flow.ignores.count == 1)
        #expect(flow.replyTimeoutSeconds == 10)
        if case .correlate(_, .path(let p)) = flow.replies[0].measure { #expect(p.text == "$.id") } else { Issue.record("ack is not correlated") }
    }

    @Test func anUnknownPlaceholderNamesTheFileLineAndField() throws {
        let e = try #require(failure(pubsub(replacing: #""token":"{token}""#, with: #""token":"{tokn}""#)))
        #expect(e.file == "scenarios/flow-test.yaml")
        #expect(e.line == 12)
        #expect(e.field == "websocket.connect[1].send")
        #expect(e.message.contains("{tokn}"))
    }

    @Test func aCaptureUsedBeforeTheStepThatSetsItIsRefused() throws {
        let yaml = pubsub(replacing: #"- send: '{"op":"subscribe","channel":"room-{client%10}"}'"#,
                          with: #"- send: '{"op":"subscribe","channel":"{later}"}'"#)
            .replacingOccurrences(of: "- expect: {match: {$.op: subscribed}}", with: "- expect: {match: {$.op: subscribed}, capture: {later: $.x}}")
        let e = try #require(failure(yaml))
        #expect(e.field == "websocket.connect[3].send")
        #expect(e.message.contains("before the step that sets it"))
    }

    @Test func aMalformedPathIsRefusedAtItsLine() throws {
        let e = try #require(failure(pubsub(replacing: "match: {$.op: ack}", with: "match: {$op: ack}")))
        #expect(e.line == 20)
        #expect(e.field.hasPrefix("websocket.replies[0].match"))
    }

    @Test func correlateWithoutSequenceInTheSentMessageIsRefused() throws {
        let e = try #require(failure(pubsub(replacing: "correlate: {sent: $.id, received: $.id}", with: "correlate: {sent: $.channel, received: $.id}")))
        #expect(e.field == "websocket.replies[0].correlate.sent")
        #expect(e.message.contains("{sequence}"))
    }

    @Test func aMessageNoRuleCanMeasureIsRefused() throws {
        let yaml = pubsub(replacing: #"- text: '{"op":"publish","channel":"room-{client%10}","id":{sequence},"data":{"stamp":"{stamp}"}}'"#,
                          with: #"- text: '{"op":"publish","id":{sequence},"data":{"stamp":"{stamp}"}}'"# + "\n    - text: '{\"op\":\"noop\"}'")
        let e = try #require(failure(yaml))
        #expect(e.field == "websocket.send[1]")
    }

    @Test func aReplyNamedLikeABuiltInMetricIsRefused() throws {
        let e = try #require(failure(pubsub(replacing: "- name: ack", with: "- name: round_trip")))
        #expect(e.field == "websocket.replies[0].name")
    }

    @Test func theSectionIsOnlyForTheWebsocketWorkload() throws {
        let e = try #require(failure(pubsub.replacingOccurrences(of: "workload: websocket", with: "workload: chat")))
        #expect(e.field == "websocket")
        let missing = try #require(failure("workload: websocket\ntarget: ws://127.0.0.1:1/ws\nclients: 1\nduration: 1s\n"))
        #expect(missing.field == "websocket")
    }

    @Test func binaryTemplatesAndMatchesLoad() throws {
        let yaml = """
            workload: websocket
            target: ws://127.0.0.1:1883/mqtt
            clients: 2
            duration: 1s
            websocket:
              subprotocols: [mqtt]
              send:
                - binary: "32 24 0001 74 {sequence:u16} {stamp}"
              replies:
                - name: puback
                  match: {bytes: {offset: 0, hex: "40"}}
                  correlate: {sent: {offset: 5, length: 2}, received: {offset: 2, length: 2}}

            """
        let flow = try #require(try parse(yaml).websocket)
        #expect(flow.sends[0].template.encoding == .binary)
        #expect(flow.replies[0].match.conditions == [.masked(offset: 0, bytes: [0x40], mask: [0xFF])])
    }

    @Test func aStompStyleBetweenMatchNeedsEquals() throws {
        let yaml = pubsub(replacing: "match: {$.op: ack}", with: #"match: {between: ["receipt-id:", "\n"]}"#)
        let e = try #require(failure(yaml))
        #expect(e.field == "websocket.replies[0].match.between")
    }
}
