import Testing
import StampedeTestSupport
import StampedeWire
@testable import StampedeSession

/// Stateful reconnect's bookkeeping exists only when the handshake asks for it (issue 15,
/// item 4), and the session keeps value semantics although the bookkeeping is a reference.
@Suite struct HubSessionMemoryTests {
    @Test func aSessionWithoutStatefulReconnectHoldsNoStatefulBookkeeping() {
        var h = HubHarness<JSONHubProtocol>()
        _ = h.start(stateful: false)
        _ = h.receive(hex("7B 7D 1E"))
        for id in 1...3 { _ = h.invoke(UInt64(id)) }
        #expect(h.session.book == nil)
        var s = HubHarness<JSONHubProtocol>()
        _ = s.start(stateful: true)
        #expect(s.session.book != nil)
    }

    @Test func aCopiedStatefulSessionKeepsItsOwnReplayAndNumbering() {
        var h = HubHarness<JSONHubProtocol>()
        _ = h.start(stateful: true)
        _ = h.receive(hex("7B 7D 1E"))
        _ = h.invoke(1)
        let copy = h.session
        _ = h.invoke(2)
        #expect(h.session.sentSequence == 2 && h.session.replayCount == 2)
        #expect(copy.sentSequence == 1 && copy.replayCount == 1)
    }
}
