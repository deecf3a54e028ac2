import Foundation
import Testing
import StampedeLoop
import StampedeServers

// The Socket.IO server's runtime over raw HTTP on loopback: the Engine.IO requests and their
// errors, held polls, faults, the ping timeout and maxPayload, the abusive-client limits (output
// limit, idle and header timeouts), and `serve --processes` with
// WebSocket-only python-socketio clients whose broadcasts cross between the processes.

private func text(_ r: RefHubResponse) -> String { String(decoding: r.body, as: UTF8.self) }

/// A polling handshake; the new session's sid.
private func handshake(_ port: UInt16) throws -> String {
    let r = try RefHubHTTP.request(port, "GET", "/socket.io/?EIO=4&transport=polling&t=x")
    #expect(r.status == 200)
    let body = text(r)
    #expect(body.hasPrefix("0{"))
    let json = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8.dropFirst())) as? [String: Any])
    return try #require(json["sid"] as? String)
}

private func post(_ port: UInt16, _ sid: String, _ body: String) throws -> RefHubResponse {
    try RefHubHTTP.request(port, "POST", "/socket.io/?EIO=4&transport=polling&sid=\(sid)", body: Array(body.utf8))
}

private func poll(_ port: UInt16, _ sid: String) throws -> RefHubResponse {
    try RefHubHTTP.request(port, "GET", "/socket.io/?EIO=4&transport=polling&sid=\(sid)")
}

/// Starts a GET poll on its own connection without reading the answer.
private func startPoll(_ port: UInt16, _ sid: String) throws -> RefHubSocket {
    let s = try RefHubSocket(port: port)
    s.write(Array("GET /socket.io/?EIO=4&transport=polling&sid=\(sid) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
    return s
}

/// Waits (bounded) until `condition` holds for the server's statistics; the last ones seen.
private func statistics(_ server: RefSocketIOServer, until condition: (SocketIOServer.Statistics) -> Bool) -> SocketIOServer.Statistics {
    var s = server.server.statisticsSnapshot()
    for _ in 0..<200 where !condition(s) {
        Thread.sleep(forTimeInterval: 0.02)
        s = server.server.statisticsSnapshot()
    }
    return s
}

@Suite(.serialized)
struct SocketIOServerTests {
    @Test func aLongPollingSessionConnectsAndIsAckedOverRawHTTP() throws {
        let server = try RefSocketIOServer()
        defer { server.stop() }
        let sid = try handshake(server.port)
        #expect(text(try post(server.port, sid, "40")) == "ok")
        let connected = text(try poll(server.port, sid))
        #expect(connected.hasPrefix("40{\"sid\":\""))
        #expect(text(try post(server.port, sid, "421[\"echo\",\"x\",2]\u{1e}42[\"join\",\"r\"]\u{1e}427[\"join\",\"r\"]")) == "ok")
        #expect(text(try poll(server.port, sid)) == "431[\"x\",2]\u{1e}437[true]")
        let stats = server.server.statisticsSnapshot()
        #expect(stats.handshakesPolling == 1 && stats.namespaceConnects == 1 && stats.eventsReceived == 3 && stats.joins == 2 && stats.acksSent == 2)
    }

    @Test func badRequestsGetEngineIOErrorsAndTheSessionGoesOn() throws {
        let server = try RefSocketIOServer()
        defer { server.stop() }
        let unknown = try poll(server.port, "nope")
        #expect(unknown.status == 400 && text(unknown) == #"{"code":1,"message":"Session ID unknown"}"#)
        let version = try RefHubHTTP.request(server.port, "GET", "/socket.io/?EIO=3&transport=polling")
        #expect(version.status == 400 && text(version) == #"{"code":5,"message":"Unsupported protocol version"}"#)
        #expect(try RefHubHTTP.request(server.port, "GET", "/elsewhere/?EIO=4&transport=polling").status == 404)
        let sid = try handshake(server.port)
        #expect(try RefHubHTTP.request(server.port, "PUT", "/socket.io/?EIO=4&transport=polling&sid=\(sid)").status == 400)
        #expect(text(try post(server.port, sid, "40")) == "ok")
        #expect(text(try poll(server.port, sid)).hasPrefix("40"))
    }

    @Test func aSecondConcurrentPollIsRefusedAndEndsTheSession() throws {
        let server = try RefSocketIOServer()
        defer { server.stop() }
        let sid = try handshake(server.port)
        let held = try startPoll(server.port, sid)
        _ = statistics(server) { $0.polls == 1 }
        #expect(try poll(server.port, sid).status == 400)
        #expect(try held.readResponse().status == 200)
        let stats = statistics(server) { $0.open == 0 }
        #expect(stats.open == 0 && stats.protocolErrors == 1)
        #expect(try poll(server.port, sid).status == 400)
    }

    @Test func aCleanDropAnswersTheHeldPollWithTheClosePacketAndForgetsTheSession() throws {
        let server = try RefSocketIOServer()
        defer { server.stop() }
        let sid = try handshake(server.port)
        let held = try startPoll(server.port, sid)
        _ = statistics(server) { $0.polls == 1 }
        let target = server.server
        server.loop.execute { _ in target.apply(.drop(reset: false)) }
        let answer = try held.readResponse()
        #expect(answer.status == 200 && text(answer) == "1")
        #expect(try poll(server.port, sid).status == 400)
        let stats = server.server.statisticsSnapshot()
        #expect(stats.connectionsDropped == 1 && stats.serverCloses == 1 && stats.open == 0)
    }

    @Test func aRejectFaultRefusesNewSessionsWhileExistingOnesGoOn() throws {
        let server = try RefSocketIOServer()
        defer { server.stop() }
        let sid = try handshake(server.port)
        let target = server.server
        server.loop.execute { _ in target.apply(.reject(seconds: 30)) }
        _ = statistics(server) { $0.faultsApplied == 1 }
        let refused = try RefHubHTTP.request(server.port, "GET", "/socket.io/?EIO=4&transport=polling")
        #expect(refused.status == 503 && refused.headers["retry-after"] != nil)
        #expect(text(try post(server.port, sid, "40")) == "ok")
        #expect(text(try poll(server.port, sid)).hasPrefix("40"))
    }

    @Test func aClientThatStopsPollingIsClosedByThePingTimeout() throws {
        let server = try RefSocketIOServer {
            $0.pingInterval = 0.1
            $0.pingTimeout = 0.1
        }
        defer { server.stop() }
        _ = try handshake(server.port)
        let stats = statistics(server) { $0.open == 0 }
        #expect(stats.pingTimeouts == 1 && stats.open == 0)
    }

    @Test func aPostOverMaxPayloadIs413AndEndsTheSession() throws {
        let server = try RefSocketIOServer { $0.maxPayload = 1024 }
        defer { server.stop() }
        let sid = try handshake(server.port)
        let r = try post(server.port, sid, "42[\"x\",\"" + String(repeating: "a", count: 2000) + "\"]")
        #expect(r.status == 413)
        let stats = statistics(server) { $0.open == 0 }
        #expect(stats.payloadsTooLarge == 1 && stats.open == 0)
    }

    @Test func sessionsThatNeverPollWhileBroadcastsPileUpAreDroppedAtTheOutputLimit() throws {
        let server = try RefSocketIOServer { $0.limits = ServerLimits(maxOutputBytes: 64 * 1024, sendTimeout: 60, headerTimeout: 30, idleTimeout: 30) }
        defer { server.stop() }
        let quiet = try handshake(server.port)
        let loud = try handshake(server.port)
        #expect(text(try post(server.port, quiet, "40")) == "ok")
        #expect(text(try post(server.port, loud, "40")) == "ok")
        // 20 broadcasts of 5 KB: each session's queue passes 64 KiB with neither polling.
        let say = "42[\"say\",{\"text\":\"" + String(repeating: "z", count: 5000) + "\"}]"
        #expect(try post(server.port, loud, Array(repeating: say, count: 20).joined(separator: "\u{1e}")).status == 200)
        let stats = statistics(server) { $0.open == 0 }
        #expect(stats.limits.slowConsumersDropped == 2 && stats.open == 0)
        #expect(try poll(server.port, quiet).status == 400)
    }

    @Test func aSilentConnectionIsClosedByTheIdleTimeout() throws {
        let server = try RefSocketIOServer { $0.limits = ServerLimits(maxOutputBytes: 1 << 20, sendTimeout: 60, headerTimeout: 0.2, idleTimeout: 0.3) }
        defer { server.stop() }
        let silent = try RefHubSocket(port: server.port)
        defer { silent.close() }
        let slow = try RefHubSocket(port: server.port)
        defer { slow.close() }
        slow.write(Array("GET /socket.io/?EIO=4".utf8))
        let stats = statistics(server) { $0.limits.idleTimeouts == 1 && $0.limits.headerTimeouts == 1 }
        #expect(stats.limits.idleTimeouts == 1 && stats.limits.headerTimeouts == 1)
    }

    @Test func serveSocketIOFlagsOutOfPlaceOrRangeAreRefusedNamingTheFlag() throws {
        for (arguments, message) in [
            (["--ping-interval", "1000"], "--ping-interval, --ping-timeout and --max-payload are Socket.IO flags, they need --socketio"),
            (["--socketio", "--hub"], "--hub, --socketio and --rest are exclusive"),
            (["--socketio", "--ping-timeout", "5"], "--ping-timeout must be from 100 to 3600000 milliseconds, got 5"),
            (["--socketio", "--max-payload", "10"], "--max-payload must be from 1024 to 67108864 bytes, got 10"),
            (["--socketio", "--token", "a\"b"], "the token must not contain spaces, quotes, backslashes or control characters"),
        ] {
            let r = try runProcess(stampedeBinary.path, ["serve", "--port", "0", "--max-seconds", "1"] + arguments, timeout: 30)
            #expect(r.status == 2 && r.stderr.contains(message), "\(arguments): \(r.stderr)")
        }
    }

    @Test func serveProcessesGiveWebSocketClientsOfEveryProcessTheirBroadcasts() throws {
        let group = try ServeProcessesTests.Group(["--socketio", "--token", "secret-token"])
        defer { group.process.stop() }
        let r = try pythonSocketIOCheck(port: group.port, transports: "websocket", token: "secret-token", stay: 0)
        #expect(r.status == 0, "\(r.output.suffix(3000))")
        let status = try group.status()
        #expect(status["handshakesWebSocket"] as? Int == 4, "\(status)")
        // Each of the three `say`s went to the other process as one record.
        #expect(status["says"] as? Int == 3 && status["remoteBroadcasts"] as? Int == 3, "\(status)")
    }
}
