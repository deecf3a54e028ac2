import StampedeFleet
import StampedeMetrics
import Testing

@Suite struct FleetCodecTests {
    /// A shard with something in every part: counters, losses, errors, statuses, hub errors,
    /// rate limits and several histograms (one with a single huge value at the top).
    static func busyShard() -> MetricsShard {
        var s = MetricsShard()
        s.count(.messagesSent, 1234)
        s.count(.messagesDelivered, 1200)
        s.lose(.timedOut, 7)
        s.lose(.workerLost, 3)
        s.error(.connectTimeout)
        s.error(.protocolError)
        s.upgradeStatuses[503] = 4
        s.responseStatuses[304] = 99
        s.countHubError("boom", 2)
        s.rateLimitRemainingMin = 17
        s.retryAfterMaxSeconds = 30
        for v: UInt64 in [1, 5, 99, 1000, 12_345, 987_654] { s.record(.roundTrip, nanoseconds: v * 1000) }
        s.record(.fanout, nanoseconds: 3_599_999_999_000)
        for i in 0..<10_000 { s.record(.tcpConnect, nanoseconds: UInt64(i) * 733) }
        return s
    }

    func roundTrip(_ m: FleetMessage) throws -> FleetMessage {
        var reader = FleetFrameReader()
        let frame = m.frame()
        frame.withUnsafeBytes { reader.feed($0) }
        let payload = try #require(try reader.next())
        #expect(try reader.next() == nil)
        return try FleetMessage.decode(payload)
    }

    @Test func anIntervalCrossesTheWireExactly() throws {
        var interval = GroupInterval(metrics: Self.busyShard())
        interval.open = 5; interval.connecting = 2; interval.reconnecting = 1
        interval.timerLagNs = 42; interval.loopCPUNs = 7; interval.processCPUNs = 9; interval.residentBytes = 1 << 30
        guard case .interval(let back) = try roundTrip(.interval(interval)) else { Issue.record("not an interval"); return }
        let a = interval.metrics, b = back.metrics
        #expect(a.counters == b.counters && a.lost == b.lost && a.errors == b.errors)
        #expect(a.upgradeStatuses == b.upgradeStatuses && a.responseStatuses == b.responseStatuses && a.hubErrorMessages == b.hubErrorMessages)
        #expect(a.rateLimitRemainingMin == b.rateLimitRemainingMin && a.retryAfterMaxSeconds == b.retryAfterMaxSeconds)
        for m in LatencyMetric.allCases {
            let x = a.histograms[m.rawValue], y = b.histograms[m.rawValue]
            #expect(x.totalCount == y.totalCount, "\(m)")
            #expect(x.maxRecorded == y.maxRecorded, "\(m)")
            for p in [0.0, 50, 90, 99, 99.9, 100] where x.totalCount > 0 {
                #expect(x.valueAtPercentile(p) == y.valueAtPercentile(p), "\(m) p\(p)")
            }
        }
        #expect(back.open == 5 && back.connecting == 2 && back.reconnecting == 1 && back.timerLagNs == 42)
        #expect(back.loopCPUNs == 7 && back.processCPUNs == 9 && back.residentBytes == 1 << 30)
    }

    @Test func mergingDecodedIntervalsEqualsMergingTheOriginals() throws {
        var direct = MetricsShard(), viaWire = MetricsShard()
        for k in 0..<3 {
            var s = Self.busyShard()
            s.record(.roundTrip, nanoseconds: UInt64(k + 1) * 77_000_000)
            direct.add(s)
            guard case .interval(let back) = try roundTrip(.interval(GroupInterval(metrics: s))) else { return }
            viaWire.add(back.metrics)
        }
        for m in LatencyMetric.allCases {
            #expect(direct.histograms[m.rawValue] == viaWire.histograms[m.rawValue], "\(m)")
        }
        #expect(direct.counters == viaWire.counters)
    }

    @Test func stormsAndPlansRoundTrip() throws {
        var storm = StormShard()
        storm.affected = 10; storm.recovered = 9; storm.gaveUp = 1
        storm.recordAttempt(sinceEventNs: 150_000_000)
        storm.recordRecovery(sinceEventNs: 2_500_000_000, attempts: 3)
        guard case .storms(let back) = try roundTrip(.storms([storm, StormShard()])) else { Issue.record("not storms"); return }
        #expect(back.count == 2)
        #expect(back[0].affected == 10 && back[0].recovered == 10 && back[0].gaveUp == 1)
        #expect(back[0].attemptsPerBucket == storm.attemptsPerBucket && back[0].successesPerBucket == storm.successesPerBucket)
        #expect(back[0].recovery == storm.recovery && back[0].attempts == storm.attempts)

        var plan = WorkerPlan(scenarioYAML: "name: x\n", scenarioFile: "s.yaml", overrides: [["--clients", "clients", "5"]], shardIndex: 2,
                              shardCount: 4, loops: 1, embeddedPort: 8080, embeddedCertificatePEM: "PEM", clockOffsetNs: -12345)
        plan.population = "publishers"
        guard case .plan(let p) = try roundTrip(.plan(plan)) else { Issue.record("not a plan"); return }
        #expect(p == plan)
        guard case .helloReply(let h) = try roundTrip(.helloReply(WorkerHello(version: 1, index: -1, count: 4, pid: 77, hostname: "h", bootID: "b"))) else { return }
        #expect(h == WorkerHello(version: 1, index: -1, count: 4, pid: 77, hostname: "h", bootID: "b"))
        guard case .join(let j) = try roundTrip(.join(count: 12)), case .leave(let l) = try roundTrip(.leave(count: 3)),
              case .moved(let m) = try roundTrip(.moved(7)) else { Issue.record("not join, leave, moved"); return }
        #expect(j == 12 && l == 3 && m == 7)
        plan.steered = SteeredLoad(clients: 60_000, connectedAtStart: 1_000, ratePerSecond: 2_500.5, durationSeconds: 3_600)
        guard case .plan(let steered) = try roundTrip(.plan(plan)) else { Issue.record("not a plan"); return }
        #expect(steered == plan)
        guard case .changeRate(let rate, let at) = try roundTrip(.changeRate(ratePerSecond: 20_000, atNs: 123_456_789)) else {
            Issue.record("not changeRate"); return
        }
        #expect(rate == 20_000 && at == 123_456_789)
    }

    @Test func garbageIsAnErrorNeverATrap() throws {
        var random = SystemRandomNumberGenerator()
        let valid = FleetMessage.interval(GroupInterval(metrics: Self.busyShard())).frame()
        for n in 0..<2000 {
            var bytes = Array(valid.dropFirst(4))
            // Cut it short, or flip a few bytes, or both.
            if n % 2 == 0 { bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random))) }
            for _ in 0..<(n % 5) where !bytes.isEmpty { bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random) }
            _ = try? FleetMessage.decode(bytes)
        }
        var reader = FleetFrameReader()
        ([0xFF, 0xFF, 0xFF, 0x7F] as [UInt8]).withUnsafeBytes { reader.feed($0) }
        #expect(throws: FleetError.self) { try reader.next() }
    }

    @Test func theClockOffsetComesFromTheShortestRoundTrip() {
        var c = ClockOffsetEstimator()
        // Worker clock 5 ms ahead. A slow exchange with lopsided legs misleads; the quick one does not.
        c.add(coordinatorSendNs: 1_000_000_000, workerNs: 1_000_000_000 + 5_000_000 + 9_000_000, coordinatorReceiveNs: 1_010_000_000)
        c.add(coordinatorSendNs: 2_000_000_000, workerNs: 2_000_000_000 + 5_000_000 + 50_000, coordinatorReceiveNs: 2_000_100_000)
        #expect(c.offsetNs == 5_000_000)
        #expect(c.uncertaintyNs == 50_000)
        #expect(c.workerInstant(3_000_000_000) == 3_005_000_000)
        c.add(coordinatorSendNs: 5, workerNs: 1, coordinatorReceiveNs: 4)  // out of order: ignored
        #expect(c.exchanges == 2)
    }
}

@Suite struct FleetCodecNamedTests {
    @Test func namedMetricsClosesStepErrorsAndSamplesCrossTheWire() throws {
        var s = FleetCodecTests.busyShard()
        s.named = NamedMetrics(latencyKeys: ["ack", "ack_uncorrected", "connect_flow"], counterKeys: ["flow.ack.matched"])
        for v: UInt64 in [1, 50, 9_000] { s.named.record(0, nanoseconds: v * 1000) }
        s.named.count(0, 3)
        s.countClose(code: 4401, reason: "auth first", 20)
        s.countClose(code: nil, reason: "")
        s.countStepError("expect_mismatch: connect step 1 ($.type = welcome)")
        Array("{\"type\":\"presence\"}".utf8).withUnsafeBytes { s.keepSample($0, isText: true) }
        var reader = FleetFrameReader()
        FleetMessage.interval(GroupInterval(metrics: s)).frame().withUnsafeBytes { reader.feed($0) }
        let payload = try #require(try reader.next())
        guard case .interval(let back) = try FleetMessage.decode(payload) else { Issue.record("not an interval"); return }
        let b = back.metrics
        #expect(b.named.latencyKeys == s.named.latencyKeys && b.named.counterKeys == s.named.counterKeys)
        #expect(b.named.counters == [3])
        #expect(b.named.histograms[0] == s.named.histograms[0])
        #expect(b.named.histograms[2].totalCount == 0)
        #expect(b.closeCodes == ["4401 auth first": 20, "no code": 1])
        #expect(b.stepErrors == s.stepErrors && b.samples == s.samples)
        #expect(b.counters == s.counters && b.errors == s.errors && b.lost == s.lost)
    }
}
