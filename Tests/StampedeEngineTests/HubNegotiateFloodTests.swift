import Foundation
import StampedeLoop
@testable import StampedeServers
import Testing

/// A flood of negotiates that no transport ever follows (pipelined on one keep-alive connection,
/// as a load tool gone wrong or an attacker would send them) holds bounded state in the
/// reference hub: at most `maxUnclaimedNegotiations` ids, the oldest disposed first, while a
/// client that does go on to connect still can.
@Suite struct HubNegotiateFloodTests {
    @Test func pipelinedNegotiatesKeepAtMostTheCapOfUnclaimedIdsOldestDisposedFirst() throws {
        let cap = 20, floods = 600
        let hub = try RefHubServer { $0.maxUnclaimedNegotiations = cap }
        defer { hub.stop() }
        let s = try RefHubSocket(port: hub.port)
        let request = "POST /hub/negotiate?negotiateVersion=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
        s.write(String(repeating: request, count: floods))
        var tokens: [String] = []
        for _ in 0..<floods {
            let r = try s.readResponse()
            #expect(r.status == 200)
            tokens.append(try #require(try r.jsonObject()["connectionToken"] as? String))
        }
        let st = hub.server.statisticsSnapshot()
        #expect(st.negotiates == floods && st.unclaimed == cap && st.unclaimedEvicted == floods - cap)
        // What the server holds: `cap` connections and tokens, and a queue of about as many.
        let held = hub.loop.submitAndWait { [server = hub.server] _ in
            (server.connections.compactMap { $0 }.count, server.byToken.count, server.unclaimed.count)
        }
        #expect(held.0 == cap && held.1 == cap && held.2 <= 2 * cap + 64)
        // The oldest ids are gone; the newest is still there for its client to claim.
        #expect(try RefHubSocket.openWebSocket(hub.port, "/hub?id=\(tokens[0])").response.status == 404)
        let client = try RefHubClient.connectWebSocket(hub.port, token: tokens[floods - 1])
        #expect(try client.invoke("{\"type\":1,\"invocationId\":\"1\",\"target\":\"Echo\",\"arguments\":[1]}")["result"] as? Int == 1)
        let after = hub.server.statisticsSnapshot()
        #expect(after.unclaimed == cap - 1 && after.open == 1)
    }
}
