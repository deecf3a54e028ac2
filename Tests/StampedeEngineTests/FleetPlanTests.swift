@testable import StampedeEngine
import StampedeLoop
import StampedeScenario
import StampedeWorkloads
import Testing

@Suite struct FleetPlanTests {
    func chat(_ clients: Int, target: String = "embedded") throws -> Scenario {
        try ScenarioLoader.parse(yaml: "name: p\ntarget: \(target)\nworkload: chat\nclients: \(clients)\nconnect_rate: 1000\nduration: 1s\nmessage: {rate: 1, size: 64}\n", file: "p.yaml")
    }

    @Test func clientsBeyondOneProcessesDescriptorsGoToEnoughWorkerProcesses() throws {
        let s = try chat(100_000)
        let plan = RunPlan(scenario: s, loops: 2, openFilesLimit: 20_000, canSpawnTarget: true, canSpawnWorkers: true)
        #expect(plan.fleet == .processes(6))
        #expect(plan.problem == nil)
        #expect(plan.targetInChildProcess)
        // Without the means to start workers the old answer stands: a clear problem.
        let alone = RunPlan(scenario: s, loops: 2, openFilesLimit: 20_000, canSpawnTarget: true)
        #expect(alone.fleet == nil && alone.problem != nil)
        // Few clients stay in one process.
        #expect(RunPlan(scenario: try chat(5000), loops: 2, openFilesLimit: 20_000, canSpawnTarget: true, canSpawnWorkers: true).fleet == nil)
    }

    @Test func tooFewProcessesForTheClientsIsAProblemNamingTheFlag() throws {
        let plan = RunPlan(scenario: try chat(100_000), loops: 2, openFilesLimit: 20_000, canSpawnTarget: true, fleet: .processes(2), canSpawnWorkers: true)
        #expect(plan.problem?.contains("--processes 2") == true)
    }

    @Test func loopbackConnectionsBeyondThePortRangeSpreadOverSourceAddresses() throws {
        let target = SocketAddress.ipv4(0x7F00_0001, port: 8080)
        let none = SourceAddressPlan.addresses(clients: 10_000, connectionsPerClient: 1, targets: [target], given: [], ports: 28_232)
        #expect(try none.get() == [])
        let spread = try SourceAddressPlan.addresses(clients: 100_000, connectionsPerClient: 1, targets: [target], given: [], ports: 28_232).get()
        #expect(spread == (1...8).map { "127.0.0.\($0)" })
        // A remote target: the user's addresses, checked; none given is a clear error.
        let remote = SocketAddress.ipv4(0x0AD3_0102, port: 8080)
        let missing = SourceAddressPlan.addresses(clients: 100_000, connectionsPerClient: 1, targets: [remote], given: [], ports: 28_232)
        guard case .failure(let e) = missing else { Issue.record("no error for 100,000 connections from one address"); return }
        #expect(e.description.contains("source_addresses"))
        let few = SourceAddressPlan.addresses(clients: 100_000, connectionsPerClient: 1, targets: [remote], given: ["10.0.0.1", "10.0.0.2"], ports: 28_232)
        guard case .failure(let e2) = few else { Issue.record("no error for two source addresses"); return }
        #expect(e2.description.contains("at least 4 source addresses"))
        #expect(try SourceAddressPlan.addresses(clients: 100_000, connectionsPerClient: 1, targets: [remote],
                                                given: ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"], ports: 28_232).get().count == 4)
        // Two target addresses halve each pair's share.
        #expect(try SourceAddressPlan.addresses(clients: 20_000, connectionsPerClient: 1, targets: [target, target.with(port: 8081)], given: [], ports: 28_232).get() == [])
    }

    @Test func stampsInTheRunsClockTimeAMessageBetweenHostsWhoseClocksDiffer() {
        // The run's clock at a message's send and receipt: 10 s and 10.004 s. The sender's host
        // reads 5 ms ahead of the run's clock, the receiver's 3 ms behind.
        let sendRun: UInt64 = 10_000_000_000, receiveRun: UInt64 = 10_004_000_000
        let senderOffset: Int64 = 5_000_000, receiverOffset: Int64 = -3_000_000
        let stamp = runClock(sendRun + 5_000_000, offsetNs: senderOffset)      // written by the sender
        let now = runClock(receiveRun - 3_000_000, offsetNs: receiverOffset)    // read by the receiver
        #expect(now - stamp == 4_000_000)
        // The two local clocks alone would say the message arrived 4 ms before it was sent.
        #expect(Int64(receiveRun - 3_000_000) - Int64(sendRun + 5_000_000) == -4_000_000)
    }
}
