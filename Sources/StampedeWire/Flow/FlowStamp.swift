/// A `MessageStamp` inside a frame of any protocol, behind a marker so it can be found without
/// knowing the frame's layout (`stamp: search`):
/// - text: `~st~` then `ChatCodec.writeStamp`'s `s<hex>:q<hex>:t<hex>:a<hex>:` (at most 60 bytes;
///   no character that JSON, XML or STOMP would escape);
/// - binary: `~SB~` then sender u32, sequence u32, intended u64, actual u64, all big-endian
///   (28 bytes, fixed, so binary templates keep fixed offsets).
public enum FlowStamp {
    public static let textMarker: [UInt8] = Array("~st~".utf8)
    public static let binaryMarker: [UInt8] = Array("~SB~".utf8)
    public static let binaryLength = 28
    /// The longest text stamp (four 16-digit hex fields).
    public static let maxTextLength = 4 + 56

    /// Bytes `writeText` writes for `s`.
    @inlinable
    public static func textLength(_ s: MessageStamp) -> Int { 4 + ChatCodec.stampLength(s) }

    /// Writes `~st~s…:q…:t…:a…:` at `out` (which holds `textLength(s)` bytes); returns its length.
    @inlinable
    public static func writeText(_ s: MessageStamp, into out: UnsafeMutableRawPointer) -> Int {
        // "~st~" as one little-endian word would tie the layout to the host; bytes are clearer.
        out.storeBytes(of: 0x7E, toByteOffset: 0, as: UInt8.self)
        out.storeBytes(of: 0x73, toByteOffset: 1, as: UInt8.self)
        out.storeBytes(of: 0x74, toByteOffset: 2, as: UInt8.self)
        out.storeBytes(of: 0x7E, toByteOffset: 3, as: UInt8.self)
        return 4 + ChatCodec.writeStamp(s, into: out + 4)
    }

    /// Writes the 28-byte binary stamp at `out`.
    @inlinable
    public static func writeBinary(_ s: MessageStamp, into out: UnsafeMutableRawPointer) {
        out.storeBytes(of: 0x7E, toByteOffset: 0, as: UInt8.self)
        out.storeBytes(of: 0x53, toByteOffset: 1, as: UInt8.self)
        out.storeBytes(of: 0x42, toByteOffset: 2, as: UInt8.self)
        out.storeBytes(of: 0x7E, toByteOffset: 3, as: UInt8.self)
        out.storeBytes(of: s.sender.bigEndian, toByteOffset: 4, as: UInt32.self)
        out.storeBytes(of: s.sequence.bigEndian, toByteOffset: 8, as: UInt32.self)
        out.storeBytes(of: s.intendedNs.bigEndian, toByteOffset: 12, as: UInt64.self)
        out.storeBytes(of: s.actualNs.bigEndian, toByteOffset: 20, as: UInt64.self)
    }

    /// The stamp at the start of `bytes` (text or binary, by its marker); what follows it is
    /// ignored. nil when there is none.
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> MessageStamp? {
        guard bytes.count >= 4, bytes[0] == 0x7E, bytes[3] == 0x7E else { return nil }
        if bytes[1] == 0x73 && bytes[2] == 0x74 {
            return ChatCodec.parseStamp(UnsafeRawBufferPointer(rebasing: bytes[4...]))
        }
        guard bytes[1] == 0x53, bytes[2] == 0x42, bytes.count >= binaryLength else { return nil }
        return MessageStamp(sender: bigEndian(bytes, 4, as: UInt32.self), sequence: bigEndian(bytes, 8, as: UInt32.self),
                            intendedNs: bigEndian(bytes, 12, as: UInt64.self), actualNs: bigEndian(bytes, 20, as: UInt64.self))
    }

    /// The first well-formed stamp anywhere in `frame` (a marker followed by something else is
    /// passed over). nil when there is none.
    public static func search(_ frame: UnsafeRawBufferPointer) -> MessageStamp? {
        var i = 0
        // Both markers start with `~`, found eight bytes at a time.
        while i + 4 <= frame.count, let j = HTTPBytes.firstIndex(of: 0x7E, in: frame, from: i, to: frame.count - 3) {
            if let s = parse(UnsafeRawBufferPointer(rebasing: frame[j...])) { return s }
            i = j + 1
        }
        return nil
    }

    @inline(__always)
    static func bigEndian<T: FixedWidthInteger>(_ b: UnsafeRawBufferPointer, _ offset: Int, as: T.Type) -> T {
        T(bigEndian: b.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}
