import Foundation
import Testing

/// The test LAN (TestLAN.swift) the netns simulation of an Indexed Job runs on: TCP reaches a
/// host from the root namespace and from another host (by a name only that host resolves), each
/// with its own source address, a host's program sees the environment it was given, and nothing
/// is left behind.
@Suite struct TestLANTests {
    /// Answers `count` connections on ADDRESS:PORT, one line each, then exits; bounded in time.
    static let listener = """
        import os, socket, sys
        s = socket.socket(); s.settimeout(15)
        s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(4)
        print("LISTENING", flush=True)
        for _ in range(int(sys.argv[3])):
            c, peer = s.accept(); c.settimeout(10)
            line = c.makefile().readline().strip()
            c.sendall(f"index={os.environ.get('JOB_COMPLETION_INDEX')} from={peer[0]} said={line}\\n".encode())
            c.close()
        """
    static let client = """
        import socket, sys
        c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
        c.sendall((sys.argv[3] + "\\n").encode())
        print(c.makefile().readline().strip())
        """

    @Test func lanCarriesTCPFromTheRootAndBetweenHostsThenLeavesNothing() throws {
        let lan = try TestLAN.make(hosts: 3, salt: 0)
        defer { lan.remove() }
        let server = lan.hosts[0], port = "7070"
        let listenerPrefix = lan.exec(host: 0, environment: TestLAN.podEnvironment(index: 0, count: 3))
        let listener = try BackgroundProcess(listenerPrefix[0], Array(listenerPrefix.dropFirst()) + ["/usr/bin/python3", "-c", Self.listener, server.address, port, "2"])
        defer { listener.stop() }
        _ = try listener.waitForLine(prefix: "LISTENING", timeout: 10)

        let fromRoot = try runProcess("/usr/bin/python3", ["-c", Self.client, server.address, port, "root"], timeout: 20)
        #expect(fromRoot.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "index=0 from=\(lan.rootAddress) said=root", "\(fromRoot.stderr)")
        // Host 2 reaches host 0 by a name only host 2 resolves, as a pod reaches a headless Service.
        let name = "stampede-workers.stampede.svc.cluster.local"
        try lan.resolve(name, to: [server.address], inside: 2)
        let prefix = lan.exec(host: 2, environment: TestLAN.podEnvironment(index: 2, count: 3))
        let fromHost = try runProcess(prefix[0], Array(prefix.dropFirst()) + ["/usr/bin/python3", "-c", Self.client, name, port, "host2"], timeout: 20)
        #expect(fromHost.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "index=0 from=\(lan.hosts[2].address) said=host2", "\(fromHost.stderr)")
        #expect(listener.wait(timeout: 10) == 0, "\(listener.errors.withLock { $0 })")

        // The environment a pod gets reaches the program.
        let env = try runProcess(prefix[0], Array(prefix.dropFirst()) + ["/usr/bin/printenv", "JOB_COMPLETION_INDEX", "STAMPEDE_WORKER_COUNT", "HOSTNAME"], timeout: 20)
        #expect(env.stdout == "2\n3\nstampede-workers-2\n")

        lan.remove()
        let left = try lan.leftovers()
        #expect(left.isEmpty, "left after remove(): \(left)")
    }
}
