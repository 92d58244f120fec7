import Foundation

/// Stream keys and passphrases never leave LivePush: every URL in a text is cut after its
/// application (`rtmp://host/app/****`) and its query (`?****`) before it is written anywhere.
public enum Redaction {
    /// `text` with every URL's key and query replaced by ****. A URL is what the pattern
    /// `[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+` matches, found by hand (leftmost, not overlapping):
    /// NSRegularExpression was the only thing that loaded ICU in a push.
    public static func redact(_ text: String) -> String {
        guard text.contains("://") else { return text }
        let scalars = Array(text.unicodeScalars)
        var result = String.UnicodeScalarView()
        var copied = 0, index = 0
        while index + 3 <= scalars.count {
            guard scalars[index] == ":", scalars[index + 1] == "/", scalars[index + 2] == "/" else {
                index += 1
                continue
            }
            var start = index
            while start > copied && isSchemeScalar(scalars[start - 1]) { start -= 1 }
            while start < index && !isLetter(scalars[start]) { start += 1 }
            var end = index + 3
            while end < scalars.count && isURLScalar(scalars[end]) { end += 1 }
            guard start < index, end > index + 3 else {
                index += 3
                continue
            }
            result.append(contentsOf: scalars[copied..<start])
            var url = String.UnicodeScalarView()
            url.append(contentsOf: scalars[start..<end])
            result.append(contentsOf: redactURL(String(url)).unicodeScalars)
            copied = end
            index = end
        }
        result.append(contentsOf: scalars[copied...])
        return String(result)
    }

    private static func isLetter(_ scalar: Unicode.Scalar) -> Bool {
        ("A"..."Z").contains(scalar) || ("a"..."z").contains(scalar)
    }

    private static func isSchemeScalar(_ scalar: Unicode.Scalar) -> Bool {
        isLetter(scalar) || ("0"..."9").contains(scalar) || scalar == "+" || scalar == "." || scalar == "-"
    }

    private static func isURLScalar(_ scalar: Unicode.Scalar) -> Bool {
        !scalar.properties.isWhitespace && scalar != "\"" && scalar != "'" && scalar != "<" && scalar != ">"
    }

    /// One URL: scheme://host/app/****, ?**** for a query, #**** for a fragment, and ****@ for a
    /// user and password before the host (`rtmp://****@host/app/****`). A URL already redacted
    /// stays as it is. The one rule for every output: events, the dashboard, the report,
    /// `--print-config` (issue 30).
    public static func redactURL(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        var rest = String(url[schemeEnd.upperBound...])
        var suffix = ""
        if let mark = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            suffix = rest[rest.index(after: mark)...].isEmpty ? "" : "\(rest[mark])****"
            rest = String(rest[..<mark])
        }
        var parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        if let authority = parts.first, let at = authority.lastIndex(of: "@") {
            parts[0] = "****@" + authority[authority.index(after: at)...]
        }
        let kept = parts.prefix(2).joined(separator: "/")
        let secret = parts.count > 2 && !parts[2...].joined(separator: "/").isEmpty
        return url[..<schemeEnd.upperBound] + kept + (secret ? "/****" : parts.count > 2 ? "/" : "") + suffix
    }

    /// Whether `url` holds anything `redactURL` hides (a key, a query, a password).
    public static func holdsSecret(_ url: String) -> Bool { redactURL(url) != url }
}
