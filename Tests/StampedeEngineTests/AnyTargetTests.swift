import Foundation
import StampedeEngine
import StampedeReport
import StampedeScenario
import Testing

/// `stampede serve` with `arguments`, its port read from its "listening on" line.
func startServe(_ arguments: [String], via prefix: [String] = [], maxSeconds: Int = 60) throws -> (BackgroundProcess, Int) {
    let command = prefix.isEmpty ? stampedeBinary.path : prefix[0]
    let serve = try BackgroundProcess(command, Array(prefix.dropFirst()) + (prefix.isEmpty ? [] : [stampedeBinary.path])
                                      + ["serve", "--port", "0", "--max-seconds", String(maxSeconds)] + arguments)
    let line = try serve.waitForLine(prefix: "listening on ", timeout: 20)
    let port = try #require(Int(line.split(separator: ":").last!.split(separator: "/").first!))
    return (serve, port)
}

/// Targets named as users name them: IPv6 literals, host names resolved before the run, and a
/// test host in a network namespace of its own. Traffic goes only to loopback or to that host.
@Suite(.serialized)
struct AnyTargetTests {
    @Test func chatOverIPv6LoopbackAccountsForEveryMessage() throws {
        let (serve, port) = try startServe(["--host", "::1"])
        defer { serve.stop() }
        let o = try run(chatScenario(name: "chat-ipv6", target: .webSocket(url: WebSocketURL(host: "::1", port: port, path: "/chat")),
                                     clients: 10, duration: 1.5, rate: 20))
        #expect(o.exitCode == 0)
        expectExactAccounting(o, clients: 10)
    }

    @Test func hubOverIPv6LoopbackAccountsForEveryCall() throws {
        let (serve, port) = try startServe(["--hub", "--host", "::1"])
        defer { serve.stop() }
        for transport in [HubTransport.webSockets, .serverSentEvents, .longPolling] {
            let s = HubCase.invokeEcho.scenario(target: .http(url: WebSocketURL(host: "::1", port: port, path: "/hub")),
                                                transport: transport, protocolKind: .json)
            expectHubAccounting(try run(s), clients: 6)
        }
    }

    @Test func restOverIPv6LoopbackAccountsForEveryPoll() throws {
        let (serve, port) = try startServe(["--rest", "--host", "::1"])
        defer { serve.stop() }
        let o = try run(restScenario("rest-ipv6", target: .http(url: WebSocketURL(host: "::1", port: port, path: "/api"))))
        #expect(o.exitCode == 0)
        let m = o.summary.messages
        #expect(m.sent >= 8 * 10 && m.accountingClosed && m.lost == 0 && m.failed == 0, "\(m)")
        #expect(o.summary.errorsTotal == 0)
        #expect(o.summary.connections.attempted == 8)
    }

    /// `localhost` goes through getaddrinfo (/etc/hosts); the Host header keeps the name.
    @Test func aTargetNamedLocalhostIsResolvedAndEveryMessageAccounted() throws {
        let (serve, port) = try startServe([])
        defer { serve.stop() }
        var s = chatScenario(name: "chat-localhost", target: .webSocket(url: WebSocketURL(host: "localhost", port: port, path: "/chat")),
                             clients: 10, duration: 1.5, rate: 20)
        s.resolve = .all
        let o = try run(s)
        #expect(o.exitCode == 0)
        expectExactAccounting(o, clients: 10)
    }

    /// The name's addresses are filtered before anything is sent: an IPv4-only name with
    /// `resolve: ipv6` is a setup error naming the host.
    @Test func aResolvePolicyNoAddressMeetsIsASetupErrorNamingTheHost() throws {
        var s = chatScenario(name: "resolve-none", target: .webSocket(url: WebSocketURL(host: "127.0.0.1", port: unusedPort(), path: "/chat")),
                             clients: 2, duration: 1)
        s.resolve = .ipv6
        do {
            _ = try run(s)
            Issue.record("a target without an IPv6 address ran with resolve: ipv6")
        } catch {
            #expect("\(error)".contains("'127.0.0.1' has no IPv6 address"), "\(error)")
        }
    }

    /// A name with two addresses (127.0.0.1 and ::1, from a private /etc/hosts in a mount
    /// namespace of the run's own; "files" comes before "dns" in nsswitch, and .test names are
    /// reserved, RFC 6761) against a server on 127.0.0.1 only: `all` sends every second client to
    /// ::1, where nothing listens (refused, counted), `ipv4` sends every client to the server.
    @Test(arguments: [(ResolvePolicy.all, 5), (.ipv4, 10), (.ipv6, 0)])
    func resolvePolicySpreadsClientsOverTheNamesAddresses(policy: ResolvePolicy, connected: Int) throws {
        let (serve, port) = try startServe(["--host", "127.0.0.1"])
        defer { serve.stop() }
        let folder = temporaryFolder("resolve-\(policy.rawValue)")
        let hosts = folder.appendingPathComponent("hosts"), scenario = folder.appendingPathComponent("pair.yaml")
        try "127.0.0.1 stampede-pair.test\n::1 stampede-pair.test\n".write(to: hosts, atomically: true, encoding: .utf8)
        try """
            target: ws://stampede-pair.test:\(port)/chat
            resolve: \(policy.rawValue)
            clients: 10
            duration: 1s
            drain: 1s
            connect_timeout: 2s
            message: {rate: 10}

            """.write(to: scenario, atomically: true, encoding: .utf8)
        let r = try runStampede(with: hosts, over: "/etc/hosts", ["run", scenario.path, "--results", folder.path, "--quiet"], what: "resolve spreading test")
        let line = try #require(r.stdout.split(separator: "\n").last { $0.hasPrefix("results: ") }, "\(r.stdout)\(r.stderr)")
        let path = String(line.dropFirst("results: ".count))
        let url = path.hasPrefix("/") ? URL(fileURLWithPath: path) : repositoryRoot.appendingPathComponent(path)
        let summary = try RunSummary.decode(from: Data(contentsOf: url.appendingPathComponent("summary.json")))
        #expect(summary.connections.connected == UInt64(connected), "\(r.stderr)")
        #expect(summary.errors["connect_refused", default: 0] == UInt64(10 - connected), "\(summary.errors)")
        #expect(summary.messages.accountingClosed)
    }

    /// A name nothing resolves stops the run before it starts, naming the host. The run gets a
    /// mount namespace whose nsswitch.conf says `hosts: files`, so the lookup never leaves the machine.
    @Test func aTargetNameThatDoesNotResolveIsASetupErrorNamingIt() throws {
        let folder = temporaryFolder("resolve-unknown")
        let nsswitch = folder.appendingPathComponent("nsswitch.conf"), scenario = folder.appendingPathComponent("unknown.yaml")
        try "hosts: files\n".write(to: nsswitch, atomically: true, encoding: .utf8)
        try "target: ws://no-such-host.test:9/chat\nclients: 2\nduration: 1s\n".write(to: scenario, atomically: true, encoding: .utf8)
        let r = try runStampede(with: nsswitch, over: "/etc/nsswitch.conf", ["run", scenario.path, "--results", folder.path, "--quiet"], what: "unresolvable-name test")
        #expect(r.status == 1)
        #expect(r.stderr.contains("cannot resolve target host 'no-such-host.test'"), "\(r.stderr)")
    }

    @Test func serveRefusesAHostThatIsNotAnAddressOfThisMachine() throws {
        // 198.51.100.7 is TEST-NET-2 (RFC 5737): binding to it fails, nothing is sent.
        let r = try runProcess(stampedeBinary.path, ["serve", "--host", "198.51.100.7", "--max-seconds", "1"], timeout: 30)
        #expect(r.status == 2)
        #expect(r.stderr.contains("--host 198.51.100.7 is not an address of this machine"), "\(r.stderr)")
    }

    /// A remote host of our own: a network namespace with a veth pair, `stampede serve` inside it,
    /// a short chat run to its address once `ip route get` shows that address is reached over our veth.
    @Test func chatRunReachesATestHostInItsOwnNetworkNamespace() throws {
        let ns = try TestNetworkNamespace.make(salt: 0)
        defer { ns.remove() }
        let nsAddress = ns.address
        let (serve, port) = try startServe(["--host", nsAddress], via: ns.exec)
        defer { serve.stop() }
        let o = try run(chatScenario(name: "chat-netns", target: .webSocket(url: WebSocketURL(host: nsAddress, port: port, path: "/chat")),
                                     clients: 8, duration: 1.5, rate: 16))
        #expect(o.exitCode == 0)
        expectExactAccounting(o, clients: 8)
    }
}
