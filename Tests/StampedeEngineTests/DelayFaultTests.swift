import Foundation
import StampedeEngine
import StampedeScenario
import StampedeServers
import Testing

/// The `delay` fault: a fixed service time added to every chat broadcast, the known regression
/// `stampede compare` must see. Only lower bounds on time are asserted.
@Suite(.serialized)
struct DelayFaultTests {
    @Test func adminDelayHoldsEachBroadcastAndZeroTurnsItOff() throws {
        let chat = try RefChatServer()
        defer { chat.stop() }
        let admin = try TargetAdmin(target: chat.server)
        defer { admin.stop() }
        let client = try RefChatServer.connect(chat.port)
        try chat.waitUntilOpen(1)
        let reply = try RefHubHTTP.request(admin.port, "POST", "/fault/delay?ms=300")
        #expect(reply.status == 200)
        #expect(try reply.jsonObject()["us"] as? Int == 300_000, "the reply gives the delay in µs, even when asked in ms")
        let sent = Date()
        client.sendFrame(opcode: 1, RefChatServer.message("first"))
        client.sendFrame(opcode: 1, RefChatServer.message("second"))
        let first = try client.readFrame(timeout: 5)
        #expect(Date().timeIntervalSince(sent) >= 0.29)
        let second = try client.readFrame(timeout: 5)
        #expect(String(decoding: first.payload, as: UTF8.self).contains("first"))
        #expect(String(decoding: second.payload, as: UTF8.self).contains("second"), "held broadcasts keep their order")
        #expect(try RefHubHTTP.request(admin.port, "POST", "/fault/delay?ms=0").status == 200)
        client.sendFrame(opcode: 1, RefChatServer.message("third"))
        #expect(String(decoding: try client.readFrame(timeout: 5).payload, as: UTF8.self).contains("third"))
        for bad in ["/fault/delay", "/fault/delay?ms=abc", "/fault/delay?ms=10001", "/fault/delay?ms=-1", "/fault/delay?ms=1.5",
                    "/fault/delay?seconds=1", "/fault/delay?us=10000001", "/fault/delay?us=-1", "/fault/delay?us=1e3",
                    "/fault/delay?us=1&ms=1"] {
            #expect(try RefHubHTTP.request(admin.port, "POST", bad).status == 400, "\(bad)")
        }
    }

    @Test func restDelayHoldsEachResponseAndKeepsPipelinedOrder() throws {
        let ref = try RefRestServer(.init(changeRate: 0))
        defer { ref.stop() }
        let admin = try TargetAdmin(target: ref.server)
        defer { admin.stop() }
        #expect(try RefHubHTTP.request(admin.port, "POST", "/fault/delay?ms=300").status == 200)
        let c = try RefHubSocket(port: ref.server.port)
        let sent = Date()
        c.write("GET /api/first HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /api/second HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let first = try c.readRestResponse()
        #expect(Date().timeIntervalSince(sent) >= 0.29)
        let second = try c.readRestResponse()
        #expect(first.status == 200 && String(decoding: first.body, as: UTF8.self).contains("/api/first"))
        #expect(second.status == 200 && String(decoding: second.body, as: UTF8.self).contains("/api/second"))
        #expect(try RefHubHTTP.request(admin.port, "POST", "/fault/delay?ms=0").status == 200)
        #expect(try c.rest("/api/third").status == 200)
    }

    @Test func delayEventAddsItsServiceTimeToTheRoundTrip() throws {
        var s = chatScenario(name: "delay-event", clients: 10, duration: 1.5, rate: 40)
        s.drainSeconds = 1
        s.events = [ScenarioEvent(atSeconds: 0, kind: .server(.delay(microseconds: 2000)))]
        let o = try run(s)
        #expect(o.exitCode == 0)
        #expect(o.summary.messages.lost == 0 && o.summary.messages.accountingClosed)
        #expect(o.summary.storms.isEmpty, "a delay drops nobody")
        let rtt = try #require(o.summary.latencyMicros["round_trip"])
        #expect(rtt.p50 >= 2000)
    }

    @Test func serveDelayFlagIsValidated() throws {
        for args in [["--delay", "2x"], ["--delay", "20s"], ["--delay", "1.2345ms"], ["--delay", "-1us"], ["--hub", "--delay", "2ms"]] {
            let r = try runProcess(stampedeBinary.path, ["serve", "--port", "0", "--max-seconds", "1"] + args, timeout: 20)
            #expect(r.status == 2, "\(args): \(r.stderr)")
            #expect(r.stderr.contains("--delay"), "\(args): \(r.stderr)")
        }
    }
}
