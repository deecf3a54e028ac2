import StampedeLoop
import StampedeWire

extension RestServer {
    /// Runs `body` on a writer over the header-lines scratch and returns what it wrote.
    func buildLines(_ body: (inout HTTPByteWriter) -> Void) -> UnsafeRawBufferPointer {
        var w = HTTPByteWriter(headerLines)
        body(&w)
        return UnsafeRawBufferPointer(rebasing: headerLines[0..<(w.result ?? 0)])
    }

    func validatorLines(_ w: inout HTTPByteWriter) {
        w.append("ETag: ")
        w.append(etag.bytes)
        w.append("\r\nX-Changed-At: ")
        w.append(changedAt.bytes)
        w.append("\r\nCache-Control: no-cache\r\n")
    }

    func rateLimitLines(_ w: inout HTTPByteWriter) {
        guard let limit = rateLimit else { return }
        w.append("X-RateLimit-Limit: ")
        w.appendDecimal(limit)
        w.append("\r\nX-RateLimit-Remaining: ")
        w.appendDecimal(max(0, limit - countedInWindow))
        w.append("\r\nX-RateLimit-Reset: ")
        w.appendDecimal(window + 1)
        w.append("\r\n")
    }

    /// A response without a body of its own (304), or the head of one whose body follows.
    func writeHead(_ id: ConnectionID, status: Int, reason: StaticString, contentType: StaticString?, body: HTTPBodyFraming,
                   close: Bool, lines: UnsafeRawBufferPointer) {
        let room = 256 + lines.count
        emit(id, reserving: room) { p in
            HTTPResponseWriter.writeHead(into: UnsafeMutableRawBufferPointer(start: p, count: room), status: status, reason: reason,
                                         contentType: contentType, body: body, connectionClose: close, extraHeaderLines: lines) ?? 0
        }
    }

    /// A short JSON answer (errors), the body left out for HEAD.
    func writeError(_ id: ConnectionID, status: Int, reason: StaticString, body: StaticString, headOnly: Bool = false,
                    lines: StaticString = "", close: Bool) {
        writeError(id, status: status, reason: reason, body: body, headOnly: headOnly,
                   lines: UnsafeRawBufferPointer(start: lines.utf8Start, count: lines.utf8CodeUnitCount), close: close)
    }

    func writeError(_ id: ConnectionID, status: Int, reason: StaticString, body: StaticString, headOnly: Bool = false,
                    lines: UnsafeRawBufferPointer, close: Bool) {
        let room = 256 + lines.count + body.utf8CodeUnitCount
        emit(id, reserving: room) { p in
            guard let n = HTTPResponseWriter.writeHead(into: UnsafeMutableRawBufferPointer(start: p, count: room), status: status,
                                                       reason: reason, contentType: "application/json",
                                                       body: .length(body.utf8CodeUnitCount), connectionClose: close,
                                                       extraHeaderLines: lines) else { return 0 }
            if headOnly { return n }
            (p + n).copyMemory(from: body.utf8Start, byteCount: body.utf8CodeUnitCount)
            return n + body.utf8CodeUnitCount
        }
    }

    /// The 200: head, then the JSON body built straight into the write queue.
    func writeResource(_ id: ConnectionID, path: UnsafeRawBufferPointer, version: Int, headOnly: Bool, chunked: Bool, close: Bool) {
        // {"path":"…","version":…,"changed_at":…,"data":"…"}: 46 bytes of punctuation and names.
        let escapedPath = Self.escapedLength(path)
        let fixed = 46 + escapedPath + HTTPByteWriter.decimalDigitCount(version) + changedAt.count
        let pad = max(0, bodySize - fixed)
        let length = fixed + pad
        let lines = buildLines { w in
            validatorLines(&w)
            rateLimitLines(&w)
        }
        let room = 320 + lines.count + (headOnly ? 0 : length + 32)
        emit(id, reserving: room) { p in
            let out = UnsafeMutableRawBufferPointer(start: p, count: room)
            guard let n = HTTPResponseWriter.writeHead(into: out, status: 200, reason: "OK", contentType: "application/json",
                                                       body: chunked ? .chunked : .length(length), connectionClose: close,
                                                       extraHeaderLines: lines) else { return 0 }
            if headOnly { return n }
            var w = HTTPByteWriter(UnsafeMutableRawBufferPointer(rebasing: out[n...]))
            if chunked {
                w.appendHex(length)
                w.append("\r\n")
            }
            w.append("{\"path\":\"")
            Self.appendEscaped(path, to: &w)
            w.append("\",\"version\":")
            w.appendDecimal(version)
            w.append(",\"changed_at\":")
            w.append(changedAt.bytes)
            w.append(",\"data\":\"")
            padding.withUnsafeBytes { w.append(UnsafeRawBufferPointer(rebasing: $0[0..<pad])) }
            w.append("\"}")
            if chunked { w.append("\r\n0\r\n\r\n") }
            return n + (w.result ?? 0)
        }
    }

    /// Bytes `appendEscaped` writes for `path`: `"` and `\` escaped, controls and non-ASCII as
    /// `\u00XX` (as Python's json.dumps does with the latin-1 path http.server decodes).
    static func escapedLength(_ path: UnsafeRawBufferPointer) -> Int {
        var n = 0
        for b in path { n += b == 0x22 || b == 0x5C ? 2 : (b < 0x20 || b >= 0x80 ? 6 : 1) }
        return n
    }

    static func appendEscaped(_ path: UnsafeRawBufferPointer, to w: inout HTTPByteWriter) {
        let hex: StaticString = "0123456789abcdef"
        for b in path {
            if b == 0x22 || b == 0x5C {
                w.append(byte: 0x5C)
                w.append(byte: b)
            } else if b < 0x20 || b >= 0x80 {
                w.append("\\u00")
                w.append(byte: hex.utf8Start[Int(b >> 4)])
                w.append(byte: hex.utf8Start[Int(b & 0xF)])
            } else {
                w.append(byte: b)
            }
        }
    }
}

extension HTTPByteWriter {
    /// Digits of a non-negative decimal (as `appendDecimal` writes it).
    static func decimalDigitCount(_ value: Int) -> Int {
        var n = 1
        var v = max(0, value)
        while v >= 10 { v /= 10; n += 1 }
        return n
    }
}
