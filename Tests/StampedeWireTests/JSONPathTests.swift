import StampedeWire
import Testing

/// Paths are parsed strictly and evaluated by a scanner over bytes: values come back as ranges
/// of the frame, malformed or truncated frames give nil, never a trap.
struct JSONPathTests {
    func value(_ path: String, _ json: String) throws -> String? {
        let p = try JSONPath(parsing: path)
        let bytes = Array(json.utf8)
        return bytes.withUnsafeBytes { b in p.value(in: b).map { String(decoding: bytes[$0], as: UTF8.self) } }
    }

    @Test func pathsParseIntoKeyAndIndexSteps() throws {
        #expect(try JSONPath(parsing: "$").steps == [])
        #expect(try JSONPath(parsing: "$.a.b").steps == [.key(Array("a".utf8)), .key(Array("b".utf8))])
        #expect(try JSONPath(parsing: "$[3]").steps == [.index(3)])
        #expect(try JSONPath(parsing: "$['a b']").steps == [.key(Array("a b".utf8))])
        #expect(try JSONPath(parsing: #"$["it\"s"]"#).steps == [.key(Array(#"it"s"#.utf8))])
        #expect(try JSONPath(parsing: "$[4].body.stamp").steps == [.index(4), .key(Array("body".utf8)), .key(Array("stamp".utf8))])
        #expect(try JSONPath(parsing: "$.données").steps == [.key(Array("données".utf8))])
        #expect(try JSONPath(parsing: "$.a").text == "$.a")
    }

    @Test func malformedPathsNameTheColumn() {
        let cases: [(String, FlowSyntaxError)] = [
            ("", .pathMustStartWithDollar(column: 1)),
            ("a.b", .pathMustStartWithDollar(column: 1)),
            ("$.", .pathEmptyKey(column: 2)),
            ("$..a", .pathEmptyKey(column: 2)),
            ("$.a b", .pathUnexpected(" ", column: 4)),
            ("$a", .pathUnexpected("a", column: 2)),
            ("$[", .pathBadBracket(column: 2)),
            ("$[x]", .pathBadBracket(column: 2)),
            ("$[-1]", .pathBadBracket(column: 2)),
            ("$[1", .pathBadBracket(column: 2)),
            ("$['a]", .pathBadBracket(column: 2)),
            ("$['a'", .pathBadBracket(column: 2)),
            ("$[*]", .pathBadBracket(column: 2)),
            ("$[99999999999]", .pathBadBracket(column: 2)),
            ("$.é[x]", .pathBadBracket(column: 4)),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try JSONPath(parsing: text) }
        }
        let e = FlowSyntaxError.pathBadBracket(column: 2)
        #expect(e.description.contains("column 2"))
    }

    @Test func valuesAreStringContentsOrTokensAsWritten() throws {
        let json = #"{"op":"ack","id":42,"neg":-1.5e3,"ok":true,"no":false,"nil":null,"s":"a\"b\\c","u":"\u00e9"}"#
        #expect(try value("$.op", json) == "ack")
        #expect(try value("$.id", json) == "42")
        #expect(try value("$.neg", json) == "-1.5e3")
        #expect(try value("$.ok", json) == "true")
        #expect(try value("$.no", json) == "false")
        #expect(try value("$.nil", json) == "null")
        #expect(try value("$.s", json) == #"a\"b\\c"#, "escapes as written")
        #expect(try value("$.u", json) == #"\u00e9"#)
        #expect(try value("$.missing", json) == nil)
        #expect(try value("$", " 7 ") == "7")
        #expect(try value("$", json) == json)
    }

    @Test func nestedObjectsAndArraysAreSkippedAndEntered() throws {
        let json = #"{"skip":{"a":[1,{"b":"}"}],"c":"]"},"list":[ "x" , {"k":[]}, [1,2], {"body":{"stamp":"S"}} ,{"body":{"stamp":"T"}}],"data":{"stamp":"~st~"}}"#
        #expect(try value("$.data.stamp", json) == "~st~")
        #expect(try value("$.list[0]", json) == "x")
        #expect(try value("$.list[1]", json) == #"{"k":[]}"#)
        #expect(try value("$.list[2][1]", json) == "2")
        #expect(try value("$.list[3].body.stamp", json) == "S")
        #expect(try value("$.list[4].body", json) == #"{"stamp":"T"}"#)
        #expect(try value("$.list[5]", json) == nil)
        #expect(try value("$.skip.a[1].b", json) == "}")
        #expect(try value("$[4].body.stamp", #"[0,"1",[2],{"3":3},{"body":{"stamp":"x"}}]"#) == "x")
        #expect(try value("$[0]", "[]") == nil)
        #expect(try value("$.a", "[1]") == nil, "a key step on an array")
        #expect(try value("$[0]", #"{"0":1}"#) == nil, "an index step on an object")
    }

    @Test func whitespaceAnywhereBetweenTokensIsAllowed() throws {
        let json = " \n{ \"a\" :\t[ 1 ,\r\n { \"b\" : \"v\" } ] } "
        #expect(try value("$.a[1].b", json) == "v")
        #expect(try value("$.a[0]", json) == "1")
        #expect(try value("$.a", json) == "[ 1 ,\r\n { \"b\" : \"v\" } ]")
    }

    @Test func escapedKeysMatchTheirDecodedNames() throws {
        #expect(try value("$.type", #"{"typ\u0065":"welcome"}"#) == "welcome")
        #expect(try value("$['a\"b']", #"{"a\"b":1}"#) == "1")
        #expect(try value("$.é", #"{"\u00e9":2}"#) == "2")
        #expect(try value("$.😀", #"{"\ud83d\ude00":3}"#) == "3")
        #expect(try value("$.x", #"{"\ud83d":0,"x":4}"#) == "4", "a lone surrogate matches nothing but is skipped")
        #expect(try value("$.a", #"{"a":1,"a":2}"#) == "1", "the first member wins")
    }

    @Test func malformedOrTruncatedJSONGivesNil() throws {
        let json = #"{"a":{"b":[1,"two",{"c":"d\"e"}]},"z":9}"#
        let bytes = Array(json.utf8)
        // Every prefix: a value that ends before the cut is found, anything else is nil.
        for n in 0...bytes.count {
            let path = try JSONPath(parsing: "$.z")
            let r = bytes.withUnsafeBytes { path.value(in: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            #expect(r == (n >= bytes.count - 1 ? (bytes.count - 2)..<(bytes.count - 1) : nil), "prefix \(n)")
        }
        for bad in [#"{"a":}"#, #"{"a" 1}"#, #"{a:1}"#, #"{"x":tru,"a":1}"#, #"{"x":01,"a":1}"#, #"{"x":"\q","a":1}"#,
                    #"{"x":[1,],"a":1}"#, #"{"x":1 "a":1}"#, "{\"x\":\"\u{01}\",\"a\":1}", #"{"a""#, #"{"a":"unterminated"#,
                    "", "   ", "\u{FF}", "{\"a\":\u{7F}}"] {
            #expect(try value("$.a", bad) == nil, "\(bad)")
        }
        #expect(try value("$.a", #"{"a":1"#) == "1", "bytes after the value are not looked at")
        #expect(try value("$[1]", "[1") == nil)
        let deep = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        #expect(try value("$[0][0]", deep) == nil, "nesting beyond the scanner's limit is nil, not a stack overflow")
        let invalidUTF8: [UInt8] = Array(#"{"x":""#.utf8) + [0xC3, 0x28] + Array(#"","a":1}"#.utf8)
        let p = try JSONPath(parsing: "$.a")
        #expect(invalidUTF8.withUnsafeBytes { p.value(in: $0) } == nil)
    }
}
