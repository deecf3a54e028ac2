import Testing
import Foundation
@testable import StampedeWire

let sampleUserID = "3f2b8c1e-5d4a-4e6b-9c7d-0a1b2c3d4e5f"

/// A chat client's message as the built-in chat flow writes it (`WebSocketFlowSpec.chat`: the
/// stamp padded to `textSize` bytes of message text), through the one template renderer.
func clientMessage(_ stamp: MessageStamp, textSize: Int, user: String = "alice", userID: String = sampleUserID) -> [UInt8] {
    let stampPart = textSize > 0 ? "{stamp:\(textSize)}" : "{stamp}"
    let template = try! MessageTemplate(text: #"{"message":"\#(stampPart)","user":"{user}","userID":"\#(userID)"}"#)
    let userBytes = Array(user.utf8)
    return userBytes.withUnsafeBytes { u in
        var values = TemplateValues(stamp: stamp, client: Int(stamp.sender), sequence: stamp.sequence, user: u)
        let length = template.length(values)
        var out = [UInt8](repeating: 0xEE, count: length + 16)
        let written = out.withUnsafeMutableBytes { template.render(into: $0.baseAddress!, &values) }
        #expect(written == length, "render must write exactly length bytes")
        #expect(out[written...].allSatisfy { $0 == 0xEE }, "nothing written past the end")
        return Array(out[0..<written])
    }
}

func jsonObject(_ bytes: [UInt8]) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(bytes))
    return try #require(object as? [String: Any])
}

/// The chat flow's reply rule: the stamp at `$.message`.
func readStamp(_ bytes: [UInt8]) -> MessageStamp? {
    bytes.withUnsafeBytes { b in MessageFlow.stamp(in: b, .selector(.path(try! JSONPath(parsing: "$.message")))) }
}
func readStamp(_ text: String) -> MessageStamp? { readStamp(Array(text.utf8)) }

/// The stamp text the codec writes: lowercase hex fields, each followed by a colon.
func stampText(_ s: MessageStamp) -> String {
    "s\(String(s.sender, radix: 16)):q\(String(s.sequence, radix: 16)):t\(String(s.intendedNs, radix: 16)):a\(String(s.actualNs, radix: 16)):"
}

let extremeStamps: [MessageStamp] = [
    MessageStamp(sender: 0, sequence: 0, intendedNs: 0, actualNs: 0),
    MessageStamp(sender: .max, sequence: .max, intendedNs: .max, actualNs: .max),
    MessageStamp(sender: 0, sequence: .max, intendedNs: 0, actualNs: .max),
    MessageStamp(sender: 1, sequence: 16, intendedNs: 1 << 63, actualNs: (1 << 63) + 1),
    MessageStamp(sender: 0xF, sequence: 0x10, intendedNs: 0xFFFF_FFFF, actualNs: 0x1_0000_0000),
]

@Suite struct ChatClientMessageTests {
    @Test func clientMessageIsValidJSONWithPaddedTextAndFields() throws {
        let stamp = MessageStamp(sender: 7, sequence: 42, intendedNs: 1_700_000_000_123_456_789, actualNs: 1_700_000_000_123_999_000)
        for textSize in [0, 10, stampText(stamp).utf8.count, 64, 100, 1000, 16_000] {
            let bytes = clientMessage(stamp, textSize: textSize)
            let object = try jsonObject(bytes)
            #expect(Set(object.keys) == ["message", "user", "userID"])
            let message = try #require(object["message"] as? String)
            let stampPart = "~st~" + stampText(stamp)
            #expect(message.hasPrefix(stampPart))
            #expect(message.utf8.count == max(textSize, stampPart.utf8.count))
            #expect(message.dropFirst(stampPart.count).allSatisfy { $0 == "x" })
            #expect(object["user"] as? String == "alice")
            #expect(object["userID"] as? String == sampleUserID)
            #expect(bytes.prefix(12) == ArraySlice(#"{"message":""#.utf8))
            #expect(bytes.withUnsafeBytes { ChatServerParser.parse($0) } != nil, "the chat server accepts it")
        }
    }

    @Test func stampLengthMatchesWhatIsWritten() {
        for s in extremeStamps + [MessageStamp(sender: 7, sequence: 42, intendedNs: 12345, actualNs: 67890)] {
            #expect(ChatCodec.stampLength(s) == stampText(s).utf8.count)
            #expect(ChatCodec.stampLength(s) <= 56)
        }
        #expect(ChatCodec.stampLength(MessageStamp(sender: .max, sequence: .max, intendedNs: .max, actualNs: .max)) == 56)
    }

    @Test func readStampRoundTripsExtremeAndSeededRandomStamps() {
        var rng = SeededRandom(seed: 77)
        var stamps = extremeStamps
        for _ in 0..<500 {
            stamps.append(MessageStamp(sender: UInt32.random(in: 0...UInt32.max, using: &rng), sequence: UInt32.random(in: 0...UInt32.max, using: &rng),
                                    intendedNs: rng.next() >> UInt64.random(in: 0...63, using: &rng), actualNs: rng.next()))
        }
        for s in stamps {
            for textSize in [0, 60, 200] {
                #expect(readStamp(clientMessage(s, textSize: textSize)) == s, "\(s) textSize \(textSize)")
            }
        }
    }
}

@Suite struct ChatReadStampTests {
    @Test func readStampOnAReformattedServerBroadcast() {
        let expected = MessageStamp(sender: 1, sequence: 2, intendedNs: 3, actualNs: 4)
        #expect(readStamp(#"{"date": "2025-01-01T00:00:00Z", "message" : "~st~s1:q2:t3:a4:xx", "user": "bob", "userID": "u", "id": 17}"#) == expected)
        #expect(readStamp(#"{"id":17,"userID":"u","user":"bob","message":"~st~s1:q2:t3:a4:","date":"d"}"#) == expected)
        #expect(readStamp("{\n  \"id\" : 17,\n  \"message\"\t:\r\n \"~st~s1:q2:t3:a4:xxxx\"\n}") == expected)
        // "message" appearing as a value or as part of another key first does not confuse it.
        #expect(readStamp(#"{"type":"message","messages":2,"user":"message","message":"~st~s1:q2:t3:a4:"}"#) == expected)
    }

    @Test func readStampSurvivesFoundationReserialisation() throws {
        let stamp = MessageStamp(sender: 123_456, sequence: 9, intendedNs: 987_654_321_000, actualNs: 987_654_322_000)
        var object = try jsonObject(clientMessage(stamp, textSize: 100))
        object["date"] = "2025-06-01T12:00:00.000Z"
        object["id"] = 42
        for options: JSONSerialization.WritingOptions in [[], [.prettyPrinted], [.sortedKeys], [.prettyPrinted, .sortedKeys]] {
            let data = try JSONSerialization.data(withJSONObject: object, options: options)
            #expect(readStamp(Array(data)) == stamp)
        }
    }

    @Test(arguments: [
        "", "{}", #"{"user":"a"}"#, #"{"message":"hello"}"#, #"{"message":""}"#, #"{"message":5}"#, #"{"message":null}"#,
        #"{"message":"~st~s1:q2:t3"}"#, #"{"message":"~st~s1:q2:t3:a4"}"#, #"{"message":"~st~s:q2:t3:a4:"}"#, #"{"message":"~st~q2:s1:t3:a4:"}"#,
        #"{"message":"~st~s1:q2:tz:a4:"}"#, #"{"message":"~st~s100000000:q2:t3:a4:"}"#, #"{"message":"~st~s1:q100000000:t3:a4:"}"#,
        #"{"message":"~st~s1:q2:t10000000000000000:a4:"}"#, #"{"message": "x ~st~s1:q2:t3:a4:"}"#, #"{"message""#, #""message":"#,
        #"{"message":"s1:q2:t3:a4:"}"#,
    ])
    func readStampIsNilWithoutAStamp(_ text: String) {
        #expect(readStamp(text) == nil)
    }

    @Test func readStampHandlesEveryTruncationOfAMessage() {
        let stamp = MessageStamp(sender: 0xABC, sequence: 0xDEF, intendedNs: 0x1234, actualNs: 0x5678)
        let full = clientMessage(stamp, textSize: 0)
        // The path needs the string's closing quote: a truncated value is no value.
        let stringEnd = 12 + 4 + stampText(stamp).utf8.count + 1
        for n in 0...full.count {
            let s = readStamp(Array(full.prefix(n)))
            if n >= stringEnd {
                #expect(s == stamp, "prefix \(n)")
            } else {
                #expect(s == nil, "prefix \(n)")
            }
        }
    }
}

@Suite struct ChatServerParserTests {
    func parse(_ text: String) -> (fields: ChatClientFields, bytes: [UInt8])? {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { ChatServerParser.parse($0) }.map { ($0, bytes) }
    }

    func raw(_ p: (fields: ChatClientFields, bytes: [UInt8])) -> (String, String, String) {
        (String(decoding: p.bytes[p.fields.message], as: UTF8.self), String(decoding: p.bytes[p.fields.user], as: UTF8.self),
         String(decoding: p.bytes[p.fields.userID], as: UTF8.self))
    }

    @Test func acceptsTheClientMessageAndReturnsRawRanges() throws {
        let bytes = clientMessage(MessageStamp(sender: 1, sequence: 2, intendedNs: 3, actualNs: 4), textSize: 20, user: "bob")
        let fields = try #require(bytes.withUnsafeBytes { ChatServerParser.parse($0) })
        #expect(String(decoding: bytes[fields.message], as: UTF8.self) == "~st~s1:q2:t3:a4:xxxx")
        #expect(String(decoding: bytes[fields.user], as: UTF8.self) == "bob")
        #expect(String(decoding: bytes[fields.userID], as: UTF8.self) == sampleUserID)
        #expect(fields.message == 12..<32)
    }

    @Test func acceptsExtraFieldsNestingEscapesAndWhitespace() throws {
        let text = """
         \r\n\t{ "id" : 17, "date":"2025-01-01", "meta": {"a": [1, -2.5, 3e10, 4E-2, 0.5, true, false, null, {}, [], [[{"b":"c"}]]], "s": "x"},
          "userID" : "id\\u00e9\\"q", "user":"a\\\\b\\/c\\n\\t\\b\\f\\r", "message": "hi \\"there\\" \\uD83D\\uDE00", "flag": false, "n": null,
          "neg": -0, "arr": [] } \n
        """
        let p = try #require(parse(text))
        let (message, user, userID) = raw(p)
        #expect(message == #"hi \"there\" \uD83D\uDE00"#)
        #expect(user == #"a\\b\/c\n\t\b\f\r"#)
        #expect(userID == #"id\u00e9\"q"#)
        // Foundation agrees it is valid JSON.
        #expect(try jsonObject(p.bytes)["message"] as? String == "hi \"there\" 😀")
    }

    @Test func laterDuplicateKeysWinAndOrderDoesNotMatter() throws {
        let p = try #require(parse(#"{"userID":"1","user":"u","message":"first","message":"second"}"#))
        #expect(raw(p) == ("second", "u", "1"))
    }

    @Test(arguments: [
        #"{"message":"m","user":"u","userID":"i",}"#,                 // trailing comma in the object
        #"{"message":"m","user":"u","userID":"i","a":[1,2,]}"#,      // trailing comma in an array
        #"{"message":"m","user":"u","userID":"i","a":{"b":1,}}"#,    // trailing comma in a nested object
        #"{"message":"m","user":"u","userID":"i"#,                  // unterminated string
        #"{"message":"m","user":"u","userID":"i""#,                 // unterminated object
        #"{"message":"m","user":"u","userID":"i"} x"#,              // trailing garbage
        #"{"message":"m","user":"u","userID":"i"}{}"#,              // a second value
        #"{"user":"u","userID":"i"}"#,                              // missing message
        #"{"message":"m","userID":"i"}"#,                           // missing user
        #"{"message":"m","user":"u"}"#,                             // missing userID
        #"{"message":5,"user":"u","userID":"i"}"#,                  // message not a string
        #"{"message":"m" "user":"u","userID":"i"}"#,                // missing comma
        #"{"message" "m","user":"u","userID":"i"}"#,                // missing colon
        #"{'message':'m','user':'u','userID':'i'}"#,                // single quotes
        #"{message:"m","user":"u","userID":"i"}"#,                  // bare key
        #"{"message":"\x","user":"u","userID":"i"}"#,               // bad escape
        #"{"message":"\u12G4","user":"u","userID":"i"}"#,           // bad unicode escape
        #"{"message":"\u12"}"#,                                     // truncated unicode escape
        #"{"message":"m","user":"u","userID":"i","n":-}"#,          // bad numbers
        #"{"message":"m","user":"u","userID":"i","n":1.}"#,
        #"{"message":"m","user":"u","userID":"i","n":1e}"#,
        #"{"message":"m","user":"u","userID":"i","n":.5}"#,
        #"{"message":"m","user":"u","userID":"i","n":tru}"#,        // bad literals
        #"{"message":"m","user":"u","userID":"i","n":nul}"#,
        #"{"message":"m","user":"u","userID":"i","n":True}"#,
        #"["message","user","userID"]"#, #""message""#, "", "   ", "{}", "{", "}",
    ])
    func rejectsInvalidJSON(_ text: String) {
        #expect(parse(text) == nil)
    }

    @Test func rejectsControlCharactersInStrings() {
        for c in [0x00, 0x01, 0x0A, 0x0D, 0x09, 0x1F] as [UInt8] {
            var bytes = Array(#"{"message":"aXb","user":"u","userID":"i"}"#.utf8)
            bytes[bytes.firstIndex(of: UInt8(ascii: "X"))!] = c
            #expect(bytes.withUnsafeBytes { ChatServerParser.parse($0) } == nil, "control byte \(c)")
        }
        // DEL and non-ASCII bytes are allowed in strings.
        #expect(parse("{\"message\":\"a\u{7F}é\",\"user\":\"u\",\"userID\":\"i\"}") != nil)
    }

    /// `levels` containers in all, counting the outer object; the innermost holds a number.
    func nested(_ levels: Int, open: String = "[", close: String = "]") -> String {
        let inner = levels - 1
        return #"{"message":"m","user":"u","userID":"i","deep":"# + String(repeating: open, count: inner) + "1"
            + String(repeating: close, count: inner) + "}"
    }

    @Test func acceptsNestingUpTo32Levels() {
        #expect(parse(nested(2)) != nil)
        #expect(parse(nested(32)) != nil)
        #expect(parse(nested(32, open: #"{"k":"#, close: "}")) != nil)
    }

    @Test func rejectsNestingDeeperThan32Levels() {
        #expect(parse(nested(33)) == nil)
        #expect(parse(nested(33, open: #"{"k":"#, close: "}")) == nil)
        #expect(parse(nested(1000)) == nil)
        // Hostile depth is refused without recursing into it.
        #expect(parse(nested(200_000)) == nil)
    }
}
