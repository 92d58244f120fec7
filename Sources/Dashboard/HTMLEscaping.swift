import Foundation

/// How an untrusted value is written into a page, one function per place it can go (issue 30).
/// Every value the session report shows comes from events: helpers', servers' and users' words,
/// a hand-edited file. Each is escaped for exactly where it lands, once, after every other
/// transformation of its text (control characters, redaction): the escaped form is final.
public enum HTMLEscaping {
    /// Text between tags (also inside `<title>`): `& < > " '` as character references.
    public static func text(_ value: String) -> String {
        replacingScalars(value) { scalar in
            switch scalar {
            case "&": "&amp;"
            case "<": "&lt;"
            case ">": "&gt;"
            case "\"": "&quot;"
            case "'": "&#39;"
            default: nil
            }
        }
    }

    /// A double-quoted attribute's value (`class="..."`): the same references as `text`, which
    /// leave no way out of the quotes.
    public static func attribute(_ value: String) -> String { text(value) }

    /// JSON placed inside `<script>`: JSON's own escapes for `<`, `>`, `&` (`\u003c`, ...) and for
    /// U+2028 and U+2029, so that no `</script`, `<!--` or `<script` can appear in it and the
    /// parsed value is unchanged. `json` must be JSON text (these characters then occur only
    /// inside its strings, where the escapes mean the same characters).
    public static func scriptJSON(_ json: String) -> String {
        replacingScalars(json) { scalar in
            switch scalar {
            case "<": "\\u003c"
            case ">": "\\u003e"
            case "&": "\\u0026"
            case "\u{2028}": "\\u2028"
            case "\u{2029}": "\\u2029"
            default: nil
            }
        }
    }

    /// Trusted program text (our scripts, Debian's Chart.js) inlined in `<script>`: a `</script`
    /// or `<!--` in it (possible only inside its strings, regular expressions or comments) is
    /// broken with a backslash, which means the same there.
    public static func scriptCode(_ code: String) -> String {
        code.replacingOccurrences(of: "</script", with: "<\\/script", options: .caseInsensitive)
            .replacingOccurrences(of: "<!--", with: "<\\!--")
    }

    /// `value` with each scalar for which `replacement` gives a text replaced by it.
    private static func replacingScalars(_ value: String, _ replacement: (Unicode.Scalar) -> String?) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for scalar in value.unicodeScalars {
            if let text = replacement(scalar) { out += text } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }
}

/// A page template with `{{NAME}}` placeholders, filled in one pass: each placeholder of the
/// template is replaced by its value, and a value is copied as it is, never searched again, so a
/// `{{...}}` inside a value stays text. Values say how they were made safe for their place.
struct PageTemplate {
    /// What goes in a placeholder's place.
    enum Value {
        /// Untrusted text between tags.
        case text(String)
        /// Markup this program built, every untrusted part escaped for its place already.
        case markup(String)
        /// JSON inside `<script type="application/json">`.
        case scriptJSON(String)
        /// Trusted program text inside `<script>`.
        case scriptCode(String)

        var written: String {
            switch self {
            case .text(let value): HTMLEscaping.text(value)
            case .markup(let value): value
            case .scriptJSON(let value): HTMLEscaping.scriptJSON(value)
            case .scriptCode(let value): HTMLEscaping.scriptCode(value)
            }
        }
    }

    /// A placeholder of the template that has no value, or a value no placeholder uses.
    struct Mismatch: Error, CustomStringConvertible {
        let description: String
    }

    let template: String

    /// The page: `template` with every placeholder replaced, in one pass from its start.
    func fill(_ values: [String: Value]) throws(Mismatch) -> String {
        var out = ""
        out.reserveCapacity(template.utf8.count)
        var used = Set<String>()
        var rest = template[...]
        while let open = rest.range(of: "{{") {
            out += rest[..<open.lowerBound]
            guard let close = rest[open.upperBound...].range(of: "}}") else {
                throw Mismatch(description: "an unclosed {{ in the page template")
            }
            let name = String(rest[open.upperBound..<close.lowerBound])
            guard let value = values[name] else {
                throw Mismatch(description: "no value for {{\(name)}} in the page template")
            }
            out += value.written
            used.insert(name)
            rest = rest[close.upperBound...]
        }
        out += rest
        if let unused = values.keys.sorted().first(where: { !used.contains($0) }) {
            throw Mismatch(description: "the page template has no {{\(unused)}}")
        }
        return out
    }
}
