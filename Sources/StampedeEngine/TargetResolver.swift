import CStampedeLinux
import Glibc
import StampedeLoop
import StampedeScenario

/// Resolves a target's host once, before the run and off the event loops: literals are used as
/// written, names go through getaddrinfo (so /etc/hosts and the system resolver apply), and every
/// address is kept in the resolver's order, then filtered by the scenario's `resolve` policy.
enum TargetResolver {
    static func addresses(host: String, port: Int, policy: ResolvePolicy) throws(RunSetupError) -> [SocketAddress] {
        guard (1...65535).contains(port) else { throw RunSetupError("cannot use target port \(port)") }
        let literal: SocketAddress? =
            if let v4 = parseIPv4(host) { .ipv4(v4, port: UInt16(port)) }
            else if let v6 = parseIPv6(host) { .ipv6(high: v6.high, low: v6.low, port: UInt16(port), scopeID: v6.scopeID) }
            else { nil }
        let found: [SocketAddress]
        if let literal { found = [literal] } else { found = try lookUp(host, port: UInt16(port), policy: policy) }
        let chosen: [SocketAddress] =
            switch policy {
            case .first: Array(found.prefix(1))
            case .all: found
            case .ipv4: found.filter { !$0.isIPv6 }
            case .ipv6: found.filter(\.isIPv6)
            }
        guard !chosen.isEmpty else {
            throw RunSetupError("target host '\(host)' has no \(policy == .ipv4 ? "IPv4" : "IPv6") address (resolve: \(policy.rawValue)); "
                                + "it resolved to \(found.map(\.hostText).joined(separator: ", "))")
        }
        return chosen
    }

    /// Every TCP address getaddrinfo gives for `host`, without duplicates, in its order.
    static func lookUp(_ host: String, port: UInt16, policy: ResolvePolicy) throws(RunSetupError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = policy == .ipv4 ? AF_INET : policy == .ipv6 ? AF_INET6 : AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else {
            throw RunSetupError("cannot resolve target host '\(host)': \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var out: [SocketAddress] = []
        var node = list
        while let info = node {
            if let address = socketAddress(info.pointee, port: port), !out.contains(address) { out.append(address) }
            node = info.pointee.ai_next
        }
        guard !out.isEmpty else { throw RunSetupError("cannot resolve target host '\(host)': no TCP address") }
        return out
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
