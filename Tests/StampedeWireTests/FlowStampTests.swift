import StampedeWire
import Testing

/// Stamps behind a marker: written as text (the chat stamp) or 28 binary bytes, read back at a
/// known place or found anywhere in a frame; damaged stamps are passed over, never trusted.
struct FlowStampTests {
    let stamps = [MessageStamp(sender: 0, sequence: 0, intendedNs: 0, actualNs: 0),
                  MessageStamp(sender: 42, sequence: 7, intendedNs: 1_234_567_890, actualNs: 1_234_567_999),
                  MessageStamp(sender: .max, sequence: .max, intendedNs: .max, actualNs: .max)]

    func textStamp(_ s: MessageStamp) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: FlowStamp.textLength(s))
        let n = out.withUnsafeMutableBytes { FlowStamp.writeText(s, into: $0.baseAddress!) }
        #expect(n == out.count)
        #expect(n <= FlowStamp.maxTextLength)
        return out
    }

    func binaryStamp(_ s: MessageStamp) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: FlowStamp.binaryLength)
        out.withUnsafeMutableBytes { FlowStamp.writeBinary(s, into: $0.baseAddress!) }
        return out
    }

    @Test func textAndBinaryStampsRoundTrip() {
        for s in stamps {
            let text = textStamp(s)
            #expect(Array(text.prefix(4)) == FlowStamp.textMarker)
            #expect(text.withUnsafeBytes { FlowStamp.parse($0) } == s)
            let binary = binaryStamp(s)
            #expect(Array(binary.prefix(4)) == FlowStamp.binaryMarker)
            #expect(binary.withUnsafeBytes { FlowStamp.parse($0) } == s)
        }
        #expect(String(decoding: textStamp(stamps[1]), as: UTF8.self) == "~st~s2a:q7:t499602d2:a4996033f:")
        #expect(binaryStamp(stamps[1]) == Array("~SB~".utf8) + [0, 0, 0, 42, 0, 0, 0, 7] + [0, 0, 0, 0, 0x49, 0x96, 0x02, 0xD2]
                + [0, 0, 0, 0, 0x49, 0x96, 0x03, 0x3F])
    }

    /// A binary stamp has no check of its own: `~SB~` followed by 24 bytes is taken as one.
    @Test func searchFindsAStampAnywhereAndSkipsDamagedOnes() {
        let s = stamps[1]
        let text = textStamp(s), binary = binaryStamp(s)
        let frames: [[UInt8]] = [
            Array(#"{"op":"event","data":{"stamp":""#.utf8) + text + Array(#""}}"#.utf8),
            Array("MESSAGE\n\n~st~broken ~st ~".utf8) + text + [0],
            [0x30, 0x22, 0x7E, 0x7E] + binary + [0xFF],
            Array("~st~s1:q2:".utf8) + binary,
            Array("~s~SB~".utf8) + binary.dropFirst(4),
        ]
        for f in frames { #expect(f.withUnsafeBytes { FlowStamp.search($0) } == s, "\(f)") }
    }

    @Test func truncatedOrAbsentStampsAreNil() {
        let text = textStamp(stamps[1]), binary = binaryStamp(stamps[1])
        for n in 0..<text.count {
            #expect(text.withUnsafeBytes { FlowStamp.search(UnsafeRawBufferPointer(rebasing: $0[0..<n])) } == nil, "text cut at \(n)")
        }
        for n in 0..<binary.count {
            #expect(binary.withUnsafeBytes { FlowStamp.search(UnsafeRawBufferPointer(rebasing: $0[0..<n])) } == nil, "binary cut at \(n)")
        }
        for frame in ["", "~", "~st", "~st~", "~SB~", "no stamp here", "~st~s:q1:t1:a1:", "~st~s1:q1:t1:a1", "~st~S1:q1:t1:a1:",
                      "~st~s100000000:q1:t1:a1:", "~st~s1:q1:t11111111111111111:a1:"] {
            #expect(Array(frame.utf8).withUnsafeBytes { FlowStamp.search($0) } == nil, "\(frame)")
        }
    }
}
