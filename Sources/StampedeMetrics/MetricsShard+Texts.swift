// Texts a server chooses (close reasons, step names, unrecognised frames) counted under bounds:
// a server cannot grow the results, or a worker's frames, without limit.
extension MetricsShard {
    /// Longest close reason kept, in UTF-8 bytes (a Close carries at most 123).
    public static let maxCloseReasonBytes = 123
    /// Frames kept in `samples`, and the longest kept (UTF-8 bytes, or 100 bytes as hex).
    public static let maxSamples = 3
    public static let maxSampleBytes = 200
    /// The key a Close without a status code counts under.
    public static let noCloseCode = "no code"
    /// The key every text beyond `maxDistinctHubErrors` distinct ones counts under.
    public static let otherKey = "(other)"

    /// Counts a Close the server started: "4401 auth first", "1000" (no reason), or "no code".
    public mutating func countClose(code: UInt16?, reason: String, _ n: UInt64 = 1) {
        guard let code else { return countCloseKey(Self.noCloseCode, n) }
        countCloseKey(reason.isEmpty ? "\(code)" : "\(code) \(Self.cut(reason, to: Self.maxCloseReasonBytes))", n)
    }

    /// Counts under a key `countClose` made (merging shards, reading a worker's frame).
    public mutating func countCloseKey(_ key: String, _ n: UInt64 = 1) {
        Self.countBounded(&closeCodes, Self.cut(key, to: Self.maxHubErrorBytes), n)
    }

    /// Counts a Socket.IO CONNECT_ERROR by the server's message (cut as hub errors are).
    public mutating func countConnectError(_ text: String, _ n: UInt64 = 1) {
        Self.countBounded(&connectErrorMessages, Self.cut(text, to: Self.maxHubErrorBytes), n)
    }

    /// Counts a connect step's failure, named by the workload ("expect_timeout: connect step 2").
    public mutating func countStepError(_ text: String, _ n: UInt64 = 1) {
        Self.countBounded(&stepErrors, Self.cut(text, to: Self.maxHubErrorBytes), n)
    }

    /// Whether another sample is wanted: check before building one, so a busy run stops
    /// allocating for samples once it has `maxSamples`.
    @inline(__always) public var wantsSample: Bool { samples.count < Self.maxSamples }

    /// Keeps a frame no rule recognised (up to `maxSamples`): text cut at `maxSampleBytes` on a
    /// character boundary; a binary frame, or text that is not UTF-8, as hex of its first bytes.
    public mutating func keepSample(_ frame: UnsafeRawBufferPointer, isText: Bool) {
        guard wantsSample else { return }
        if isText, let text = String(validating: frame, as: UTF8.self) {
            samples.append(Self.cut(text, to: Self.maxSampleBytes))
        } else {
            let digits: [UInt8] = Array("0123456789abcdef".utf8)
            var hex = [UInt8]()
            hex.reserveCapacity(Self.maxSampleBytes)
            for byte in frame.prefix(Self.maxSampleBytes / 2) {
                hex.append(digits[Int(byte >> 4)]); hex.append(digits[Int(byte & 0x0F)])
            }
            samples.append(String(decoding: hex, as: UTF8.self))
        }
    }

    /// `text` in at most `limit` UTF-8 bytes: cut on a character boundary (still valid UTF-8)
    /// and ending in "…" when cut.
    public static func cut(_ text: String, to limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        let bytes = Array(text.utf8)
        var end = limit - 3  // room for "…"
        while end > 0 && bytes[end] & 0xC0 == 0x80 { end -= 1 }  // not inside a character
        return String(decoding: bytes[..<end], as: UTF8.self) + "…"
    }

    /// Adds every count of `other` to `map` under the same bound (merging results folders).
    public static func addBounded(_ map: inout [String: UInt64], _ other: [String: UInt64]) {
        for (key, n) in other.sorted(by: { $0.key < $1.key }) { countBounded(&map, key, n) }
    }

    /// Adds `n` under `key`, or under "(other)" once `maxDistinctHubErrors` keys are taken.
    static func countBounded(_ map: inout [String: UInt64], _ key: String, _ n: UInt64) {
        let kept = map[key] != nil || map.count < maxDistinctHubErrors ? key : otherKey
        map[kept, default: 0] &+= n
    }
}
