import Foundation
import StampedeLoop
import StampedeServers
import Testing
#if canImport(Glibc)
import Glibc
#endif

// The reference SignalR hub server (StampedeServers/HubServer.swift): third-party clients over
// every transport and protocol they support, then raw bytes for the rules clients rarely hit.

// MARK: - Third-party clients

/// One run of a Python driver (Tests/peers/signalr_clients*.py) against the server.
struct RefHubPeerCase: Sendable, CustomTestStringConvertible {
    var library: String
    var transport: String
    var proto: String
    var scenario: String

    var testDescription: String { "\(library) \(transport) \(proto) \(scenario)" }

    static let scenarios = ["broadcast", "echo", "stream", "clientresult", "upload", "groups"]

    static let all: [RefHubPeerCase] = {
        var cases: [RefHubPeerCase] = []
        for (library, transports) in [("pysignalr", ["websockets"]), ("signalrcore", ["websockets", "sse", "longpolling"])] {
            for transport in transports {
                for proto in ["json", "messagepack"] {
                    for scenario in scenarios { cases.append(RefHubPeerCase(library: library, transport: transport, proto: proto, scenario: scenario)) }
                }
            }
        }
        return cases
    }()

    var script: String { library == "pysignalr" ? "signalr_clients.py" : "signalr_clients_signalrcore.py" }

    /// Library defects the driver does not report as unsupported (yet), found against this
    /// server and checked against ASP.NET's reader.
    var knownDefect: String? {
        if library == "signalrcore" && transport == "websockets" && proto == "messagepack" && scenario == "upload" {
            return "signalrcore 1.0.2 encodes the Completion that ends an upload stream as [3, headers, id] without a result kind; "
                + "ASP.NET's MessagePack reader (and this server) reject it as a protocol error"
        }
        return nil
    }
}

@Suite struct HubServerInteropTests {
    static let clients = 5
    static let messages = 5

    /// Cancels this case with its reason. Swift Testing 6.3's console and xUnit reporters do not
    /// show the comment of a cancelled test case, so it is printed as well.
    static func skip(_ c: RefHubPeerCase, _ reason: String) throws -> Never {
        print("HubServer interop skipped [\(c.testDescription)]: \(reason)")
        try Test.cancel(Comment(rawValue: reason))
    }

    @Test(arguments: RefHubPeerCase.all)
    func thirdPartyClientAccountsForEveryMessage(_ c: RefHubPeerCase) throws {
        if let defect = c.knownDefect { try Self.skip(c, "library defect: \(defect)") }
        let python = try peerPython(c.library)
        let hub = try RefHubServer()
        defer { hub.stop() }
        let n = Self.clients, m = Self.messages
        let result = try runProcess(python, [repositoryRoot.appendingPathComponent("Tests/peers/\(c.script)").path,
                                             "--url", "http://127.0.0.1:\(hub.port)/hub", "--transport", c.transport, "--protocol", c.proto,
                                             "--clients", "\(n)", "--messages", "\(m)", "--timeout", "30", "--scenario", c.scenario],
                                    timeout: 60)
        let line = result.stdout.split(separator: "\n").last { $0.hasPrefix("{") }.map(String.init) ?? ""
        let report = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
        if result.status == 3 {
            try Self.skip(c, "unsupported by the library: \(report["unsupported"] as? String ?? line)")
        }
        #expect(result.status == 0, "\(c.testDescription): \(line) \(result.stderr.suffix(1500))")
        #expect(report["ok"] as? Bool == true)
        #expect(report["missing"] as? Int == 0)
        #expect(report["duplicates"] as? Int == 0)
        #expect(report["errors"] as? Int == 0)
        #expect(report["received"] as? Int == report["expected"] as? Int)

        // The server's own books agree with the client's.
        let s = hub.server.statisticsSnapshot()
        #expect(s.protocolErrors == 0)
        #expect(s.handshakes == n)
        #expect((c.proto == "json" ? s.handshakesJSON : s.handshakesMessagePack) == n)
        switch c.transport {
        case "websockets": #expect(s.connectionsWebSockets == n)
        case "sse": #expect(s.connectionsServerSentEvents == n)
        default: #expect(s.connectionsLongPolling == n)
        }
        let members = (n + 1) / 2
        switch c.scenario {
        case "broadcast":
            #expect(s.invocations.sendMessage == n * m)
            #expect(s.messagesBroadcast == n * n * m)
        case "echo":
            #expect(s.invocations.echo == n * m)
        case "stream":
            #expect(s.invocations.counter == n)
            #expect(s.streamItemsSent == n * m)
        case "clientresult":
            #expect(s.invocations.askClient == n * m)
            #expect(s.clientResults == n * m)
            #expect(s.clientResultErrors == 0)
        case "upload":
            #expect(s.invocations.upload == n)
            #expect(s.uploadItemsReceived == n * m)
            #expect(s.uploadsCompleted == n)
        case "groups":
            #expect(s.invocations.joinGroup == members)
            #expect(s.invocations.leaveGroup == members)
            #expect(s.invocations.sendToGroup == n * m + 1)
            // Members get every group message; after leaving, the group send reaches nobody
            // and the closing marker broadcast reaches everyone.
            #expect(s.messagesBroadcast == members * n * m + n)
        default:
            break
        }
    }
}

// MARK: - Raw bytes

@Suite struct HubServerWireTests {
    @Test func negotiateV1AnswersIdTokenAndAllThreeTransports() throws {
        let hub = try RefHubServer()
        defer { hub.stop() }
        let r = try RefHubHTTP.request(hub.port, "POST", "/hub/negotiate?negotiateVersion=1")
        #expect(r.status == 200)
        #expect(r.headers["content-type"] == "application/json")
        let json = try r.jsonObject()
        let id = try #require(json["connectionId"] as? String)
        let token = try #require(json["connectionToken"] as? String)
        #expect(id.utf8.count == 22 && token.utf8.count == 22 && id != token)
        #expect(json["negotiateVersion"] as? Int == 1)
        #expect(json["useStatefulReconnect"] == nil)
        let transports = try #require(json["availableTransports"] as? [[String: Any]])
        #expect(transports.map { $0["transport"] as? String } == ["WebSockets", "ServerSentEvents", "LongPolling"])
        #expect(transports.map { $0["transferFormats"] as? [String] } == [["Text", "Binary"], ["Text"], ["Text", "Binary"]])
        // v1 clients use the token; the connection id is not a valid `id`.
        #expect(try RefHubHTTP.request(hub.port, "GET", "/hub?id=\(id)").status == 404)
        let first = try RefHubHTTP.request(hub.port, "GET", "/hub?id=\(token)")
        #expect(first.status == 200 && first.body.isEmpty)
        let s = hub.server.statisticsSnapshot()
        #expect(s.negotiates == 1 && s.negotiatesV1 == 1 && s.connectionsLongPolling == 1)
    }

    @Test func negotiateV0HasNoTokenHigherVersionsAreLoweredAndJunkIsRejected() throws {
        let hub = try RefHubServer()
        defer { hub.stop() }
        let v0 = try RefHubHTTP.request(hub.port, "POST", "/hub/negotiate").jsonObject()
        #expect(v0["connectionToken"] == nil)
        #expect(v0["negotiateVersion"] as? Int == 0)
        let id = try #require(v0["connectionId"] as? String)
        // v0 clients send the connection id as `id`.
        #expect(try RefHubHTTP.request(hub.port, "GET", "/hub?id=\(id)").status == 200)
        let v7 = try RefHubHTTP.request(hub.port, "POST", "/hub/negotiate?negotiateVersion=7").jsonObject()
        #expect(v7["negotiateVersion"] as? Int == 1)
        #expect(v7["connectionToken"] is String)
        for junk in ["abc", "-1", "", "1.5", "99999999999"] {
            let r = try RefHubHTTP.request(hub.port, "POST", "/hub/negotiate?negotiateVersion=\(junk)")
            #expect(r.status == 400, "negotiateVersion=\(junk)")
        }
        #expect(try RefHubHTTP.request(hub.port, "GET", "/hub/negotiate").status == 405)
        #expect(try RefHubHTTP.request(hub.port, "POST", "/elsewhere/negotiate").status == 404)
        let stateful = try RefHubHTTP.request(hub.port, "POST", "/hub/negotiate?negotiateVersion=1&useStatefulReconnect=true").jsonObject()
        #expect(stateful["useStatefulReconnect"] as? Bool == true)
        let s = hub.server.statisticsSnapshot()
        #expect(s.negotiatesV0 == 1 && s.negotiatesV1 == 2 && s.statefulReconnectNegotiated == 1)
    }

    @Test func transportRequestsAnswer404And409And405And400AsASPNETDoes() throws {
        let hub = try RefHubServer()
        defer { hub.stop() }
        // Unknown ids on every transport.
        #expect(try RefHubSocket.openWebSocket(hub.port, "/hub?id=nope").response.status == 404)
        #expect(try RefHubHTTP.request(hub.port, "GET", "/hub?id=nope", headers: ["Accept": "text/event-stream"]).status == 404)
        #expect(try RefHubHTTP.request(hub.port, "GET", "/hub?id=nope").status == 404)
        #expect(try RefHubHTTP.request(hub.port, "POST", "/hub?id=nope", body: Array("{}\u{1e}".utf8)).status == 404)
        #expect(try RefHubHTTP.request(hub.port, "DELETE", "/hub?id=nope").status == 404)
        #expect(try RefHubHTTP.request(hub.port, "GET", "/hub").status == 400)
        #expect(try RefHubHTTP.request(hub.port, "PUT", "/hub?id=x").status == 405)
        // A second WebSocket on an active id: 409; POST to a WebSocket connection: 405;
        // another transport on it: 400.
        let token = try RefHubHTTP.negotiateToken(hub.port)
        let (ws, up) = try RefHubSocket.openWebSocket(hub.port, "/hub?id=\(token)")
        #expect(up.status == 101)
        #expect(try RefHubSocket.openWebSocket(hub.port, "/hub?id=\(token)").response.status == 409)
        #expect(try RefHubHTTP.request(hub.port, "POST", "/hub?id=\(token)", body: Array("{\"type\":6}\u{1e}".utf8)).status == 405)
        #expect(try RefHubHTTP.request(hub.port, "GET", "/hub?id=\(token)").status == 400)
        #expect(try RefHubHTTP.request(hub.port, "DELETE", "/hub?id=\(token)").status == 400)
        ws.close()
        // Long polling: DELETE ends the open poll with 204 and answers 202.
        let lp = try RefHubHTTP.negotiateToken(hub.port)
        #expect(try RefHubHTTP.request(hub.port, "GET", "/hub?id=\(lp)").status == 200)
        let poll = try RefHubSocket(port: hub.port)
        poll.write("GET /hub?id=\(lp) HTTP/1.1\r\nHost: x\r\n\r\n")
        Thread.sleep(forTimeInterval: 0.1)
        #expect(try RefHubHTTP.request(hub.port, "DELETE", "/hub?id=\(lp)").status == 202)
        #expect(try poll.readResponse().status == 204)
        #expect(try RefHubHTTP.request(hub.port, "GET", "/hub?id=\(lp)").status == 404)
    }

    @Test func keepAliveConnectionServesSeveralRequestsInOrder() throws {
        let hub = try RefHubServer()
        defer { hub.stop() }
        let s = try RefHubSocket(port: hub.port)
        // Two negotiates pipelined on one connection, then a poll start for the first.
        s.write("POST /hub/negotiate?negotiateVersion=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
            + "POST /hub/negotiate HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        let a = try s.readResponse().jsonObject()
        let b = try s.readResponse().jsonObject()
        #expect(a["negotiateVersion"] as? Int == 1 && b["negotiateVersion"] as? Int == 0)
        let token = try #require(a["connectionToken"] as? String)
        s.write("GET /hub?id=\(token) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try s.readResponse().status == 200)
        // A chunked POST carrying the handshake and a ping in two chunks.
        let pieces = ["{\"protocol\":\"jso", "n\",\"version\":1}\u{1e}{\"type\":6}\u{1e}"]
        s.write("POST /hub?id=\(token) HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + pieces.map { String($0.utf8.count, radix: 16) + "\r\n" + $0 + "\r\n" }.joined() + "0\r\n\r\n")
        #expect(try s.readResponse().status == 200)
        s.write("GET /hub?id=\(token) HTTP/1.1\r\nHost: x\r\n\r\n")
        let poll = try s.readResponse()
        #expect(poll.status == 200)
        #expect(poll.body == Array("{}\u{1e}".utf8))
        #expect(hub.server.statisticsSnapshot().handshakes == 1)
    }

    @Test func unknownProtocolOrVersionGetsHandshakeErrorThenClose() throws {
        let hub = try RefHubServer()
        defer { hub.stop() }
        let cases: [(String, String)] = [
            ("{\"protocol\":\"xml\",\"version\":1}", "The protocol 'xml' is not supported."),
            ("{\"protocol\":\"json\",\"version\":3}", "The server does not support version 3 of the 'json' protocol."),
        ]
        for (request, error) in cases {
            let ws = try RefHubClient.connectWebSocket(hub.port, handshake: nil)
            ws.socket.sendFrame(opcode: 1, Array((request + "\u{1e}").utf8))
            let frame = try ws.socket.readFrame()
            let reply = try #require(RefHubJSON.messages(frame.payload).first)
            #expect(reply["error"] as? String == error)
            #expect(frame.payload.last == 0x1E)
            #expect(try ws.socket.readFrame().opcode == 8)  // WebSocket close follows
            #expect(ws.socket.waitForEOF())
        }
        // MessagePack over SSE is refused: the transport is text-only.
        let token = try RefHubHTTP.negotiateToken(hub.port)
        let sse = try RefHubSocket(port: hub.port)
        sse.write("GET /hub?id=\(token) HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
        #expect(try sse.readResponse(headOnly: true).headers["content-type"] == "text/event-stream")
        #expect(try sse.readChunk() == Array(":\r\n".utf8))
        #expect(try RefHubHTTP.request(hub.port, "POST", "/hub?id=\(token)", body: Array("{\"protocol\":\"messagepack\",\"version\":1}\u{1e}".utf8)).status == 200)
        let event = String(decoding: try sse.readChunk(), as: UTF8.self)
        #expect(event.hasPrefix("data: {\"error\":\"Cannot use the 'messagepack' protocol on the current transport."))
        let s = hub.server.statisticsSnapshot()
        #expect(s.handshakeErrors == 3 && s.handshakes == 0)
    }

    @Test func malformedHubMessageGetsCloseWithErrorAndIsCounted() throws {
        let hub = try RefHubServer()
        defer { hub.stop() }
        let bad: [[UInt8]] = [
            Array("{\"type\":1,\"target\":\u{1e}".utf8),                                            // invalid JSON
            Array("{\"type\":3,\"invocationId\":\"1\",\"result\":1,\"error\":\"x\"}\u{1e}".utf8),  // result and error
            Array("{\"type\":1,\"target\":\"\",\"arguments\":[]}\u{1e}".utf8),                    // empty target
        ]
        for (k, payload) in bad.enumerated() {
            let ws = try RefHubClient.connectWebSocket(hub.port)
            ws.socket.sendFrame(opcode: 1, payload)
            let close = try #require(RefHubJSON.messages(try ws.socket.readFrame().payload).first)
            #expect(close["type"] as? Int == 7)
            #expect((close["error"] as? String)?.hasPrefix("Connection closed with an error. InvalidDataException: ") == true, "case \(k)")
            #expect(close["allowReconnect"] == nil || close["allowReconnect"] as? Bool == false)
            #expect(try ws.socket.readFrame().opcode == 8)
            #expect(ws.socket.waitForEOF())
        }
        // MessagePack: an invalid VarInt prefix and an empty body.
        for payload in [[0x80, 0x80, 0x80, 0x80, 0x08], [0x00]] as [[UInt8]] {
            let ws = try RefHubClient.connectWebSocket(hub.port, protocolName: "messagepack")
            ws.socket.sendFrame(opcode: 2, payload)
            let frame = try ws.socket.readFrame()
            #expect(frame.opcode == 2)
            #expect(frame.payload.count > 3 && frame.payload[0] == UInt8(frame.payload.count - 1))
            #expect([0x92, 0x93].contains(frame.payload[1]) && frame.payload[2] == 0x07)  // [7, "error…", false?]
            #expect(try ws.socket.readFrame().opcode == 8)
        }
        let s = hub.server.statisticsSnapshot()
        #expect(s.protocolErrors == 5)
        #expect(s.closeMessagesSent == 5)
    }

    @Test func messageOverTheSizeLimitClosesWithoutAllowReconnect() throws {
        let hub = try RefHubServer { $0.maximumReceiveMessageSize = 1024 }
        defer { hub.stop() }
        let ws = try RefHubClient.connectWebSocket(hub.port)
        let big = "{\"type\":1,\"target\":\"Echo\",\"arguments\":[\"" + String(repeating: "x", count: 2000) + "\"]}\u{1e}"
        ws.socket.sendFrame(opcode: 1, Array(big.utf8))
        let close = try #require(RefHubJSON.messages(try ws.socket.readFrame().payload).first)
        #expect(close["type"] as? Int == 7)
        #expect((close["error"] as? String)?.contains("The maximum message size of 1024B was exceeded") == true)
        #expect(close["allowReconnect"] == nil)
        // Under the limit is fine.
        let ok = try RefHubClient.connectWebSocket(hub.port)
        let reply = try ok.invoke("{\"type\":1,\"invocationId\":\"1\",\"target\":\"Echo\",\"arguments\":[\"" + String(repeating: "y", count: 900) + "\"]}")
        #expect((reply["result"] as? String)?.count == 900)
    }

    @Test func messagePackVectorsCrossTheServerByteForByte() throws {
        let hub = try RefHubServer()
        defer { hub.stop() }
        let ws = try RefHubClient.connectWebSocket(hub.port, protocolName: "messagepack")
        // Invocation [1,{},"xyz","Echo",[42],[]] → Completion value 42: 09 95 03 80 A3 78 79 7A 03 2A.
        ws.socket.sendFrame(opcode: 2, [0x0F, 0x96, 0x01, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0xA4, 0x45, 0x63, 0x68, 0x6F, 0x91, 0x2A, 0x90])
        #expect(try ws.socket.readFrame().payload == [0x09, 0x95, 0x03, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0x03, 0x2A])
        // The 5-item form, a ping (02 91 06) and a lowercase method name in one frame.
        ws.socket.sendFrame(opcode: 2, [0x02, 0x91, 0x06, 0x0E, 0x95, 0x01, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0xA4, 0x65, 0x63, 0x68, 0x6F, 0x91, 0x2A])
        #expect(try ws.socket.readFrame().payload == [0x09, 0x95, 0x03, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0x03, 0x2A])
        // Upload: [1,{},"up","Upload",[],["xyz"]], StreamItem 42 (08 94 02 80 A3 78 79 7A 2A) twice,
        // then Completion void (08 94 03 80 A3 78 79 7A 02) → Completion for "up" with value 2.
        ws.socket.sendFrame(opcode: 2, RefHubMsgPack.frame([0x96, 0x01, 0x80, 0xA2, 0x75, 0x70, 0xA6, 0x55, 0x70, 0x6C, 0x6F, 0x61, 0x64, 0x90, 0x91, 0xA3, 0x78, 0x79, 0x7A])
            + [0x08, 0x94, 0x02, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0x2A] + [0x08, 0x94, 0x02, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0x2A]
            + [0x08, 0x94, 0x03, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0x02])
        #expect(try ws.socket.readFrame().payload == [0x08, 0x95, 0x03, 0x80, 0xA2, 0x75, 0x70, 0x03, 0x02])
        // StreamInvocation Counter(2, 0) id "xyz": items 0 and 1, then a void Completion.
        ws.socket.sendFrame(opcode: 2, RefHubMsgPack.frame([0x96, 0x04, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0xA7] + Array("Counter".utf8) + [0x92, 0x02, 0x00, 0x90]))
        #expect(try ws.socket.readFrame().payload == [0x08, 0x94, 0x02, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0x00])
        #expect(try ws.socket.readFrame().payload == [0x08, 0x94, 0x02, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0x01])
        #expect(try ws.socket.readFrame().payload == [0x08, 0x94, 0x03, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0x02])
        // A slow Counter(1000, 1000) cancelled by CancelInvocation (07 93 05 80 A3 78 79 7A):
        // item 0, then only the Completion.
        ws.socket.sendFrame(opcode: 2, RefHubMsgPack.frame([0x96, 0x04, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0xA7] + Array("Counter".utf8) + [0x92, 0xCD, 0x03, 0xE8, 0xCD, 0x03, 0xE8, 0x90]))
        #expect(try ws.socket.readFrame().payload == [0x08, 0x94, 0x02, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0x00])
        ws.socket.sendFrame(opcode: 2, [0x07, 0x93, 0x05, 0x80, 0xA3, 0x78, 0x79, 0x7A])
        #expect(try ws.socket.readFrame().payload == [0x08, 0x94, 0x03, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0x02])
        // Unknown method with an id: an error Completion (kind 1).
        ws.socket.sendFrame(opcode: 2, RefHubMsgPack.frame([0x96, 0x01, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0xA4] + Array("Send".utf8) + [0x90, 0x90]))
        #expect(try ws.socket.readFrame().payload == RefHubMsgPack.frame([0x95, 0x03, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0x01, 0xB9] + Array("Unknown hub method 'Send'".utf8)))
        // Close from the client [7, nil] (03 92 07 C0): the server closes the socket.
        ws.socket.sendFrame(opcode: 2, [0x03, 0x92, 0x07, 0xC0])
        #expect(try ws.socket.readFrame().opcode == 8)
        #expect(ws.socket.waitForEOF())
        let s = hub.server.statisticsSnapshot()
        #expect(s.streamsCanceled == 1 && s.uploadItemsReceived == 2 && s.invocations.unknown == 1 && s.protocolErrors == 0)
    }

    @Test func jsonVectorsAndBroadcastTranscodeBetweenJSONAndMessagePack() throws {
        let hub = try RefHubServer()
        defer { hub.stop() }
        let json = try RefHubClient.connectWebSocket(hub.port)
        let mp = try RefHubClient.connectWebSocket(hub.port, protocolName: "messagepack")
        // {"type":1,"invocationId":"0","target":"Send","arguments":["hi",42]} → unknown method.
        let unknown = try json.invoke("{\"type\":1,\"invocationId\":\"0\",\"target\":\"Send\",\"arguments\":[\"hi\",42]}")
        #expect(unknown["type"] as? Int == 3 && unknown["error"] as? String == "Unknown hub method 'Send'" && unknown["result"] == nil)
        // Echo relays the argument's bytes as they are (escapes and all).
        json.socket.sendFrame(opcode: 1, Array("{\"type\":6}\u{1e}{\"type\":1,\"invocationId\":\"1\",\"target\":\"ECHO\",\"arguments\":[{\"a\":[1,2.5e3,\"\\u00e9\"]}]}\u{1e}".utf8))
        #expect(try json.socket.readFrame().payload == Array("{\"type\":3,\"invocationId\":\"1\",\"result\":{\"a\":[1,2.5e3,\"\\u00e9\"]}}\u{1e}".utf8))
        // A void method answers a Completion without result.
        let joined = try json.invoke("{\"type\":1,\"invocationId\":\"2\",\"target\":\"JoinGroup\",\"arguments\":[\"g\"]}")
        #expect(joined.keys.sorted() == ["invocationId", "type"])
        // JSON sender → MessagePack receiver: the escaped text arrives decoded.
        json.socket.sendFrame(opcode: 1, Array("{\"type\":1,\"target\":\"SendMessage\",\"arguments\":[\"u\",\"h\\u00e9\\n\"]}\u{1e}".utf8))
        #expect(try mp.socket.readFrame().payload == RefHubMsgPack.frame([0x96, 0x01, 0x80, 0xC0, 0xAE] + Array("ReceiveMessage".utf8) + [0x92, 0xA1, 0x75, 0xA4, 0x68, 0xC3, 0xA9, 0x0A, 0x90]))
        #expect(try json.socket.readFrame().payload == Array("{\"type\":1,\"target\":\"ReceiveMessage\",\"arguments\":[\"u\",\"h\\u00e9\\n\"]}\u{1e}".utf8))
        // MessagePack sender → JSON receiver: escaped as JSON needs.
        mp.socket.sendFrame(opcode: 2, RefHubMsgPack.frame([0x96, 0x01, 0x80, 0xC0, 0xAB] + Array("SendMessage".utf8) + [0x92, 0xC0, 0xA5, 0x61, 0x22, 0x0A, 0xC3, 0xA9, 0x90]))
        #expect(try json.socket.readFrame().payload == Array("{\"type\":1,\"target\":\"ReceiveMessage\",\"arguments\":[null,\"a\\\"\\n\u{e9}\"]}\u{1e}".utf8))
        #expect(try mp.socket.readFrame().payload == RefHubMsgPack.frame([0x96, 0x01, 0x80, 0xC0, 0xAE] + Array("ReceiveMessage".utf8) + [0x92, 0xC0, 0xA5, 0x61, 0x22, 0x0A, 0xC3, 0xA9, 0x90]))
        // Wrong argument types and counts are binding errors, not protocol errors.
        let wrong = try json.invoke("{\"type\":1,\"invocationId\":\"3\",\"target\":\"SendMessage\",\"arguments\":[1,2]}")
        #expect((wrong["error"] as? String)?.contains("Error binding arguments") == true)
        let count = try json.invoke("{\"type\":1,\"invocationId\":\"4\",\"target\":\"echo\",\"arguments\":[]}")
        #expect((count["error"] as? String)?.contains("Invocation provides 0 argument(s) but target expects 1.") == true)
        let s = hub.server.statisticsSnapshot()
        #expect(s.messagesBroadcast == 4 && s.protocolErrors == 0 && s.handshakesJSON == 1 && s.handshakesMessagePack == 1)
    }

    @Test func serverSentEventsStreamCommentThenDataLinesAndPostedMessages() throws {
        let hub = try RefHubServer()
        defer { hub.stop() }
        let token = try RefHubHTTP.negotiateToken(hub.port)
        let sse = try RefHubSocket(port: hub.port)
        sse.write("GET /hub?id=\(token) HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
        let head = try sse.readResponse(headOnly: true)
        #expect(head.status == 200 && head.headers["transfer-encoding"] == "chunked" && head.headers["content-type"] == "text/event-stream")
        #expect(try sse.readChunk() == Array(":\r\n".utf8))
        let post = Array("{\"protocol\":\"json\",\"version\":1}\u{1e}{\"type\":1,\"invocationId\":\"7\",\"target\":\"Echo\",\"arguments\":[\"hi\"]}\u{1e}".utf8)
        #expect(try RefHubHTTP.request(hub.port, "POST", "/hub?id=\(token)", body: post).status == 200)
        #expect(try sse.readChunk() == Array("data: {}\u{1e}\r\n\r\n".utf8))
        #expect(try sse.readChunk() == Array("data: {\"type\":3,\"invocationId\":\"7\",\"result\":\"hi\"}\u{1e}\r\n\r\n".utf8))
        // A second SSE request for the same id: 409.
        #expect(try RefHubHTTP.request(hub.port, "GET", "/hub?id=\(token)", headers: ["Accept": "text/event-stream"]).status == 409)
        #expect(hub.server.statisticsSnapshot().connectionsServerSentEvents == 1)
    }

    @Test func longPollingReturnsQueuedMessagesAtOnceTimesOutEmptyAndNewPollEndsOld() throws {
        let hub = try RefHubServer { $0.pollTimeoutSeconds = 0.3 }
        defer { hub.stop() }
        let token = try RefHubHTTP.negotiateToken(hub.port)
        #expect(try RefHubHTTP.request(hub.port, "GET", "/hub?id=\(token)").status == 200)
        let post = Array("{\"protocol\":\"messagepack\",\"version\":1}\u{1e}".utf8)
            + [0x0F, 0x96, 0x01, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0xA4, 0x45, 0x63, 0x68, 0x6F, 0x91, 0x2A, 0x90]
        #expect(try RefHubHTTP.request(hub.port, "POST", "/hub?id=\(token)", body: post).status == 200)
        // Both queued messages come back in one poll body: the handshake and the Completion.
        let first = try RefHubHTTP.request(hub.port, "GET", "/hub?id=\(token)")
        #expect(first.status == 200 && first.headers["content-type"] == "application/octet-stream")
        #expect(first.body == Array("{}\u{1e}".utf8) + [0x09, 0x95, 0x03, 0x80, 0xA3, 0x78, 0x79, 0x7A, 0x03, 0x2A])
        // Nothing queued: 200 empty after the poll timeout.
        let started = Date()
        let empty = try RefHubHTTP.request(hub.port, "GET", "/hub?id=\(token)")
        #expect(empty.status == 200 && empty.body.isEmpty)
        #expect(Date().timeIntervalSince(started) > 0.25)
        // A new poll ends the open one with 204.
        let old = try RefHubSocket(port: hub.port)
        old.write("GET /hub?id=\(token) HTTP/1.1\r\nHost: x\r\n\r\n")
        Thread.sleep(forTimeInterval: 0.05)
        let new = try RefHubSocket(port: hub.port)
        new.write("GET /hub?id=\(token) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try old.readResponse().status == 204)
        #expect(try new.readResponse().status == 200)
        #expect(hub.server.statisticsSnapshot().pollTimeouts >= 2)
    }

    @Test func idleConnectionsGetPingsAndSilentOnesAreClosedWithAllowReconnect() throws {
        let hub = try RefHubServer { $0.keepAliveInterval = 0.2; $0.clientTimeout = 0.7 }
        defer { hub.stop() }
        let ws = try RefHubClient.connectWebSocket(hub.port)
        let ping = try ws.socket.readFrame()
        #expect(ping.payload == Array("{\"type\":6}\u{1e}".utf8))
        var close: [String: Any] = [:]
        while true {
            let frame = try ws.socket.readFrame()
            let message = try #require(RefHubJSON.messages(frame.payload).first)
            if message["type"] as? Int == 7 { close = message; break }
            #expect(message["type"] as? Int == 6)
        }
        #expect(close["error"] as? String == "Connection closed with an error.")
        #expect(close["allowReconnect"] as? Bool == true)
        let s = hub.server.statisticsSnapshot()
        #expect(s.clientTimeouts == 1 && s.pingsSent >= 2)
    }

    @Test func unclaimedNegotiationsAndStalledHandshakesAndAbandonedPollsAreDropped() throws {
        let hub = try RefHubServer { $0.disconnectTimeout = 0.3; $0.handshakeTimeout = 0.3 }
        defer { hub.stop() }
        let unclaimed = try RefHubHTTP.negotiateToken(hub.port)
        let polled = try RefHubHTTP.negotiateToken(hub.port)
        #expect(try RefHubHTTP.request(hub.port, "GET", "/hub?id=\(polled)").status == 200)
        let ws = try RefHubClient.connectWebSocket(hub.port, handshake: nil)
        let reply = try #require(RefHubJSON.messages(try ws.socket.readFrame().payload).first)
        #expect(reply["error"] as? String == "Handshake was canceled.")
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try RefHubSocket.openWebSocket(hub.port, "/hub?id=\(unclaimed)").response.status == 404)
        #expect(try RefHubHTTP.request(hub.port, "GET", "/hub?id=\(polled)").status == 404)
        let s = hub.server.statisticsSnapshot()
        #expect(s.unclaimedDisposed == 1 && s.handshakeTimeouts >= 1 && s.open == 0)
    }

    @Test func skipNegotiationOpensAConnectionAndShutdownClosesEveryoneWithAllowReconnect() throws {
        let hub = try RefHubServer()
        defer { hub.stop() }
        let a = try RefHubClient.connectWebSocket(hub.port, negotiate: false)
        let b = try RefHubClient.connectWebSocket(hub.port, protocolName: "messagepack")
        #expect(try a.invoke("{\"type\":1,\"invocationId\":\"1\",\"target\":\"Echo\",\"arguments\":[1]}")["result"] as? Int == 1)
        hub.loop.execute { [server = hub.server] _ in server.shutdown() }
        let close = try #require(RefHubJSON.messages(try a.socket.readFrame().payload).first)
        #expect(close["type"] as? Int == 7 && close["allowReconnect"] as? Bool == true && close["error"] == nil)
        #expect(try b.socket.readFrame().payload == [0x04, 0x93, 0x07, 0xC0, 0xC3])  // [7, nil, true]
        #expect(a.socket.waitForEOF() && b.socket.waitForEOF())
        #expect(try RefHubHTTP.request(hub.port, "POST", "/hub/negotiate?negotiateVersion=1").status == 503)
        let s = hub.server.statisticsSnapshot()
        #expect(s.skippedNegotiation == 1 && s.open == 0 && s.closes == 2)
    }

    @Test func statefulReconnectResumesTheSameIdReplaysUnackedAndSkipsDuplicates() throws {
        let hub = try RefHubServer()
        defer { hub.stop() }
        let json = try RefHubHTTP.request(hub.port, "POST", "/hub/negotiate?negotiateVersion=1&useStatefulReconnect=true").jsonObject()
        #expect(json["useStatefulReconnect"] as? Bool == true)
        let token = try #require(json["connectionToken"] as? String)
        let first = try RefHubClient.connectWebSocket(hub.port, token: token, version: 2)
        let echo1 = try first.invoke("{\"type\":1,\"invocationId\":\"1\",\"target\":\"Echo\",\"arguments\":[\"a\"]}")
        #expect(echo1["result"] as? String == "a")
        // The server acks the client's message about a second later.
        let ack = try #require(RefHubJSON.messages(try first.socket.readFrame(timeout: 3).payload).first)
        #expect(ack["type"] as? Int == 8 && ack["sequenceId"] as? Int == 1)
        first.socket.close()  // dropped without a Close: the id stays usable
        Thread.sleep(forTimeInterval: 0.1)
        let (socket, up) = try RefHubSocket.openWebSocket(hub.port, "/hub?id=\(token)")
        #expect(up.status == 101)
        // Sequence {1}, then the unacked Completion again.
        #expect(try socket.readFrame().payload == Array("{\"type\":9,\"sequenceId\":1}\u{1e}".utf8))
        #expect(RefHubJSON.messages(try socket.readFrame().payload).first?["invocationId"] as? String == "1")
        // The client replays from 1: message 1 was processed already and is skipped.
        socket.sendFrame(opcode: 1, Array(("{\"type\":9,\"sequenceId\":1}\u{1e}{\"type\":8,\"sequenceId\":1}\u{1e}"
            + "{\"type\":1,\"invocationId\":\"1\",\"target\":\"Echo\",\"arguments\":[\"a\"]}\u{1e}"
            + "{\"type\":1,\"invocationId\":\"2\",\"target\":\"Echo\",\"arguments\":[\"b\"]}\u{1e}").utf8))
        let reply = try #require(RefHubJSON.messages(try socket.readFrame().payload).first)
        #expect(reply["invocationId"] as? String == "2" && reply["result"] as? String == "b")
        // Back again before the server saw the old socket go: the new one replaces it, and
        // the Completion for "2" (never acked) is replayed from Sequence {2}.
        let (third, again) = try RefHubSocket.openWebSocket(hub.port, "/hub?id=\(token)")
        #expect(again.status == 101)
        #expect(try third.readFrame().payload == Array("{\"type\":9,\"sequenceId\":2}\u{1e}".utf8))
        #expect(RefHubJSON.messages(try third.readFrame().payload).first?["invocationId"] as? String == "2")
        #expect(socket.waitForEOF())
        let s = hub.server.statisticsSnapshot()
        #expect(s.reconnectsResumed == 2 && s.messagesReplayed == 2 && s.invocations.echo == 2 && s.open == 1)
    }

    @Test func hostileBytesEndOnlyTheirConnectionAndAreCounted() throws {
        let hub = try RefHubServer()
        defer { hub.stop() }
        var random = FastRandom(seed: 7)
        func junk(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: random.next()) } }
        for k in 0..<40 {
            // HTTP garbage with a head terminator, so the parser has to decide.
            let http = try RefHubSocket(port: hub.port)
            http.write(junk(20 + k) + Array("\r\n\r\n".utf8))
            #expect(http.waitForEOF(), "http \(k)")
            // Hub-level garbage after both handshakes.
            let ws = try RefHubClient.connectWebSocket(hub.port, protocolName: k % 2 == 0 ? "json" : "messagepack")
            var body = junk(1 + k)
            if k % 2 == 0 { body.append(0x1E) } else { body.insert(UInt8(body.count), at: 0) }
            ws.socket.sendFrame(opcode: k % 2 == 0 ? 2 : 2, body)
            ws.socket.sendFrame(opcode: 8, [0x03, 0xE8])
            #expect(ws.socket.waitForEOF(), "ws \(k)")
        }
        // Broken WebSocket framing (unmasked frame from a client).
        let raw = try RefHubClient.connectWebSocket(hub.port)
        raw.socket.write([0x81, 0x02, 0x68, 0x69])
        #expect(raw.socket.waitForEOF())
        // Still serving.
        let ok = try RefHubClient.connectWebSocket(hub.port)
        #expect(try ok.invoke("{\"type\":1,\"invocationId\":\"1\",\"target\":\"Echo\",\"arguments\":[\"alive\"]}")["result"] as? String == "alive")
        let s = hub.server.statisticsSnapshot()
        #expect(s.protocolErrors >= 40)
        #expect(s.open == 1)
    }
}

// MARK: - Helpers

struct RefHubError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// A HubServer on its own loop, on 127.0.0.1 and a free port.
final class RefHubServer: @unchecked Sendable {
    let loop: EventLoop
    let server: HubServer
    var port: UInt16 { server.port }

    init(_ configure: (inout HubServer.Configuration) -> Void = { _ in }) throws {
        var configuration = HubServer.Configuration()
        configure(&configuration)
        loop = try EventLoop(index: 0)
        server = try HubServer(loop: loop, address: .ipv4(0x7F00_0001, port: 0), configuration: configuration)
        loop.start(name: "hub-test")
    }

    func stop() {
        loop.stop()
        loop.join()
    }
}

struct RefHubResponse {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]

    func jsonObject() throws -> [String: Any] {
        guard let o = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { throw RefHubError("not a JSON object: \(body)") }
        return o
    }
}

/// A blocking TCP client with a read timeout, speaking just enough HTTP/1.1 and WebSocket.
final class RefHubSocket {
    let fd: Int32
    var pending: [UInt8] = []
    var closed = false

    init(port: UInt16) throws {
        guard let fd = connectLoopback(port: port) else { throw RefHubError("connect to \(port) failed") }
        self.fd = fd
    }

    deinit { close() }

    func close() {
        if !closed { closed = true; Glibc.close(fd) }
    }

    func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { b in
            var off = 0
            while off < b.count {
                let n = send(fd, b.baseAddress! + off, b.count - off, Int32(MSG_NOSIGNAL))
                if n <= 0 { return }
                off += n
            }
        }
    }

    func write(_ s: String) { write(Array(s.utf8)) }

    /// Reads once; false at end of stream.
    func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 { pending.append(contentsOf: chunk[0..<n]); return true }
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return true }
        return false
    }

    /// Waits until `parse` finds a value at the start of the pending bytes.
    func read<T>(timeout: Double = 5, _ parse: ([UInt8]) -> (T, Int)?) throws -> T {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let (v, n) = parse(pending) {
                pending.removeFirst(n)
                return v
            }
            guard Date() < deadline else { throw RefHubError("timed out; pending: \(String(decoding: pending.prefix(200), as: UTF8.self))") }
            guard fill() else { throw RefHubError("connection closed; pending: \(String(decoding: pending.prefix(200), as: UTF8.self))") }
        }
    }

    /// True once the server has closed the connection (pending data is skipped).
    func waitForEOF(timeout: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            pending.removeAll()
            if !fill() { return true }
        }
        return false
    }

    func readResponse(headOnly: Bool = false, timeout: Double = 5) throws -> RefHubResponse {
        try read(timeout: timeout) { b in
            guard let end = Self.find(b, Array("\r\n\r\n".utf8)) else { return nil }
            let lines = String(decoding: b[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
            let parts = lines[0].split(separator: " ")
            guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
            var headers: [String: String] = [:]
            for l in lines.dropFirst() {
                guard let colon = l.firstIndex(of: ":") else { continue }
                headers[l[..<colon].lowercased()] = l[l.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let bodyStart = end + 4
            if headOnly || status == 101 || status == 204 { return (RefHubResponse(status: status, headers: headers, body: []), bodyStart) }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            guard b.count >= bodyStart + length else { return nil }
            return (RefHubResponse(status: status, headers: headers, body: Array(b[bodyStart..<(bodyStart + length)])), bodyStart + length)
        }
    }

    /// One chunk of a chunked body.
    func readChunk(timeout: Double = 5) throws -> [UInt8] {
        try read(timeout: timeout) { b in
            guard let lineEnd = Self.find(b, Array("\r\n".utf8)), let size = Int(String(decoding: b[0..<lineEnd], as: UTF8.self), radix: 16) else { return nil }
            let start = lineEnd + 2
            guard b.count >= start + size + 2 else { return nil }
            return (Array(b[start..<(start + size)]), start + size + 2)
        }
    }

    func readFrame(timeout: Double = 5) throws -> (opcode: UInt8, payload: [UInt8]) {
        try read(timeout: timeout) { b in
            guard b.count >= 2 else { return nil }
            var length = Int(b[1] & 0x7F)
            var offset = 2
            if length == 126 {
                guard b.count >= 4 else { return nil }
                length = Int(b[2]) << 8 | Int(b[3])
                offset = 4
            } else if length == 127 {
                guard b.count >= 10 else { return nil }
                length = (2..<10).reduce(0) { $0 << 8 | Int(b[$1]) }
                offset = 10
            }
            guard b.count >= offset + length else { return nil }
            return ((b[0] & 0x0F, Array(b[offset..<(offset + length)])), offset + length)
        }
    }

    func sendFrame(opcode: UInt8, _ payload: [UInt8]) {
        var frame: [UInt8] = [0x80 | opcode]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count < 65536 {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            for k in (0..<8).reversed() { frame.append(UInt8(truncatingIfNeeded: payload.count >> (8 * k))) }
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        for (i, byte) in payload.enumerated() { frame.append(byte ^ mask[i & 3]) }
        write(frame)
    }

    static func find(_ b: [UInt8], _ needle: [UInt8]) -> Int? {
        guard b.count >= needle.count else { return nil }
        for i in 0...(b.count - needle.count) where b[i] == needle[0] && Array(b[i..<(i + needle.count)]) == needle { return i }
        return nil
    }

    static func openWebSocket(_ port: UInt16, _ target: String) throws -> (socket: RefHubSocket, response: RefHubResponse) {
        let s = try RefHubSocket(port: port)
        s.write("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        return (s, try s.readResponse())
    }
}

enum RefHubHTTP {
    /// One request on its own connection (`Connection: close`).
    static func request(_ port: UInt16, _ method: String, _ target: String, headers: [String: String] = [:], body: [UInt8] = []) throws -> RefHubResponse {
        let s = try RefHubSocket(port: port)
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        s.write(Array((head + "\r\n").utf8) + body)
        return try s.readResponse()
    }

    static func negotiateToken(_ port: UInt16) throws -> String {
        let json = try request(port, "POST", "/hub/negotiate?negotiateVersion=1").jsonObject()
        guard let token = json["connectionToken"] as? String else { throw RefHubError("no token in \(json)") }
        return token
    }
}

enum RefHubMsgPack {
    /// A MessagePack body with its VarInt length prefix.
    static func frame(_ body: [UInt8]) -> [UInt8] {
        var prefix: [UInt8] = []
        var n = body.count
        repeat {
            prefix.append(UInt8(n & 0x7F) | (n > 0x7F ? 0x80 : 0))
            n >>= 7
        } while n > 0
        return prefix + body
    }
}

enum RefHubJSON {
    /// The JSON hub messages in one transport message.
    static func messages(_ payload: [UInt8]) -> [[String: Any]] {
        payload.split(separator: 0x1E).compactMap { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }
    }
}

/// A WebSocket hub client driven by hand.
struct RefHubClient {
    var socket: RefHubSocket

    /// Negotiates (unless `negotiate` is false: skipNegotiation), opens the WebSocket and, when
    /// `handshake` is non-nil, completes the handshake in `protocolName`.
    static func connectWebSocket(_ port: UInt16, protocolName: String = "json", negotiate: Bool = true, token: String? = nil,
                                 version: Int = 1, handshake: Bool? = true) throws -> RefHubClient {
        let id = try token ?? (negotiate ? RefHubHTTP.negotiateToken(port) : nil)
        let (s, r) = try RefHubSocket.openWebSocket(port, id.map { "/hub?id=\($0)" } ?? "/hub")
        guard r.status == 101 else { throw RefHubError("upgrade answered \(r.status)") }
        if handshake != nil {
            s.sendFrame(opcode: 1, Array("{\"protocol\":\"\(protocolName)\",\"version\":\(version)}\u{1e}".utf8))
            let reply = try s.readFrame()
            guard reply.payload == Array("{}\u{1e}".utf8) else { throw RefHubError("handshake answered \(String(decoding: reply.payload, as: UTF8.self))") }
        }
        return RefHubClient(socket: s)
    }

    /// Sends one JSON message and returns the next message that is not a ping.
    func invoke(_ message: String) throws -> [String: Any] {
        socket.sendFrame(opcode: 1, Array((message + "\u{1e}").utf8))
        while true {
            for m in RefHubJSON.messages(try socket.readFrame().payload) where m["type"] as? Int != 6 { return m }
        }
    }
}
