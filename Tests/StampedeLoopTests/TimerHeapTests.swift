import Testing
@testable import StampedeLoop

@Suite struct TimerHeapTests {
    @Test func popsInDeadlineOrder() {
        var h = TimerHeap()
        for (d, t) in [(50, 5), (10, 1), (40, 4), (20, 2), (30, 3)] as [(UInt64, UInt64)] { h.push(deadline: d, token: TimerToken(testNumber: t)) }
        #expect(h.count == 5)
        #expect(h.peekDeadline() == 10)
        var tokens: [UInt64] = []
        while h.count > 0 { tokens.append(h.pop().token.testNumber) }
        #expect(tokens == [1, 2, 3, 4, 5])
        #expect(h.peekDeadline() == nil)
    }

    @Test func equalDeadlinesPopInPushOrder() {
        var h = TimerHeap()
        for t in 0..<100 as Range<UInt64> { h.push(deadline: 7, token: TimerToken(testNumber: t)) }
        h.push(deadline: 6, token: TimerToken(testNumber: 1000))
        h.push(deadline: 8, token: TimerToken(testNumber: 2000))
        var tokens: [UInt64] = []
        while h.count > 0 { tokens.append(h.pop().token.testNumber) }
        #expect(tokens == [1000] + Array(0..<100) + [2000])
    }

    @Test func interleavedPushAndPopStayOrdered() {
        var h = TimerHeap()
        var rng = FastRandom(seed: 3)
        var popped: [(UInt64, UInt64)] = []
        var lastDeadline: UInt64 = 0
        for step in 0..<20_000 {
            if rng.next() % 3 != 0 || h.count == 0 {
                // Never earlier than what was already popped, as for a clock that only moves on.
                h.push(deadline: lastDeadline + rng.next() % 1000, token: TimerToken(testNumber: UInt64(step)))
            } else {
                let e = h.pop()
                #expect(e.deadline >= lastDeadline)
                lastDeadline = e.deadline
                popped.append((e.deadline, e.token.testNumber))
            }
        }
        #expect(!popped.isEmpty)
    }

    @Test func hundredThousandTimersPopInOrderWithFIFOTies() {
        var h = TimerHeap()
        var rng = FastRandom(seed: 100_000)
        let n = 100_000
        var pushed: [(deadline: UInt64, token: UInt64)] = []
        pushed.reserveCapacity(n)
        for i in 0..<n {
            // Few distinct deadlines, so many ties.
            let d = rng.next() % 5000
            pushed.append((d, UInt64(i)))
            h.push(deadline: d, token: TimerToken(testNumber: UInt64(i)))
        }
        #expect(h.count == n)
        // Stable sort by deadline = the order the heap must produce.
        let expected = pushed.enumerated().sorted { a, b in
            a.element.deadline != b.element.deadline ? a.element.deadline < b.element.deadline : a.offset < b.offset
        }.map(\.element.token)
        var got: [UInt64] = []
        got.reserveCapacity(n)
        while h.count > 0 { got.append(h.pop().token.testNumber) }
        #expect(got.count == n)
        #expect(got == expected)
    }
}
