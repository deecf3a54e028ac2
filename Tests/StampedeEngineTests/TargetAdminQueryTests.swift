import Foundation
import Testing
@testable import StampedeServers

// The admin endpoint's queries are strict (issue 10): seconds are plain decimals from 1 ms to
// 3600 s, mode is exactly reset or close, and unknown or repeated keys are refused, each with
// a 400 and one line of JSON naming the problem; nothing is applied.
@Suite struct TargetAdminQueryTests {
    @Test func secondsMustBePlainDecimalFromOneMillisecondTo3600() throws {
        for text in ["0x10", "1e-300", "1e2", "+5", "-1", " 5", "5 ", "1.", ".5", "1.2.3", "nan", "inf", "infinity", "0",
                     "0.0", "0.0009", "3600.001", "99999", "%35%2E", "5,5", "١"] {
            #expect(TargetAdmin.seconds(text).seconds == nil, "\(text)")
        }
        for (text, value) in [("5", 5.0), ("0.25", 0.25), ("0.001", 0.001), ("3600", 3600), ("007", 7), ("1.500", 1.5)] {
            #expect(TargetAdmin.seconds(text).seconds == value, "\(text)")
        }
    }

    @Test func adminRefusesLenientSecondsLooseModesAndUnknownOrDuplicateKeysWith400AndOneLineJSON() throws {
        let chat = try RefChatServer()
        defer { chat.stop() }
        let admin = try TargetAdmin(target: chat.server)
        defer { admin.stop() }
        for (method, target, problem) in [
            ("POST", "/fault/stall?seconds=0x10", "plain decimal"),
            ("POST", "/fault/stall?seconds=1e-300", "plain decimal"),
            ("POST", "/fault/reject?seconds=0.0001", "plain decimal"),
            ("POST", "/fault/reject?seconds=5&seconds=6", "seconds given twice"),
            ("POST", "/fault/reject?seconds=5&mode=close", "unknown query key 'mode'"),
            ("POST", "/fault/reject?secs=5", "unknown query key 'secs'"),
            ("POST", "/fault/stall?seconds=1&", "malformed query"),
            ("POST", "/fault/stall?seconds", "malformed query"),
            ("POST", "/fault/drop?mode=RESET", "mode must be reset or close"),
            ("POST", "/fault/drop?mode=", "mode must be reset or close"),
            ("POST", "/fault/drop?mode=close&mode=reset", "mode given twice"),
            ("POST", "/fault/drop?seconds=1", "unknown query key 'seconds'"),
            ("GET", "/status?verbose=1", "unknown query key 'verbose'"),
        ] {
            let r = try RefHubHTTP.request(admin.port, method, target)
            #expect(r.status == 400, "\(target)")
            let text = String(decoding: r.body, as: UTF8.self)
            #expect(text.hasSuffix("\n") && text.dropLast().firstIndex(of: "\n") == nil, "\(target): \(text)")
            let json = try r.jsonObject()
            #expect(json["ok"] as? Bool == false)
            #expect((json["error"] as? String)?.contains(problem) == true, "\(target): \(text)")
        }
        #expect(chat.server.statisticsSnapshot().faultsApplied == 0)
        #expect(try RefHubHTTP.request(admin.port, "POST", "/fault/reject?seconds=0.001").status == 200)
        #expect(try RefHubHTTP.request(admin.port, "POST", "/fault/drop?mode=close").status == 200)
        #expect(try RefHubHTTP.request(admin.port, "GET", "/status").status == 200)
        #expect(chat.server.statisticsSnapshot().faultsApplied == 2)
    }
}
