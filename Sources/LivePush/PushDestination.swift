import Foundation
import RTMP
import SRT

/// Where a push goes: `rtmp://` or `rtmps://host[:port]/app/key`, or
/// `srt://host:port?streamid=...&passphrase=...&latency=MS`. Its `description` never shows a
/// secret (key, stream id, passphrase): `rtmps://host/app/****`, `srt://host:9000?streamid=****`.
public enum PushDestination: Equatable, Sendable, CustomStringConvertible {
    case rtmp(RTMPURL)
    case srt(SRTURL)

    /// Reads a push URL by its scheme; the error says how to write one and repeats no secret.
    public init(_ text: String) throws(PushURLError) {
        let scheme = text.range(of: "://").map { text[..<$0.lowerBound].lowercased() }
        do {
            switch scheme {
            case "srt": self = .srt(try SRTURL(text))
            case "rtmp", "rtmps": self = .rtmp(try RTMPURL(text))
            default: throw PushURLError(reason: "'\(scheme ?? String(text.prefix(16)))' is not a push URL; use "
                + "rtmp://host[:port]/app/key, rtmps://host[:port]/app/key or srt://host:port?streamid=...")
            }
        } catch let error as RTMPURL.ParseError {
            throw PushURLError(reason: error.description)
        } catch let error as SRTURL.ParseError {
            throw PushURLError(reason: error.description)
        } catch let error as PushURLError {
            throw error
        } catch {
            throw PushURLError(reason: "\(error)")
        }
    }

    var isSRT: Bool {
        if case .srt = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .rtmp(let url): url.description
        case .srt(let url): url.description
        }
    }

    /// `text` with every secret of every push URL in it replaced by ****, for any line that
    /// might quote a URL a person typed.
    public static func redact(_ text: String) -> String {
        var words: [String] = []
        for word in text.split(separator: " ", omittingEmptySubsequences: false) {
            let trimmed = word.trimmingCharacters(in: CharacterSet(charactersIn: "'\"()[],;"))
            if trimmed.contains("://"), let destination = try? PushDestination(trimmed) {
                words.append(word.replacingOccurrences(of: trimmed, with: destination.description))
            } else if trimmed.contains("://") {
                words.append(word.replacingOccurrences(of: trimmed, with: redactUnparsed(trimmed)))
            } else {
                words.append(String(word))
            }
        }
        return words.joined(separator: " ")
    }

    /// A URL that does not parse: keep the scheme and host, hide the rest.
    private static func redactUnparsed(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        // A user and password before the host are secrets too (the rule of Control's Redaction).
        let host = authority.lastIndex(of: "@").map { "****@" + authority[authority.index(after: $0)...] }
            ?? String(authority)
        return url[..<schemeEnd.upperBound] + host + (rest.count > authority.count ? "/****" : "")
    }
}

/// A push URL that cannot be used; `reason` says why and how to write one.
public struct PushURLError: Error, Equatable, CustomStringConvertible {
    public let reason: String
    public init(reason: String) { self.reason = reason }
    public var description: String { reason }
}
