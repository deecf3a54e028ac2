import StampedeLoop
import StampedeScenario
import StampedeWorkloads
import Testing

/// The open model's send slots: a seeded permutation of the clients, so that the order in
/// which clients connected (and a server broadcasts) does not line up with time in the run.
@Suite struct LoadScheduleTests {
    @Test func slotsAreAPermutationOfTheClients() {
        for n in [1, 2, 3, 7, 16, 17, 1000, 1023, 1024, 1025, 5000] {
            let slots = (0..<n).map { LoadSchedule.slot(of: $0, among: n, seed: 42) }
            #expect(Set(slots) == Set(0..<n), "n = \(n)")
        }
    }

    @Test func slotsAreTheSameForTheSameSeedAndDifferForAnother() {
        let a = (0..<1000).map { LoadSchedule.slot(of: $0, among: 1000, seed: 7) }
        let b = (0..<1000).map { LoadSchedule.slot(of: $0, among: 1000, seed: 7) }
        let c = (0..<1000).map { LoadSchedule.slot(of: $0, among: 1000, seed: 8) }
        #expect(a == b)
        #expect(a != c)
    }

    @Test func slotsDoNotFollowTheConnectionOrder() {
        let n = 1000
        let slots = (0..<n).map { Double(LoadSchedule.slot(of: $0, among: n, seed: 1)) }
        // Spearman's rank correlation of client index and slot (the slots are ranks already).
        let mean = Double(n - 1) / 2
        let covariance = (0..<n).reduce(0.0) { $0 + (Double($1) - mean) * (slots[$1] - mean) }
        let variance = (0..<n).reduce(0.0) { $0 + (Double($1) - mean) * (Double($1) - mean) }
        #expect(abs(covariance / variance) < 0.15)
        // The first 50 clients to connect send all over the period, not in its first 5 %.
        let early = slots.prefix(50)
        #expect(early.max()! > Double(n) * 0.8 && early.min()! < Double(n) * 0.2)
    }

    @Test func firstSendsStayEvenlySpacedOverOneInterval() {
        var schedule = LoadSchedule(totalClients: 200, connectRate: 100, loadModel: .open, totalRate: 100, thinkTimeNs: 0, seed: 3)
        let sending = schedule.beginMessages(startNs: 1_000, endNs: .max)
        #expect(sending)
        var random = FastRandom(seed: 1)
        let firsts = (0..<200).map { schedule.firstSend(globalIndex: $0, random: &random) }.sorted()
        let step = schedule.intervalNs / 200  // 2 s / 200 clients = 10 ms
        for (i, t) in firsts.enumerated() { #expect(t == 1_000 + UInt64(i) * step, "slot \(i)") }
    }
}
