import Foundation
import StampedeLoop

/// Which local addresses a run's connections come from. The kernel gives each (source address,
/// target address) pair one ephemeral port range (32768–60999 here: 28,232 ports), shared by
/// every process on the host; a run that needs more connections to one target must spread them
/// over several source addresses. On loopback that is free (all of 127.0.0.0/8 is ours); for
/// other targets the user lists them (`source_addresses`).
enum SourceAddressPlan {
    /// The source addresses for `clients` clients of `connectionsPerClient` connections each,
    /// spread over `targets`: the scenario's own when it lists some (checked), 127.0.0.x chosen
    /// here for a loopback target that needs them, or none (the kernel's choice).
    static func addresses(clients: Int, connectionsPerClient: Int, targets: [SocketAddress], given: [String],
                          ports: Int = ephemeralPorts()) -> Result<[String], RunSetupError> {
        let perTarget = (clients * max(1, connectionsPerClient) + max(1, targets.count) - 1) / max(1, targets.count)
        // Half the range per pair leaves room for reconnects while closed ports wait in TIME_WAIT.
        let comfortable = max(1, ports / 2)
        if !given.isEmpty {
            let least = (perTarget + ports - 1) / max(1, ports)
            guard given.count >= least else {
                return .failure(RunSetupError("source_addresses: \(perTarget) connections to each target address need at least \(least) source addresses (each has \(ports) ephemeral ports), \(given.count) given"))
            }
            return .success(given)
        }
        guard perTarget > comfortable else { return .success([]) }
        if !targets.isEmpty && targets.allSatisfy({ if case .ipv4(let a, _) = $0 { a >> 24 == 127 } else { false } }) {
            let count = (perTarget + comfortable - 1) / comfortable
            guard count <= 250 else { return .failure(RunSetupError("\(perTarget) connections to one loopback address need \(count) source addresses; at most 250 are used")) }
            return .success((1...count).map { "127.0.0.\($0)" })
        }
        if perTarget <= ports { return .success([]) }
        return .failure(RunSetupError("\(perTarget) connections to one target address are more than one source address's \(ports) ephemeral ports: list this host's addresses in the scenario's source_addresses (each adds \(ports))"))
    }

    /// The size of the kernel's ephemeral port range (net.ipv4.ip_local_port_range).
    static func ephemeralPorts() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8) else { return 28_232 }
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Int($0) }
        return parts.count == 2 && parts[1] > parts[0] ? parts[1] - parts[0] + 1 : 28_232
    }
}

extension ClientEndpoint {
    /// The target addresses the clients connect to (client `g` to `addresses[g % count]`).
    var addresses: [SocketAddress] {
        switch self {
        case .webSocket(let e): e.addresses.isEmpty ? [e.address] : e.addresses
        case .hub(let addresses, _): addresses
        case .rest(let addresses, _, _, _), .socketIO(let addresses, _, _): addresses
        }
    }

    /// The endpoint with the run's source addresses (the WebSocket endpoint carries its own;
    /// hub and REST clients take them from the scenario).
    func with(sources: [SocketAddress]) -> ClientEndpoint {
        guard case .webSocket(var e) = self else { return self }
        e.sourceAddresses = sources
        return .webSocket(e)
    }
}
