import CZlib
import Foundation
import StampedeMetrics

/// HdrHistogram's V2 compressed histogram encoding, the payload of every .hlog interval line
/// (the HdrHistogram log format spec; the Java classes `AbstractHistogram.encodeIntoByteBuffer`,
/// `encodeIntoCompressedByteBuffer`, `decodeFromCompressedByteBuffer` and `ZigZagEncoding`).
///
/// Layout, all integers big-endian:
/// - compressed envelope: cookie `0x1c849314` (V2 compressed base `0x1c849304` with word size
///   nibble `0x10`), Int32 length of the zlib stream, the zlib stream (RFC 1950);
/// - the inflated payload: cookie `0x1c849313` (V2 encoding base `0x1c849303` | `0x10`),
///   Int32 payloadLengthInBytes, Int32 normalizingIndexOffset, Int32
///   numberOfSignificantValueDigits, Int64 lowestDiscernibleValue, Int64 highestTrackableValue,
///   Float64 integerToDoubleValueConversionRatio (40 bytes), then the counts from index 0 to the
///   index of the highest recorded value: each a ZigZag LEB128 number (at most 9 bytes, the
///   ninth carrying 8 bits), a negative number standing for that many zero counts.
///
/// The Java and Python writers set the word-size nibble; readers mask it off
/// (`cookie & ~0xf0`), and so do we.
public enum HistogramCodec {
    public static let encodingCookieBase: UInt32 = 0x1c84_9303
    public static let compressedCookieBase: UInt32 = 0x1c84_9304
    /// The V2 cookies as written: the base with the word size nibble (LEB128-64b9B) set.
    public static let encodingCookie: UInt32 = encodingCookieBase | 0x10
    public static let compressedCookie: UInt32 = compressedCookieBase | 0x10
    static let payloadHeaderSize = 40
    /// The largest inflated payload we accept: a 3-digit histogram's full counts array is about
    /// 60 K entries; 8 MiB leaves room for any other layout's and bounds a hostile stream.
    static let maxInflatedBytes = 8 << 20
    /// The largest counts array a header may declare (5 significant digits over 63 bits is
    /// about 3 M); more is not a histogram any writer produces.
    static let maxCountsLength = 1 << 23

    /// The base64 text of `histogram`'s V2 compressed encoding, as an .hlog line carries it.
    public static func encodeBase64(_ histogram: LatencyHistogram) -> String {
        Data(encodeCompressed(histogram)).base64EncodedString()
    }

    /// The V2 compressed encoding (envelope + zlib stream) of `histogram`.
    public static func encodeCompressed(_ histogram: LatencyHistogram) -> [UInt8] {
        let compressed = deflate(encodePayload(histogram))
        var out: [UInt8] = []
        out.reserveCapacity(8 + compressed.count)
        appendBigEndian(&out, compressedCookie)
        appendBigEndian(&out, UInt32(compressed.count))
        out += compressed
        return out
    }

    /// zlib's `compress2` at the default level (what Java's `Deflater` and Python's
    /// `zlib.compress` use).
    static func deflate(_ payload: [UInt8]) -> [UInt8] {
        var bound = compressBound(uLong(payload.count))
        var compressed = [UInt8](repeating: 0, count: Int(bound))
        let status = compressed.withUnsafeMutableBufferPointer { dst in
            payload.withUnsafeBufferPointer { src in
                compress2(dst.baseAddress, &bound, src.baseAddress, uLong(src.count), Z_DEFAULT_COMPRESSION)
            }
        }
        // compress2 cannot fail with a compressBound-sized buffer and a valid level.
        precondition(status == Z_OK, "compress2 failed: \(status)")
        compressed.removeSubrange(Int(bound)...)
        return compressed
    }

    /// The uncompressed V2 payload: header and ZigZag LEB128 counts.
    static func encodePayload(_ histogram: LatencyHistogram) -> [UInt8] {
        let layout = HistogramLayout.latency
        var counts: [UInt8] = []
        var nextIndex = 0
        if histogram.totalCount > 0 {
            for recorded in histogram.recordedValues() {
                let index = layout.countsIndex(for: recorded.value)
                // Java `AbstractHistogram.encodeIntoByteBuffer`: one zero as 0, a run as -length
                // (the C and Python encoders write a lone zero as -1; readers take both).
                let zeros = index - nextIndex
                if zeros == 1 {
                    ZigZag.append(&counts, 0)
                } else if zeros > 1 {
                    ZigZag.append(&counts, -Int64(zeros))
                }
                ZigZag.append(&counts, Int64(clamping: recorded.count))
                nextIndex = index + 1
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(payloadHeaderSize + counts.count)
        appendBigEndian(&out, encodingCookie)
        appendBigEndian(&out, UInt32(counts.count))
        appendBigEndian(&out, UInt32(0))  // normalizingIndexOffset: never shifted
        appendBigEndian(&out, UInt32(layout.significantDigits))
        appendBigEndian(&out, layout.lowestDiscernibleValue)
        appendBigEndian(&out, layout.highestTrackableValue)
        appendBigEndian(&out, (1.0 as Double).bitPattern)  // integerToDoubleValueConversionRatio
        out += counts
        return out
    }

    /// Decodes an .hlog line's base64 histogram into a `LatencyHistogram`. A histogram of another
    /// layout (other significant digits or lowest value) is recorded bucket by bucket at each
    /// bucket's lowest value; one of ours (1 µs … 1 h, 3 digits) comes back bucket for bucket.
    ///
    /// The encoding keeps buckets, not the exact highest value, which `valueAtPercentile` clamps
    /// to: `maxValue` (the line's Interval_Max, in the histogram's unit) restores it when it lies in
    /// the highest bucket, so percentiles come back exactly too.
    public static func decodeBase64(_ text: some StringProtocol, maxValue: UInt64? = nil) throws(HistogramCodecError) -> LatencyHistogram {
        histogram(try decodeRecordsBase64(text, maxValue: maxValue))
    }

    /// What `decodeBase64` records, without the 184 KiB histogram: (value, count) pairs in
    /// increasing value order. A reader that keeps only buckets (`SparseHistogram`) takes these.
    public static func decodeRecordsBase64(_ text: some StringProtocol, maxValue: UInt64? = nil) throws(HistogramCodecError) -> [(value: UInt64, count: UInt64)] {
        guard let data = Data(base64Encoded: String(text)) else { throw .invalidBase64 }
        return try decodeCompressedRecords([UInt8](data), maxValue: maxValue)
    }

    /// Decodes a V2 compressed encoding (envelope + zlib stream).
    public static func decodeCompressed(_ bytes: [UInt8], maxValue: UInt64? = nil) throws(HistogramCodecError) -> LatencyHistogram {
        histogram(try decodeCompressedRecords(bytes, maxValue: maxValue))
    }

    static func decodeCompressedRecords(_ bytes: [UInt8], maxValue: UInt64?) throws(HistogramCodecError) -> [(value: UInt64, count: UInt64)] {
        var reader = ByteReader(bytes: bytes)
        guard let cookie = reader.uint32(), let length = reader.uint32() else { throw .truncated("compressed header") }
        guard cookie & ~0xf0 == compressedCookieBase else { throw .badCookie(cookie) }
        guard Int(length) == bytes.count - 8 else { throw .lengthMismatch(declared: Int(length), actual: bytes.count - 8) }
        let payload = try inflate(Array(bytes[8...]))
        return try decodePayloadRecords(payload, maxValue: maxValue)
    }

    /// Decodes an uncompressed V2 payload.
    static func decodePayload(_ bytes: [UInt8], maxValue: UInt64? = nil) throws(HistogramCodecError) -> LatencyHistogram {
        histogram(try decodePayloadRecords(bytes, maxValue: maxValue))
    }

    /// A histogram with `records` recorded.
    static func histogram(_ records: [(value: UInt64, count: UInt64)]) -> LatencyHistogram {
        var histogram = makeLatencyHistogram()
        for r in records { histogram.record(r.value, count: r.count) }
        return histogram
    }

    /// The values to record for an uncompressed V2 payload: each bucket's value and count, the
    /// highest bucket's exact `maxValue` apart.
    static func decodePayloadRecords(_ bytes: [UInt8], maxValue: UInt64?) throws(HistogramCodecError) -> [(value: UInt64, count: UInt64)] {
        let (layout, entries) = try decodeEntries(bytes)
        var records: [(value: UInt64, count: UInt64)] = []
        records.reserveCapacity(entries.count + 1)
        for (n, entry) in entries.enumerated() {
            let bucketValue = layout.value(atIndex: entry.index)
            guard bucketValue <= HistogramLayout.latency.highestTrackableValue else { throw .valueOutOfRange(bucketValue) }
            var count = entry.count
            var exactMax: UInt64?
            if n == entries.count - 1, let max = maxValue, max > bucketValue, layout == HistogramLayout.latency,
               max <= HistogramLayout.latency.highestTrackableValue, layout.countsIndex(for: max) == entry.index {
                exactMax = max
                count -= 1
            }
            if count > 0 { records.append((bucketValue, count)) }
            if let exactMax { records.append((exactMax, 1)) }
        }
        return records
    }

    /// The header's layout and the non-zero counts by index, in index order.
    static func decodeEntries(_ bytes: [UInt8]) throws(HistogramCodecError) -> (HistogramLayout, [(index: Int, count: UInt64)]) {
        var reader = ByteReader(bytes: bytes)
        guard let cookie = reader.uint32(), let payloadLength = reader.uint32(), let normalizing = reader.uint32(),
              let digits = reader.uint32(), let lowest = reader.uint64(), let highest = reader.uint64(),
              let ratioBits = reader.uint64()
        else { throw .truncated("payload header") }
        guard cookie & ~0xf0 == encodingCookieBase else { throw .badCookie(cookie) }
        guard normalizing == 0 else { throw .unsupported("normalizingIndexOffset \(Int32(bitPattern: normalizing))") }
        let ratio = Double(bitPattern: ratioBits)
        guard ratio == 1.0 else { throw .unsupported("integerToDoubleValueConversionRatio \(ratio) (a DoubleHistogram)") }
        guard Int(payloadLength) <= bytes.count - payloadHeaderSize else {
            throw .lengthMismatch(declared: Int(payloadLength), actual: bytes.count - payloadHeaderSize)
        }
        let layout = try HistogramLayout(significantDigits: digits, lowestDiscernibleValue: lowest, highestTrackableValue: highest)
        var entries: [(index: Int, count: UInt64)] = []
        var index = 0
        let end = payloadHeaderSize + Int(payloadLength)
        // Each step reads at least one byte, so the loop runs at most payloadLength times.
        while reader.offset < end {
            let value = try ZigZag.read(&reader, end: end)
            if value < 0 {
                // A run of zero counts (Java `AbstractHistogram.fillCountsArrayFromSourceBuffer`).
                guard value != .min else { throw .badCount(index: index) }
                let (next, overflow) = index.addingReportingOverflow(Int(-value))
                guard !overflow, next <= layout.countsLength else { throw .indexOutOfRange(next) }
                index = next
                continue
            }
            guard index < layout.countsLength else { throw .indexOutOfRange(index) }
            if value > 0 { entries.append((index, UInt64(value))) }
            index += 1
        }
        return (layout, entries)
    }

    /// zlib's `uncompress` into a buffer bounded by deflate's best ratio (about 1032:1) and by
    /// `maxInflatedBytes`: a stream that inflates to more is refused, not followed.
    static func inflate(_ compressed: [UInt8]) throws(HistogramCodecError) -> [UInt8] {
        guard !compressed.isEmpty else { throw .truncated("zlib stream") }
        let bound = compressed.count >= maxInflatedBytes / 1040 ? maxInflatedBytes : compressed.count * 1040 + 64
        // An interval's payload is a few KB: try a small buffer first (a reader decodes thousands
        // of lines, and zeroing the bound's hundreds of KB each time cost more than the rest).
        if bound > firstInflateBytes, let out = try inflate(compressed, capacity: firstInflateBytes, isBound: false) { return out }
        return try inflate(compressed, capacity: bound, isBound: true)!
    }

    static let firstInflateBytes = 64 << 10

    /// zlib's `uncompress` into `capacity` bytes; nil when they are too few and not the bound.
    private static func inflate(_ compressed: [UInt8], capacity: Int, isBound: Bool) throws(HistogramCodecError) -> [UInt8]? {
        var length = uLong(capacity)
        var status: Int32 = Z_OK
        let out = [UInt8](unsafeUninitializedCapacity: capacity) { dst, initialized in
            status = compressed.withUnsafeBufferPointer { src in uncompress(dst.baseAddress, &length, src.baseAddress, uLong(src.count)) }
            initialized = status == Z_OK ? Int(length) : 0
        }
        if status == Z_BUF_ERROR && !isBound { return nil }
        guard status == Z_OK else {
            throw status == Z_BUF_ERROR && capacity == maxInflatedBytes ? .tooLarge : .zlib(Int(status))
        }
        return out
    }

    static func appendBigEndian<T: FixedWidthInteger>(_ out: inout [UInt8], _ value: T) {
        var v = value.bigEndian
        withUnsafeBytes(of: &v) { out += $0 }
    }
}

/// Why a histogram encoding could not be decoded.
public enum HistogramCodecError: Error, Equatable, CustomStringConvertible {
    case invalidBase64
    case truncated(String)
    case badCookie(UInt32)
    case lengthMismatch(declared: Int, actual: Int)
    case zlib(Int)
    case tooLarge
    case unsupported(String)
    case badHeader(String)
    case badCount(index: Int)
    case indexOutOfRange(Int)
    case valueOutOfRange(UInt64)

    public var description: String {
        switch self {
        case .invalidBase64: "not base64"
        case .truncated(let what): "truncated \(what)"
        case .badCookie(let c): "not a V2 histogram encoding (cookie 0x\(String(c, radix: 16)))"
        case .lengthMismatch(let declared, let actual): "declared length \(declared), \(actual) bytes present"
        case .zlib(let status): "zlib error \(status)"
        case .tooLarge: "inflates to more than \(HistogramCodec.maxInflatedBytes) bytes"
        case .unsupported(let what): "unsupported \(what)"
        case .badHeader(let what): "invalid header: \(what)"
        case .badCount(let index): "invalid count at index \(index)"
        case .indexOutOfRange(let index): "counts index \(index) beyond the histogram's range"
        case .valueOutOfRange(let value): "value \(value) beyond 1 h in microseconds"
        }
    }
}

/// The bucket layout of an HdrHistogram (Java `AbstractHistogram`'s index arithmetic), computed
/// from a header's fields without constructing a histogram (whose initializer traps on bad ones).
struct HistogramLayout: Equatable {
    let significantDigits: UInt32
    let lowestDiscernibleValue: UInt64
    let highestTrackableValue: UInt64
    let unitMagnitude: Int
    let subBucketHalfCountMagnitude: Int
    let countsLength: Int

    /// `LatencyHistogram`'s layout (`makeLatencyHistogram`: 1 µs … 1 h, 3 digits).
    static let latency = try! HistogramLayout(significantDigits: 3, lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000)

    init(significantDigits: UInt32, lowestDiscernibleValue: UInt64, highestTrackableValue: UInt64) throws(HistogramCodecError) {
        guard significantDigits <= 5 else { throw .badHeader("numberOfSignificantValueDigits \(significantDigits)") }
        guard lowestDiscernibleValue >= 1, lowestDiscernibleValue <= UInt64(Int64.max) / 2 else {
            throw .badHeader("lowestDiscernibleValue \(lowestDiscernibleValue)")
        }
        guard highestTrackableValue >= 2 * lowestDiscernibleValue, highestTrackableValue <= UInt64(Int64.max) else {
            throw .badHeader("highestTrackableValue \(highestTrackableValue)")
        }
        self.significantDigits = significantDigits
        self.lowestDiscernibleValue = lowestDiscernibleValue
        self.highestTrackableValue = highestTrackableValue
        unitMagnitude = 63 - lowestDiscernibleValue.leadingZeroBitCount
        var largestSingleUnit: UInt64 = 2
        for _ in 0..<significantDigits { largestSingleUnit *= 10 }
        var subBucketCountMagnitude = 0
        while (UInt64(1) << subBucketCountMagnitude) < largestSingleUnit { subBucketCountMagnitude += 1 }
        subBucketHalfCountMagnitude = max(subBucketCountMagnitude, 1) - 1
        guard unitMagnitude + subBucketHalfCountMagnitude <= 61 else {
            throw .badHeader("lowestDiscernibleValue \(lowestDiscernibleValue) with \(significantDigits) digits")
        }
        // Java `getBucketsNeededToCoverValue`.
        let subBucketCount = UInt64(1) << (subBucketHalfCountMagnitude + 1)
        var smallestUntrackable = subBucketCount << unitMagnitude
        var buckets = 1
        while smallestUntrackable <= highestTrackableValue && buckets < 64 {
            if smallestUntrackable > UInt64(Int64.max) / 2 { buckets += 1; break }
            smallestUntrackable <<= 1
            buckets += 1
        }
        countsLength = (buckets + 1) << subBucketHalfCountMagnitude
        guard countsLength <= HistogramCodec.maxCountsLength else { throw .badHeader("counts length \(countsLength)") }
    }

    /// Sub-buckets per bucket, and buckets (the .hgrm footer's figures).
    var subBucketCount: Int { 1 << (subBucketHalfCountMagnitude + 1) }
    var bucketCount: Int { (countsLength >> subBucketHalfCountMagnitude) - 1 }

    static func == (a: Self, b: Self) -> Bool {
        a.unitMagnitude == b.unitMagnitude && a.subBucketHalfCountMagnitude == b.subBucketHalfCountMagnitude
    }

    /// The lowest value of the bucket at `index` (Java `valueFromIndex`).
    func value(atIndex index: Int) -> UInt64 {
        let half = 1 << subBucketHalfCountMagnitude
        var bucket = (index >> subBucketHalfCountMagnitude) - 1
        var sub = (index & (half - 1)) + half
        if bucket < 0 {
            sub -= half
            bucket = 0
        }
        return UInt64(sub) << (bucket + unitMagnitude)
    }

    /// The counts index of `value` (Java `countsArrayIndex`).
    func countsIndex(for value: UInt64) -> Int {
        let subBucketMask = (UInt64(1) << (subBucketHalfCountMagnitude + 1) - 1) << unitMagnitude
        let leadingZeroCountBase = 64 - unitMagnitude - (subBucketHalfCountMagnitude + 1)
        let bucket = leadingZeroCountBase - (value | subBucketMask).leadingZeroBitCount
        let sub = Int(truncatingIfNeeded: value >> (bucket + unitMagnitude))
        return ((bucket + 1) << subBucketHalfCountMagnitude) + sub - (1 << subBucketHalfCountMagnitude)
    }
}

/// Java `ZigZagEncoding`: ZigZag, then LEB128 over at most 9 bytes (the ninth holds 8 bits).
enum ZigZag {
    static func append(_ out: inout [UInt8], _ signed: Int64) {
        var value = UInt64(bitPattern: (signed << 1) ^ (signed >> 63))
        for _ in 0..<8 {
            if value >> 7 == 0 {
                out.append(UInt8(value))
                return
            }
            out.append(UInt8(value & 0x7f) | 0x80)
            value >>= 7
        }
        out.append(UInt8(truncatingIfNeeded: value))
    }

    static func read(_ reader: inout ByteReader, end: Int) throws(HistogramCodecError) -> Int64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        for position in 0..<9 {
            guard reader.offset < end, let byte = reader.byte() else { throw .truncated("count") }
            if position == 8 {
                value |= UInt64(byte) << 56
                break
            }
            value |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
        }
        return Int64(bitPattern: (value >> 1) ^ (0 &- (value & 1)))
    }
}

/// A bounds-checked big-endian reader.
struct ByteReader {
    let bytes: [UInt8]
    var offset = 0

    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint32() -> UInt32? {
        guard bytes.count - offset >= 4 else { return nil }
        var v: UInt32 = 0
        for i in 0..<4 { v = v << 8 | UInt32(bytes[offset + i]) }
        offset += 4
        return v
    }

    mutating func uint64() -> UInt64? {
        guard bytes.count - offset >= 8 else { return nil }
        var v: UInt64 = 0
        for i in 0..<8 { v = v << 8 | UInt64(bytes[offset + i]) }
        offset += 8
        return v
    }
}
