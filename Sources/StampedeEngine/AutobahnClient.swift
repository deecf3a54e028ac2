import Foundation
import StampedeLoop
import StampedeMetrics
import StampedeWire
import StampedeWorkloads

/// Drives Stampede's WebSocket client through an Autobahn fuzzing server's client protocol:
/// `/getCaseCount`, then `/runCase?case=i&agent=A` for each case (echoing every message back
/// until the server closes), then `/updateReports?agent=A`. The server grades each case.
public final class AutobahnClient: WebSocketApplication, @unchecked Sendable {
    public struct Outcome: Sendable {
        public var caseCount: Int
        public var casesRun: Int
        /// Cases the client abandoned after `caseTimeout` (the server normally ends every case).
        public var casesTimedOut: Int
    }

    enum Step { case count, runCase(Int), update, done }

    let ws: WebSocketClients
    let agent: String
    let caseTimeoutNs: UInt64
    var step = Step.count
    var caseCount = 0
    var timedOut = 0
    var caseEpoch: UInt32 = 0
    let finished = ResultBox<Outcome>()

    init(ws: WebSocketClients, agent: String, caseTimeoutNs: UInt64) {
        self.ws = ws
        self.agent = agent
        self.caseTimeoutNs = caseTimeoutNs
        ws.application = self
    }

    /// Runs every case the server offers against `host:port` and returns when reports are updated.
    public static func run(host: String = "127.0.0.1", port: Int, agent: String, caseTimeoutSeconds: Double = 60) throws -> Outcome {
        guard let address = SocketAddress(host: host, port: port) else { throw RunSetupError("bad address \(host):\(port)") }
        let loop = try EventLoop(index: 0)
        // Autobahn's 9.x cases send messages up to 16 MiB; allow them all.
        let endpoint = WebSocketEndpoint(address: address, host: host, path: "/", closeTimeoutNs: 3_000_000_000, maxMessageBytes: 64 << 20)
        let ws = WebSocketClients(loop: loop, endpoint: endpoint, clientCount: 1, random: FastRandom.fromSystem())
        let client = AutobahnClient(ws: ws, agent: agent, caseTimeoutNs: nanoseconds(caseTimeoutSeconds))
        loop.start(name: "stampede-autobahn")
        loop.execute { _ in client.ws.connect(0, path: "/getCaseCount") }
        let outcome = client.finished.take()
        loop.stop()
        loop.join()
        return outcome
    }

    func begin(_ next: Step) {
        step = next
        caseEpoch &+= 1
        switch next {
        case .count: ws.connect(0, path: "/getCaseCount")
        case .runCase(let i):
            ws.connect(0, path: "/runCase?case=\(i)&agent=\(agent)")
            ws.schedule(at: EventLoop.now() + caseTimeoutNs, token: TimerToken(kind: 0, epoch: caseEpoch))
        case .update: ws.connect(0, path: "/updateReports?agent=\(agent)")
        case .done:
            let run: Int = caseCount
            finished.put(Outcome(caseCount: caseCount, casesRun: run, casesTimedOut: timedOut))
        }
    }

    public func webSocketOpened(client: Int) {}

    public func webSocketReceived(client: Int, opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer) {
        switch step {
        case .count:
            caseCount = Int(String(decoding: payload, as: UTF8.self).trimmingCharacters(in: .whitespaces)) ?? 0
        case .runCase:
            ws.send(client, opcode: opcode, payload: payload)
        case .update, .done:
            break
        }
    }

    public func webSocketEnded(client: Int, end: WebSocketEnd) {
        switch step {
        case .count: begin(caseCount > 0 ? .runCase(1) : .update)
        case .runCase(let i): begin(i < caseCount ? .runCase(i + 1) : .update)
        case .update: begin(.done)
        case .done: break
        }
    }

    public func webSocketWritable(client: Int) {}
    public func webSocketPong(client: Int, payload: UnsafeRawBufferPointer) {}

    /// The case timeout (the only timer), for the case it was armed for.
    public func applicationTimer(_ token: TimerToken, deadline: UInt64) {
        guard token.epoch == caseEpoch, case .runCase = step else { return }
        timedOut += 1
        ws.abort(0, reset: false)
    }
}
