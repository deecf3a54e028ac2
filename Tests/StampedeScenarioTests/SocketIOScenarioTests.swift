import StampedeScenario
import StampedeWire
import Testing

/// The issue's Socket.IO scenario (the `socketio:` key on line 6).
private let chat = """
    workload: socketio
    target: http://127.0.0.1:3000
    clients: 50
    duration: 1s
    message: {rate: 20}
    socketio:
      path: /socket.io/
      namespace: /live
      transports: [polling, websocket]
      auth: {token: "{token}"}
      secrets: {token: {env: SIO_TOKEN}}
      connect:
        - emit: {event: join, args: ["room-{client%10}"], ack: true}
      emit: {event: say, args: [{room: "room-{client%10}", text: "{stamp}"}], ack: true}
      receive: {event: said, stamp: "$[0].text"}
      reconnect: default

    """

private func parse(_ yaml: String) throws(ScenarioError) -> Scenario {
    try ScenarioLoader.parse(yaml: yaml, file: "scenarios/sio-test.yaml")
}

private func failure(_ yaml: String) -> ScenarioError? {
    do { _ = try parse(yaml); return nil } catch { return error }
}

private func chat(replacing old: String, with new: String) -> String {
    precondition(chat.contains(old), "no line \(old)")
    return chat.replacingOccurrences(of: old, with: new)
}

/// A template's text with each placeholder shown as `{…}` (its literal parts exact).
private func shape(_ t: MessageTemplate) -> String {
    t.segments.map { segment in
        switch segment {
        case .literal(let bytes): String(decoding: bytes, as: UTF8.self)
        case .placeholder: "{…}"
        }
    }.joined()
}

@Suite struct SocketIOScenarioTests {
    @Test func theIssuesScenarioLoadsWithEveryPart() throws {
        let s = try parse(chat)
        #expect(s.workload == .socketio)
        let spec = try #require(s.socketio)
        #expect(spec.path == "/socket.io/" && spec.namespace == "/live" && spec.transports == [.polling, .websocket])
        #expect(spec.auth.map(shape) == #"{"token":"{…}"}"#)
        #expect(spec.secrets.map(\.name) == ["token"])
        #expect(spec.connect.count == 1 && spec.connect[0].event == "join" && spec.connect[0].ack)
        #expect(spec.connect.first.map { shape($0.data) } == #"["join","room-{…}"]"#)
        let emit = try #require(spec.emit)
        #expect(emit.event == "say" && emit.ack && emit.carriesStamp && emit.binary.isEmpty)
        #expect(shape(emit.data) == #"["say",{"room":"room-{…}","text":"{…}"}]"#)
        #expect(spec.receive?.event == "said")
        #expect(spec.receive?.stamp?.text == "$[1].text", "the first argument is the array's second element")
        #expect(spec.reconnect == .socketIODefault)
    }

    @Test func emitArgumentsBecomeJSONWithTheirTypesAndEscapes() throws {
        let s = try parse(chat(replacing: #"emit: {event: say, args: [{room: "room-{client%10}", text: "{stamp}"}], ack: true}"#,
                               with: #"emit: {event: say, args: [1, 2.5, true, null, "a \"q\" \\ b", [x]], binary: ["01 02 {stamp}"]}"#))
        let emit = try #require(s.socketio?.emit)
        #expect(shape(emit.data) == #"["say",1,2.5,true,null,"a \"q\" \\ b",["x"],{"_placeholder":true,"num":0}]"#)
        #expect(emit.binary.count == 1 && emit.carriesStamp && !emit.ack)
    }

    @Test func defaultsAreTheOfficialClientsWhenTheSectionIsSparse() throws {
        let s = try parse("""
            workload: socketio
            target: embedded
            clients: 1
            duration: 1s
            message: {rate: 1}
            socketio:
              emit: {event: echo, args: ["{stamp}"], ack: true}
            """)
        let spec = try #require(s.socketio)
        #expect(spec.path == "/socket.io/" && spec.namespace == "/" && spec.transports == [.polling, .websocket])
        #expect(spec.reconnect == .socketIODefault && spec.ackTimeoutSeconds == 10 && spec.auth == nil)
    }

    @Test func anEmitThatCouldNeverBeDeliveredIsRefusedWithItsLine() throws {
        let e = try #require(failure(chat(replacing: #"{room: "room-{client%10}", text: "{stamp}"}], ack: true}"#, with: #"{room: "r"}]}"#)))
        #expect(e.line == 14 && e.field == "socketio.emit")
        #expect(e.message.contains("receive reads a stamp"))
        let noAck = try #require(failure(chat(replacing: "  receive: {event: said, stamp: \"$[0].text\"}\n", with: "")
            .replacingOccurrences(of: "}], ack: true}", with: "}]}")))
        #expect(noAck.field == "socketio.emit" && noAck.message.contains("could never be delivered"))
        let missing = try #require(failure(chat(replacing: #"  emit: {event: say, args: [{room: "room-{client%10}", text: "{stamp}"}], ack: true}"#, with: "")))
        #expect(missing.field == "socketio.emit" && missing.message.contains("message.rate"))
    }

    @Test func badFieldsNameTheirFieldAndLine() throws {
        let cases: [(String, String, String, Int, String)] = [
            ("transports: [polling, websocket]", "transports: [websocket, polling]", "socketio.transports", 9, "[polling, websocket]"),
            ("transports: [polling, websocket]", "transports: [carrier-pigeon]", "socketio.transports[0]", 9, "polling"),
            ("namespace: /live", "namespace: live", "socketio.namespace", 8, "starting with /"),
            ("namespace: /live", "namespace: \"/a,b\"", "socketio.namespace", 8, "starting with /"),
            ("auth: {token: \"{token}\"}", "auth: {token: \"{tokn}\"}", "socketio.auth", 10, "{tokn}"),
            ("auth: {token: \"{token}\"}", "auth: token", "socketio.auth", 10, "a mapping"),
            ("receive: {event: said, stamp: \"$[0].text\"}", "receive: {event: said, stamp: \"$.text\"}", "socketio.receive.stamp", 15, "argument's index"),
            ("receive: {event: said, stamp: \"$[0].text\"}", "receive: {event: disconnect}", "socketio.receive.event", 15, "reserved"),
            ("reconnect: default", "reconnect: sometimes", "socketio.reconnect", 16, "1s doubling to 5s"),
            ("- emit: {event: join", "- emit: {evnt: join", "socketio.connect[0].emit", 13, "evnt"),
        ]
        for (old, new, field, line, text) in cases {
            let e = try #require(failure(chat(replacing: old, with: new)), "\(new)")
            #expect(e.field.hasPrefix(field), "\(new): \(e)")
            #expect(e.line == line, "\(new): \(e)")
            #expect(e.message.contains(text) || e.description.contains(text), "\(new): \(e)")
        }
    }

    @Test func theSectionBelongsToItsWorkloadAndTargetsAreHTTP() throws {
        let other = try #require(failure(chat.replacingOccurrences(of: "workload: socketio", with: "workload: chat")
            .replacingOccurrences(of: "http://127.0.0.1:3000", with: "ws://127.0.0.1:3000/chat")))
        #expect(other.field == "socketio" && other.message.contains("only for workload socketio"))
        let ws = try #require(failure(chat(replacing: "target: http://127.0.0.1:3000", with: "target: ws://127.0.0.1:3000")))
        #expect(ws.field == "target" && ws.message.contains("http://"))
        let top = try #require(failure(chat + "reconnect: default\n"))
        #expect(top.field == "reconnect" && top.message.contains("socketio.reconnect"))
    }
}
