/// Base64 with the standard alphabet and padding (RFC 4648 §4): the WebSocket handshake's keys,
/// and Engine.IO long polling's binary packets ("b" + base64, docs/protocols.md §9).
public enum Base64 {
    static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    /// Each byte's 6-bit value, or 0xFF for a byte outside the alphabet.
    static let values: [UInt8] = {
        var v = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { v[Int(c)] = UInt8(i) }
        return v
    }()

    /// The encoded length of `n` bytes, padding included.
    public static func encodedCount(_ n: Int) -> Int { (n + 2) / 3 * 4 }

    /// Encodes `bytes` at the start of `out`; the count written, nil when `out` is too small.
    public static func encode(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        let n = encodedCount(bytes.count)
        guard n <= out.count else { return nil }
        var i = 0, o = 0
        while i + 3 <= bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            for s in [18, 12, 6, 0] as [UInt32] { out[o] = alphabet[Int((v >> s) & 0x3F)]; o += 1 }
            i += 3
        }
        let rest = bytes.count - i
        if rest > 0 {
            let v = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
            out[o] = alphabet[Int((v >> 18) & 0x3F)]
            out[o + 1] = alphabet[Int((v >> 12) & 0x3F)]
            out[o + 2] = rest == 2 ? alphabet[Int((v >> 6) & 0x3F)] : 0x3D
            out[o + 3] = 0x3D
            o += 4
        }
        return o
    }

    /// `bytes` as base64 text (Sec-WebSocket-Accept, Sec-WebSocket-Key).
    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8](repeating: 0, count: encodedCount(bytes.count))
        let n = bytes.withUnsafeBytes { b in out.withUnsafeMutableBytes { encode(b, into: $0) } } ?? 0
        return String(decoding: out[..<n], as: UTF8.self)
    }

    /// The decoded length of valid base64 text of `count` bytes ending as `text` does, before
    /// checking the alphabet; nil when the length is not a multiple of 4.
    public static func decodedCount(_ text: UnsafeRawBufferPointer) -> Int? {
        guard text.count % 4 == 0 else { return nil }
        var n = text.count / 4 * 3
        if text.count >= 1, text[text.count - 1] == 0x3D { n -= 1 }
        if text.count >= 2, text[text.count - 2] == 0x3D { n -= 1 }
        return n
    }

    /// Decodes `text` at the start of `out`; the count written, nil when the text is not
    /// padded base64 of the standard alphabet or `out` is too small.
    public static func decode(_ text: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        guard let n = decodedCount(text), n <= out.count else { return nil }
        var o = 0, i = 0
        while i < text.count {
            let last = i + 4 == text.count
            var v: UInt32 = 0
            var pads = 0
            for k in 0..<4 {
                let c = text[i + k]
                if c == 0x3D, last, k >= 2 { pads += 1; v <<= 6; continue }
                guard pads == 0 else { return nil }  // data after "="
                let d = values[Int(c)]
                guard d != 0xFF else { return nil }
                v = v << 6 | UInt32(d)
            }
            out[o] = UInt8(truncatingIfNeeded: v >> 16); o += 1
            if pads < 2 { out[o] = UInt8(truncatingIfNeeded: v >> 8); o += 1 }
            if pads < 1 { out[o] = UInt8(truncatingIfNeeded: v); o += 1 }
            i += 4
        }
        return o
    }
}
