import Foundation
import Testing

/// A test host of the test's own: a network namespace joined to this one by a veth pair, with
/// addresses 10.211.N.1 (here) and 10.211.N.2 (there). `make` cancels the test, with the reason
/// printed, when the namespace cannot be made or its address does not route over our veth; the
/// namespace and the link are deleted by `remove()`.
struct TestNetworkNamespace {
    let name: String
    let hostLink: String
    let hostAddress: String
    /// The test host's address: traffic to it goes over our veth and nowhere else.
    let address: String

    /// `salt` keeps two tests of one process apart.
    static func make(salt: Int) throws -> TestNetworkNamespace {
        let n = (Int(getpid()) + salt * 37) % 200 + 20
        let ns = TestNetworkNamespace(name: "stampede-t\(n)", hostLink: "stpv\(n)h", hostAddress: "10.211.\(n).1", address: "10.211.\(n).2")
        let nsLink = "stpv\(n)n"
        let steps: [[String]] = [
            ["netns", "add", ns.name],
            ["link", "add", ns.hostLink, "type", "veth", "peer", "name", nsLink],
            ["link", "set", nsLink, "netns", ns.name],
            ["addr", "add", "\(ns.hostAddress)/24", "dev", ns.hostLink],
            ["link", "set", ns.hostLink, "up"],
            ["netns", "exec", ns.name, "ip", "addr", "add", "\(ns.address)/24", "dev", nsLink],
            ["netns", "exec", ns.name, "ip", "link", "set", nsLink, "up"],
            ["netns", "exec", ns.name, "ip", "link", "set", "lo", "up"],
        ]
        for step in steps {
            let r = try ip(step)
            guard r.status == 0 else {
                ns.remove()
                try skip("network namespace setup failed at 'ip \(step.joined(separator: " "))': \(r.stderr)")
            }
        }
        // Nothing is sent before the address is known to go over our own veth.
        let route = try ip(["route", "get", ns.address])
        guard route.status == 0, route.stdout.contains("dev \(ns.hostLink) ") else {
            ns.remove()
            try skip("\(ns.address) does not route over \(ns.hostLink): \(route.stdout)\(route.stderr)")
        }
        return ns
    }

    /// The command prefix that runs a program inside the namespace.
    var exec: [String] { ["/usr/sbin/ip", "netns", "exec", name] }

    func remove() {
        _ = try? Self.ip(["netns", "del", name])
        _ = try? Self.ip(["link", "del", hostLink])
    }

    static func ip(_ arguments: [String]) throws -> ProcessResult { try runProcess("/usr/sbin/ip", arguments, timeout: 20) }

    private static func skip(_ reason: String) throws -> Never {
        print("netns test skipped: \(reason)")
        try Test.cancel(Comment(rawValue: reason))
    }
}
