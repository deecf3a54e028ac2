import StampedeWire
import Testing

/// Engine.IO 4 and Socket.IO 5 packets as the protocol documents show them (their examples),
/// read in place and written back byte for byte; malformed heads are nil, never a crash.
struct SocketIOCodecTests {
    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
    func text(_ b: UnsafeRawBufferPointer, _ r: Range<Int>) -> String { String(decoding: UnsafeRawBufferPointer(rebasing: b[r]), as: UTF8.self) }

    func written(_ capacity: Int = 256, _ body: (UnsafeMutableRawBufferPointer) -> Int?) -> String? {
        var out = [UInt8](repeating: 0, count: capacity)
        guard let n = out.withUnsafeMutableBytes(body) else { return nil }
        return String(decoding: out[..<n], as: UTF8.self)
    }

    @Test func base64RoundTripsEveryTailLengthAndRejectsBadText() {
        for n in 0..<8 {
            let data = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 77 &+ 3) }
            let encoded = data.withUnsafeBytes { d in written { Base64.encode(d, into: $0) } }
            #expect(encoded == Base64.encode(data))
            let decoded: [UInt8]? = bytes(encoded ?? "").withUnsafeBytes { t in
                var out = [UInt8](repeating: 0, count: 16)
                guard let k = out.withUnsafeMutableBytes({ Base64.decode(t, into: $0) }) else { return nil }
                return Array(out[..<k])
            }
            #expect(decoded == data)
        }
        #expect(Base64.encode(bytes("hello")) == "aGVsbG8=")
        for bad in ["aGVsbG8", "aGV=bG8=", "aGVs*G8=", "====", "a==="] {
            bytes(bad).withUnsafeBytes { t in
                var out = [UInt8](repeating: 0, count: 16)
                #expect(out.withUnsafeMutableBytes { Base64.decode(t, into: $0) } == nil, "\(bad)")
            }
        }
    }

    @Test func textPacketsReadTheirTypeDigit() {
        bytes("4hello").withUnsafeBytes { b in
            let p = EngineIOPacket.parseText(b)
            #expect(p?.type == .message && p.map { text(b, $0.data) } == "hello")
        }
        bytes("2probe").withUnsafeBytes { #expect(EngineIOPacket.parseText($0)?.type == .ping) }
        for bad in ["", "7", "x", "/"] { bytes(bad).withUnsafeBytes { #expect(EngineIOPacket.parseText($0) == nil, "\(bad)") } }
        #expect(bytes("probe").withUnsafeBytes { d in written { EngineIOPacket.writeText(.pong, data: d, into: $0) } } == "3probe")
        #expect(bytes("probe").withUnsafeBytes { d in written(5) { EngineIOPacket.writeText(.pong, data: d, into: $0) } } == nil)
    }

    @Test func aPollingPayloadSplitsOnRecordSeparatorsWithBinaryAsBase64() {
        // The engine.io-protocol v4 example: "4hello\x1e4€\x1ebAQIDBA==".
        let body = bytes("4hello\u{1e}4€\u{1e}bAQIDBA==")
        body.withUnsafeBytes { b in
            var it = EngineIOPollingPayload(b)
            guard case .text(.message, let d1)? = it.next(), case .text(.message, let d2)? = it.next(),
                  case .binary(let b64)? = it.next() else { Issue.record("records"); return }
            #expect(text(b, d1) == "hello" && text(b, d2) == "€" && text(b, b64) == "AQIDBA==")
            #expect(it.next() == nil)
        }
        bytes("4a\u{1e}\u{1e}9").withUnsafeBytes { b in
            var it = EngineIOPollingPayload(b)
            _ = it.next()
            guard case .invalid? = it.next(), case .invalid? = it.next() else { Issue.record("invalid records"); return }
            #expect(it.next() == nil)
        }
        let built = written { out in
            guard let a = bytes("hello").withUnsafeBytes({ EngineIOPollingWriter.appendText(.message, data: $0, into: out, at: 0) }),
                  let b = [UInt8]([1, 2, 3, 4]).withUnsafeBytes({ EngineIOPollingWriter.appendBinary($0, into: out, at: a) }) else { return nil }
            return EngineIOPollingWriter.appendText(.noop, data: UnsafeRawBufferPointer(start: nil, count: 0), into: out, at: b)
        }
        #expect(built == "4hello\u{1e}bAQIDBA==\u{1e}6")
    }

    @Test func theOpenPacketIsReadAndWrittenBack() {
        let json = #"{"sid":"lv_VI97HAXpY6yYWAAAC","upgrades":["websocket"],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}"#
        let open = bytes(json).withUnsafeBytes { EngineIOOpen.parse($0) }
        #expect(open == EngineIOOpen(sid: "lv_VI97HAXpY6yYWAAAC", upgrades: ["websocket"], pingIntervalMs: 25000, pingTimeoutMs: 20000, maxPayload: 1_000_000))
        #expect(open.flatMap { o in written { o.write(into: $0) } } == json)
        for bad in [#"{"sid":"a","upgrades":[],"pingInterval":1,"pingTimeout":1}"#, #"{"sid":1,"pingInterval":1,"pingTimeout":1,"maxPayload":1}"#,
                    #"{"sid":"a","upgrades":[1],"pingInterval":1,"pingTimeout":1,"maxPayload":1}"#,
                    #"{"sid":"a","pingInterval":-1,"pingTimeout":1,"maxPayload":1}"#, #"{"sid":"a","pingInterval":1.5,"pingTimeout":1,"maxPayload":1}"#, "", "[]"] {
            #expect(bytes(bad).withUnsafeBytes { EngineIOOpen.parse($0) } == nil, "\(bad)")
        }
    }

    @Test func socketIOPacketHeadsReadAsTheProtocolExamplesWriteThem() {
        func head(_ s: String) -> (SocketIOPacket, String?, String)? {
            bytes(s).withUnsafeBytes { b in SocketIOPacket.parse(b).map { ($0, $0.namespace.map { r in text(b, r) }, text(b, $0.data)) } }
        }
        let connect = head(#"0/admin,{"token":"123"}"#)
        #expect(connect?.0.type == .connect && connect?.1 == "/admin" && connect?.2 == #"{"token":"123"}"#)
        let event = head(#"2/admin,12["bar"]"#)
        #expect(event?.0.type == .event && event?.0.ackId == 12 && event?.2 == #"["bar"]"#)
        let ack = head(#"3/admin,13["bar"]"#)
        #expect(ack?.0.type == .ack && ack?.0.ackId == 13)
        let binary = head(#"51-["baz",{"_placeholder":true,"num":0}]"#)
        #expect(binary?.0.type == .binaryEvent && binary?.0.attachments == 1 && binary?.1 == nil && binary?.0.ackId == nil)
        let binaryAck = head(#"61-/admin,15[{"_placeholder":true,"num":0}]"#)
        #expect(binaryAck?.0.attachments == 1 && binaryAck?.0.ackId == 15 && binaryAck?.1 == "/admin")
        #expect(head(#"4{"message":"Not authorized"}"#)?.0.type == .connectError)
        #expect(head("1/admin,")?.0.type == .disconnect)
        #expect(head("0")?.0.type == .connect)
        bytes(#"2["hello",1]"#).withUnsafeBytes { b in
            let p = SocketIOPacket.parse(b)
            #expect(p.flatMap { $0.eventName(in: b) }.map { text(b, $0) } == "hello")
            #expect(p?.namespaceIs(Array("/".utf8), in: b) == true && p?.namespaceIs(Array("/live".utf8), in: b) == false)
        }
    }

    @Test func malformedSocketIOPacketsAreNil() {
        for bad in ["", "7", "9[]", "2", "2{}", "2[1]", "3{}", "1{}", "0[]", "4[]", "5[\"a\"]", "5-[\"a\"]", "51[\"a\"]",
                    "2/live,1234567890123456789[\"a\"]", "51001-[\"a\"]", "x"] {
            #expect(bytes(bad).withUnsafeBytes { SocketIOPacket.parse($0) } == nil, "\(bad)")
        }
    }

    @Test func packetsAreWrittenWithTheNamespaceOnlyWhenNotMain() {
        let data = bytes(#"["say",{"text":"hi"}]"#)
        #expect(data.withUnsafeBytes { d in written { SocketIOPacketWriter.write(.event, namespace: Array("/live".utf8), ackId: 7, data: d, into: $0) } }
                == #"2/live,7["say",{"text":"hi"}]"#)
        #expect(data.withUnsafeBytes { d in written { SocketIOPacketWriter.write(.event, namespace: Array("/".utf8), ackId: nil, data: d, into: $0) } }
                == #"2["say",{"text":"hi"}]"#)
        #expect(written { SocketIOPacketWriter.writeHead(.binaryEvent, attachments: 2, namespace: [], ackId: 0, into: $0) } == "52-0")
        #expect(written { SocketIOPacketWriter.writePlaceholder(1, into: $0) } == #"{"_placeholder":true,"num":1}"#)
        #expect(written(4) { SocketIOPacketWriter.writeHead(.event, namespace: Array("/live".utf8), ackId: nil, into: $0) } == nil)
    }
}
