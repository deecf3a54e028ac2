/// A loopback address to connect to or listen on.
public enum SocketAddress: Sendable, Equatable, CustomStringConvertible {
    /// IPv4 address in host byte order.
    case ipv4(UInt32, port: UInt16)
    case ipv6Loopback(port: UInt16)

    /// Parses a dotted IPv4 literal, `localhost`, or `::1`.
    public init?(host: String, port: Int) {
        guard (0...65535).contains(port) else { return nil }
        if host == "localhost" { self = .ipv4(0x7F00_0001, port: UInt16(port)); return }
        if host == "::1" || host == "[::1]" { self = .ipv6Loopback(port: UInt16(port)); return }
        guard let a = parseIPv4(host) else { return nil }
        self = .ipv4(a, port: UInt16(port))
    }

    /// 127.0.0.0/8 or ::1: the only destinations Stampede sends load to.
    public var isLoopback: Bool {
        switch self {
        case .ipv4(let a, _): a >> 24 == 127
        case .ipv6Loopback: true
        }
    }

    public var port: UInt16 {
        switch self { case .ipv4(_, let p), .ipv6Loopback(let p): p }
    }

    public var description: String {
        switch self {
        case .ipv4(let a, let p): "\(a >> 24).\((a >> 16) & 255).\((a >> 8) & 255).\(a & 255):\(p)"
        case .ipv6Loopback(let p): "[::1]:\(p)"
        }
    }
}

/// Parses a dotted quad "a.b.c.d" (four parts of 1 to 3 ASCII digits, each 0 to 255) into a
/// host-order UInt32: the one IPv4 parser of the loop, the engine and the command line.
///
/// A part with a leading zero ("012", "0127") is refused: C's inet_aton (so ping, curl) and
/// WHATWG URL parsing read it as octal (012 = 10), people and many libraries as decimal (12), so
/// the address it names depends on who reads it. Signs ("+1") and inet_aton's short forms ("127.1") are refused for the same
/// reason. The scenario loader's private parser applies the same rule.
public func parseIPv4(_ s: String) -> UInt32? {
    var v: UInt32 = 0
    var parts = 0
    for part in s.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
        parts += 1
        guard parts <= 4, (1...3).contains(part.count), part.count == 1 || part.first != UInt8(ascii: "0") else { return nil }
        var n: UInt32 = 0
        for c in part {
            guard c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") else { return nil }
            n = n * 10 + UInt32(c - UInt8(ascii: "0"))
        }
        guard n <= 255 else { return nil }
        v = v << 8 | n
    }
    return parts == 4 ? v : nil
}
