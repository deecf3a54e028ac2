import Testing
import StampedeWire
@testable import StampedeSession

// Byte fixtures are the packets python-socketio 5 / python-engineio 4 send (Engine.IO 4,
// Socket.IO 5); times are a fake clock in nanoseconds.
private let openPacket = #"0{"sid":"lv_VI97HAXpY6yYWAAAC","upgrades":["websocket"],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}"#
private let live = Array("/live".utf8)

/// A session and the text of what its answers point at.
private struct SIOHarness {
    var session: SocketIOClientSession
    /// The last packet given, kept so answers' ranges can be read.
    var last: [UInt8] = []

    init(_ transports: SocketIOTransportPlan = .pollingThenWebSocket, namespace: [UInt8] = live, maxAttachmentBytes: Int = 1 << 20) {
        session = SocketIOClientSession(.init(namespace: namespace, transports: transports, maxAttachmentBytes: maxAttachmentBytes), now: 0)
    }

    mutating func receive(_ text: String, on t: SocketIOTransport = .polling, now: UInt64 = 1) -> SocketIOClientAction {
        receive(Array(text.utf8), binary: false, on: t, now: now)
    }

    mutating func receive(_ bytes: [UInt8], binary: Bool, on t: SocketIOTransport = .polling, now: UInt64 = 1) -> SocketIOClientAction {
        last = bytes
        return bytes.withUnsafeBytes { session.receive($0, binary: binary, on: t, now: now) }
    }

    func text(_ r: Range<Int>) -> String { String(decoding: last[r], as: UTF8.self) }

    /// Open (on polling, the handshake's GET then done) and the namespace connected.
    mutating func connect() {
        #expect(receive(openPacket) == .opened)
        _ = session.pollCompleted()
        #expect(receive(#"40/live,{"sid":"x1"}"#) == .namespaceConnected)
    }

    func head(_ type: SocketIOPacketType, attachments: Int = 0, ackId: UInt64? = nil) -> String {
        var out = [UInt8](repeating: 0, count: 64)
        let n = out.withUnsafeMutableBytes { session.writeHead(type, attachments: attachments, ackId: ackId, into: $0) } ?? 0
        return String(decoding: out[0..<n], as: UTF8.self)
    }
}

@Suite struct SocketIOClientHandshakeTests {
    @Test func openPacketOnPollingGivesTheSessionsTermsAndOffersTheUpgrade() {
        var h = SIOHarness()
        #expect(h.session.pollInFlight)  // the handshake's GET
        #expect(h.receive(openPacket) == .opened)
        #expect(h.session.open?.sid == "lv_VI97HAXpY6yYWAAAC")
        #expect(h.session.maxPayload == 1_000_000)
        #expect(h.session.shouldProbe)
        #expect(h.session.messageTransport == .polling)
        let step1 = h.session.pollCompleted()
        #expect(step1 == .carryOn)
        #expect(h.session.canPost)
    }

    @Test func websocketOnlyAndPollingOnlyNeverProbe() {
        var ws = SIOHarness(.websocketOnly)
        #expect(!ws.session.pollInFlight)
        #expect(ws.receive(openPacket, on: .websocket) == .opened)
        #expect(!ws.session.shouldProbe)
        #expect(ws.session.messageTransport == .websocket)
        var polling = SIOHarness(.pollingOnly)
        #expect(polling.receive(openPacket) == .opened)
        #expect(!polling.session.shouldProbe)
    }

    @Test func anythingButAnOpenPacketFirstIsAnInvalidHandshake() {
        var h = SIOHarness()
        #expect(h.receive("40") == .ended(.handshakeInvalid))
        #expect(h.session.hasEnded)
        var bad = SIOHarness()
        #expect(bad.receive(#"0{"sid":1}"#) == .ended(.handshakeInvalid))
    }

    @Test func connectHeadNamesTheNamespaceAndTheMainNamespaceNot() {
        #expect(SIOHarness().head(.connect) == "40/live,")
        #expect(SIOHarness(namespace: Array("/".utf8)).head(.connect) == "40")
        #expect(SIOHarness().head(.event, ackId: 12) == "42/live,12")
        #expect(SIOHarness().head(.binaryEvent, attachments: 2, ackId: 3) == "452-/live,3")
    }

    @Test func namespaceConnectedThenRefusedElsewhereWithTheServersMessage() {
        var h = SIOHarness()
        h.connect()
        #expect(h.session.isConnected)
        var refused = SIOHarness()
        #expect(refused.receive(openPacket) == .opened)
        guard case .ended(.namespaceRefused(let message?)) = refused.receive(#"44/live,{"message":"Not authorized"}"#) else {
            Issue.record("not refused with a message")
            return
        }
        #expect(refused.text(message) == "Not authorized")
    }

    @Test func anotherNamespacesPacketsAreSkipped() {
        var h = SIOHarness()
        #expect(h.receive(openPacket) == .opened)
        #expect(h.receive(#"40{"sid":"main"}"#) == .skipped)
        #expect(!h.session.isConnected)
    }
}

@Suite struct SocketIOClientUpgradeTests {
    @Test func probeAnsweredWhilePollingWaitsForThePendingPollThenUpgrades() {
        var h = SIOHarness()
        h.connect()
        h.session.pollStarted()
        h.session.probeStarted()
        #expect(h.receive("3probe", on: .websocket) == .probeAnswered(upgradeNow: false))
        #expect(!h.session.canPost)  // polling paused
        #expect(h.receive("6") == .skipped)  // the noop that ends the pending poll
        let step2 = h.session.pollCompleted()
        #expect(step2 == .upgradeNow)
        #expect(h.session.messageTransport == .websocket)
        #expect(h.session.upgrade == .upgraded)
    }

    @Test func probeAnsweredWithNothingInFlightUpgradesAtOnce() {
        var h = SIOHarness()
        h.connect()
        h.session.probeStarted()
        #expect(h.receive("3probe", on: .websocket) == .probeAnswered(upgradeNow: true))
        #expect(h.session.messageTransport == .websocket)
    }

    @Test func aPendingPostHoldsTheUpgradeToo() {
        var h = SIOHarness()
        h.connect()
        h.session.postStarted()
        h.session.probeStarted()
        #expect(h.receive("3probe", on: .websocket) == .probeAnswered(upgradeNow: false))
        let step3 = h.session.postCompleted()
        #expect(step3 == .upgradeNow)
    }

    @Test func aWrongProbeAnswerFailsTheUpgradeAndPollingCarriesOn() {
        var h = SIOHarness()
        h.connect()
        h.session.probeStarted()
        #expect(h.receive("3nope", on: .websocket) == .probeFailed)
        #expect(h.session.upgrade == .failed)
        #expect(h.session.messageTransport == .polling)
        let step4 = h.session.pollCompleted()
        #expect(step4 == .carryOn)
    }
}

@Suite struct SocketIOClientHeartbeatTests {
    @Test func pingsAreAnsweredWhereClientPacketsGo() {
        var h = SIOHarness()
        h.connect()
        #expect(h.receive("2") == .sendPong(.polling))
        h.session.probeStarted()
        #expect(h.receive("3probe", on: .websocket) == .probeAnswered(upgradeNow: true))
        #expect(h.receive("2", on: .websocket) == .sendPong(.websocket))
    }

    @Test func silenceForPingIntervalPlusPingTimeoutEndsTheSession() {
        var h = SIOHarness()
        #expect(h.session.deadline == nil)
        #expect(h.receive(openPacket, now: 1_000) == .opened)
        let deadline: UInt64 = 1_000 + 45_000_000_000
        #expect(h.session.deadline == deadline)
        let step5 = h.session.check(now: deadline - 1)
        #expect(!step5)
        h.session.dataReceived(now: 2_000)  // any data starts the wait again
        let step6 = h.session.check(now: deadline)
        #expect(!step6)
        let step7 = h.session.check(now: deadline + 1_000)
        #expect(step7)
        #expect(h.session.hasEnded)
    }
}

@Suite struct SocketIOClientServerTermsTests {
    @Test func hugePingTimesFromTheServerNeverOverflow() {
        var h = SIOHarness()
        let huge = #"0{"sid":"a","upgrades":[],"pingInterval":999999999999999,"pingTimeout":999999999999999,"maxPayload":1}"#
        #expect(h.receive(huge) == .opened)
        #expect(h.session.serverTimeoutNs == UInt64(1 << 32) * 1_000_000)
        let timedOut = h.session.check(now: .max)
        #expect(timedOut)
    }
}

@Suite struct SocketIOClientPacketTests {
    @Test func ackCarriesItsIdAndData() {
        var h = SIOHarness()
        h.connect()
        guard case .ack(let a) = h.receive(#"43/live,12["ok"]"#) else {
            Issue.record("no ack")
            return
        }
        #expect(a.ackId == 12)
        #expect(h.text(a.data) == #"["ok"]"#)
        #expect(h.receive("43/live,[]") == .ended(.protocolError(.invalidSocketIOPacket)))  // an ack without an id
    }

    @Test func eventNameAndDataIndexThePacketGiven() {
        var h = SIOHarness()
        h.connect()
        guard case .event(let e) = h.receive(#"42/live,["said",{"text":"hi"}]"#) else {
            Issue.record("no event")
            return
        }
        #expect(h.text(e.data) == #"["said",{"text":"hi"}]"#)
        let name = h.last.withUnsafeBytes { e.eventName(in: $0) }
        #expect(name.map(h.text) == "said")
    }

    @Test func binaryEventWaitsForItsAttachments() {
        var h = SIOHarness()
        h.connect()
        #expect(h.receive(#"452-/live,["file",{"_placeholder":true,"num":0},{"_placeholder":true,"num":1}]"#) == .skipped)
        #expect(h.receive([1, 2, 3], binary: true) == .skipped)
        guard case .binary(let p) = h.receive([4], binary: true, on: .websocket) else {
            Issue.record("not assembled")
            return
        }
        #expect(p.type == .binaryEvent)
        #expect(h.session.attachments == [[1, 2, 3], [4]])
        #expect(String(decoding: h.session.binaryHead[p.data], as: UTF8.self).hasPrefix(#"["file","#))
        #expect(h.receive("2") == .sendPong(.polling))
        #expect(h.session.binaryHead.isEmpty && h.session.attachments.isEmpty)  // released at the next packet
    }

    @Test func binaryAckWithItsId() {
        var h = SIOHarness()
        h.connect()
        #expect(h.receive(#"461-/live,7[{"_placeholder":true,"num":0}]"#) == .skipped)
        guard case .binary(let p) = h.receive([9, 9], binary: true) else {
            Issue.record("not assembled")
            return
        }
        #expect(p.type == .binaryAck && p.ackId == 7)
    }

    @Test func attachmentsOverTheLimitEndTheSession() {
        var h = SIOHarness(maxAttachmentBytes: 64)
        h.connect()
        #expect(h.receive(#"451-/live,["f",{"_placeholder":true,"num":0}]"#) == .skipped)
        #expect(h.receive([UInt8](repeating: 7, count: 64), binary: true) == .ended(.messageTooBig))
    }

    @Test func serverCloseAndNamespaceDisconnectEnd() {
        var a = SIOHarness()
        a.connect()
        #expect(a.receive("1") == .ended(.closedByServer))
        var b = SIOHarness()
        b.connect()
        #expect(b.receive("41/live,") == .ended(.disconnectedByServer))
        #expect(b.receive("2") == .skipped)  // nothing after the end
    }

    @Test func malformedInputIsAProtocolErrorNeverATrap() {
        var h = SIOHarness()
        h.connect()
        #expect(h.receive("") == .ended(.protocolError(.invalidEngineIOPacket)))
        var b = SIOHarness()
        b.connect()
        #expect(b.receive([1], binary: true) == .ended(.protocolError(.unexpectedAttachment)))
        var c = SIOHarness()
        c.connect()
        #expect(c.receive("4x") == .ended(.protocolError(.invalidSocketIOPacket)))
        var d = SIOHarness()
        d.connect()
        #expect(d.receive(#"451-/live,["f",{"_placeholder":true,"num":0}]"#) == .skipped)
        #expect(d.receive(#"42/live,["x"]"#) == .ended(.protocolError(.attachmentsMissing)))
        var e = SIOHarness()
        #expect(e.receive(openPacket) == .opened)
        #expect(e.receive(#"42/live,["early"]"#) == .ended(.protocolError(.unexpectedSocketIOPacket)))
    }
}
