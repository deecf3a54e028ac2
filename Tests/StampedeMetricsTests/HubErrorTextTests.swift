import Testing
@testable import StampedeMetrics

@Suite struct HubErrorTextBoundsTests {
    @Test func longHubErrorTextsAreCutOnACharacterBoundary() {
        var shard = MetricsShard()
        let long = String(repeating: "é", count: 400)  // two bytes each: a cut could fall inside one
        shard.countHubError(long)
        shard.countHubError(long)
        let key = try! #require(shard.hubErrorMessages.keys.first)
        #expect(shard.hubErrorMessages.count == 1 && shard.hubErrorMessages[key] == 2)
        #expect(key.utf8.count <= MetricsShard.maxHubErrorBytes)
        #expect(key.hasSuffix("…") && key.dropLast().allSatisfy { $0 == "é" })
    }

    @Test func distinctHubErrorTextsAreCapped() {
        var shard = MetricsShard()
        for i in 0..<(MetricsShard.maxDistinctHubErrors + 10) { shard.countHubError("error \(i)") }
        #expect(shard.hubErrorMessages.count == MetricsShard.maxDistinctHubErrors + 1)
        #expect(shard.hubErrorMessages["(other)"] == 10)
    }
}
