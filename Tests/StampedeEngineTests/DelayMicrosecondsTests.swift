import Foundation
import Testing
@testable import StampedeServers

/// The `delay` fault in microseconds: small, known regressions (a tenth of a sub-millisecond
/// round trip) for measuring a regression gate's power. Nothing here times anything: the
/// delay's effect is read back from the servers' status, never from a clock.
@Suite struct DelayMicrosecondsTests {
    @Test func delayParserTakesMicrosecondsMillisecondsSecondsAndBareMilliseconds() {
        for (text, us) in [("100us", 100), ("2ms", 2000), ("0.5s", 500_000), ("1.5ms", 1500), ("2", 2000),
                           ("0", 0), ("0us", 0), ("0.123ms", 123), ("0.007s", 7000), ("0.000001s", 1), ("1.000ms", 1000),
                           ("10s", 10_000_000), ("10000ms", 10_000_000), ("10000000us", 10_000_000), ("007us", 7)] {
            #expect(TargetFault.delayMicroseconds(text) == us, "\(text)")
        }
    }

    @Test func delayParserRejectsNegativesFractionsOfAMicrosecondGarbageAndTooLongText() {
        let tooLong = String(repeating: "0", count: 30) + "1ms"
        for text in ["-1us", "-1", "+1ms", "1.2345ms", "0.5us", "0.0000001s", "abc", "1e9s", "1e3", "nan", "inf", "NaNms",
                     "", "us", "ms", "s", "1.ms", ".5ms", "1..5ms", "1.5.2ms", "0x10ms", " 2ms", "2ms ", "2 ms", "2m", "2µs",
                     "10000001us", "10.000001s", "10001", "99999999999999999999s", tooLong, "١ms"] {
            #expect(TargetFault.delayMicroseconds(text) == nil, "\(text)")
        }
    }

    @Test func adminDelayTakesExactlyOneOfUsAndMs() throws {
        #expect(TargetAdmin.delayMicroseconds(us: "300", ms: nil).microseconds == 300)
        #expect(TargetAdmin.delayMicroseconds(us: nil, ms: "2").microseconds == 2000)
        #expect(TargetAdmin.delayMicroseconds(us: "10000000", ms: nil).microseconds == 10_000_000)
        #expect(TargetAdmin.delayMicroseconds(us: nil, ms: "10000").microseconds == 10_000_000)
        for (us, ms) in [("10000001", nil), (nil, "10001"), ("", nil), ("1.5", nil), ("999999999", nil), ("-1", nil)] as [(String?, String?)] {
            #expect(TargetAdmin.delayMicroseconds(us: us, ms: ms).microseconds == nil, "us=\(us ?? "-") ms=\(ms ?? "-")")
        }

        let chat = try RefChatServer()
        defer { chat.stop() }
        let admin = try TargetAdmin(target: chat.server)
        defer { admin.stop() }
        for (target, problem) in [("/fault/delay?us=300&ms=2", "both us and ms given"), ("/fault/delay", "missing delay")] {
            let r = try RefHubHTTP.request(admin.port, "POST", target)
            #expect(r.status == 400, "\(target)")
            let error = try #require(try r.jsonObject()["error"] as? String)
            #expect(error.contains(problem) && error.contains("us (") && error.contains("ms ("), "\(target): \(error)")
        }
        #expect(chat.server.statisticsSnapshot().faultsApplied == 0, "a refused delay is not applied")
    }

    @Test func adminDelayInMicrosecondsShowsInChatStatusAsDelayUs() throws {
        let chat = try RefChatServer()
        defer { chat.stop() }
        let admin = try TargetAdmin(target: chat.server)
        defer { admin.stop() }
        let reply = try RefHubHTTP.request(admin.port, "POST", "/fault/delay?us=300")
        #expect(reply.status == 200)
        let body = try reply.jsonObject()
        #expect(body["fault"] as? String == "delay" && body["us"] as? Int == 300)
        var status = try RefHubHTTP.request(admin.port, "GET", "/status").jsonObject()
        #expect(status["delayUs"] as? Int == 300)
        #expect(status["delayMs"] as? Int == 0, "delayMs is whole milliseconds, rounded down")
        #expect(try RefHubHTTP.request(admin.port, "POST", "/fault/delay?ms=2").status == 200)
        status = try RefHubHTTP.request(admin.port, "GET", "/status").jsonObject()
        #expect(status["delayUs"] as? Int == 2000 && status["delayMs"] as? Int == 2)
    }

    @Test func adminDelayInMicrosecondsShowsInRestStatusAsDelayUs() throws {
        let ref = try RefRestServer(.init(changeRate: 0))
        defer { ref.stop() }
        let admin = try TargetAdmin(target: ref.server)
        defer { admin.stop() }
        #expect(try RefHubHTTP.request(admin.port, "POST", "/fault/delay?us=1500").status == 200)
        let status = try RefHubHTTP.request(admin.port, "GET", "/status").jsonObject()
        #expect(status["delayUs"] as? Int == 1500 && status["delayMs"] as? Int == 1)
    }

    @Test func delayCrossesToServerProcessesInMicroseconds() {
        #expect(TargetFault.delay(microseconds: 300).linkText == "delay 300")
        #expect(TargetFault(linkText: "delay 300") == .delay(microseconds: 300))
        #expect(TargetFault(linkText: "delay -1") == nil)
    }

    @Test func processGroupStatusShowsTheLargestDelayUsNotTheSum() throws {
        let merged = ServerGroup.merged([#"{"delayUs":300,"delayMs":0,"upgraded":1}"#, #"{"delayUs":300,"delayMs":0,"upgraded":2}"#],
                                        processes: 2)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(merged.utf8)) as? [String: Any])
        #expect(object["delayUs"] as? Int == 300)
        #expect(object["upgraded"] as? Int == 3)
    }
}
