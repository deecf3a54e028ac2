import StampedeWire
import Testing
@testable import StampedeSession

@Suite struct HTTPClientExchangeTimeoutTests {
    let config = HTTPClientExchange.Configuration(firstByteTimeoutNs: 2_000_000_000, responseTimeoutNs: 5_000_000_000)

    @Test func noHeadByTheFirstByteDeadlineIsAFirstByteTimeout() {
        var clock = FakeClock()
        var x = HTTPClientExchange(configuration: config)
        let deadline = x.start(now: clock.now)
        #expect(deadline == clock.now + 2_000_000_000)
        clock.advance(seconds: 2)
        #expect(x.timerFired(deadline: deadline!, now: clock.now) == .ended(.firstByteTimeout))
        #expect(!x.isInProgress)
    }

    @Test func aHeadInTimeTurnsTheTimerIntoTheWholeResponseDeadline() {
        var clock = FakeClock()
        var x = HTTPClientExchange(configuration: config)
        let start = clock.now
        let first = x.start(now: start)!
        let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc".utf8)
        _ = head.withUnsafeBytes { x.next($0) }
        clock.advance(seconds: 2)
        #expect(x.timerFired(deadline: first, now: clock.now) == .armTimer(at: start + 5_000_000_000))
        clock.advance(seconds: 3)
        #expect(x.timerFired(deadline: start + 5_000_000_000, now: clock.now) == .ended(.responseTimeout))
    }

    @Test func aWholeDeadlineBeforeTheFirstByteOneIsTheOnlyTimer() {
        var clock = FakeClock()
        var x = HTTPClientExchange(configuration: .init(firstByteTimeoutNs: 9_000_000_000, responseTimeoutNs: 1_000_000_000))
        let deadline = x.start(now: clock.now)!
        #expect(deadline == clock.now + 1_000_000_000)
        clock.advance(seconds: 1)
        #expect(x.timerFired(deadline: deadline, now: clock.now) == .ended(.responseTimeout))
    }

    @Test func aStaleDeadlineIsIgnored() {
        var clock = FakeClock()
        var x = HTTPClientExchange(configuration: config)
        let first = x.start(now: clock.now)!
        // Not the deadline the exchange waits for.
        #expect(x.timerFired(deadline: first - 1, now: clock.now) == .nothing)
        let response = Array("HTTP/1.1 204 No Content\r\n\r\n".utf8)
        var consumed = 0
        repeat {
            let (action, used) = response.withUnsafeBytes { x.next(UnsafeRawBufferPointer(rebasing: $0[consumed...])) }
            consumed += used
            if case .complete = action { break }
        } while true
        // The answer came: its timer is stale, and so it stays once the next request is out.
        clock.advance(seconds: 2)
        #expect(x.timerFired(deadline: first, now: clock.now) == .nothing)
        let second = x.start(now: clock.now)!
        #expect(x.timerFired(deadline: first, now: clock.now) == .nothing)
        #expect(x.isInProgress)
        clock.advance(seconds: 2)
        #expect(x.timerFired(deadline: second, now: clock.now) == .ended(.firstByteTimeout))
    }

    @Test func withoutTimeoutsThereIsNoDeadline() {
        var x = HTTPClientExchange()
        #expect(x.start(now: 1) == nil)
        #expect(x.deadline == nil)
    }

    @Test func onlyAFirstByteTimeoutStopsMatteringOnceTheHeadArrives() {
        var clock = FakeClock()
        var x = HTTPClientExchange(configuration: .init(firstByteTimeoutNs: 1_000_000_000))
        let first = x.start(now: clock.now)!
        let head = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        _ = head.withUnsafeBytes { x.next($0) }
        clock.advance(seconds: 1)
        #expect(x.timerFired(deadline: first, now: clock.now) == .nothing)
        #expect(x.isInProgress)
        #expect(x.deadline == nil)
    }
}
