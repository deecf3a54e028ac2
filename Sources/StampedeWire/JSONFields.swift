/// Reading the top level of a JSON object without building it: the checks the REST client's
/// processors make on a response body. Validation is the strict scanner of the hub codec.
public enum JSONFields {
    /// Whether `body` is exactly one valid JSON object that has every one of `keys` (raw key
    /// bytes, compared as written) among its top-level members. At most 64 keys.
    public static func objectHasKeys(_ body: UnsafeRawBufferPointer, _ keys: [[UInt8]]) -> Bool {
        precondition(keys.count <= 64)
        var found: UInt64 = 0
        let all: UInt64 = keys.count == 64 ? .max : (1 << UInt64(keys.count)) - 1
        let valid = HubJSONScanner.scanObject(body, from: 0, to: body.count) { key, _, _, _ in
            for (i, k) in keys.enumerated() where found & (1 << UInt64(i)) == 0 && equal(body, key, k) {
                found |= 1 << UInt64(i)
            }
            return true
        }
        return valid && found == all
    }

    /// The number held by top-level member `key` of the JSON object `body`, or nil when the
    /// body is not one valid object, the member is missing, or it is not a plain decimal number.
    public static func number(_ body: UnsafeRawBufferPointer, key: [UInt8]) -> Double? {
        var value: Range<Int>? = nil
        let valid = HubJSONScanner.scanObject(body, from: 0, to: body.count) { k, _, v, kind in
            if value == nil && kind == .number && equal(body, k, key) { value = v }
            return true
        }
        guard valid, let value else { return nil }
        return decimal(UnsafeRawBufferPointer(rebasing: body[value]))
    }

    /// A plain decimal (`-12`, `1763779200.123456`; no exponent) with surrounding spaces, as in
    /// a header value; nil for anything else. No allocation.
    public static func decimal(_ text: UnsafeRawBufferPointer) -> Double? {
        var i = 0, end = text.count
        while i < end && (text[i] == 0x20 || text[i] == 0x09) { i += 1 }
        while end > i && (text[end - 1] == 0x20 || text[end - 1] == 0x09) { end -= 1 }
        guard i < end else { return nil }
        var negative = false
        if text[i] == 0x2D { negative = true; i += 1 }
        var whole: UInt64 = 0, fraction: UInt64 = 0, scale: Double = 1, digits = 0
        while i < end, text[i] >= 0x30, text[i] <= 0x39 {
            guard whole < 1 << 59 else { return nil }
            whole = whole * 10 + UInt64(text[i] - 0x30)
            i += 1; digits += 1
        }
        if i < end && text[i] == 0x2E {
            i += 1
            while i < end, text[i] >= 0x30, text[i] <= 0x39 {
                // Beyond nanoseconds the digits change nothing a clock can tell.
                if scale < 1e9 { fraction = fraction * 10 + UInt64(text[i] - 0x30); scale *= 10 }
                i += 1; digits += 1
            }
        }
        guard i == end, digits > 0 else { return nil }
        let v = Double(whole) + Double(fraction) / scale
        return negative ? -v : v
    }

    @inline(__always)
    static func equal(_ b: UnsafeRawBufferPointer, _ r: Range<Int>, _ k: [UInt8]) -> Bool {
        guard r.count == k.count else { return false }
        var j = r.lowerBound
        for c in k {
            if b[j] != c { return false }
            j += 1
        }
        return true
    }
}
