import CStampedeLinux
import Glibc
import StampedeLoop
import Testing

/// `SocketAddress` beyond IPv4: literals with their scope, and the loop listening, connecting
/// and binding source addresses over IPv6 loopback.
@Suite struct IPv6AddressTests {
    @Test func ipv6LiteralsParseWithTheirScopeAndPrintInBrackets() {
        let a = SocketAddress(host: "2001:db8::1", port: 443)
        #expect(a == .ipv6(high: 0x2001_0db8_0000_0000, low: 1, port: 443, scopeID: 0))
        #expect(a?.description == "[2001:db8::1]:443")
        #expect(SocketAddress(host: "[fd00::5]", port: 80)?.hostText == "fd00::5")
        #expect(SocketAddress(host: "fe80::1%1", port: 80) == .ipv6(high: 0xfe80_0000_0000_0000, low: 1, port: 80, scopeID: 1))
        #expect(SocketAddress(host: "2001:db8::g", port: 80) == nil)
        #expect(SocketAddress(host: "::ffff:10.0.0.1", port: 1)?.isIPv6 == true)
        #expect(SocketAddress.ipv6Loopback(port: 5).isLoopback)
        #expect(SocketAddress(host: "::2", port: 5)?.isLoopback == false)
        #expect(SocketAddress(host: "10.1.2.3", port: 9)?.with(port: 10) == .ipv4(0x0A01_0203, port: 10))
    }

    @Test func localBindErrorTellsAnAddressOfThisMachineFromAnother() {
        #expect(SocketAddress.ipv4(0x7F00_0001, port: 0).localBindError == 0)
        #expect(SocketAddress.ipv6Loopback(port: 0).localBindError == 0)
        // 198.51.100.7 (TEST-NET-2, RFC 5737): binding fails, nothing is sent.
        #expect(SocketAddress(host: "198.51.100.7", port: 0)?.localBindError == EADDRNOTAVAIL)
    }

    @Test(arguments: [SocketAddress.ipv6Loopback(port: 0), .ipv4(0x7F00_0001, port: 0)])
    func theLoopListensConnectsAndBindsSourcesOverIPv6Loopback(listenOn: SocketAddress) throws {
        let t = try TestLoop()
        defer { t.shutdown() }
        let (listener, port) = try t.sync { $0.listen(on: listenOn) }.get()
        // An IPv6 source is bound for an IPv6 destination and left out for an IPv4 one.
        let c = try t.sync { $0.connect(to: listenOn.with(port: port), fromAddress: .ipv6Loopback(port: 0), timeoutNs: 10_000_000_000) }.get()
        var s: ConnectionID? = nil
        t.handler.wait("connect and accept") { h in
            guard h.events.contains(.connected(c, error: 0)) else { return false }
            for case .accepted(let id, let l) in h.events where l == listener { s = id; return true }
            return false
        }
        let sid = try #require(s)
        t.write(c, [1, 2, 3])
        t.write(sid, [4, 5])
        t.handler.wait("both directions") { $0.receivedCount(on: sid) == 3 && $0.receivedCount(on: c) == 2 }
        #expect(t.handler.received(on: sid) == [1, 2, 3])
        #expect(t.handler.received(on: c) == [4, 5])
    }
}
