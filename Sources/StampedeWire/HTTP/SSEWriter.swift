/// Server-side SSE framing in ASP.NET Core's format (ServerSentEventsMessageFormatter): one
/// `data: <line>\r\n` per line of the message and a blank line after.
public enum SSEWriter {
    /// What ASP.NET writes first on a new SSE response: an empty comment, so proxies and
    /// clients see the stream open before the first message.
    public static let streamPreamble: StaticString = ":\r\n"

    /// Bytes `write` needs for `message`.
    public static func encodedCount(_ message: UnsafeRawBufferPointer) -> Int {
        var total = 2
        forEachLine(message) { total += 8 + $0.count }
        return total
    }

    /// Writes `message` as one event. LF, CRLF and a bare CR all end a line (a CR cannot be
    /// carried by SSE), so a parser gets the message back exactly when it has no CR, and with
    /// line breaks normalized to LF otherwise. Unlike ASP.NET, which writes only the blank line
    /// for an empty message (nothing a parser dispatches), an empty message is written as
    /// `data: ` so it arrives as an empty event. Returns nil if `out` is too small.
    public static func write(_ message: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        var w = HTTPByteWriter(out)
        forEachLine(message) { line in
            w.append("data: ")
            w.append(UnsafeRawBufferPointer(rebasing: message[line]))
            w.append("\r\n")
        }
        w.append("\r\n")
        return w.result
    }

    private static func forEachLine(_ message: UnsafeRawBufferPointer, _ body: (Range<Int>) -> Void) {
        var i = 0
        let n = message.count
        while true {
            guard let e = HTTPBytes.firstLineBreak(in: message, from: i, to: n) else {
                body(i..<n)
                return
            }
            body(i..<e)
            i = e + 1
            if message[e] == HTTPBytes.cr && i < n && message[i] == HTTPBytes.lf { i += 1 }
        }
    }
}
