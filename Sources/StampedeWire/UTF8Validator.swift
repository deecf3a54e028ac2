/// Incremental UTF-8 validation (Bjoern Hoehrmann's DFA), so text split across fragments is
/// checked as it arrives and an invalid message fails fast (RFC 6455 §8.1).
public struct UTF8Validator: Sendable {
    public static let accept: UInt8 = 0
    public static let reject: UInt8 = 12
    @usableFromInline var state: UInt8 = 0

    public init() {}

    /// True when everything fed so far ends on a character boundary.
    @inlinable public var isComplete: Bool { state == Self.accept }
    @inlinable public var isRejected: Bool { state == Self.reject }
    @inlinable public mutating func reset() { state = Self.accept }

    /// Feeds bytes; returns false as soon as the input cannot be valid UTF-8.
    @inlinable
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return state != Self.reject }
        let count = bytes.count
        var i = 0
        var s = state
        while i < count {
            // ASCII fast path, 8 bytes at a time, only between characters.
            if s == Self.accept {
                while i + 8 <= count && base.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 { i += 8 }
                if i >= count { break }
            }
            let byte = base.load(fromByteOffset: i, as: UInt8.self)
            let type = utf8CharacterClass[Int(byte)]
            s = utf8Transitions[Int(s) + Int(type)]
            if s == Self.reject { state = s; return false }
            i += 1
        }
        state = s
        return true
    }

    /// Validates a complete byte sequence.
    @inlinable
    public static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var v = UTF8Validator()
        return v.feed(bytes) && v.isComplete
    }
}

@usableFromInline let utf8CharacterClass: [UInt8] = [
    0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
    0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
    0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
    0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
    1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1, 9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,
    7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7, 7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,
    8,8,2,2,2,2,2,2,2,2,2,2,2,2,2,2, 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,
    10,3,3,3,3,3,3,3,3,3,3,3,3,4,3,3, 11,6,6,6,5,8,8,8,8,8,8,8,8,8,8,8,
]

@usableFromInline let utf8Transitions: [UInt8] = [
    0,12,24,36,60,96,84,12,12,12,48,72, 12,12,12,12,12,12,12,12,12,12,12,12,
    12, 0,12,12,12,12,12, 0,12, 0,12,12, 12,24,12,12,12,12,12,24,12,24,12,12,
    12,12,12,12,12,12,12,24,12,12,12,12, 12,24,12,12,12,12,12,12,12,24,12,12,
    12,12,12,12,12,12,12,36,12,36,12,12, 12,36,12,12,12,12,12,36,12,36,12,12,
    12,36,12,12,12,12,12,12,12,12,12,12,
]
