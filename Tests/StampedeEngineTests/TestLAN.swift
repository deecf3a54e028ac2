import Foundation
import Testing

/// A LAN of the test's own: K test hosts and this (root) namespace on one Ethernet segment, the
/// way pods and a coordinator share a cluster network. One network namespace holds a Linux
/// bridge; each host is a namespace of its own with a veth into the bridge, its own address and
/// `lo` up; a veth from the root namespace into the bridge carries the root's address (where the
/// coordinator runs). The subnet is 10.212.N.0/24, N from the process id and `salt`: the root is
/// .1, host i is .(10 + i). The bridge switches frames between its ports, so nothing is routed:
/// ip_forward and every other sysctl stay as they are.
///
/// `make` cancels the test, with the reason printed, when a step fails or when `ip route get`
/// shows an address of the LAN reached over anything but the LAN's own veth (from the root to
/// every host, from every host to the root and to every other host); `remove()` deletes every
/// namespace and link it made. Nothing is sent before those checks pass.
///
/// An Indexed Job of 4 workers against a target on a fifth host, the coordinator here:
///
///     let lan = try TestLAN.make(hosts: 5, salt: 1)
///     defer { lan.remove() }
///     let target = lan.exec(host: 4) + [stampedeBinary.path, "serve", "--host", lan.hosts[4].address, …]
///     let worker = lan.exec(host: i, environment: TestLAN.podEnvironment(index: i, count: 4))
///         + [stampedeBinary.path, "worker", "--listen", "\(lan.hosts[i].address):7070"]
///     // then, in this namespace: stampede run … --workers 10.212.N.10:7070,…,10.212.N.13:7070
struct TestLAN {
    struct Host {
        /// The host's network namespace.
        let namespace: String
        /// Its end of the veth into the bridge (inside `namespace`).
        let link: String
        /// Its address on the LAN.
        let address: String
    }

    let bridgeNamespace: String
    let hosts: [Host]
    /// The root namespace's veth into the bridge, and its address on the LAN.
    let rootLink: String
    let rootAddress: String
    /// Root-side names of veths made while building (moved into namespaces once made, but deleted
    /// by name too in case a step failed between making and moving).
    private let madeLinks: [String]

    /// `count` hosts, 1 to 16; `salt` keeps two LANs of one process apart (TestLANTests uses 0).
    static func make(hosts count: Int, salt: Int) throws -> TestLAN {
        precondition((1...16).contains(count), "a test LAN has 1 to 16 hosts")
        let n = (Int(getpid()) + salt * 41) % 200 + 20
        let subnet = "10.212.\(n)"
        let hosts = (0..<count).map { Host(namespace: "stampede-lan\(n)-h\($0)", link: "stlh\(n)x\($0)", address: "\(subnet).\(10 + $0)") }
        let bridgeLinks = (0..<count).map { "stlb\(n)x\($0)" }
        let lan = TestLAN(bridgeNamespace: "stampede-lan\(n)-br", hosts: hosts, rootLink: "stlr\(n)", rootAddress: "\(subnet).1",
                          madeLinks: ["stlr\(n)", "stlr\(n)b"] + hosts.map(\.link) + bridgeLinks)
        let br = lan.bridgeNamespace
        var steps: [[String]] = [
            ["netns", "add", br],
            ["-n", br, "link", "set", "lo", "up"],
            ["-n", br, "link", "add", "br0", "type", "bridge"],
            ["-n", br, "link", "set", "br0", "up"],
            ["link", "add", lan.rootLink, "type", "veth", "peer", "name", "\(lan.rootLink)b"],
            ["link", "set", "\(lan.rootLink)b", "netns", br],
            ["-n", br, "link", "set", "\(lan.rootLink)b", "master", "br0", "up"],
            ["addr", "add", "\(lan.rootAddress)/24", "dev", lan.rootLink],
            ["link", "set", lan.rootLink, "up"],
        ]
        for (host, bridgeLink) in zip(hosts, bridgeLinks) {
            steps += [
                ["netns", "add", host.namespace],
                ["link", "add", host.link, "type", "veth", "peer", "name", bridgeLink],
                ["link", "set", host.link, "netns", host.namespace],
                ["link", "set", bridgeLink, "netns", br],
                ["-n", br, "link", "set", bridgeLink, "master", "br0", "up"],
                ["-n", host.namespace, "addr", "add", "\(host.address)/24", "dev", host.link],
                ["-n", host.namespace, "link", "set", host.link, "up"],
                ["-n", host.namespace, "link", "set", "lo", "up"],
            ]
        }
        for step in steps {
            let r = try TestNetworkNamespace.ip(step)
            guard r.status == 0 else {
                lan.remove()
                try skip("test LAN setup failed at 'ip \(step.joined(separator: " "))': \(r.stderr)")
            }
        }
        // Nothing is sent before every address of the LAN is known to go over the LAN's own veths.
        var checks: [(from: String?, to: String, link: String)] = hosts.map { (nil, $0.address, lan.rootLink) }
        for host in hosts {
            checks.append((host.namespace, lan.rootAddress, host.link))
            for other in hosts where other.address != host.address { checks.append((host.namespace, other.address, host.link)) }
        }
        for check in checks {
            let r = try TestNetworkNamespace.ip((check.from.map { ["-n", $0] } ?? []) + ["route", "get", check.to])
            guard r.status == 0, r.stdout.contains("dev \(check.link) "), !r.stdout.contains(" via ") else {
                lan.remove()
                try skip("\(check.to) does not route over \(check.link) from \(check.from ?? "the root namespace"): \(r.stdout)\(r.stderr)")
            }
        }
        return lan
    }

    /// The command prefix that runs a program inside host `host`'s namespace with `environment`
    /// added to this process's (e.g. `podEnvironment`): append the program and its arguments.
    func exec(host: Int, environment: [String: String] = [:]) -> [String] {
        ["/usr/sbin/ip", "netns", "exec", hosts[host].namespace, "/usr/bin/env"]
            + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
    }

    /// Makes `name` resolve to `addresses` inside host `host`'s namespace only, as a headless
    /// Service's name resolves to its pods: `ip netns exec` mounts /etc/netns/<namespace>/hosts
    /// over /etc/hosts for the programs it starts (ip-netns(8)), and getaddrinfo returns every
    /// address a name has there. A coordinator on that host can then use `--workers dns:NAME:PORT`.
    /// `remove()` deletes the file.
    func resolve(_ name: String, to addresses: [String], inside host: Int) throws {
        let folder = URL(fileURLWithPath: "/etc/netns/\(hosts[host].namespace)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let lines = ["127.0.0.1 localhost", "::1 localhost"] + addresses.map { "\($0) \(name)" }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: folder.appendingPathComponent("hosts"))
    }

    /// What Kubernetes gives the pod of index `index` in an Indexed Job of `count` workers
    /// (deploy/kubernetes/job-workers.yaml): its completion index, the worker count the manifest
    /// sets, and the hostname `<job>-<index>`.
    static func podEnvironment(index: Int, count: Int, job: String = "stampede-workers") -> [String: String] {
        ["JOB_COMPLETION_INDEX": "\(index)", "STAMPEDE_WORKER_COUNT": "\(count)", "HOSTNAME": "\(job)-\(index)"]
    }

    /// Deletes every namespace (which takes the veths and the bridge inside with it) and any
    /// link of ours left in the root namespace. Safe to call twice.
    func remove() {
        for host in hosts {
            _ = try? TestNetworkNamespace.ip(["netns", "del", host.namespace])
            try? FileManager.default.removeItem(atPath: "/etc/netns/\(host.namespace)")
        }
        // /etc/netns itself only if empty (another test's files may be there).
        _ = rmdir("/etc/netns")
        _ = try? TestNetworkNamespace.ip(["netns", "del", bridgeNamespace])
        for link in madeLinks where Self.linkExists(link) { _ = try? TestNetworkNamespace.ip(["link", "del", link]) }
    }

    /// Every namespace, root-side link and /etc/netns file of this LAN that still exists (empty
    /// after `remove()`).
    func leftovers() throws -> [String] {
        let namespaces = try TestNetworkNamespace.ip(["netns", "list"]).stdout
            .split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
        let ours = Set(hosts.map(\.namespace) + [bridgeNamespace])
        let files = hosts.map { "/etc/netns/\($0.namespace)" }.filter { FileManager.default.fileExists(atPath: $0) }
        return namespaces.filter { ours.contains($0) } + madeLinks.filter { Self.linkExists($0) } + files
    }

    private static func linkExists(_ name: String) -> Bool {
        ((try? TestNetworkNamespace.ip(["link", "show", "dev", name]))?.status ?? 1) == 0
    }

    private static func skip(_ reason: String) throws -> Never {
        print("test LAN skipped: \(reason)")
        try Test.cancel(Comment(rawValue: reason))
    }
}
