import StampedeWire
import Testing

/// Templates compile once (errors name the column) and render into a caller buffer exactly
/// `length` bytes long; JSON braces need no escaping; binary templates have fixed widths.
struct MessageTemplateTests {
    let stamp = MessageStamp(sender: 0x2A, sequence: 7, intendedNs: 0xABC, actualNs: 0xABD)

    /// Renders with the given values, checking that `render` writes exactly `length` bytes.
    func render(_ t: MessageTemplate, client: Int = 12, sequence: UInt32 = 7, user: String = "u12",
                named: [String] = [], random: inout UInt64) -> [UInt8] {
        let userBytes = Array(user.utf8)
        let namedBytes = named.map { Array($0.utf8) }
        return userBytes.withUnsafeBytes { u in
            withTable(namedBytes) { table in
                var v = TemplateValues(stamp: stamp, client: client, sequence: sequence, user: u, named: table, random: random)
                let n = t.length(v)
                // One guard byte past the end shows nothing is written beyond `length`.
                var out = [UInt8](repeating: 0xEE, count: n + 1)
                let written = out.withUnsafeMutableBytes { t.render(into: $0.baseAddress!, &v) }
                #expect(written == n)
                #expect(out[n] == 0xEE)
                random = v.random
                return Array(out[0..<n])
            }
        }
    }

    func text(_ t: MessageTemplate, client: Int = 12, sequence: UInt32 = 7, named: [String] = []) -> String {
        var r: UInt64 = 1
        return String(decoding: render(t, client: client, sequence: sequence, named: named, random: &r), as: UTF8.self)
    }

    @Test func textPlaceholdersRenderTheirValues() throws {
        let t = try MessageTemplate(text: #"{"op":"publish","channel":"room-{client%10}","id":{sequence},"by":"{user}","c":{client}}"#)
        #expect(text(t, client: 123, sequence: 4_000_000_000) == #"{"op":"publish","channel":"room-3","id":4000000000,"by":"u12","c":123}"#)
        #expect(text(t, client: 0, sequence: 0) == #"{"op":"publish","channel":"room-0","id":0,"by":"u12","c":0}"#)
        #expect(text(t, client: -3, sequence: 1).contains(#""channel":"room-7""#), "a modulo is never negative")
        #expect(text(t, client: -3, sequence: 1).hasSuffix(#""c":-3}"#))
        #expect(t.namedPlaceholders.isEmpty)
    }

    @Test func theTextStampIsTheMarkerAndTheChatStamp() throws {
        let t = try MessageTemplate(text: #"{"data":{"stamp":"{stamp}"}}"#)
        let s = text(t)
        #expect(s == #"{"data":{"stamp":"~st~s2a:q7:tabc:aabd:"}}"#, "JSON's closing }} stays }}")
        let bytes = Array(s.utf8)
        let path = try JSONPath(parsing: "$.data.stamp")
        #expect(bytes.withUnsafeBytes { b in path.value(in: b).flatMap { FlowStamp.parse(UnsafeRawBufferPointer(rebasing: b[$0])) } } == stamp)
    }

    @Test func aPaddedStampFillsTheTextToItsSizeAndNeverCutsTheStamp() throws {
        let stampText = "~st~s2a:q7:tabc:aabd:"
        #expect(text(try MessageTemplate(text: #"{"m":"{stamp:64}"}"#)) == #"{"m":""# + stampText + String(repeating: "x", count: 64 - stampText.count) + #""}"#)
        #expect(text(try MessageTemplate(text: "{stamp:3}")) == stampText, "a size under the stamp's length keeps the whole stamp")
        #expect(try MessageTemplate(text: "{stamp:64}").carriesStamp)
    }

    @Test func aUserUUIDIsStablePerUserAndDiffersBetweenUsers() throws {
        let t = try MessageTemplate(text: "{user_uuid}")
        func uuid(_ user: String, random: UInt64) -> String {
            var r = random
            return String(decoding: render(t, user: user, random: &r), as: UTF8.self)
        }
        let a = uuid("run-user-1", random: 1)
        #expect(a == uuid("run-user-1", random: 99), "the same user, whatever the random state")
        #expect(a != uuid("run-user-2", random: 1))
        #expect(a != uuid("run-user-1-1", random: 1), "the user who took its place after churn")
        let parts = a.split(separator: "-").map(\.count)
        #expect(parts == [8, 4, 4, 4, 12] && a.dropFirst(14).first == "4", "a version 4 UUID's shape")
    }

    @Test func doubledBracesWriteOneBraceAndJSONBracesAreLiteral() throws {
        #expect(text(try MessageTemplate(text: "{{sequence}}")) == "{sequence}")
        #expect(text(try MessageTemplate(text: "{{sequence}")) == "{sequence}")
        #expect(text(try MessageTemplate(text: #"{"a":"{{x}}","b":{"c":{}}}"#)) == #"{"a":"{x}","b":{"c":{}}}"#)
        #expect(text(try MessageTemplate(text: "}} } { {1} {\"\" { x}")) == "}} } { {1} {\"\" { x}")
        #expect(text(try MessageTemplate(text: "")) == "")
        #expect(text(try MessageTemplate(text: "{sequence}{sequence}")) == "77")
    }

    @Test func namedPlaceholdersTakeSlotsByFirstUseUntilBound() throws {
        var t = try MessageTemplate(text: #"{"op":"auth","token":"{token}","session":"{session}","again":"{token}"}"#)
        #expect(t.namedPlaceholders == ["token", "session"])
        #expect(text(t, named: ["T", #"s\"1"#]) == #"{"op":"auth","token":"T","session":"s\"1","again":"T"}"#)
        #expect(text(t, named: ["T"]) == #"{"op":"auth","token":"T","session":"","again":"T"}"#, "a missing slot renders as nothing")
        try t.bindNames(toSlots: ["session", "other", "token"])
        #expect(text(t, named: ["S", "O", "T"]) == #"{"op":"auth","token":"T","session":"S","again":"T"}"#)
        var u = try MessageTemplate(text: "x {nope}")
        #expect(throws: FlowSyntaxError.undeclaredName("nope", column: 3)) { try u.bindNames(toSlots: ["token"]) }
        #expect(FlowSyntaxError.undeclaredName("nope", column: 3).description.contains("{nope}"))
    }

    @Test func randomPartsHaveFixedWidthsAndAdvanceTheState() throws {
        let t = try MessageTemplate(text: "{uuid} {random_hex:5} {random_hex:40}")
        var r: UInt64 = 0
        let a = String(decoding: render(t, random: &r), as: UTF8.self)
        let afterFirst = r
        let b = String(decoding: render(t, random: &r), as: UTF8.self)
        #expect(a != b)
        #expect(afterFirst != 0 && r != afterFirst)
        for s in [a, b] {
            let parts = s.split(separator: " ").map(String.init)
            #expect(parts.map(\.count) == [36, 5, 40])
            let uuid = Array(parts[0].utf8)
            #expect([8, 13, 18, 23].allSatisfy { uuid[$0] == UInt8(ascii: "-") })
            #expect(uuid[14] == UInt8(ascii: "4"), "version 4")
            #expect("89ab".utf8.contains(uuid[19]), "RFC 4122 variant")
            #expect(parts.joined().utf8.allSatisfy { "0123456789abcdef-".utf8.contains($0) })
        }
        var same: UInt64 = 0
        #expect(String(decoding: render(t, random: &same), as: UTF8.self) == a, "the same state renders the same")
    }

    @Test func binaryTemplatesAreHexWithFixedWidthPlaceholders() throws {
        let t = try MessageTemplate(binaryHex: "32 2a 0005 746f706963 {sequence:u16} {sequence:u32}{client:u16} {client:u32} {stamp}")
        var r: UInt64 = 0
        let out = render(t, client: 0x1_0203, sequence: 0x0A0B_0C0D, random: &r)
        #expect(Array(out[0..<9]) == [0x32, 0x2A, 0x00, 0x05, 0x74, 0x6F, 0x70, 0x69, 0x63])
        #expect(Array(out[9..<21]) == [0x0C, 0x0D, 0x0A, 0x0B, 0x0C, 0x0D, 0x02, 0x03, 0x00, 0x01, 0x02, 0x03])
        #expect(out.count == 21 + FlowStamp.binaryLength)
        #expect(out.withUnsafeBytes { FlowStamp.parse(UnsafeRawBufferPointer(rebasing: $0[21...])) } == stamp)
        let mqtt = try MessageTemplate(binaryHex: "10 0c 00 04 4d515454 04 02 003c 0000")
        #expect(render(mqtt, random: &r) == [0x10, 0x0C, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3C, 0x00, 0x00])
        let random = try MessageTemplate(binaryHex: "FF{random:11}ff")
        let bytes = render(random, random: &r)
        #expect(bytes.count == 13 && bytes.first == 0xFF && bytes.last == 0xFF)
        #expect(try MessageTemplate(binaryHex: "").segments.isEmpty)
    }

    @Test func segmentsDescribeTheTemplate() throws {
        let t = try MessageTemplate(text: "a{client%3}b{random_hex:4}{token}")
        #expect(t.encoding == .text)
        #expect(t.segments == [.literal(Array("a".utf8)), .placeholder(.clientModulo(3)), .literal(Array("b".utf8)),
                               .placeholder(.randomHex(4)), .placeholder(.named("token"))])
        let b = try MessageTemplate(binaryHex: "01{random:2}")
        #expect(b.segments == [.literal([1]), .placeholder(.randomBytes(2))])
    }

    @Test func badTextPlaceholdersAreErrorsWithTheirColumn() {
        let cases: [(String, Int)] = [
            ("{sequence", 1), ("ab{seq uence}", 3), ("{client%0}", 1), ("{client%x}", 1), ("{client:u16}", 1),
            ("{sequence:u16}", 1), ("{random_hex}", 1), ("{random_hex:0}", 1), ("{random_hex:99999}", 1), ("{random:4}", 1),
            ("{stamp:x}", 1), ("{token%2}", 1), ("é{user:1}", 2), ("{uuid", 1),
        ]
        for (text, column) in cases {
            do {
                _ = try MessageTemplate(text: text)
                Issue.record("\(text) compiled")
            } catch {
                #expect(error.column == column, "\(text): \(error)")
                #expect(error.description.hasPrefix("column \(column):"), "\(error)")
            }
        }
    }

    @Test func badBinaryTemplatesAreErrorsWithTheirColumn() {
        let cases: [(String, FlowSyntaxError)] = [
            ("0", .oddHexDigits(column: 1)),
            ("01 2", .oddHexDigits(column: 4)),
            ("0 1", .oddHexDigits(column: 1)),
            ("0{stamp}", .oddHexDigits(column: 1)),
            ("0x01", .notHex("x", column: 2)),
            ("01 é", .notHex("é", column: 4)),
            ("01 {", .strayBrace(column: 4)),
            ("01 {1}", .strayBrace(column: 4)),
            ("{stamp", .unterminatedPlaceholder(column: 1)),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try MessageTemplate(binaryHex: text) }
        }
        for text in ["{sequence}", "{client}", "{token}", "{uuid}", "{random_hex:2}", "{random:0}", "{sequence:u8}", "{user}"] {
            #expect(throws: FlowSyntaxError.self, "\(text)") { try MessageTemplate(binaryHex: text) }
        }
    }

    @Test func aSelectorIsTracedBackToThePlaceholderItLandsOn() throws {
        let t = try MessageTemplate(text: #"{"op":"publish","id":{sequence},"s":"{sequence}","m":"m-{sequence}","c":{client},"tok":"{token}","data":{"stamp":"{stamp}"}}"#)
        func at(_ path: String) throws -> MessageTemplate.Placeholder? { t.placeholder(at: .path(try JSONPath(parsing: path))) }
        #expect(try at("$.id") == .sequence)
        #expect(try at("$.s") == .sequence)
        #expect(try at("$.m") == nil, "part literal")
        #expect(try at("$.c") == .client)
        #expect(try at("$.tok") == .named("token"))
        #expect(try at("$.data.stamp") == .stamp)
        #expect(try at("$.op") == nil)
        #expect(try at("$.missing") == nil)
        let stomp = try MessageTemplate(text: "SEND\ndestination:/q\nreceipt:r-{sequence}\nid:{sequence}\n\n{stamp}\u{0}")
        #expect(stomp.placeholder(at: .between(start: Array("id:".utf8), end: Array("\n".utf8))) == .sequence)
        #expect(stomp.placeholder(at: .between(start: Array("receipt:".utf8), end: Array("\n".utf8))) == nil)
        let mqtt = try MessageTemplate(binaryHex: "32 2a 0005 746f706963 {sequence:u16} {stamp}")
        #expect(mqtt.placeholder(at: .bytes(offset: 9, length: 2)) == .sequenceU16)
        #expect(mqtt.placeholder(at: .bytes(offset: 9, length: 1)) == nil)
        #expect(mqtt.placeholder(at: .bytes(offset: 0, length: 2)) == nil)
    }
}

/// Calls `body` with a table of pointers to each array's bytes.
private func withTable<R>(_ arrays: [[UInt8]], _ body: (UnsafeBufferPointer<UnsafeRawBufferPointer>) -> R) -> R {
    var table: [UnsafeRawBufferPointer] = []
    func nest(_ k: Int) -> R {
        guard k < arrays.count else { return table.withUnsafeBufferPointer(body) }
        return arrays[k].withUnsafeBytes { table.append($0); return nest(k + 1) }
    }
    return nest(0)
}
