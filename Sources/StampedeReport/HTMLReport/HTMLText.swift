import Foundation

/// Text for the HTML report: the one escaping function every text taken from a results folder
/// goes through, and numbers formatted for people (thousands separators, µs shown as ms).
///
/// The report is also well-formed XML (self-closed void elements, only the five XML entities),
/// so the tests can parse it with an XML parser.
enum HTML {
    /// Escapes `&`, `<`, `>`, `"` and `'`: safe in element text and in quoted attribute values.
    static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            // Control characters other than tab and newline are not allowed in XML 1.0.
            case "\u{0}"..."\u{8}", "\u{B}", "\u{C}", "\u{E}"..."\u{1F}", "\u{FFFE}", "\u{FFFF}": out += "\u{FFFD}"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// An element whose content is `text`, escaped.
    static func el(_ tag: String, _ text: String, class cls: String? = nil) -> String {
        "<\(tag)\(cls.map { " class=\"\(escape($0))\"" } ?? "")>\(escape(text))</\(tag)>"
    }

    /// A table: the header and rows are text (escaped here); `classes` gives a row's class.
    static func table(_ header: [String], _ rows: [[String]], id: String? = nil, numeric: Set<Int> = [], rowClass: (Int) -> String? = { _ in nil }) -> String {
        var out = "<table\(id.map { " id=\"\(escape($0))\"" } ?? "")><thead><tr>"
        for (i, h) in header.enumerated() { out += "<th\(numeric.contains(i) ? " class=\"num\"" : "")>\(escape(h))</th>" }
        out += "</tr></thead><tbody>"
        for (r, row) in rows.enumerated() {
            out += "<tr\(rowClass(r).map { " class=\"\(escape($0))\"" } ?? "")>"
            for (i, cell) in row.enumerated() { out += "<td\(numeric.contains(i) ? " class=\"num\"" : "")>\(escape(cell))</td>" }
            out += "</tr>"
        }
        return out + "</tbody></table>"
    }

    /// Key–value pairs as a two-column table (keys and values escaped).
    static func facts(_ pairs: [(String, String)], id: String? = nil) -> String {
        var out = "<table class=\"facts\"\(id.map { " id=\"\(escape($0))\"" } ?? "")><tbody>"
        for (k, v) in pairs { out += "<tr><th>\(escape(k))</th><td>\(escape(v))</td></tr>" }
        return out + "</tbody></table>"
    }

    /// A notice box: "warn", "fail" or "ok".
    static func notice(_ kind: String, _ text: String) -> String {
        "<p class=\"notice \(escape(kind))\">\(escape(text))</p>"
    }
}

/// Numbers for people.
enum Fmt {
    /// 1234567 → "1,234,567".
    static func int<T: BinaryInteger>(_ n: T) -> String {
        let negative = n < 0
        let digits = String(n.magnitude)
        var out = ""
        for (i, ch) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out += "," }
            out.append(ch)
        }
        return (negative ? "-" : "") + out
    }

    /// A Double with `decimals` decimals and thousands separators; "–" when not finite.
    static func num(_ x: Double, decimals: Int = 0) -> String {
        guard x.isFinite, abs(x) < 1e18 else { return "–" }
        let scale = pow(10, Double(decimals))
        let scaled = (abs(x) * scale).rounded()
        guard scaled < 9e18 else { return "–" }
        let whole = Int64(scaled) / Int64(scale)
        var out = (x < 0 && scaled > 0 ? "-" : "") + int(whole)
        if decimals > 0 {
            let frac = String(Int64(scaled) % Int64(scale))
            out += "." + String(repeating: "0", count: max(0, decimals - frac.count)) + frac
        }
        return out
    }

    /// A number with about 3 significant digits: 0.0123, 1.23, 12.3, 123, 1,234.
    static func sig(_ x: Double) -> String {
        guard x.isFinite else { return "–" }
        let a = abs(x)
        if a == 0 { return "0" }
        if a >= 100 { return num(x) }
        if a >= 10 { return trim(num(x, decimals: 1)) }
        if a >= 1 { return trim(num(x, decimals: 2)) }
        if a >= 0.001 { return trim(num(x, decimals: 4)) }
        return String(format: "%.2g", x)
    }

    /// Drops trailing zeros after the decimal point ("1.50" → "1.5", "2.00" → "2").
    static func trim(_ s: String) -> String {
        guard s.contains(".") else { return s }
        var t = s
        while t.hasSuffix("0") { t.removeLast() }
        if t.hasSuffix(".") { t.removeLast() }
        return t
    }

    /// An axis tick: whole numbers with thousands separators, others with 3 significant digits.
    static func tick(_ x: Double) -> String { x.isFinite && x == x.rounded() && abs(x) < 1e15 ? num(x) : sig(x) }

    /// Microseconds for people: "812 µs", "1.23 ms", "45.6 ms", "1.23 s".
    static func micros(_ us: Double) -> String {
        guard us.isFinite else { return "–" }
        if us < 1000 { return num(us) + " µs" }
        if us < 1_000_000 { return sig(us / 1000) + " ms" }
        return sig(us / 1_000_000) + " s"
    }

    static func micros<T: BinaryInteger>(_ us: T) -> String { micros(Double(us)) }

    /// Milliseconds (a Double) for an axis label.
    static func ms(_ ms: Double) -> String { sig(ms) }

    /// Bytes: "812 B", "1.2 MiB".
    static func bytes(_ b: Double) -> String {
        guard b.isFinite else { return "–" }
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var v = b, i = 0
        while v >= 1024 && i < units.count - 1 { v /= 1024; i += 1 }
        return (i == 0 ? num(v) : sig(v)) + " " + units[i]
    }

    /// A percentile for people: 50 → "p50", 99.9 → "p99.9".
    static func percentileLabel(_ p: Double) -> String { p >= 100 ? "max" : "p" + trim(num(p, decimals: 4)) }

    /// A share (0…1) as a percentage: 0.0012 → "0.12%".
    static func percent(_ share: Double) -> String { sig(share * 100) + "%" }
}
