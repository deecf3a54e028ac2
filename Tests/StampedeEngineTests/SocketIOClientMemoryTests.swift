import Foundation
import StampedeLoop
import StampedeScenario
import StampedeWire
import StampedeWorkloads
import Testing

/// A Socket.IO client carries only the state of its transport and protocol: once connected over
/// WebSocket — from the start, or after the upgrade from long polling — an idle client holds no
/// long-polling state, no upgrade scratch, no binary packet, no awaited emit, and its loop holds
/// no write or input queue for it. Against python-socketio's AsyncServer.
@Suite(.serialized) struct SocketIOClientMemoryTests {
    @Test(arguments: [[SocketIOSpec.Transport.websocket], [.polling, .websocket]])
    func idleConnectedClientsHoldNoBuffersNorPollingState(_ transports: [SocketIOSpec.Transport]) throws {
        let (server, port) = try startPythonSocketIOServer()
        defer { server.stop() }
        let loop = try EventLoop(index: 1)
        let n = 30
        var spec = SocketIOSpec()
        spec.namespace = "/live"
        spec.transports = transports
        spec.auth = try MessageTemplate(text: #"{"token":"demo-token"}"#)
        spec.connect = [SocketIOSpec.Emit(event: "join", data: try MessageTemplate(text: #"["join","room-{client%10}"]"#), ack: true)]
        let plan = SocketIOPlan(totalClients: n, globalIndices: Array(0..<n), connectRate: 2000, loadModel: .open, totalRate: 0,
                                thinkTimeNs: 0, spec: spec, host: "127.0.0.1", port: port, secretValues: [],
                                extraHeaderLines: Array("X-Memory-Test: 1\r\n".utf8), connectTimeoutNs: 5_000_000_000,
                                maxMessageBytes: 1 << 20, sourceAddresses: [], runTag: "memory")
        let clients = SocketIOClients(loop: loop, plan: plan, address: .ipv4(0x7F00_0001, port: UInt16(port)), random: FastRandom(seed: 23))
        loop.start(name: "socketio-memory-test")
        defer { loop.stop(); loop.join() }
        loop.execute { _ in clients.beginRampUp(startNs: EventLoop.now()) }
        // Bounded wait for every client to connect and, with polling first, to upgrade.
        let deadline = Date().addingTimeInterval(30)
        func settled() -> Bool {
            loop.submitAndWait { _ in clients.openCount == n && clients.memory.holdingHTTP == 0 && clients.memory.loopBuffers == 0 }
        }
        while Date() < deadline, !settled() { Thread.sleep(forTimeInterval: 0.05) }
        #expect(loop.submitAndWait { _ in clients.openCount } == n)
        let held = loop.submitAndWait { _ in clients.memory }
        #expect(held == SocketIOClientsMemory(), "\(held)")
        let upgraded = loop.submitAndWait { _ in clients.metrics[.upgraded] }
        #expect(upgraded == (transports.count == 2 ? UInt64(n) : 0))
        loop.execute { _ in clients.closeAll(lostReason: .interrupted) }
    }

    @Test func aClientsFixedRecordStaysSmall() {
        // Kept for every client from the start, connected or not: long polling's state lives
        // behind a reference made on use, the session's open packet and binary storage are empty
        // until used.
        #expect(SocketIOClients.recordBytesPerClient <= 640, "\(SocketIOClients.recordBytesPerClient) bytes")
    }
}
