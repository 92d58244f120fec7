import Foundation
import RTMP
import SafeText
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

    /// A short name for its secret (`KeyFingerprint`: the first 6 hex digits of SHA-256): of the
    /// stream key with its query for RTMP, of the stream id and passphrase for SRT. Two
    /// destinations on one server with different keys have different fingerprints; the key never shows.
    public var keyFingerprint: String {
        switch self {
        case .rtmp(let url): KeyFingerprint.of(url.streamKey)
        case .srt(let url): KeyFingerprint.of((url.streamID ?? "") + "\n" + (url.passphrase ?? ""))
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
}

/// A push URL that cannot be used; `reason` says why and how to write one.
public struct PushURLError: Error, Equatable, CustomStringConvertible {
    public let reason: String
    public init(reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// A destination as written on the command line, in a URL file, a config file's `destinations`,
/// `$LIVEPUSH_URL` and `livepush ctl add`: `URL`, or `LABEL=URL` to name it (`studio=rtmp://...`).
/// A label is 1 to 32 letters, digits, `.`, `_` or `-`; a scheme never holds `=`, so the first `=`
/// before `://` ends the label.
public struct LabelledPushURL: Equatable, Sendable {
    public let label: String?
    public let url: String

    public static let maxLabelLength = 32

    /// Splits `text`; a label that breaks the rule is refused with what to write instead (the URL
    /// is not quoted: it may hold the key).
    public init(_ text: String) throws(PushURLError) {
        guard let schemeEnd = text.range(of: "://"), let equals = text[..<schemeEnd.lowerBound].firstIndex(of: "=") else {
            label = nil
            url = text
            return
        }
        let name = String(text[..<equals])
        if let problem = Self.problem(label: name) { throw PushURLError(reason: problem) }
        label = name
        url = String(text[text.index(after: equals)...])
    }

    /// Why `label` cannot name a destination, or nil when it can.
    public static func problem(label: String) -> String? {
        let allowed = label.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0)
        }
        guard !label.isEmpty, label.count <= maxLabelLength, allowed else {
            // Not quoted: what stands before '=' may be a mistyped key.
            return "the text before '=' cannot label a destination: use 1 to \(maxLabelLength) "
                + "letters, digits, '.', '_' or '-', as in studio=rtmp://host/app/key"
        }
        return nil
    }
}
