import CStampedeLinux
import Glibc

/// An IPv4 or IPv6 address and port to connect to, listen on or bind a source to.
public enum SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// IPv4 address in host byte order.
    case ipv4(UInt32, port: UInt16)
    /// IPv6 address as two host-order halves of its 16 network-order bytes (`high` holds bytes
    /// 0 to 7), the port, and the scope (interface index) a link-local address needs, else 0.
    case ipv6(high: UInt64, low: UInt64, port: UInt16, scopeID: UInt32)

    /// `::1`, port `port`.
    public static func ipv6Loopback(port: UInt16) -> SocketAddress { .ipv6(high: 0, low: 1, port: port, scopeID: 0) }

    /// Parses an IPv4 literal, an IPv6 literal (bare or in brackets, with an optional `%scope`)
    /// or `localhost` (127.0.0.1). Names other than `localhost` are not resolved here: the
    /// engine resolves them once before a run.
    public init?(host: String, port: Int) {
        guard (0...65535).contains(port) else { return nil }
        if host == "localhost" { self = .ipv4(0x7F00_0001, port: UInt16(port)); return }
        if let a = parseIPv4(host) { self = .ipv4(a, port: UInt16(port)); return }
        guard let v6 = parseIPv6(host) else { return nil }
        self = .ipv6(high: v6.high, low: v6.low, port: UInt16(port), scopeID: v6.scopeID)
    }

    /// 127.0.0.0/8 or ::1.
    public var isLoopback: Bool {
        switch self {
        case .ipv4(let a, _): a >> 24 == 127
        case .ipv6(let high, let low, _, _): high == 0 && low == 1
        }
    }

    /// Whether this is an IPv6 address (so its socket is AF_INET6).
    public var isIPv6: Bool { if case .ipv6 = self { true } else { false } }

    /// The socket family: AF_INET or AF_INET6.
    public var family: Int32 { isIPv6 ? AF_INET6 : AF_INET }

    public var port: UInt16 {
        switch self { case .ipv4(_, let p), .ipv6(_, _, let p, _): p }
    }

    /// The same address with another port.
    public func with(port: UInt16) -> SocketAddress {
        switch self {
        case .ipv4(let a, _): .ipv4(a, port: port)
        case .ipv6(let h, let l, _, let s): .ipv6(high: h, low: l, port: port, scopeID: s)
        }
    }

    /// The address without its port, as a URL host would write it (IPv6 without brackets).
    public var hostText: String {
        switch self {
        case .ipv4(let a, _): return "\(a >> 24).\((a >> 16) & 255).\((a >> 8) & 255).\(a & 255)"
        case .ipv6(let h, let l, _, let scope):
            var text = [CChar](repeating: 0, count: 64)
            var bytes = ipv6Bytes(high: h, low: l)
            _ = bytes.withUnsafeMutableBytes { b in text.withUnsafeMutableBufferPointer { inet_ntop(AF_INET6, b.baseAddress, $0.baseAddress, 64) } }
            let s = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return scope == 0 ? s : "\(s)%\(scope)"
        }
    }

    public var description: String {
        switch self {
        case .ipv4(_, let p): "\(hostText):\(p)"
        case .ipv6(_, _, let p, _): "[\(hostText)]:\(p)"
        }
    }

    /// 0 when a TCP socket can bind to this address with port 0 (so it is an address of this
    /// machine), else the errno (EADDRNOTAVAIL for an address that is not local).
    public var localBindError: Int32 {
        let fd = cs_socket_tcp(family)
        guard fd >= 0 else { return cs_errno() }
        defer { close(fd) }
        return with(port: 0).withSockaddr(fd: fd, bind: true) == 0 ? 0 : cs_errno()
    }

    /// Connects `fd` (a blocking socket) to this address: 0, or -1 with errno set.
    public func connectBlocking(_ fd: Int32) -> Int32 { withSockaddr(fd: fd, bind: false) }

    /// Binds `fd` to this address (0 or -1 with errno set), as `bind(2)` does.
    public func bind(_ fd: Int32) -> Int32 { withSockaddr(fd: fd, bind: true) }

    /// Connects (or binds, when `bind`) `fd` to this address through the C shim; 0 or -1 with errno.
    func withSockaddr(fd: Int32, bind: Bool) -> Int32 {
        switch self {
        case .ipv4(let a, let p): return bind ? cs_bind_ipv4(fd, a.bigEndian, p) : cs_connect_ipv4(fd, a.bigEndian, p)
        case .ipv6(let h, let l, let p, let scope):
            // No allocation: connect is on the loop, once per connection.
            return bind ? cs_bind_ipv6(fd, h, l, p, scope) : cs_connect_ipv6(fd, h, l, p, scope)
        }
    }
}

/// The 16 network-order bytes of an IPv6 address kept as two host-order halves.
func ipv6Bytes(high: UInt64, low: UInt64) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 16)
    for i in 0..<8 {
        out[i] = UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(i)))
        out[8 + i] = UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(i)))
    }
    return out
}

/// Parses an IPv6 literal with inet_pton (brackets and a `%scope` suffix, an interface name or
/// number, allowed); nil when it is not one.
public func parseIPv6(_ text: String) -> (high: UInt64, low: UInt64, scopeID: UInt32)? {
    var s = Substring(text)
    if s.hasPrefix("[") && s.hasSuffix("]") { s = s.dropFirst().dropLast() }
    guard s.contains(":") else { return nil }
    var scopeID: UInt32 = 0
    if let percent = s.firstIndex(of: "%") {
        let scope = String(s[s.index(after: percent)...])
        s = s[..<percent]
        if let n = UInt32(scope) { scopeID = n } else {
            scopeID = if_nametoindex(scope)
            guard scopeID != 0 else { return nil }
        }
    }
    var bytes = [UInt8](repeating: 0, count: 16)
    let ok = bytes.withUnsafeMutableBytes { inet_pton(AF_INET6, String(s), $0.baseAddress) }
    guard ok == 1 else { return nil }
    var high: UInt64 = 0, low: UInt64 = 0
    for i in 0..<8 { high = high << 8 | UInt64(bytes[i]); low = low << 8 | UInt64(bytes[8 + i]) }
    return (high, low, scopeID)
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
