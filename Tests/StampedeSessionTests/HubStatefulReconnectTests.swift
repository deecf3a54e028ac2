import Testing
import StampedeTestSupport
import StampedeWire
@testable import StampedeSession

private let handshakeOK = hex("7B 7D 1E")

/// A stateful session past its handshake.
private func connected<C: HubProtocolCodec>(_: C.Type, maxReplayBytes: Int = 8 << 20) -> HubHarness<C> {
    var h = HubHarness<C>(maxReplayBytes: maxReplayBytes)
    _ = h.start(stateful: true)
    _ = h.receive(handshakeOK)
    return h
}

/// The transport is back: the Sequence the session writes.
private func resume<C>(_ h: inout HubHarness<C>) -> [UInt8]? {
    let now = h.clock.now
    return writtenBytes { out in h.session.resumed(now: now, into: out) }
}

@Suite struct HubStatefulReconnectTests {
    @Test func numberedMessagesAreKeptUntilAnAckTrimsThem() {
        var h = connected(MessagePackHubProtocol.self)
        var sent: [[UInt8]] = []
        for id in 1...4 {
            let (result, bytes) = h.invoke(UInt64(id))
            #expect(result == .write(count: bytes.count))
            sent.append(bytes)
        }
        #expect(h.session.sentSequence == 4)
        #expect(h.replayed == sent)
        #expect(h.receive(hex("03 92 08 02")) == [.skipped])  // Ack 2
        #expect(h.replayed == Array(sent[2...]))
        #expect(h.receive(HubFixtures.ack(MessagePackHubProtocol.self, 2)) == [.skipped])  // nothing more to drop
        #expect(h.replayed == Array(sent[2...]))
        #expect(h.receive(HubFixtures.ack(MessagePackHubProtocol.self, 100)) == [.skipped])
        #expect(h.replayed.isEmpty && h.session.replayBytes == 0)
        // Numbering goes on after the buffer emptied.
        let (_, fifth) = h.invoke(5)
        #expect(h.replayed == [fifth])
        #expect(h.receive(HubFixtures.ack(MessagePackHubProtocol.self, 4)) == [.skipped])
        #expect(h.replayed == [fifth])
    }

    @Test func receivedMessagesAreNumberedAndAcknowledgedOnTheKeepAliveCheck() {
        var h = connected(JSONHubProtocol.self)
        let completion = HubFixtures.completion(JSONHubProtocol.self, 7)
        #expect(h.receive(completion + completion + HubFixtures.ping(JSONHubProtocol.self))
                == [.message(type: 3, bytes: completion), .message(type: 3, bytes: completion), .skipped])
        #expect(h.session.receivedSequence == 2)
        h.clock.advance(seconds: 1)
        let check = h.keepAlive()
        #expect(check.ping == nil)
        #expect(check.ack == HubFixtures.ack(JSONHubProtocol.self, 2))
        #expect(h.keepAlive().ack == nil)  // coalesced: nothing new arrived
    }

    @Test func replayAfterResumeIsExactlyTheUnacknowledgedMessagesInOrder() {
        var h = connected(JSONHubProtocol.self)
        var sent: [[UInt8]] = []
        for id in 1...5 { sent.append(h.invoke(UInt64(id)).1) }
        _ = h.receive(HubFixtures.ack(JSONHubProtocol.self, 2))
        #expect(h.session.canResume)
        h.session.beginResume()
        #expect(h.session.isResuming && !h.session.canResume)
        // Sent while the transport is down: numbered and held for the replay.
        let (held, sixth) = h.invoke(6)
        #expect(held == .held)
        sent.append(sixth)
        // No Ack while resuming.
        _ = h.receive(HubFixtures.completion(JSONHubProtocol.self, 1))
        #expect(h.keepAlive().ack == nil)
        let sequence = resume(&h)
        #expect(sequence == HubFixtures.sequence(JSONHubProtocol.self, 3))
        #expect(!h.session.isResuming)
        #expect(h.replayed == Array(sent[2...]))
        #expect(h.invoke(7).0 != .held)
    }

    @Test func resumeWithNothingUnacknowledgedSendsTheNextId() {
        var h = connected(MessagePackHubProtocol.self)
        _ = h.invoke(1)
        _ = h.receive(hex("03 92 08 01"))
        h.session.beginResume()
        #expect(resume(&h) == hex("03 92 09 02"))
        #expect(h.replayed.isEmpty)
    }

    @Test func afterResumeMessagesBeforeSequenceAndReplayedDuplicatesAreIgnored() {
        var h = connected(MessagePackHubProtocol.self)
        let c1 = HubFixtures.completion(MessagePackHubProtocol.self, 1)
        let c2 = HubFixtures.completion(MessagePackHubProtocol.self, 2)
        let c3 = HubFixtures.completion(MessagePackHubProtocol.self, 3)
        #expect(h.receive(c1 + c2) == [.message(type: 3, bytes: c1), .message(type: 3, bytes: c2)])
        h.session.beginResume()
        _ = resume(&h)
        // Before the server's Sequence: ignored. Then it replays from 1: 1 and 2 are duplicates.
        #expect(h.receive(c3) == [.skipped])
        #expect(h.receive(hex("03 92 09 01") + c1 + c2 + c3)
                == [.skipped, .skipped, .skipped, .message(type: 3, bytes: c3)])
        #expect(h.session.receivedSequence == 3)
    }

    @Test func sequenceAboveTheNextExpectedIdEnds() {
        var h = connected(JSONHubProtocol.self)
        _ = h.receive(HubFixtures.completion(JSONHubProtocol.self, 1))
        h.session.beginResume()
        _ = resume(&h)
        #expect(h.receive(HubFixtures.sequence(JSONHubProtocol.self, 3)) == [.sequenceAhead])
        #expect(h.session.hasEnded)
    }

    @Test func replayBufferCapWhileConnectedStopsResumingButNotSending() {
        var probe = connected(JSONHubProtocol.self)
        let one = probe.invoke(1).1.count
        var h = connected(JSONHubProtocol.self, maxReplayBytes: one * 2)
        #expect(h.invoke(1).0 == .write(count: one))
        #expect(h.invoke(2).0 == .write(count: one))
        #expect(h.session.canResume && h.session.replayCount == 2)
        #expect(h.invoke(3).0 == .write(count: one))  // over the cap: still sent, the replay is gone
        #expect(h.session.replayOverflowed && h.session.replayBytes == 0)
        #expect(!h.session.canResume)
        #expect(h.session.sentSequence == 3)
    }

    @Test func replayBufferCapWhileResumingDropsTheMessageUnnumbered() {
        var probe = connected(JSONHubProtocol.self)
        let one = probe.invoke(1).1.count
        var h = connected(JSONHubProtocol.self, maxReplayBytes: one * 2)
        let first = h.invoke(1).1
        h.session.beginResume()
        let (held, second) = h.invoke(2)
        #expect(held == .held)
        #expect(h.invoke(3).0 == .notSent)
        #expect(h.session.sentSequence == 2)
        _ = resume(&h)
        #expect(h.replayed == [first, second])
    }
}
