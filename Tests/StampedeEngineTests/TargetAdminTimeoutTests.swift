import Foundation
import StampedeLoop
import StampedeServers
import Testing

/// The admin endpoint against clients that send their request slowly or not at all (slowloris):
/// each such connection is closed and counted by the timeout that ended it, and the endpoint
/// still answers everyone else. Each case is set up so that only one of the two timeouts can
/// fire first, so what is asserted is which one did, not when.
@Suite struct TargetAdminTimeoutTests {
    @Test func aHeadTrickledByteByByteIsClosedByTheHeaderTimeout() throws {
        let chat = try RefChatServer()
        defer { chat.stop() }
        var limits = TargetAdmin.Limits()
        limits.headerTimeoutNs = 300_000_000
        limits.idleTimeoutNs = 60_000_000_000  // a byte every 20 ms keeps it far from idle
        let admin = try TargetAdmin(target: chat.server, limits: limits)
        defer { admin.stop() }
        let slow = try RefHubSocket(port: admin.port)
        var closed = false
        // Never more than the head's own bytes, and the header line never ends: bounded in count.
        for byte in Array("GET /status HTTP/1.1\r\nX-Slow: ".utf8) + Array(repeating: UInt8(ascii: "a"), count: 500) {
            slow.write([byte])
            Thread.sleep(forTimeInterval: 0.02)
            if !slow.fill() { closed = true; break }
        }
        #expect(closed || slow.waitForEOF(timeout: 30))
        try waitFor { admin.timedOut == (header: 1, idle: 0) }
        #expect(admin.timedOut == (header: 1, idle: 0))
        #expect(try RefHubHTTP.request(admin.port, "GET", "/status").jsonObject()["adminConnectionsTimedOut"] as? Int == 1)
    }

    @Test func aConnectionThatFallsSilentMidRequestIsClosedByTheIdleTimeout() throws {
        let chat = try RefChatServer()
        defer { chat.stop() }
        var limits = TargetAdmin.Limits()
        limits.headerTimeoutNs = 600_000_000_000
        limits.idleTimeoutNs = 200_000_000
        let admin = try TargetAdmin(target: chat.server, limits: limits)
        defer { admin.stop() }
        let silentAtOnce = try RefHubSocket(port: admin.port)
        let silentMidHead = try RefHubSocket(port: admin.port)
        silentMidHead.write("POST /fault/drop HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        let silentMidBody = try RefHubSocket(port: admin.port)
        silentMidBody.write("POST /fault/drop HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\nabc")
        for s in [silentAtOnce, silentMidHead, silentMidBody] { #expect(s.waitForEOF(timeout: 30)) }
        try waitFor { admin.timedOut.idle == 3 }
        #expect(admin.timedOut == (header: 0, idle: 3))
        // None of the three was acted on, and a whole request is still answered.
        #expect(chat.server.statisticsSnapshot().faultsApplied == 0)
        let status = try RefHubHTTP.request(admin.port, "GET", "/status")
        #expect(status.status == 200)
        #expect(try status.jsonObject()["adminConnectionsTimedOut"] as? Int == 3)
    }

    /// Waits (at most 30 s, only reached when something is broken) until `done`.
    func waitFor(_ done: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(30)
        while !done() {
            guard Date() < deadline else { throw RefHubError("condition not reached") }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }
}
