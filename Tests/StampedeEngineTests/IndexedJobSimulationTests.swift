import Foundation
import StampedeReport
import Testing

/// deploy/kubernetes/ simulated on one machine: an Indexed Job of 4 workers, each on a test host
/// of its own (a network namespace with its own address and a pod's environment), a target on a
/// fifth, and the coordinator on a sixth finding the workers through a name that resolves to all
/// of them (as the headless Service does). Traffic stays on the test's own LAN (TestLAN).
@Suite(.serialized) struct IndexedJobSimulationTests {
    @Test func fourWorkersOnTheirOwnHostsMakeOneFolderThatIsTheExactMergeOfTheirs() throws {
        let lan = try TestLAN.make(hosts: 6, salt: 3)
        defer { lan.remove() }
        let folder = temporaryFolder("indexed-job")
        let kept = folder.appendingPathComponent("kept")
        let workers = 4, target = 4, coordinator = 5

        let server = try BackgroundProcess(lan.exec(host: target)[0], Array(lan.exec(host: target).dropFirst())
            + [stampedeBinary.path, "serve", "--host", lan.hosts[target].address, "--port", "8765", "--max-seconds", "180"])
        defer { server.stop() }
        _ = try server.waitForLine(prefix: "listening on", timeout: 30)

        var pods: [BackgroundProcess] = []
        defer { for p in pods { p.stop() } }
        for i in 0..<workers {
            let prefix = lan.exec(host: i, environment: TestLAN.podEnvironment(index: i, count: workers))
            pods.append(try BackgroundProcess(prefix[0], Array(prefix.dropFirst())
                + [stampedeBinary.path, "worker", "--listen", "\(lan.hosts[i].address):7070", "--loops", "1", "--keep-intervals", kept.path]))
        }
        for p in pods { _ = try p.waitForLine(prefix: "worker listening on", timeout: 30) }
        // The Service's name lists the pods in no particular order: their own indices order the shards.
        try lan.resolve("stampede-workers", to: [3, 1, 0, 2].map { lan.hosts[$0].address }, inside: coordinator)

        let scenario = folder.appendingPathComponent("scenario.yaml")
        try """
        name: indexed-job
        target: ws://\(lan.hosts[target].address):8765/chat
        workload: chat
        clients: 400
        connect_rate: 2000
        duration: 3s
        message: {rate: 40, size: 64}
        drain: 3s
        thresholds:
          round_trip: ["p(99) < 10s"]
          messages.lost: ["count == 0"]
        """.write(to: scenario, atomically: true, encoding: .utf8)
        let prefix = lan.exec(host: coordinator)
        let run = try runProcess(prefix[0], Array(prefix.dropFirst()) + [stampedeBinary.path, "run", scenario.path,
                                 "--workers", "dns:stampede-workers:7070", "--worker-count", "\(workers)", "--worker-wait", "20",
                                 "--plain", "--results", folder.appendingPathComponent("results").path], timeout: 150)
        // 98: the shared machine made the generator's timers late; the verdict is withheld then.
        #expect(run.status == 0 || run.status == 98, "\(run.stderr.suffix(3000))")
        let line = try #require(run.stdout.split(separator: "\n").last { $0.hasPrefix("results: ") }, "\(run.stderr.suffix(3000))")
        let results = URL(fileURLWithPath: String(line.dropFirst("results: ".count)))
        let summary = try RunSummary.decode(from: Data(contentsOf: results.appendingPathComponent("summary.json")))

        let w = try #require(summary.workers)
        #expect(w.map(\.index) == [0, 1, 2, 3])
        #expect(w.map(\.clients) == [100, 100, 100, 100])
        #expect(w.allSatisfy { $0.lost == nil })
        // One kernel here, so one clock: the estimate must agree with that within its own bound.
        #expect(w.allSatisfy { $0.sameClock && abs($0.clockOffsetMicros) <= $0.clockUncertaintyMicros + 1 }, "\(w)")
        #expect(summary.connections.connected == 400)
        #expect(summary.messages.accountingClosed && summary.messages.lost == 0)
        #expect(summary.messages.fanoutMissing == 0)
        #expect(summary.thresholds?.count == 2, "judged once, on the merge")
        try WorkerProcessTests.expectExactMerge(results: results, workerFolder: kept, workers: workers)
        // Each pod's worker ends by itself once the run is over, as a Job's pod must.
        for p in pods { #expect(p.wait(timeout: 20) == 0, "\(p.errors.withLock { $0 }.suffix(1000))") }
    }
}
