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

    /// One URL: scheme://host/app/****, and ?**** for a query. A URL already redacted stays as it is.
    static func redactURL(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        var rest = String(url[schemeEnd.upperBound...])
        var query = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...].isEmpty ? "" : "?****"
            rest = String(rest[..<mark])
        }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        let kept = parts.prefix(2).joined(separator: "/")
        let secret = parts.count > 2 && !parts[2...].joined(separator: "/").isEmpty
        return url[..<schemeEnd.upperBound] + kept + (secret ? "/****" : parts.count > 2 ? "/" : "") + query
    }
}
