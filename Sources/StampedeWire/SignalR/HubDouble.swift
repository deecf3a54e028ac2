/// Double → JSON number text without allocating: Grisu2 (Florian Loitsch, "Printing
/// Floating-Point Numbers Quickly and Accurately with Integers", PLDI 2010), in the form of
/// Milo Yip's implementation used by RapidJSON. The digits always read back as the same double;
/// they are the shortest such digits in all but rare cases. (`Double.description` would build a
/// String per value, and the runtime entry point behind it is not a stable interface.)
enum HubDouble {
    /// Writes a finite `value` as a JSON number: `1.5`, `100.0`, `0.001`, `1e21`, `-2.5e-7`.
    static func write(_ value: Double, into sink: inout HubByteSink) {
        var v = value
        if v.sign == .minus {
            sink.byte(0x2D)
            v = -v
        }
        if v == 0 {
            sink.ascii("0.0")
            return
        }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // Grisu2 yields at most 17 digits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var k = 0
            let n = grisu2(v, buffer, &k)
            format(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), k, &sink)
        }
    }

    /// A floating-point value f × 2^e with a 64-bit significand ("do-it-yourself floating point").
    struct DiyFp {
        var f: UInt64
        var e: Int

        static let hiddenBit: UInt64 = 1 << 52

        init(f: UInt64, e: Int) { self.f = f; self.e = e }

        init(_ d: Double) {
            let bits = d.bitPattern
            let biased = Int((bits >> 52) & 0x7FF)
            let significand = bits & (DiyFp.hiddenBit - 1)
            if biased != 0 {
                f = significand + DiyFp.hiddenBit
                e = biased - 1075
            } else {
                f = significand
                e = -1074
            }
        }

        /// The product rounded to 64 bits.
        static func * (a: DiyFp, b: DiyFp) -> DiyFp {
            let (high, low) = a.f.multipliedFullWidth(by: b.f)
            return DiyFp(f: high &+ (low >> 63), e: a.e + b.e + 64)
        }

        func normalized() -> DiyFp {
            let s = f.leadingZeroBitCount
            return DiyFp(f: f << UInt64(s), e: e - s)
        }

        /// The neighbours halfway to the adjacent doubles, sharing the upper one's exponent.
        func normalizedBoundaries() -> (minus: DiyFp, plus: DiyFp) {
            var plus = DiyFp(f: (f << 1) + 1, e: e - 1)
            while plus.f & (DiyFp.hiddenBit << 1) == 0 {
                plus.f <<= 1
                plus.e -= 1
            }
            plus.f <<= 10  // 64 - 52 - 2
            plus.e -= 10
            var minus = f == DiyFp.hiddenBit ? DiyFp(f: (f << 2) - 1, e: e - 2) : DiyFp(f: (f << 1) - 1, e: e - 1)
            minus.f <<= UInt64(minus.e - plus.e)
            minus.e = plus.e
            return (minus, plus)
        }
    }

    static let pow10: [UInt64] = [
        1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000, 10_000_000_000,
        100_000_000_000, 1_000_000_000_000, 10_000_000_000_000, 100_000_000_000_000, 1_000_000_000_000_000,
        10_000_000_000_000_000, 100_000_000_000_000_000, 1_000_000_000_000_000_000, 10_000_000_000_000_000_000,
    ]

    /// 10^k for k = -348, -340, …, 340 as normalized (f, e), f rounded to nearest.
    static let cachedPowers: [(UInt64, Int)] = [
        (0xFA8FD5A0081C0288, -1220), (0xBAAEE17FA23EBF76, -1193), (0x8B16FB203055AC76, -1166),
        (0xCF42894A5DCE35EA, -1140), (0x9A6BB0AA55653B2D, -1113), (0xE61ACF033D1A45DF, -1087),
        (0xAB70FE17C79AC6CA, -1060), (0xFF77B1FCBEBCDC4F, -1034), (0xBE5691EF416BD60C, -1007),
        (0x8DD01FAD907FFC3C, -980), (0xD3515C2831559A83, -954), (0x9D71AC8FADA6C9B5, -927),
        (0xEA9C227723EE8BCB, -901), (0xAECC49914078536D, -874), (0x823C12795DB6CE57, -847),
        (0xC21094364DFB5637, -821), (0x9096EA6F3848984F, -794), (0xD77485CB25823AC7, -768),
        (0xA086CFCD97BF97F4, -741), (0xEF340A98172AACE5, -715), (0xB23867FB2A35B28E, -688),
        (0x84C8D4DFD2C63F3B, -661), (0xC5DD44271AD3CDBA, -635), (0x936B9FCEBB25C996, -608),
        (0xDBAC6C247D62A584, -582), (0xA3AB66580D5FDAF6, -555), (0xF3E2F893DEC3F126, -529),
        (0xB5B5ADA8AAFF80B8, -502), (0x87625F056C7C4A8B, -475), (0xC9BCFF6034C13053, -449),
        (0x964E858C91BA2655, -422), (0xDFF9772470297EBD, -396), (0xA6DFBD9FB8E5B88F, -369),
        (0xF8A95FCF88747D94, -343), (0xB94470938FA89BCF, -316), (0x8A08F0F8BF0F156B, -289),
        (0xCDB02555653131B6, -263), (0x993FE2C6D07B7FAC, -236), (0xE45C10C42A2B3B06, -210),
        (0xAA242499697392D3, -183), (0xFD87B5F28300CA0E, -157), (0xBCE5086492111AEB, -130),
        (0x8CBCCC096F5088CC, -103), (0xD1B71758E219652C, -77), (0x9C40000000000000, -50),
        (0xE8D4A51000000000, -24), (0xAD78EBC5AC620000, 3), (0x813F3978F8940984, 30),
        (0xC097CE7BC90715B3, 56), (0x8F7E32CE7BEA5C70, 83), (0xD5D238A4ABE98068, 109),
        (0x9F4F2726179A2245, 136), (0xED63A231D4C4FB27, 162), (0xB0DE65388CC8ADA8, 189),
        (0x83C7088E1AAB65DB, 216), (0xC45D1DF942711D9A, 242), (0x924D692CA61BE758, 269),
        (0xDA01EE641A708DEA, 295), (0xA26DA3999AEF774A, 322), (0xF209787BB47D6B85, 348),
        (0xB454E4A179DD1877, 375), (0x865B86925B9BC5C2, 402), (0xC83553C5C8965D3D, 428),
        (0x952AB45CFA97A0B3, 455), (0xDE469FBD99A05FE3, 481), (0xA59BC234DB398C25, 508),
        (0xF6C69A72A3989F5C, 534), (0xB7DCBF5354E9BECE, 561), (0x88FCF317F22241E2, 588),
        (0xCC20CE9BD35C78A5, 614), (0x98165AF37B2153DF, 641), (0xE2A0B5DC971F303A, 667),
        (0xA8D9D1535CE3B396, 694), (0xFB9B7CD9A4A7443C, 720), (0xBB764C4CA7A44410, 747),
        (0x8BAB8EEFB6409C1A, 774), (0xD01FEF10A657842C, 800), (0x9B10A4E5E9913129, 827),
        (0xE7109BFBA19C0C9D, 853), (0xAC2820D9623BF429, 880), (0x80444B5E7AA7CF85, 907),
        (0xBF21E44003ACDD2D, 933), (0x8E679C2F5E44FF8F, 960), (0xD433179D9C8CB841, 986),
        (0x9E19DB92B4E31BA9, 1013), (0xEB96BF6EBADF77D9, 1039), (0xAF87023B9BF0EE6B, 1066)
    ]

    /// A cached power c = 10^-K such that w_p × c has a binary exponent in [-60, -32].
    static func cachedPower(_ e: Int, _ decimalExponent: inout Int) -> DiyFp {
        let dk = Double(-61 - e) * 0.30102999566398114 + 347
        var k = Int(dk)
        if dk - Double(k) > 0 { k += 1 }
        let index = (k >> 3) + 1
        decimalExponent = 348 - (index << 3)
        let (f, e) = cachedPowers[index]
        return DiyFp(f: f, e: e)
    }

    /// Digits of a positive finite `value` into `buffer`; value ≈ digits × 10^k. Returns the count.
    static func grisu2(_ value: Double, _ buffer: UnsafeMutableRawBufferPointer, _ k: inout Int) -> Int {
        let v = DiyFp(value)
        let (wMinus, wPlus) = v.normalizedBoundaries()
        let c = cachedPower(wPlus.e, &k)
        let w = v.normalized() * c
        var wp = wPlus * c
        var wm = wMinus * c
        wm.f += 1
        wp.f -= 1
        return digitGen(w, wp, wp.f - wm.f, buffer, &k)
    }

    static func digitGen(_ w: DiyFp, _ mp: DiyFp, _ delta: UInt64, _ buffer: UnsafeMutableRawBufferPointer, _ k: inout Int) -> Int {
        var delta = delta
        let shift = UInt64(-mp.e)
        let one = DiyFp(f: 1 << shift, e: mp.e)
        let wpw = mp.f - w.f
        var p1 = mp.f >> shift
        var p2 = mp.f & (one.f - 1)
        var kappa = 1
        while kappa < 10 && p1 >= pow10[kappa] { kappa += 1 }
        var length = 0
        while kappa > 0 {
            let divisor = pow10[kappa - 1]
            let d = p1 / divisor
            p1 %= divisor
            if d != 0 || length != 0 {
                buffer[length] = UInt8(truncatingIfNeeded: d) + 0x30
                length += 1
            }
            kappa -= 1
            let rest = (p1 << shift) + p2
            if rest <= delta {
                k += kappa
                round(buffer, length, delta, rest, pow10[kappa] << shift, wpw)
                return length
            }
        }
        while true {
            guard length < buffer.count else { return length }  // unreachable for doubles; keeps writes in bounds
            p2 = p2 &* 10
            delta = delta &* 10
            let d = p2 >> shift
            if d != 0 || length != 0 {
                buffer[length] = UInt8(truncatingIfNeeded: d) + 0x30
                length += 1
            }
            p2 &= one.f - 1
            kappa -= 1
            if p2 < delta {
                k += kappa
                let index = -kappa
                round(buffer, length, delta, p2, one.f, index < 20 ? wpw &* pow10[index] : 0)
                return length
            }
        }
    }

    /// Moves the last digit towards the exact value while the result stays inside the rounding interval.
    static func round(_ buffer: UnsafeMutableRawBufferPointer, _ length: Int, _ delta: UInt64, _ rest: UInt64, _ tenKappa: UInt64, _ wpw: UInt64) {
        guard length > 0 else { return }
        var rest = rest
        while rest < wpw && delta &- rest >= tenKappa
                && (rest &+ tenKappa < wpw || wpw &- rest > rest &+ tenKappa &- wpw) {
            buffer[length - 1] -= 1
            rest = rest &+ tenKappa
        }
    }

    /// Lays out digits × 10^k as JSON: plain decimal for decimal exponents -5…21 (keeping a
    /// fraction so it reads as a floating-point value), exponent notation otherwise.
    static func format(_ digits: UnsafeRawBufferPointer, _ k: Int, _ sink: inout HubByteSink) {
        let n = digits.count
        let point = n + k  // position of the decimal point relative to the first digit
        if k >= 0 && point <= 21 {
            sink.bytes(digits)
            sink.fill(0x30, count: k)
            sink.ascii(".0")
        } else if point > 0 && point <= 21 {
            sink.bytes(UnsafeRawBufferPointer(rebasing: digits[0..<point]))
            sink.byte(0x2E)
            sink.bytes(UnsafeRawBufferPointer(rebasing: digits[point..<n]))
        } else if point > -6 && point <= 0 {
            sink.ascii("0.")
            sink.fill(0x30, count: -point)
            sink.bytes(digits)
        } else {
            sink.byte(digits[0])
            if n > 1 {
                sink.byte(0x2E)
                sink.bytes(UnsafeRawBufferPointer(rebasing: digits[1..<n]))
            }
            sink.byte(0x65)
            let exponent = point - 1
            if exponent < 0 { sink.byte(0x2D) }
            sink.decimal(UInt64(exponent.magnitude))
        }
    }
}
