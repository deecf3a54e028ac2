/// JSON text written from Swift values (RFC 8259 §7).
public enum JSONText {
    /// `text` as a JSON string literal: `"` and `\` escaped, the short escapes for newline,
    /// carriage return and tab, other controls as `\u00XX`, everything else as it is (UTF-8).
    public static func quoted(_ text: String) -> String {
        var out = "\""
        for u in text.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    out += "\\u00" + (u.value < 0x10 ? "0" : "") + String(u.value, radix: 16)
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}
