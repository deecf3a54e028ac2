import StampedeWire
import Testing

/// The REST processors' view of a JSON body: top-level keys present, a number by key, a
/// decimal header value; anything malformed is "no", never a crash.
struct JSONFieldsTests {
    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test func requiredKeysAreFoundAtTheTopLevelOnly() {
        let body = bytes(#"{"id": 7, "nested": {"deep": 1}, "changed_at": 1763779200.5, "tags": ["a"]}"#)
        body.withUnsafeBytes { b in
            #expect(JSONFields.objectHasKeys(b, [bytes("id"), bytes("changed_at")]))
            #expect(JSONFields.objectHasKeys(b, []))
            #expect(!JSONFields.objectHasKeys(b, [bytes("deep")]))
            #expect(!JSONFields.objectHasKeys(b, [bytes("id"), bytes("missing")]))
        }
    }

    @Test func malformedOrNonObjectBodiesHaveNoKeys() {
        for text in [#"{"id": 7"#, #"["id"]"#, "", "null", #"{"id": 7} trailing"#, #"{"id": 07}"#] {
            bytes(text).withUnsafeBytes { #expect(!JSONFields.objectHasKeys($0, [bytes("id")]), "\(text)") }
        }
    }

    @Test func numbersAreReadByKey() {
        bytes(#"{"changed_at": 1763779200.123456, "s": "1", "neg": -2.5}"#).withUnsafeBytes { b in
            #expect(abs(JSONFields.number(b, key: bytes("changed_at"))! - 1763779200.123456) < 1e-6)
            #expect(JSONFields.number(b, key: bytes("neg")) == -2.5)
            #expect(JSONFields.number(b, key: bytes("s")) == nil, "a string is not a number")
            #expect(JSONFields.number(b, key: bytes("absent")) == nil)
        }
    }

    @Test func headerDecimalsAcceptSpacesAndRejectEverythingElse() {
        let cases: [(String, Double?)] = [("120", 120), (" 1763779200.25 ", 1763779200.25), ("0", 0), ("-3", -3),
                                          ("", nil), ("1e3", nil), ("Wed, 21 Oct 2015 07:28:00 GMT", nil), ("1.2.3", nil), (".", nil)]
        for (text, expected) in cases {
            bytes(text).withUnsafeBytes { #expect(JSONFields.decimal($0) == expected, "\(text)") }
        }
    }
}
