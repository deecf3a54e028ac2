import Foundation
import StampedeLoop
import StampedeScenario
import StampedeServers
import StampedeWorkloads
import Testing

/// A hub client carries only the state of its transport and protocol (issue 15, item 4): once
/// its WebSocket is open and the hub handshake done, an idle client holds no HTTP state (the
/// negotiate exchange and its body are gone), no upgrade scratch, no inbound bytes, no replay,
/// no user name nobody asked for, and its loop holds no write or input queue for it. The clients
/// send a bearer token and an extra header, whose upgrade headers are released too.
/// Figures: Benchmarks/memory-per-connection.sh.
@Suite struct HubClientMemoryTests {
    @Test func idleConnectedWebSocketHubClientsHoldNoBuffersNorHTTPState() throws {
        let hub = try RefHubServer()
        defer { hub.stop() }
        let loop = try EventLoop(index: 1)
        let n = 40
        let plan = HubPlan(totalClients: n, globalIndices: Array(0..<n), connectRate: 2000, loadModel: .open, totalRate: 0,
                           thinkTimeNs: 0, messageSize: 16, spec: HubSpec(transports: [.webSockets], operation: .none),
                           base: HubURL(host: "127.0.0.1", port: Int(hub.port), path: "/hub", query: ""), accessToken: "memory-test-token",
                           extraHeaderLines: Array("X-Memory-Test: 1\r\n".utf8), connectTimeoutNs: 5_000_000_000, maxMessageBytes: 1 << 20,
                           sourceAddresses: [], runTag: "memory")
        let clients = JSONHubClients(loop: loop, plan: plan, address: .ipv4(0x7F00_0001, port: hub.port), random: FastRandom(seed: 15))
        loop.start(name: "hub-memory-test")
        defer { loop.stop(); loop.join() }
        loop.execute { _ in clients.beginRampUp(startNs: EventLoop.now()) }
        // Bounded wait for every client to finish its handshake (each attempt has its own timeouts).
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, loop.submitAndWait({ _ in clients.openCount }) < n { Thread.sleep(forTimeInterval: 0.02) }
        #expect(loop.submitAndWait { _ in clients.openCount } == n)

        let held = loop.submitAndWait { _ in clients.memory }
        #expect(held == HubClientsMemory(), "\(held)")
        loop.execute { _ in clients.closeAll(lostReason: .timedOut) }
    }

    @Test func aHubClientsFixedRecordStaysSmall() {
        // Kept for every client from the start, connected or not: the HTTP transports' state
        // (two HTTP exchanges, the POST queue and requests) lives behind a reference made on use,
        // the hub's URL, address and Host header in one place all clients share, and stateful
        // reconnect's bookkeeping behind a reference made when it is used; this was about 1,900
        // bytes when each client carried them all.
        // 512 until the WebSocket session kept the peer's Close reason (issue 22's close codes, one
        // reference) and the upgrade's pre-rendered header lines (the hub's, instead of splitting them).
        #expect(JSONHubClients.recordBytesPerClient <= 528, "\(JSONHubClients.recordBytesPerClient) bytes")
    }
}
