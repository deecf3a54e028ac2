import Foundation
import StampedeEngine
import Testing

@Suite struct InterleavePlanTests {
    @Test func pairsAlternateWhichSideRunsFirst() {
        let plan = InterleavePlan(pairs: 3, root: URL(fileURLWithPath: "/tmp/ab"))
        let steps = plan.steps
        #expect(steps.map(\.pair) == [1, 1, 2, 2, 3, 3])
        #expect(steps.map(\.side) == [.baseline, .current, .current, .baseline, .baseline, .current])
        #expect(steps.map(\.order) == [.baselineFirst, .baselineFirst, .currentFirst, .currentFirst, .baselineFirst, .baselineFirst])
    }

    @Test func eachSideRunsOncePerPair() {
        let plan = InterleavePlan(pairs: InterleavePlan.pairLimit, root: URL(fileURLWithPath: "/tmp/ab"))
        for side in InterleaveSide.allCases {
            #expect(plan.steps.filter { $0.side == side }.map(\.pair) == Array(1...InterleavePlan.pairLimit))
        }
        // As many pairs open with each side: neither is favoured by going first.
        #expect(plan.steps.filter { $0.order == .baselineFirst }.count == plan.steps.filter { $0.order == .currentFirst }.count)
    }

    @Test func foldersAndLogsSitUnderTheResultsFolder() {
        let plan = InterleavePlan(pairs: 2, root: URL(fileURLWithPath: "/tmp/ab"))
        #expect(plan.resultsFolder(.baseline).path == "/tmp/ab/baseline")
        #expect(plan.resultsFolder(.current).path == "/tmp/ab/current")
        #expect(plan.serverLog(.current, pair: 2).path == "/tmp/ab/current-server-2.log")
        #expect(plan.runsFile.path == "/tmp/ab/runs.json")
    }

    @Test func ordersAreSpelledAsRunsJsonHasThem() throws {
        #expect(InterleaveOrder.baselineFirst.rawValue == "baseline-first")
        #expect(InterleaveOrder.currentFirst.rawValue == "current-first")
        let json = #"{"schema":"stampede.interleave/1","scenario":"s","pairs":[{"pair":1,"order":"current-first","#
            + #""baseline":{"folder":"baseline/s-20260101T000000Z","exit":99,"target":"ws://127.0.0.1:1/chat"}}],"partial":true}"#
        let record = try JSONDecoder().decode(InterleaveRecord.self, from: Data(json.utf8))
        #expect(record.pairs.first?.order == .currentFirst && record.pairs.first?.baseline?.exit == 99 && record.pairs.first?.current == nil)
    }
}
