import Foundation

/// Stream keys and passphrases never leave LivePush: every URL in a text is cut after its
/// application (`rtmp://host/app/****`) and its query (`?****`) before it is written anywhere.
public enum Redaction {
    private static let urlPattern = try! NSRegularExpression(pattern: "[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'<>]+")

    /// `text` with every URL's key and query replaced by ****.
    public static func redact(_ text: String) -> String {
        guard text.contains("://") else { return text }
        let range = NSRange(text.startIndex..., in: text)
        var result = ""
        var last = text.startIndex
        for match in urlPattern.matches(in: text, range: range) {
            guard let matchRange = Range(match.range, in: text) else { continue }
            result += text[last..<matchRange.lowerBound]
            result += redactURL(String(text[matchRange]))
            last = matchRange.upperBound
        }
        return result + text[last...]
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
