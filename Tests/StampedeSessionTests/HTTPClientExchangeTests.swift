import StampedeWire
import Testing
@testable import StampedeSession

@Suite struct HTTPClientExchangeTests {
    @Test func aContentLengthResponseGivesHeadBodyAndReusableCompletion() {
        var d = ExchangeDriver()
        d.feed("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"v1\"\r\n\r\nhello")
        #expect(d.log == ["head 200", "body hello", "complete"])
        #expect(d.heads[0].framing == .length(5))
        #expect(d.headValues[0]["@etag"] == "\"v1\"")
        #expect(!d.exchange.isInProgress)
        #expect(d.pending.isEmpty)
    }

    @Test func aChunkedBodyIsReportedWithoutItsFraming() {
        let log = logAtEverySplit("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n")
        #expect(log == ["head 200", "body hello world", "complete"])
    }

    @Test func a304HasNoBodyWhateverItsContentLength() {
        var d = ExchangeDriver()
        d.feed("HTTP/1.1 304 Not Modified\r\nETag: W/\"v2\"\r\nContent-Length: 99\r\n\r\n")
        #expect(d.log == ["head 304", "complete"])
        #expect(d.headValues[0]["@etag"] == "W/\"v2\"")
    }

    @Test func aResponseToHEADHasNoBody() {
        var d = ExchangeDriver(method: .head)
        d.feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
        #expect(d.log == ["head 200", "complete"])
    }

    @Test func theSameExchangeServesTheNextRequestOnAKeptAliveConnection() {
        var d = ExchangeDriver()
        // Both answers in one read: the second stays pending until its request is sent.
        d.feed("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 304 Not Modified\r\n\r\n")
        #expect(d.log == ["head 200", "body hi", "complete"])
        #expect(d.pending.count == 29)
        _ = d.exchange.start(body: .pieces, now: d.clock.now)
        d.drain()
        #expect(d.log == ["head 200", "body hi", "complete", "head 304", "complete"])
        #expect(d.exchange.status == 304)
    }

    @Test func keepAliveResponsesSplitAtEveryByteGiveTheSameActions() {
        let input = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
            + "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n"
            + "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
            + "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nz"
        let log = logAtEverySplit(input, restartWith: .pieces)
        #expect(log == ["head 200", "body abc", "complete", "head 200", "body de", "complete", "head 404", "complete",
                        "head 200", "body z", "complete, close"])
    }

    @Test func connectionCloseMakesTheConnectionNotReusable() {
        var d = ExchangeDriver()
        d.feed("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx")
        #expect(d.log == ["head 200", "body x", "complete, close"])
        var old = ExchangeDriver()
        old.feed("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx")
        #expect(old.log == ["head 200", "body x", "complete, close"])
    }

    @Test func aBodyDelimitedByTheCloseCompletesWhenTheConnectionCloses() {
        let log = logAtEverySplit("HTTP/1.1 200 OK\r\n\r\nuntil the end", close: true)
        #expect(log == ["head 200", "body until the end", "complete, close"])
    }

    @Test func aCollectedBodyIsAvailableAtCompletion() {
        let log = logAtEverySplit("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n", body: .collect)
        #expect(log == ["head 200", "collected {\"a\":1}", "complete"])
    }

    @Test func aDiscardedBodyIsConsumedUnreported() {
        var d = ExchangeDriver(body: .discard)
        d.feed("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd")
        #expect(d.log == ["head 200", "complete"])
        #expect(d.pending.isEmpty)
    }

    @Test func theBodyHandlingCanChangeWhenTheHeadArrives() {
        var d = ExchangeDriver(body: .discard)
        d.pending = Array("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd".utf8)
        let consumed = d.pending.withUnsafeBytes { buf -> Int in
            let (action, consumed) = d.exchange.next(buf)
            guard case .head = action else { Issue.record("expected the head"); return 0 }
            return consumed
        }
        d.pending.removeFirst(consumed)
        d.exchange.bodyHandling = .collect
        d.drain()
        #expect(d.log == ["collected abcd", "complete"])
    }

    @Test func anInvalidStatusLineEndsTheExchange() {
        var d = ExchangeDriver()
        d.feed("HTTP/1.1 2x0 OK\r\n\r\n")
        #expect(d.log == ["ended invalidResponse(StampedeWire.HTTPParseError.malformedStatusLine)"])
        #expect(!d.exchange.isInProgress)
        // Given once: the failed exchange says nothing more.
        d.feed("more")
        #expect(d.log.count == 1)
        #expect(d.exchange.connectionClosed() == nil)
    }

    @Test func brokenChunkFramingEndsTheExchange() {
        var d = ExchangeDriver()
        d.feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
        #expect(d.log == ["head 200", "ended invalidResponse(StampedeWire.HTTPParseError.invalidChunkSize)"])
    }

    @Test func endOfStreamMidBodyEndsTheExchange() {
        var d = ExchangeDriver()
        d.feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf")
        d.closed()
        #expect(d.log == ["head 200", "body half", "ended closedMidResponse"])
    }

    @Test func endOfStreamMidHeadOrBeforeAnyByteIsToldApart() {
        var mid = ExchangeDriver()
        mid.feed("HTTP/1.1 200 O")
        mid.closed()
        #expect(mid.log == ["ended closedMidResponse"])
        var before = ExchangeDriver()
        before.closed()
        #expect(before.log == ["ended closedBeforeResponse"])
    }

    @Test func theCloseOfAnIdleConnectionIsNoEvent() {
        var d = ExchangeDriver()
        d.feed("HTTP/1.1 204 No Content\r\n\r\n")
        #expect(d.exchange.connectionClosed() == nil)
        #expect(d.log == ["head 204", "complete"])
    }

    @Test func bytesWithNoRequestOutstandingEndTheExchange() {
        var d = ExchangeDriver()
        d.feed("HTTP/1.1 204 No Content\r\n\r\n")
        d.feed("HTTP/1.1 200 OK\r\n")
        #expect(d.log == ["head 204", "complete", "ended unsolicitedBytes"])
    }

    @Test func aBodyOverTheLimitEndsTheExchangeWhereverTheInputIsSplit() {
        let config = HTTPClientExchange.Configuration(maxResponseBytes: 60)
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n"  // 39 bytes
        #expect(logAtEverySplit(head + String(repeating: "a", count: 30), config).last == "ended responseTooLarge")
        // Exactly at the limit is accepted.
        let exact = HTTPClientExchange.Configuration(maxResponseBytes: 39 + 22)
        let log = logAtEverySplit("HTTP/1.1 200 OK\r\nContent-Length: 22\r\n\r\n" + String(repeating: "b", count: 22), exact)
        #expect(log == ["head 200", "body " + String(repeating: "b", count: 22), "complete"])
    }

    @Test func chunkFramingCountsTowardsTheLimit() {
        // 47 head bytes + "3\r\nabc\r\n" (8) + "0\r\n\r\n" (5) = 60.
        let input = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
        #expect(logAtEverySplit(input, .init(maxResponseBytes: 60)) == ["head 200", "body abc", "complete"])
        #expect(logAtEverySplit(input, .init(maxResponseBytes: 59)).last == "ended responseTooLarge")
    }

    @Test func aHeadOverTheLimitEndsTheExchange() {
        var d = ExchangeDriver(.init(maxResponseBytes: 10))
        d.feed("HTTP/1.1 304 Not Modified\r\n\r\n")
        #expect(d.log == ["ended responseTooLarge"])
    }

    @Test func interimResponsesAreSkipped() {
        let log = logAtEverySplit("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n!")
        #expect(log == ["head 200", "body !", "complete"])
    }
}
