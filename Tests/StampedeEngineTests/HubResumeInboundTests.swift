@testable import StampedeWorkloads
import Testing

/// A hub message the old connection carried only in part never reaches the connection that
/// resumes it (stateful reconnect): the resumed connection's first bytes, the server's Sequence,
/// start a message of their own and must not be read as the rest of the old one.
struct HubResumeInboundTests {
    @Test func thePartOfAMessageFromALostConnectionIsDroppedNotCarriedIntoTheResume() {
        var c = HubConnections()
        c.inbound = Array(#"{"type":1,"target":"ReceiveMe"#.utf8)  // cut off by the drop
        let hadPart = c.dropPartialInbound()
        #expect(hadPart, "there was a part: the caller counts a protocol error")
        #expect(c.inbound.isEmpty && c.inbound.capacity == 0, "nothing of it is kept, nor its storage")
        // What the resumed connection then receives is read from its own first byte.
        c.inbound.append(contentsOf: Array(#"{"type":9,"sequenceId":1}"#.utf8) + [0x1E])
        #expect(c.inbound.first == UInt8(ascii: "{") && c.inbound.count == 26)
        _ = c.dropPartialInbound()
        let again = c.dropPartialInbound()
        #expect(!again, "nothing left: nothing more to count")
    }
}
