import StampedeLoop
import StampedeWire

extension HubServer {
    func startServerSentEvents(_ s: HubSocket, _ target: HubConnection?) {
        guard let c = target, !c.disposed, c.phase != .ended else {
            respond(s, status: 404, reason: "Not Found", text: "No Connection with that ID")
            return
        }
        if let t = c.transport {
            if t == .serverSentEvents {
                respond(s, status: 409, reason: "Conflict", text: "Connection ID is already in use.")
            } else {
                respond(s, status: 400, reason: "Bad Request", text: "Cannot change transports mid-connection")
            }
            return
        }
        let chunked = !s.http10
        loop.write(s.id, reserving: 256) { p in
            let room = UnsafeMutableRawBufferPointer(start: p, count: 256)
            guard let n = HTTPResponseWriter.writeHead(into: room, status: 200, reason: "OK", contentType: "text/event-stream",
                                                       body: chunked ? .chunked : .untilClose,
                                                       extraHeaderLines: UnsafeRawBufferPointer(start: Self.sseHeaders.utf8Start, count: Self.sseHeaders.utf8CodeUnitCount))
            else { return 0 }
            let pre = SSEWriter.streamPreamble
            let body = UnsafeRawBufferPointer(start: pre.utf8Start, count: pre.utf8CodeUnitCount)
            if chunked {
                return n + (HTTPResponseWriter.writeChunk(body, into: UnsafeMutableRawBufferPointer(rebasing: room[n...])) ?? 0)
            }
            (p + n).copyMemory(from: body.baseAddress!, byteCount: body.count)
            return n + body.count
        }
        s.mode = .serverSentEvents
        limits.noDeadline(s.id, loop)
        s.connection = c
        c.socket = s.id
        c.sseChunked = chunked
        c.transport = .serverSentEvents
        statistics.connectionsServerSentEvents += 1
        claim(c)
    }

    static let sseHeaders: StaticString = "Cache-Control: no-cache\r\n"

    /// One SSE event (chunk-framed unless the response is close-delimited).
    func writeEvent(_ s: ConnectionID, chunked: Bool, _ message: UnsafeRawBufferPointer) {
        let event = SSEWriter.encodedCount(message)
        let total = chunked ? HTTPResponseWriter.chunkLength(payloadCount: event) : event
        loop.write(s, reserving: total) { p in
            let room = UnsafeMutableRawBufferPointer(start: p, count: total)
            var n = 0
            if chunked {
                var w = HTTPByteWriter(room)
                w.appendHex(event)
                w.append("\r\n")
                n = w.count
            }
            guard let e = SSEWriter.write(message, into: UnsafeMutableRawBufferPointer(rebasing: room[n...])) else { return 0 }
            n += e
            if chunked {
                room[n] = 0x0D
                room[n + 1] = 0x0A
                n += 2
            }
            return n
        }
    }
}
