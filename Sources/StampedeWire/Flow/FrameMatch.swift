/// Where a value sits in a received frame: what a capture, `correlate` or `stamp` reads.
public enum FieldSelector: Sendable, Equatable {
    /// A JSON value by path (see `JSONPath.value(in:)` for what the range holds).
    case path(JSONPath)
    /// The bytes after the first `start` and before the next `end` (STOMP headers:
    /// `receipt-id:` … `\n`). An empty `start` means the frame's beginning, an empty `end` its end.
    case between(start: [UInt8], end: [UInt8])
    /// `length` bytes at `offset` (binary frames); nil when the frame is shorter.
    case bytes(offset: Int, length: Int)

    /// The selected bytes' range in `payload`, or nil when they are not there.
    public func extract(_ payload: UnsafeRawBufferPointer) -> Range<Int>? {
        switch self {
        case .path(let path):
            return path.value(in: payload)
        case .between(let start, let end):
            let from: Int
            if start.isEmpty {
                from = 0
            } else {
                guard let s = start.withUnsafeBytes({ FlowBytes.firstRange(of: $0, in: payload, from: 0) }) else { return nil }
                from = s.upperBound
            }
            if end.isEmpty { return from..<payload.count }
            guard let e = end.withUnsafeBytes({ FlowBytes.firstRange(of: $0, in: payload, from: from) }) else { return nil }
            return from..<e.lowerBound
        case .bytes(let offset, let length):
            guard offset >= 0, length >= 0, offset <= payload.count, length <= payload.count - offset else { return nil }
            return offset..<(offset + length)
        }
    }
}

/// A rule's `match:`: every condition must hold. Built once by the scenario loader; `holds`
/// only reads the payload.
public struct FrameMatch: Sendable, Equatable {
    public enum Condition: Sendable, Equatable {
        /// The selected bytes equal these exactly (values compare as text: a JSON string's
        /// contents as written, escapes included; a number as written).
        case equals(FieldSelector, [UInt8])
        case prefix([UInt8])
        case contains([UInt8])
        /// A text frame (`true`) or a binary one.
        case opcode(isText: Bool)
        /// `payload[offset + k] & mask[k] == bytes[k] & mask[k]` for every k; a mask shorter
        /// than `bytes` is all ones beyond its end.
        case masked(offset: Int, bytes: [UInt8], mask: [UInt8])
    }

    public var conditions: [Condition]

    public init(_ conditions: [Condition]) { self.conditions = conditions }

    /// Whether every condition holds for this frame (an empty match holds for every frame).
    public func holds(_ payload: UnsafeRawBufferPointer, isText: Bool) -> Bool {
        for c in conditions where !Self.holds(c, payload, isText: isText) { return false }
        return true
    }

    static func holds(_ c: Condition, _ payload: UnsafeRawBufferPointer, isText: Bool) -> Bool {
        switch c {
        case .equals(let selector, let value):
            guard let r = selector.extract(payload) else { return false }
            return value.withUnsafeBytes { FlowBytes.equal(payload, r, $0) }
        case .prefix(let p):
            guard p.count <= payload.count else { return false }
            return p.withUnsafeBytes { FlowBytes.equal(payload, 0..<p.count, $0) }
        case .contains(let needle):
            return needle.withUnsafeBytes { FlowBytes.firstRange(of: $0, in: payload, from: 0) } != nil
        case .opcode(let text):
            return text == isText
        case .masked(let offset, let bytes, let mask):
            guard offset >= 0, offset <= payload.count, bytes.count <= payload.count - offset else { return false }
            for k in 0..<bytes.count {
                let m = k < mask.count ? mask[k] : 0xFF
                if payload[offset + k] & m != bytes[k] & m { return false }
            }
            return true
        }
    }
}

/// Byte-string helpers of the flow pieces, over caller buffers.
enum FlowBytes {
    /// The first occurrence of `needle` in `hay[from...]`; an empty needle is found at `from`.
    static func firstRange(of needle: UnsafeRawBufferPointer, in hay: UnsafeRawBufferPointer, from: Int) -> Range<Int>? {
        let n = needle.count
        guard from >= 0, from <= hay.count, n <= hay.count - from else { return nil }
        guard n > 0 else { return from..<from }
        let first = needle[0]
        let lastStart = hay.count - n
        var i = from
        // The first byte is found eight bytes at a time; the rest compared where it is.
        while i <= lastStart, let j = HTTPBytes.firstIndex(of: first, in: hay, from: i, to: lastStart + 1) {
            if equal(hay, j..<(j + n), needle) { return j..<(j + n) }
            i = j + 1
        }
        return nil
    }

    /// Whether `b[range]` equals `value` (`range` must lie in `b`).
    @inline(__always)
    static func equal(_ b: UnsafeRawBufferPointer, _ range: Range<Int>, _ value: UnsafeRawBufferPointer) -> Bool {
        guard range.count == value.count else { return false }
        var j = range.lowerBound
        for c in value {
            if b[j] != c { return false }
            j += 1
        }
        return true
    }
}
