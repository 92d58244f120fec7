import FoundationEssentials

/// Stream keys and passphrases never leave LivePush: the one rule that masks them, used by every
/// module that shows a URL (the RTMP and SRT URLs' descriptions, the RTMP client's server texts,
/// events, the dashboard, the report, `--print-config`, the terminal). A URL keeps its scheme, its
/// host and its application (`rtmp://host/app/****`); the rest of its path, a user and password
/// (`****@host`), a fragment (`#****`) and every query value but those known to hold no secret
/// (`?streamid=****&passphrase=****&latency=120`) become ****.
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

    /// One URL: scheme://host/app/****, each query value **** (`?streamid=****`; a query or a part
    /// of it without `=` is **** whole; a fragment, `#****`; a user and password before the
    /// host, `****@`, as in `rtmp://****@host/app/****`). A URL already redacted stays as it is.
    public static func redactURL(_ url: String) -> String {
        guard let schemeEnd = url.firstRange(of: "://") else { return url }
        var rest = String(url[schemeEnd.upperBound...])
        var suffix = ""
        if let mark = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            let tail = rest[rest.index(after: mark)...]
            if tail.isEmpty {
                suffix = ""
            } else if rest[mark] == "?" {
                suffix = "?" + redactedQuery(tail)
            } else {
                suffix = "#****"
            }
            rest = String(rest[..<mark])
        }
        var parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        if let authority = parts.first, let at = authority.lastIndex(of: "@") {
            parts[0] = "****@" + authority[authority.index(after: at)...]
        }
        // An RTMP URL's last segment is its key: with a single segment (`rtmp://host/key`, the
        // application forgotten) that segment is hidden, not shown as an application.
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        let keptSegments = (scheme == "rtmp" || scheme == "rtmps") && parts.count == 2 ? 1 : 2
        let kept = parts.prefix(keptSegments).joined(separator: "/")
        let secret = parts.count > keptSegments && !parts[keptSegments...].joined(separator: "/").isEmpty
        return url[..<schemeEnd.upperBound] + kept + (secret ? "/****" : parts.count > keptSegments ? "/" : "") + suffix
    }

    /// Whether `url` holds anything `redactURL` hides (a key, a query value, a password).
    public static func holdsSecret(_ url: String) -> Bool { redactURL(url) != url }

    /// Query parameters whose values are shown: SRT's latency and mode, which hold no secret and
    /// tell two destinations apart.
    public static let shownQueryParameters: Set<String> = ["latency", "mode"]

    /// `streamid=****&passphrase=****&latency=120`: the fragment that follows the URL's fragment
    /// mark (a fragment after the query is ****).
    private static func redactedQuery(_ query: Substring) -> String {
        let (queryPart, fragment) = query.firstIndex(of: "#").map { (query[..<$0], true) } ?? (query, false)
        let parameters = queryPart.split(separator: "&", omittingEmptySubsequences: false).map { parameter in
            guard let equals = parameter.firstIndex(of: "=") else { return "****" }
            let name = parameter[..<equals]
            let value = parameter[parameter.index(after: equals)...]
            let shown = shownQueryParameters.contains(name.lowercased()) && value.allSatisfy { $0.isLetter || $0.isNumber }
            return name + "=" + (shown ? String(value) : "****")
        }
        return parameters.joined(separator: "&") + (fragment ? "#****" : "")
    }

    /// `text` with every occurrence of `secret` (a stream key a server quotes without its URL) as ****.
    public static func mask(_ secret: String, in text: String) -> String {
        secret.isEmpty ? text : text.replacing(secret, with: "****")
    }
}
