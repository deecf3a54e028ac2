import StampedeLoop
import StampedeScenario

/// Resolves a target's host once, before the run and off the event loops: literals are used as
/// written, names go through getaddrinfo (so /etc/hosts and the system resolver apply), and every
/// address is kept in the resolver's order, then filtered by the scenario's `resolve` policy.
enum TargetResolver {
    static func addresses(host: String, port: Int, policy: ResolvePolicy) throws(RunSetupError) -> [SocketAddress] {
        guard (1...65535).contains(port) else { throw RunSetupError("cannot use target port \(port)") }
        let literal = HostLookup.literal(host, port: UInt16(port))
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
        switch HostLookup.addresses(of: host, port: port, family: policy == .ipv4 ? .ipv4 : policy == .ipv6 ? .ipv6 : .any) {
        case .success(let found): return found
        case .failure(let e): throw RunSetupError("cannot resolve target host '\(host)': \(e)")
        }
    }
}
