import CStampedeLinux
#if canImport(Glibc)
import Glibc
#endif

/// Host name resolution through getaddrinfo (so /etc/hosts and the system resolver apply).
/// It blocks: call it before the loops start or on a thread of its own, never on a loop.
public enum HostLookup {
    /// Which address families a lookup asks for.
    public enum Family: Sendable { case any, ipv4, ipv6 }

    /// Why a name has no address: getaddrinfo's own text, or no TCP address among its answers.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// `host` as an address literal (IPv4, or IPv6 with an optional scope), else nil.
    public static func literal(_ host: String, port: UInt16) -> SocketAddress? {
        if let v4 = parseIPv4(host) { return .ipv4(v4, port: port) }
        if let v6 = parseIPv6(host) { return .ipv6(high: v6.high, low: v6.low, port: port, scopeID: v6.scopeID) }
        return nil
    }

    /// Every TCP address getaddrinfo gives for `host`, without duplicates, in its order, each with `port`.
    public static func addresses(of host: String, port: UInt16, family: Family = .any) -> Result<[SocketAddress], Failure> {
        var hints = addrinfo()
        hints.ai_family = switch family { case .any: AF_UNSPEC; case .ipv4: AF_INET; case .ipv6: AF_INET6 }
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else { return .failure(Failure(description: String(cString: gai_strerror(status)))) }
        defer { freeaddrinfo(list) }
        var out: [SocketAddress] = []
        var node = list
        while let info = node {
            if let address = socketAddress(info.pointee, port: port), !out.contains(address) { out.append(address) }
            node = info.pointee.ai_next
        }
        return out.isEmpty ? .failure(Failure(description: "no TCP address")) : .success(out)
    }

    static func socketAddress(_ info: addrinfo, port: UInt16) -> SocketAddress? {
        guard let sa = info.ai_addr else { return nil }
        switch info.ai_family {
        case AF_INET:
            let a = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
            return .ipv4(UInt32(bigEndian: a), port: port)
        case AF_INET6:
            return sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { p -> SocketAddress in
                var bytes = p.pointee.sin6_addr
                var high: UInt64 = 0, low: UInt64 = 0
                withUnsafeBytes(of: &bytes) { b in
                    for i in 0..<8 { high = high << 8 | UInt64(b[i]); low = low << 8 | UInt64(b[8 + i]) }
                }
                return .ipv6(high: high, low: low, port: port, scopeID: p.pointee.sin6_scope_id)
            }
        default: return nil
        }
    }
}
