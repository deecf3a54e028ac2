import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `stampede serve` at its descriptor limit: the listener rests instead of spinning on EMFILE,
/// and serves again once clients leave (issue 25, item 3). The CPU it uses meanwhile is a
/// benchmark figure (Benchmarks/serve-emfile.sh), not asserted here.
@Suite struct ServeDescriptorLimitTests {
    @Test func serveAtItsDescriptorLimitPausesAcceptingCountsRefusalsAndServesAgainWhenClientsLeave() throws {
        // `ulimit -n` in sh sets the hard limit too: the server cannot raise it back.
        let serve = try BackgroundProcess("/bin/sh", ["-c", "ulimit -n 48 && exec \"$0\" serve --port 0 --max-seconds 60", stampedeBinary.path])
        defer { serve.stop() }
        let listening = try serve.waitForLine(prefix: "listening on ", timeout: 20)
        let port = try #require(UInt16(listening.split(separator: ":").last!.split(separator: "/").first!))
        // More clients than descriptors: the kernel completes their handshakes into the backlog,
        // the server accepts until EMFILE, and the rest wait.
        var clients: [Int32] = []
        defer { for fd in clients { close(fd) } }
        for _ in 0..<80 { if let fd = connectLoopback(port: port) { clients.append(fd) } }
        #expect(clients.count == 80)
        // Long enough for a spinning listener to fail thousands of accepts.
        Thread.sleep(forTimeInterval: 1)
        for fd in clients { close(fd) }
        clients = []
        // Descriptors came free: a new client gets its WebSocket upgrade. The server may still be
        // draining the backlog of clients that left, so a refused try is tried again.
        var upgraded = false
        for _ in 0..<50 where !upgraded {
            if let s = try? RefChatServer.connect(port) { upgraded = true; s.close() } else { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(upgraded)
        serve.stop()
        let line = try #require(serve.lines.withLock { $0.first { $0.hasPrefix("served: ") && $0.contains("accepts refused") } })
        // "served: N accepts refused (P at the process's descriptor limit, …), accepting resumed R times"
        let numbers = line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        let (refused, atProcessLimit, resumed) = (numbers[0], numbers[1], numbers[numbers.count - 1])
        #expect(refused >= 1)
        #expect(atProcessLimit == refused)
        // Each refusal pauses the listener, and a paused listener is not tried until it resumes:
        // never more refusals than resumes plus the first. Spinning would be thousands.
        #expect(refused <= resumed + 1)
        // Resumes come from the 100 ms retry timer or a closed connection: a few dozen over
        // this test, however slow the machine (a slow one only retries less often).
        #expect(resumed < 1000)
    }
}
