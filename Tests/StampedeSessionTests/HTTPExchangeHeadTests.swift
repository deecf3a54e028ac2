import StampedeWire
import Testing
@testable import StampedeSession

@Suite struct HTTPExchangeHeadTests {
    func head(_ fields: String, _ config: HTTPClientExchange.Configuration = .init(), status: String = "200 OK") -> ExchangeDriver {
        var d = ExchangeDriver(config)
        d.feed("HTTP/1.1 \(status)\r\n\(fields)Content-Length: 0\r\n\r\n")
        return d
    }

    @Test func retryAfterInSecondsIsRead() {
        #expect(head("Retry-After: 120\r\n", status: "429 Too Many Requests").heads[0].retryAfterSeconds == 120)
        #expect(head("retry-after:  1.5 \r\n").heads[0].retryAfterSeconds == 1.5)
        #expect(head("Retry-After: 0\r\n").heads[0].retryAfterSeconds == 0)
    }

    @Test func retryAfterAsADateOrNegativeHasNoSeconds() {
        let date = head("Retry-After: Fri, 31 Dec 1999 23:59:59 GMT\r\n").heads[0]
        #expect(date.retryAfter != nil)
        #expect(date.retryAfterSeconds == nil)
        #expect(head("Retry-After: -5\r\n").heads[0].retryAfterSeconds == nil)
        #expect(head("").heads[0].retryAfter == nil)
    }

    /// A delay no one can wait (found by the http-exchange fuzz target) is a finite number of
    /// seconds: callers convert it with the loop's saturating `nanoseconds(_:)`.
    @Test func aHugeRetryAfterIsAFiniteNumberOfSeconds() throws {
        let s = try #require(head("Retry-After: 99999999999999999\r\n", status: "429 Too Many Requests").heads[0].retryAfterSeconds)
        #expect(s.isFinite && s > 9e16)
        // Longer than the reader takes (2^59 and up): no seconds, the field is still found.
        #expect(head("Retry-After: 66666666666000000000000001\r\n").heads[0].retryAfterSeconds == nil)
    }

    @Test func locationAndRateLimitAreFound() {
        let d = head("Location: /next\r\nX-RateLimit-Remaining: 7\r\n", status: "302 Found")
        #expect(d.headValues[0]["@location"] == "/next")
        #expect(d.headValues[0]["@ratelimit"] == "7")
    }

    @Test func theWatchedFieldIsFoundIgnoringCase() {
        let d = head("x-changed-at: 1763779200.5\r\nETag: \"e\"\r\n", .init(watchedField: Array("X-Changed-At".utf8)))
        #expect(d.headValues[0]["@watched"] == "1763779200.5")
        #expect(d.headValues[0]["@etag"] == "\"e\"")
    }

    @Test func anEventStreamIsRecognisedByItsMediaType() {
        #expect(head("Content-Type: text/event-stream\r\n").heads[0].isEventStream)
        #expect(head("Content-Type: Text/Event-Stream ; charset=utf-8\r\n").heads[0].isEventStream)
        #expect(!head("Content-Type: application/json\r\n").heads[0].isEventStream)
        #expect(!head("").heads[0].isEventStream)
    }

    @Test func theLastOfARepeatedFieldCounts() {
        let d = head("ETag: \"a\"\r\nETag: \"b\"\r\n")
        #expect(d.headValues[0]["@etag"] == "\"b\"")
    }

    @Test func framingFactsArePassedOn() {
        var d = ExchangeDriver()
        d.feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n0\r\n\r\n")
        #expect(d.heads[0].response.isChunked)
        #expect(d.heads[0].isReusable)
        #expect(d.heads[0].framing == .chunked)
    }
}
