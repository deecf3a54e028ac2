
/// A connection token (or v0 connection id) as a hashable value without a String: up to 24
/// bytes packed into three words plus the length. Our tokens are 22 base64url characters;
/// anything longer than 24 bytes cannot be ours and is never looked up.
struct HubTokenKey: Hashable {
    var a: UInt64 = 0
    var b: UInt64 = 0
    var c: UInt64 = 0
    var count: UInt8 = 0

    static let capacity = 24

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty, bytes.count <= Self.capacity else { return nil }
        count = UInt8(bytes.count)
        withUnsafeMutableBytes(of: &self) { raw in
            raw.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        }
    }

    init?(_ bytes: [UInt8]) {
        guard let k = bytes.withUnsafeBytes({ HubTokenKey($0) }) else { return nil }
        self = k
    }
}
