import Testing
import Foundation
@testable import StampedeWire

// SignalR JSON hub protocol and handshakeResponse: the vectors of signalr-protocol.md §8, the protocol
// errors of §7, framing, and round trips. Helpers are private so this file stands alone.

private let jsonRS: UInt8 = 0x1E

private func jsonUTF8(_ s: String) -> [UInt8] { Array(s.utf8) }
private func jsonRecord(_ s: String) -> [UInt8] { jsonUTF8(s) + [jsonRS] }

/// Runs a writer on a buffer of exactly `capacity` bytes followed by a canary, so a write past
/// the end is caught; returns the written bytes or nil.
private func jsonWritten(capacity: Int = 1 << 16, _ write: (UnsafeMutableRawBufferPointer) -> Int?) -> [UInt8]? {
    var buffer = [UInt8](repeating: 0xEE, count: capacity + 16)
    let n = buffer.withUnsafeMutableBytes { all in write(UnsafeMutableRawBufferPointer(rebasing: all[0..<capacity])) }
    #expect(buffer[capacity...].allSatisfy { $0 == 0xEE }, "wrote past the end of the output buffer")
    guard let n else { return nil }
    #expect(n <= capacity)
    return Array(buffer[0..<n])
}

/// Writes once with room to spare, then checks that every smaller buffer is refused (nil) and
/// the exact size gives the same bytes.
private func jsonWrittenExactly(_ write: (UnsafeMutableRawBufferPointer) -> Int?) -> [UInt8] {
    guard let full = jsonWritten(write) else {
        Issue.record("writer failed with a large buffer")
        return []
    }
    for capacity in 0..<full.count {
        #expect(jsonWritten(capacity: capacity, write) == nil, "fits in \(capacity) < \(full.count) bytes?")
    }
    #expect(jsonWritten(capacity: full.count, write) == full)
    return full
}

private func jsonDecode(_ bytes: [UInt8]) -> Result<HubMessage, HubProtocolError> {
    bytes.withUnsafeBytes { JSONHubProtocol.decode($0) }
}

private func jsonDecodeError(_ json: String) -> HubProtocolError? {
    if case .failure(let e) = jsonDecode(jsonRecord(json)) { return e }
    return nil
}

/// A decoded message plus its bytes, to read ranges back as text.
private struct JSONDecoded {
    var message: HubMessage
    var bytes: [UInt8]
    func text(_ r: Range<Int>?) -> String? { r.map { String(decoding: bytes[$0], as: UTF8.self) } }
    func arrayCount(_ r: Range<Int>?) -> Int? { r.flatMap { r in bytes.withUnsafeBytes { JSONHubProtocol.arrayCount($0, array: r) } } }
    func element(_ r: Range<Int>?, _ i: Int) -> Range<Int>? {
        r.flatMap { r in bytes.withUnsafeBytes { JSONHubProtocol.arrayElement($0, array: r, at: i) } }
    }
    func int(_ r: Range<Int>?) -> Int64? { r.flatMap { r in bytes.withUnsafeBytes { JSONHubProtocol.int64($0, value: r) } } }
    /// The decoded text of a JSON string value (escapes resolved).
    func string(_ r: Range<Int>?) -> [UInt8]? {
        guard let r, let c = bytes.withUnsafeBytes({ JSONHubProtocol.stringContents($0, value: r) }) else { return nil }
        return jsonUnescaped(Array(bytes[c]))
    }
}

private func jsonDecoded(_ bytes: [UInt8]) throws -> JSONDecoded {
    switch jsonDecode(bytes) {
    case .success(let m): return JSONDecoded(message: m, bytes: bytes)
    case .failure(let e):
        Issue.record("jsonDecode failed: \(e) for \(String(decoding: bytes, as: UTF8.self))")
        throw e
    }
}

private func jsonDecoded(_ json: String) throws -> JSONDecoded { try jsonDecoded(jsonRecord(json)) }

private func jsonUnescaped(_ contents: [UInt8]) -> [UInt8]? {
    var out = [UInt8](repeating: 0, count: contents.count * 2 + 4)
    let n = contents.withUnsafeBytes { c in out.withUnsafeMutableBytes { JSONHubProtocol.unescapeString(c, into: $0) } }
    return n.map { Array(out[0..<$0]) }
}

private func jsonRecordLength(_ bytes: [UInt8]) -> Int? { bytes.withUnsafeBytes { JSONHubProtocol.recordLength($0) } }
private func jsonParse(_ bytes: [UInt8], max: Int = .max) -> HubParseResult { bytes.withUnsafeBytes { JSONHubProtocol.parse($0, maxMessageLength: max) } }
private func handshakeResponse(_ bytes: [UInt8]) -> HubHandshake.Response { bytes.withUnsafeBytes { HubHandshake.parseResponse($0) } }

/// SplitMix64, so the fuzz inputs are the same on every run.
private struct JSONFuzzRandom: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Independent check with Foundation's parser: the written text is JSON and means what we wrote.
private func jsonFoundationObject(_ recordBytes: [UInt8]) throws -> [String: Any] {
    #expect(recordBytes.last == jsonRS)
    let object = try JSONSerialization.jsonObject(with: Data(recordBytes.dropLast()))
    return try #require(object as? [String: Any])
}

@Suite struct SignalRJSONHandshakeTests {
    @Test func handshakeRequestsAreTheSpecJSONPlusRecordSeparator() {
        let json = jsonWrittenExactly { HubHandshake.writeRequest(protocolName: JSONHubProtocol.protocolName, into: $0) }
        #expect(json == jsonRecord(#"{"protocol":"json","version":1}"#))
        let msgpack = jsonWritten { HubHandshake.writeRequest(protocolName: MessagePackHubProtocol.protocolName, into: $0) }
        #expect(msgpack == jsonRecord(#"{"protocol":"messagepack","version":1}"#))
        let stateful = jsonWritten { HubHandshake.writeRequest(protocolName: "json", version: 2, into: $0) }
        #expect(stateful == jsonRecord(#"{"protocol":"json","version":2}"#))
    }

    @Test func handshakeOKIsSuccessAndLaterBytesAreLeftForHubMessages() {
        #expect(handshakeResponse([0x7B, 0x7D, 0x1E]) == .success(consumed: 3))
        let withPing = [0x7B, 0x7D, 0x1E] + jsonRecord(#"{"type":6}"#)
        #expect(handshakeResponse(withPing) == .success(consumed: 3))
        #expect(handshakeResponse(jsonRecord(#" { "minorVersion" : 1 } "#)) == .success(consumed: 25))
        #expect(handshakeResponse(jsonRecord(#"{"error":null}"#)) == .success(consumed: 15))
    }

    @Test func handshakeErrorGivesTheRangeOfTheErrorText() throws {
        let bytes = jsonRecord(#"{"error":"Requested protocol 'messagepack' is not available."}"#)
        guard case .error(let r) = handshakeResponse(bytes) else {
            Issue.record("expected an error response")
            return
        }
        #expect(String(decoding: bytes[r], as: UTF8.self) == "Requested protocol 'messagepack' is not available.")
    }

    @Test func handshakeResponseNeedsMoreUntilTheSeparatorArrives() {
        let bytes = jsonRecord(#"{"minorVersion":1}"#)
        for cut in 0..<bytes.count {
            #expect(handshakeResponse(Array(bytes[0..<cut])) == .needMore, "cut at \(cut)")
        }
        #expect(handshakeResponse(bytes) == .success(consumed: bytes.count))
    }

    @Test func handshakeResponseThatIsAHubMessageOrNotAnObjectIsInvalid() {
        #expect(handshakeResponse(jsonRecord(#"{"type":6}"#)) == .invalid)
        #expect(handshakeResponse(jsonRecord(#"{"error":"x","type":1}"#)) == .invalid)
        #expect(handshakeResponse(jsonRecord(#"[]"#)) == .invalid)
        #expect(handshakeResponse(jsonRecord(#"{"error":5}"#)) == .invalid)
        #expect(handshakeResponse(jsonRecord(#"{"#)) == .invalid)
        #expect(handshakeResponse(jsonRecord(#"{} x"#)) == .invalid)
        #expect(handshakeResponse([jsonRS]) == .invalid)
        #expect(handshakeResponse(jsonRecord("<html>")) == .invalid)
    }

    @Test func handshakeResponseWriterProducesWhatTheParserAccepts() {
        let ok = jsonWritten { HubHandshake.writeResponse(into: $0) }
        #expect(ok == [0x7B, 0x7D, 0x1E])
        let failure = jsonWritten { HubHandshake.writeResponse(into: $0, error: "No \"json\"") }
        #expect(failure == jsonRecord(#"{"error":"No \"json\""}"#))
    }
}

@Suite struct SignalRJSONVectorTests {
    static let invokeVector = #"{"type":1,"invocationId":"0","target":"Send","arguments":["hi",42]}"#

    @Test func invokeVectorIsWrittenByteExactIn68Bytes() {
        let bytes = jsonWrittenExactly { out in
            JSONHubProtocol.writeInvocation(into: out, invocationId: 0, target: "Send") { w in
                w.string("hi")
                w.int(42)
            }
        }
        #expect(bytes == jsonRecord(Self.invokeVector))
        #expect(bytes.count == 68)
    }

    @Test func invokeVectorDecodesToItsFields() throws {
        let d = try jsonDecoded(Self.invokeVector)
        #expect(d.message.messageType == .invocation)
        #expect(d.text(d.message.invocationId) == "0")
        #expect(d.text(d.message.target) == "Send")
        #expect(d.text(d.message.arguments) == #"["hi",42]"#)
        #expect(d.arrayCount(d.message.arguments) == 2)
        #expect(d.string(d.element(d.message.arguments, 0)) == jsonUTF8("hi"))
        #expect(d.int(d.element(d.message.arguments, 1)) == 42)
        #expect(d.element(d.message.arguments, 2) == nil)
        #expect(d.message.streamIds == nil && d.message.headers == nil)
        let id = try #require(d.message.invocationId)
        #expect(d.bytes.withUnsafeBytes { HubInvocationID.decimalValue(UnsafeRawBufferPointer(rebasing: $0[id])) } == 0)
    }

    @Test func pingVectorBothWays() throws {
        #expect(jsonWrittenExactly { JSONHubProtocol.writePing(into: $0) } == jsonRecord(#"{"type":6}"#))
        #expect(try jsonDecoded(#"{"type":6}"#).message.messageType == .ping)
    }

    @Test func everyMessageTypeIsWrittenAsTheOfficialClientsWriteIt() {
        let cases: [(String, [UInt8]?)] = [
            (#"{"type":1,"target":"Send","arguments":[]}"#,
             jsonWritten { JSONHubProtocol.writeInvocation(into: $0, target: "Send") { _ in } }),
            (#"{"type":1,"invocationId":"7","target":"Upload","arguments":[1],"streamIds":["8","9"]}"#,
             jsonWritten { out in [UInt64(8), 9].withUnsafeBufferPointer { ids in
                 JSONHubProtocol.writeInvocation(into: out, invocationId: 7, target: "Upload", streamIds: ids) { $0.int(1) } } }),
            (#"{"type":2,"invocationId":"xyz","item":42}"#,
             jsonWritten { JSONHubProtocol.writeStreamItem(into: $0, invocationId: "xyz") { $0.int(42) } }),
            (#"{"type":3,"invocationId":"xyz"}"#,
             jsonWritten { JSONHubProtocol.writeCompletion(into: $0, invocationId: "xyz") }),
            (#"{"type":3,"invocationId":"xyz","result":42}"#,
             jsonWritten { JSONHubProtocol.writeCompletion(into: $0, invocationId: "xyz") { $0.int(42) } }),
            (#"{"type":3,"invocationId":"xyz","result":null}"#,
             jsonWritten { JSONHubProtocol.writeCompletion(into: $0, invocationId: "xyz") { $0.null() } }),
            (#"{"type":3,"invocationId":"xyz","error":"Error"}"#,
             jsonWritten { JSONHubProtocol.writeCompletion(into: $0, invocationId: "xyz", error: "Error") }),
            (#"{"type":4,"invocationId":"12","target":"Counter","arguments":[10,0.5]}"#,
             jsonWritten { JSONHubProtocol.writeStreamInvocation(into: $0, invocationId: 12, target: "Counter") { $0.int(10); $0.double(0.5) } }),
            (#"{"type":5,"invocationId":"12"}"#,
             jsonWritten { JSONHubProtocol.writeCancelInvocation(into: $0, invocationId: 12) }),
            (#"{"type":7}"#, jsonWritten { JSONHubProtocol.writeClose(into: $0) }),
            (#"{"type":7,"error":"xyz","allowReconnect":true}"#,
             jsonWritten { JSONHubProtocol.writeClose(into: $0, error: "xyz", allowReconnect: true) }),
            (#"{"type":8,"sequenceId":1394}"#, jsonWritten { JSONHubProtocol.writeAck(into: $0, sequenceId: 1394) }),
            (#"{"type":9,"sequenceId":18446744073709551615}"#, jsonWritten { JSONHubProtocol.writeSequence(into: $0, sequenceId: .max) }),
        ]
        for (expected, bytes) in cases {
            #expect(bytes == jsonRecord(expected), "\(expected)")
        }
    }

    @Test func writersRefuseEveryBufferTooSmallAndNeverWritePastIt() {
        _ = jsonWrittenExactly { JSONHubProtocol.writeInvocation(into: $0, invocationId: 123, target: "Send") { w in
            w.string("quote\" and \u{1}")
            w.paddedString(prefix: UnsafeRawBufferPointer(start: nil, count: 0), totalLength: 20, pad: 0x22)
            w.array { $0.double(1.5); $0.null() }
        } }
        _ = jsonWrittenExactly { JSONHubProtocol.writeStreamItem(into: $0, invocationId: 1) { $0.object { o in o.key("k"); o.bool(true) } } }
        _ = jsonWrittenExactly { JSONHubProtocol.writeCompletion(into: $0, invocationId: 1, error: "bad\n") }
        _ = jsonWrittenExactly { JSONHubProtocol.writeClose(into: $0, error: "e", allowReconnect: true) }
        _ = jsonWrittenExactly { JSONHubProtocol.writeAck(into: $0, sequenceId: 99) }
    }
}

@Suite struct SignalRJSONDecodeTests {
    @Test func protocolErrorsOfTheReferenceAreReported() {
        let cases: [(String, HubProtocolError)] = [
            (#"{"type":1,"target":"Send","arguments":[}"#, .invalidJSON),
            (#"not json"#, .invalidJSON),
            (#""#, .invalidJSON),
            (#"[1,2]"#, .notAnObject),
            (#""text""#, .notAnObject),
            (#"{}"#, .missingType),
            (#"{"target":"Send","arguments":[]}"#, .missingType),
            (#"{"type":"1"}"#, .invalidType),
            (#"{"type":1.5}"#, .invalidType),
            (#"{"type":null}"#, .invalidType),
            (#"{"type":4294967297}"#, .invalidType),
            (#"{"type":1,"arguments":[]}"#, .missingTarget),
            (#"{"type":1,"target":"","arguments":[]}"#, .missingTarget),
            (#"{"type":1,"target":null,"arguments":[]}"#, .missingTarget),
            (#"{"type":1,"target":5,"arguments":[]}"#, .invalidTarget),
            (#"{"type":1,"target":"Send"}"#, .missingArguments),
            (#"{"type":1,"target":"Send","arguments":{}}"#, .invalidArguments),
            (#"{"type":1,"target":"Send","arguments":"x"}"#, .invalidArguments),
            (#"{"type":1,"target":"Send","arguments":[],"streamIds":[1]}"#, .invalidStreamIds),
            (#"{"type":1,"target":"Send","arguments":[],"streamIds":"1"}"#, .invalidStreamIds),
            (#"{"type":1,"invocationId":5,"target":"Send","arguments":[]}"#, .invalidInvocationId),
            (#"{"type":2,"invocationId":"1"}"#, .missingItem),
            (#"{"type":2,"item":1}"#, .missingInvocationId),
            (#"{"type":3,"invocationId":"1","result":1,"error":"e"}"#, .resultAndError),
            (#"{"type":3,"invocationId":"1","error":"e","result":null}"#, .resultAndError),
            (#"{"type":3,"invocationId":"1","error":1}"#, .invalidError),
            (#"{"type":3}"#, .missingInvocationId),
            (#"{"type":3,"invocationId":""}"#, .missingInvocationId),
            (#"{"type":3,"invocationId":null}"#, .missingInvocationId),
            (#"{"type":4,"target":"S","arguments":[]}"#, .missingInvocationId),
            (#"{"type":4,"invocationId":"1","arguments":[]}"#, .missingTarget),
            (#"{"type":5}"#, .missingInvocationId),
            (#"{"type":7,"allowReconnect":"yes"}"#, .invalidAllowReconnect),
            (#"{"type":7,"error":{}}"#, .invalidError),
            (#"{"type":8}"#, .missingSequenceId),
            (#"{"type":9,"sequenceId":"1"}"#, .invalidSequenceId),
            (#"{"type":8,"sequenceId":-1}"#, .invalidSequenceId),
            (#"{"type":8,"sequenceId":1.0}"#, .invalidSequenceId),
            (#"{"type":8,"sequenceId":18446744073709551616}"#, .invalidSequenceId),
            (#"{"type":2,"invocationId":"1","item":1,"headers":[]}"#, .invalidHeaders),
        ]
        for (json, error) in cases {
            #expect(jsonDecodeError(json) == error, "\(json)")
        }
    }

    @Test func strictJSONRejectsWhatRFC8259Rejects() {
        let bad = [
            #"{"type":6,}"#, #"{"type":06}"#, #"{'type':6}"#, #"{"type":6}}"#, #"{"type":6} x"#, #"{"type":+6}"#,
            #"{"type":6,"x":NaN}"#, #"{"type":6,"x":1.}"#, #"{"type":6,"x":.5}"#, #"{"type":6,"x":-}"#, #"{"type":6,"x":1e}"#,
            #"{"type":6,"x":[1,]}"#, #"{"type":6,"x":[,1]}"#, #"{"type":6,"x":tru}"#, #"{"type":6,"x":nul}"#, #"{"type":6,"x":True}"#,
            #"{"type":6,"x":"\x"}"#, #"{"type":6,"x":"\u12G4"}"#, #"{"type":6,"x":"unterminated}"#, #"{"type":6 "x":1}"#,
            #"{"type":6,"x"}"#, #"{"type":6,"x":}"#, #"{"type":6,1:2}"#, #"{"type" 6}"#, #"{"type":6"#, #"{"type":6,"x":{"a" 1}}"#,
            "{\"type\":6,\"x\":\"tab\there\"}", "{\"type\":6,\"x\":\"\u{1E}\"}", "\u{0B}{\"type\":6}",
        ]
        for json in bad {
            #expect(jsonDecodeError(json) == .invalidJSON, "\(json.debugDescription)")
        }
        // Invalid UTF-8 inside strings: lone continuation, overlong, surrogate, above U+10FFFF, truncated.
        for seq: [UInt8] in [[0x80], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0xFF]] {
            let bytes = jsonUTF8(#"{"type":6,"x":""#) + seq + jsonUTF8(#""}"#) + [jsonRS]
            #expect(jsonDecode(bytes) == .failure(.invalidJSON), "\(seq)")
        }
    }

    @Test func validJSONVariantsAreAccepted() throws {
        let d = try jsonDecoded(" \r\n\t{ \"type\" : 1 , \"target\":\"S\\u00e9nd\\n\",\"arguments\" : [ -0.5e+10 , true,false,null,{\"a\":[{}]},\"\u{1F600}\\ud83d\\ude00\" ] } \n")
        #expect(d.message.messageType == .invocation)
        #expect(d.arrayCount(d.message.arguments) == 6)
        #expect(d.string(d.element(d.message.arguments, 5)) == jsonUTF8("\u{1F600}\u{1F600}"))
        #expect(d.text(d.message.target) == #"S\u00e9nd\n"#, "escapes are left raw in ranges")
        #expect(jsonUnescaped(jsonUTF8(#"S\u00e9nd\n"#)) == jsonUTF8("Sénd\n"))
    }

    @Test func unknownPropertiesAreIgnoredAndEscapedNamesStillMatch() throws {
        let d = try jsonDecoded(#"{"extra":{"deep":[1,{"type":99}]},"\u0074ype":3,"invocationId":"1","minor":null,"result":{"a":1}}"#)
        #expect(d.message.messageType == .completion)
        #expect(d.text(d.message.result) == #"{"a":1}"#)
    }

    @Test func unknownTypesAreReturnedForTheCallerToIgnore() throws {
        #expect(try jsonDecoded(#"{"type":10,"whatever":[1]}"#).message.type == 10)
        #expect(try jsonDecoded(#"{"type":255}"#).message.messageType == nil)
        #expect(try jsonDecoded(#"{"type":256}"#).message.type == 0)
        #expect(try jsonDecoded(#"{"type":-3}"#).message.type == 0)
        #expect(try jsonDecoded(#"{"type":0,"target":5}"#).message.type == 0, "fields of unknown types are not checked")
    }

    @Test func completionDistinguishesVoidNullResultValueAndError() throws {
        let void = try jsonDecoded(#"{"type":3,"invocationId":"1"}"#)
        #expect(void.message.result == nil && void.message.error == nil)
        let null = try jsonDecoded(#"{"type":3,"invocationId":"1","result":null}"#)
        #expect(null.text(null.message.result) == "null")
        let value = try jsonDecoded(#"{"type":3,"invocationId":"1","result":[1,2]}"#)
        #expect(value.arrayCount(value.message.result) == 2)
        let error = try jsonDecoded(#"{"type":3,"invocationId":"1","error":"It didn't work!"}"#)
        #expect(error.text(error.message.error) == "It didn't work!" && error.message.result == nil)
        let nullError = try jsonDecoded(#"{"type":3,"invocationId":"1","error":null,"result":5}"#)
        #expect(nullError.text(nullError.message.result) == "5", "a null error is no error, as in .NET")
    }

    @Test func otherMessageTypesDecodeTheirFields() throws {
        let item = try jsonDecoded(#"{"type":2,"invocationId":"xyz","item":null,"headers":{"a":"b"}}"#)
        #expect(item.text(item.message.item) == "null" && item.text(item.message.headers) == #"{"a":"b"}"#)
        let stream = try jsonDecoded(#"{"type":4,"invocationId":"2","target":"Counter","arguments":[5],"streamIds":["3","4"]}"#)
        #expect(stream.message.messageType == .streamInvocation && stream.arrayCount(stream.message.streamIds) == 2)
        #expect(stream.string(stream.element(stream.message.streamIds, 1)) == jsonUTF8("4"))
        let send = try jsonDecoded(#"{"type":1,"invocationId":"","target":"Send","arguments":[]}"#)
        #expect(send.message.invocationId == nil, "an empty id is a non-blocking invocation")
        let cancel = try jsonDecoded(#"{"type":5,"invocationId":"9"}"#)
        #expect(cancel.text(cancel.message.invocationId) == "9")
        let close = try jsonDecoded(#"{"type":7,"error":"Connection closed with an error.","allowReconnect":true}"#)
        #expect(close.message.allowReconnect && close.text(close.message.error) == "Connection closed with an error.")
        let plainClose = try jsonDecoded(#"{"type":7}"#)
        #expect(!plainClose.message.allowReconnect && plainClose.message.error == nil)
        #expect(try jsonDecoded(#"{"type":8,"sequenceId":1394}"#).message.sequenceId == 1394)
        #expect(try jsonDecoded(#"{"type":9,"sequenceId":18446744073709551615}"#).message.sequenceId == .max)
    }

    @Test func nestingUpTo64LevelsIsAcceptedAndDeeperIsRejected() {
        // The envelope is level 1, the arguments array level 2.
        func invocation(depth: Int) -> String {
            let inner = String(repeating: "[", count: depth - 2) + String(repeating: "]", count: depth - 2)
            return #"{"type":1,"target":"T","arguments":["# + inner + "]}"
        }
        #expect(jsonDecodeError(invocation(depth: 64)) == nil)
        #expect(jsonDecodeError(invocation(depth: 65)) == .invalidJSON)
        let hostile = #"{"type":6,"x":"# + String(repeating: "[", count: 100_000)
        #expect(jsonDecodeError(hostile) == .invalidJSON)
    }
}

@Suite struct SignalRJSONFramingTests {
    @Test func aRecordSplitAtEveryByteNeedsMoreUntilItsSeparator() {
        let bytes = jsonRecord(SignalRJSONVectorTests.invokeVector)
        for cut in 0..<bytes.count {
            let prefix = Array(bytes[0..<cut])
            #expect(jsonRecordLength(prefix) == nil, "cut at \(cut)")
            #expect(jsonParse(prefix) == .needMore, "cut at \(cut)")
        }
        #expect(jsonRecordLength(bytes) == 68)
        // A separator at every possible offset of the word-at-a-time search is found.
        for at in 0..<40 {
            var b = [UInt8](repeating: 0x41, count: 48)
            b[at] = jsonRS
            #expect(jsonRecordLength(b) == at + 1)
        }
    }

    @Test func severalRecordsInOneBufferParseOneAfterAnother() throws {
        let bytes = jsonRecord(#"{"type":6}"#) + jsonRecord(SignalRJSONVectorTests.invokeVector) + jsonRecord(#"{"type":3,"invocationId":"0","result":1}"#)
            + jsonRecord(#"{"type":6"#).dropLast()
        var offset = 0
        var types: [UInt8] = []
        while true {
            let result = bytes.withUnsafeBytes { JSONHubProtocol.parse(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            guard case .message(let m, let consumed) = result else {
                #expect(result == .needMore)
                break
            }
            types.append(m.type)
            offset += consumed
        }
        #expect(types == [6, 1, 3])
        #expect(offset == bytes.count - 9)
    }

    @Test func parseReportsErrorsAndOversizedRecords() {
        #expect(jsonParse(jsonRecord(#"{"type":3,"invocationId":"1","result":1,"error":"e"}"#)) == .failure(.resultAndError))
        #expect(jsonParse([jsonRS]) == .failure(.invalidJSON))
        #expect(jsonParse(jsonUTF8(String(repeating: " ", count: 100)), max: 64) == .failure(.messageTooLarge))
        #expect(jsonParse(jsonUTF8(String(repeating: " ", count: 64)), max: 64) == .needMore)
        #expect(jsonParse(jsonRecord(#"{"type":6}"#), max: 9) == .failure(.messageTooLarge))
        if case .message(let m, 11) = jsonParse(jsonRecord(#"{"type":6}"#), max: 10) { #expect(m.type == 6) } else { Issue.record("max is inclusive") }
    }
}

@Suite struct SignalRJSONRoundTripTests {
    static let awkwardStrings: [String] = [
        "", "plain", "quote\"backslash\\slash/", "controls\u{0}\u{1}\u{8}\u{9}\u{A}\u{C}\u{D}\u{1E}\u{1F}\u{7F}",
        "non-ASCII é ß 中文 \u{1F600} \u{10FFFF}", "\u{2028}\u{2029}", String(repeating: "x\"", count: 300),
    ]

    @Test func argumentsWithStringsNeedingEscapesSurviveWriteThenDecode() throws {
        for s in Self.awkwardStrings {
            let text = jsonUTF8(s)
            let bytes = try #require(jsonWritten { out in
                JSONHubProtocol.writeInvocation(into: out, invocationId: 5, target: "Echo") { w in
                    text.withUnsafeBytes { w.string($0) }
                    w.int(-1)
                }
            })
            let d = try jsonDecoded(bytes)
            #expect(d.string(d.element(d.message.arguments, 0)) == text, "\(s.debugDescription)")
            #expect(d.int(d.element(d.message.arguments, 1)) == -1)
            let object = try jsonFoundationObject(bytes)
            #expect((object["arguments"] as? [Any])?.first as? String == s, "Foundation reads the same text")
        }
    }

    @Test func everyMessageTypeRoundTrips() throws {
        let invoke = try jsonDecoded(try #require(jsonWritten { out in
            [UInt64(1)].withUnsafeBufferPointer { ids in
                JSONHubProtocol.writeInvocation(into: out, invocationId: .number(.max), target: "Up", streamIds: ids) { w in
                    w.int(.min); w.int(.max); w.uint(.max); w.bool(false); w.null(); w.array { $0.string("n") }
                    w.object { o in o.key("k"); o.string("v"); o.key("n"); o.object { _ in } }
                }
            }
        }))
        #expect(invoke.text(invoke.message.invocationId) == "18446744073709551615")
        #expect(invoke.text(invoke.message.arguments) == #"[-9223372036854775808,9223372036854775807,18446744073709551615,false,null,["n"],{"k":"v","n":{}}]"#)
        #expect(invoke.int(invoke.element(invoke.message.arguments, 0)) == .min)
        #expect(invoke.text(invoke.message.streamIds) == #"["1"]"#)

        let item = try jsonDecoded(try #require(jsonWritten { JSONHubProtocol.writeStreamItem(into: $0, invocationId: "s1") { $0.string("v") } }))
        #expect(item.message.messageType == .streamItem && item.text(item.message.item) == #""v""#)
        let error = try jsonDecoded(try #require(jsonWritten { JSONHubProtocol.writeCompletion(into: $0, invocationId: 3, error: "bad \"x\"") }))
        #expect(error.string(error.message.error.map { ($0.lowerBound - 1)..<($0.upperBound + 1) }) == jsonUTF8("bad \"x\""))
        let void = try jsonDecoded(try #require(jsonWritten { JSONHubProtocol.writeCompletion(into: $0, invocationId: 3) }))
        #expect(void.message.result == nil && void.message.error == nil)
        let result = try jsonDecoded(try #require(jsonWritten { JSONHubProtocol.writeCompletion(into: $0, invocationId: 3) { _ in } }))
        #expect(result.text(result.message.result) == "null", "a result closure writing nothing writes null")
        let stream = try jsonDecoded(try #require(jsonWritten { JSONHubProtocol.writeStreamInvocation(into: $0, invocationId: 4, target: "S") { _ in } }))
        #expect(stream.message.messageType == .streamInvocation && stream.arrayCount(stream.message.arguments) == 0)
        #expect(try jsonDecoded(try #require(jsonWritten { JSONHubProtocol.writeCancelInvocation(into: $0, invocationId: 4) })).message.messageType == .cancelInvocation)
        #expect(try jsonDecoded(try #require(jsonWritten { JSONHubProtocol.writePing(into: $0) })).message.messageType == .ping)
        let close = try jsonDecoded(try #require(jsonWritten { JSONHubProtocol.writeClose(into: $0, error: "e", allowReconnect: true) }))
        #expect(close.message.allowReconnect && close.text(close.message.error) == "e")
        #expect(try jsonDecoded(try #require(jsonWritten { JSONHubProtocol.writeAck(into: $0, sequenceId: 7) })).message.sequenceId == 7)
        let seq = try jsonDecoded(try #require(jsonWritten { JSONHubProtocol.writeSequence(into: $0, sequenceId: 8) }))
        #expect(seq.message.messageType == .sequence && seq.message.sequenceId == 8)
    }

    @Test func singleValueSlotsKeepOnlyTheFirstValue() throws {
        let bytes = try #require(jsonWritten { JSONHubProtocol.writeStreamItem(into: $0, invocationId: 1) { w in
            w.array { $0.int(1) }
            w.int(2)
            w.string("three")
        } })
        #expect(bytes == jsonRecord(#"{"type":2,"invocationId":"1","item":[1]}"#))
    }

    @Test func paddedStringWritesPrefixThenPaddingWithoutBuildingIt() throws {
        let prefix = jsonUTF8("s1:q2:")
        let bytes = try #require(jsonWritten { out in
            prefix.withUnsafeBytes { p in
                JSONHubProtocol.writeInvocation(into: out, target: "Send") { w in
                    w.paddedString(prefix: p, totalLength: 10, pad: UInt8(ascii: "x"))
                    w.paddedString(prefix: p, totalLength: 3, pad: UInt8(ascii: "x"))
                    w.paddedString(prefix: p, totalLength: 8, pad: 0x0A)
                }
            }
        })
        let d = try jsonDecoded(bytes)
        #expect(d.string(d.element(d.message.arguments, 0)) == jsonUTF8("s1:q2:xxxx"))
        #expect(d.string(d.element(d.message.arguments, 1)) == jsonUTF8("s1:q2:"), "a prefix longer than the total is kept whole")
        #expect(d.string(d.element(d.message.arguments, 2)) == jsonUTF8("s1:q2:\n\n"), "a pad that needs escaping is escaped")
    }

    @Test func doublesAreWrittenAsJSONNumbersThatReadBackExactly() throws {
        let cases: [(Double, String)] = [
            (0, "0.0"), (-0.0, "-0.0"), (1, "1.0"), (100, "100.0"), (0.1, "0.1"), (-2.5, "-2.5"), (0.001, "0.001"), (1e-7, "1e-7"),
            (1e21, "1e21"), (1e20, "100000000000000000000.0"), (123456.789, "123456.789"), (.pi, "3.141592653589793"),
            (0.1 + 0.2, "0.30000000000000004"), (.leastNonzeroMagnitude, "5e-324"), (.greatestFiniteMagnitude, "1.7976931348623157e308"),
            (.leastNormalMagnitude, "2.2250738585072014e-308"), (9007199254740992, "9007199254740992.0"),
        ]
        for (v, text) in cases {
            let bytes = try #require(jsonWritten { out in JSONHubProtocol.writeStreamItem(into: out, invocationId: 1) { $0.double(v) } })
            let d = try jsonDecoded(bytes)
            #expect(d.text(d.message.item) == text)
            // Swift's parser is exact (Foundation on Linux misreads some 17-digit texts).
            #expect(d.text(d.message.item).flatMap { Double($0) } == v)
        }
        for v in [Double.nan, .infinity, -.infinity] {
            let bytes = try #require(jsonWritten { out in JSONHubProtocol.writeStreamItem(into: out, invocationId: 1) { $0.double(v) } })
            #expect(bytes == jsonRecord(#"{"type":2,"invocationId":"1","item":null}"#))
        }
    }

    /// Grisu2 always reads back as the same double; it is the shortest text in all but rare
    /// cases, checked against Swift's own shortest `description`.
    @Test func randomDoublesRoundTripThroughTheirJSONText() throws {
        var rng = JSONFuzzRandom(state: 0xD0_0B1E)
        var longer = 0
        let count = 50_000
        for round in 0..<count {
            let v: Double
            switch round % 3 {
            case 0: v = Double(bitPattern: rng.next())
            case 1: v = Double.random(in: -1e6...1e6, using: &rng)
            default: v = Double(Int64.random(in: -1_000_000...1_000_000, using: &rng)) / 1000
            }
            guard v.isFinite else { continue }
            let bytes = try #require(jsonWritten(capacity: 128) { out in JSONHubProtocol.writeStreamItem(into: out, invocationId: 1) { $0.double(v) } })
            let d = try jsonDecoded(bytes)
            let text = try #require(d.text(d.message.item))
            #expect(Double(text) == v, "\(text) for \(v.description)")
            func significantDigits(_ s: String) -> Int {
                let mantissa = s.split(separator: "e")[0]
                let digits = mantissa.filter(\.isNumber).drop { $0 == "0" }
                return digits.reversed().drop { $0 == "0" }.count
            }
            if significantDigits(text) > significantDigits(v.description) { longer += 1 }
        }
        #expect(longer < count / 100, "\(longer) of \(count) texts longer than the shortest")
    }

    @Test func helpersRejectRangesThatAreNotWhatTheyExpect() {
        let bytes = jsonUTF8(#"["a",1,{"b":2}]"#)
        bytes.withUnsafeBytes { b in
            #expect(JSONHubProtocol.arrayCount(b, array: 0..<bytes.count) == 3)
            #expect(JSONHubProtocol.arrayCount(b, array: 0..<(bytes.count - 1)) == nil)
            #expect(JSONHubProtocol.arrayCount(b, array: 1..<4) == nil)
            #expect(JSONHubProtocol.arrayCount(b, array: 0..<(bytes.count + 5)) == nil)
            #expect(JSONHubProtocol.arrayElement(b, array: 0..<bytes.count, at: -1) == nil)
            #expect(JSONHubProtocol.arrayElement(b, array: 0..<bytes.count, at: 2) == 7..<14)
            #expect(JSONHubProtocol.stringContents(b, value: 1..<4) == 2..<3)
            #expect(JSONHubProtocol.stringContents(b, value: 5..<6) == nil)
            #expect(JSONHubProtocol.int64(b, value: 5..<6) == 1)
            #expect(JSONHubProtocol.int64(b, value: 1..<4) == nil)
        }
        #expect(jsonUnescaped(jsonUTF8(#"\ud83d\ude00 \ud83d \ude00 \u0041\/"#)) == jsonUTF8("\u{1F600} \u{FFFD} \u{FFFD} A/"))
        #expect(jsonUnescaped(jsonUTF8(#"\q"#)) == nil)
        #expect(jsonUnescaped(jsonUTF8(#"\u12"#)) == nil)
    }

    @Test func invocationIdsInCounterFormReadBackAsNumbers() {
        func value(_ s: String) -> UInt64? { jsonUTF8(s).withUnsafeBytes { HubInvocationID.decimalValue($0) } }
        #expect(value("0") == 0 && value("42") == 42 && value("18446744073709551615") == .max)
        #expect(value("") == nil && value("01") == nil && value("-1") == nil && value("18446744073709551616") == nil && value("x") == nil)
    }
}

@Suite struct SignalRJSONFuzzTests {
    static let seeds: [String] = [
        SignalRJSONVectorTests.invokeVector, #"{"type":6}"#, #"{"type":3,"invocationId":"1","result":{"a":[1,2.5e3,"x\u00e9"]}}"#,
        #"{"type":2,"invocationId":"1","item":null,"headers":{"a":"b"}}"#, #"{"type":7,"error":"e","allowReconnect":true}"#,
        #"{"type":8,"sequenceId":12}"#, #"{"type":1,"target":"T","arguments":[[[[{}]]]],"streamIds":["1"]}"#, #"{}"#,
    ]

    /// Decoding random and mutated records never traps, and every range it reports lies inside
    /// the input.
    @Test func decodingTwentyThousandRandomAndMutatedRecordsNeverTraps() {
        var rng = JSONFuzzRandom(state: 0x5157_4E41_4C52_4A53)
        let alphabet = jsonUTF8(#"{}[]":,\ -+.0123456789eEtrufalsn"#) + [0x1E, 0x00, 0x80, 0xC3, 0xA9, 0xFF, 0x09, 0x0A]
        var successes = 0
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 3 == 0 {
                let n = Int.random(in: 0...64, using: &rng)
                bytes = (0..<n).map { _ in alphabet.randomElement(using: &rng)! }
            } else {
                bytes = jsonUTF8(Self.seeds.randomElement(using: &rng)!)
                for _ in 0..<Int.random(in: 1...4, using: &rng) where !bytes.isEmpty {
                    let at = Int.random(in: 0..<bytes.count, using: &rng)
                    switch Int.random(in: 0..<4, using: &rng) {
                    case 0: bytes[at] = UInt8.random(in: 0...255, using: &rng)
                    case 1: bytes.remove(at: at)
                    case 2: bytes.insert(alphabet.randomElement(using: &rng)!, at: at)
                    default: bytes = Array(bytes[0..<at])
                    }
                }
                if Bool.random(using: &rng) { bytes.append(jsonRS) }
            }
            bytes.withUnsafeBytes { b in
                if case .success(let m) = JSONHubProtocol.decode(b) {
                    successes += 1
                    for r in [m.invocationId, m.target, m.arguments, m.streamIds, m.item, m.result, m.error, m.headers] {
                        if let r { #expect(r.lowerBound >= 0 && r.upperBound <= b.count) }
                    }
                    if let a = m.arguments, let n = JSONHubProtocol.arrayCount(b, array: a), n > 0 {
                        #expect(JSONHubProtocol.arrayElement(b, array: a, at: n - 1) != nil)
                    }
                }
                _ = JSONHubProtocol.parse(b)
                _ = HubHandshake.parseResponse(b)
                _ = JSONHubProtocol.arrayCount(b, array: 0..<b.count)
                var out = [UInt8](repeating: 0, count: b.count * 2)
                _ = out.withUnsafeMutableBytes { JSONHubProtocol.unescapeString(b, into: $0) }
            }
        }
        #expect(successes > 100, "some mutated records should stay valid, so the success path is fuzzed too")
    }
}
