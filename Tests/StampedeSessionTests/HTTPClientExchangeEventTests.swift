import StampedeWire
import Testing
@testable import StampedeSession

@Suite struct HTTPClientExchangeEventTests {
    static let streamHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

    static func chunk(_ s: String) -> String { String(s.utf8.count, radix: 16) + "\r\n" + s + "\r\n" }

    @Test func eventsSplitAcrossChunksAndReadsAreReportedInOrder() {
        let input = Self.streamHead + Self.chunk(":\r\n\r\n") + Self.chunk("data: one\r\n\r\n") + Self.chunk("data: t")
            + Self.chunk("wo\r\n\r\ndata: three\r\n\r\nda") + Self.chunk("ta: four\r\n") + Self.chunk("\r\n")
            + Self.chunk("event: x\r\ndata: a\r\ndata: b\r\n\r\n")
        let log = logAtEverySplit(input, body: .events)
        #expect(log == ["head 200", "event one", "event two", "event three", "event four", "event a\nb"])
    }

    @Test func eventsAfterACarriedOneGoBackToTheCallersBuffer() {
        var d = ExchangeDriver(body: .events)
        d.feed(Self.streamHead + Self.chunk("data: spl"))
        d.feed(Self.chunk("it\n\n"))
        d.feed(Self.chunk("data: whole\n\ndata: next\n\n"))
        #expect(d.log == ["head 200", "event split", "event whole", "event next"])
        #expect(d.exchange.carry.isEmpty)
    }

    @Test func anEventStreamWithContentLengthCompletes() {
        let body = "data: x\n\nid: 7\ndata: y\n\n"
        let input = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
        var d = ExchangeDriver(body: .events)
        d.feed(input)
        #expect(d.log == ["head 200", "event x", "event y", "complete"])
        #expect(d.exchange.eventParser.lastEventID == Array("7".utf8))
        #expect(logAtEverySplit(input, body: .events) == d.log)
    }

    @Test func anEventOverTheLimitEndsTheExchange() {
        var d = ExchangeDriver(.init(maxEventBytes: 8), body: .events)
        d.feed(Self.streamHead + Self.chunk("data: 0123456789\n\n"))
        #expect(d.log == ["head 200", "ended invalidEventStream(StampedeWire.SSEParseError.eventTooLarge)"])
    }

    @Test func aNewStreamForgetsTheUnfinishedEventOfTheLastOne() {
        var d = ExchangeDriver(body: .events)
        d.feed("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\ndata: abc")
        #expect(d.log == ["head 200", "complete"])
        _ = d.exchange.start(body: .events, now: d.clock.now)
        d.feed("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\ndata: d\n\n")
        #expect(d.log == ["head 200", "complete", "head 200", "event d", "complete"])
    }
}

extension HTTPClientExchangeEventTests {
    @Test func leavingEventsMidPieceSkipsWhatTheParserAlreadyConsumed() {
        var d = ExchangeDriver(body: .events)
        d.pending = Array((Self.streamHead + Self.chunk("data: a\n\ndata: b\n\n") + Self.chunk("zz") + "0\r\n\r\n").utf8)
        var steps = 0
        while steps < 2 {
            steps += 1
            let consumed = d.pending.withUnsafeBytes { buf -> Int in
                let (action, consumed) = d.exchange.next(buf)
                _ = d.record(action, buf)
                return consumed
            }
            d.pending.removeFirst(consumed)
        }
        #expect(d.log == ["head 200", "event a"])
        #expect(d.exchange.pieceLeft > 0)
        d.exchange.bodyHandling = .pieces
        d.drain()
        #expect(d.log == ["head 200", "event a", "body zz", "complete"])
    }
}
