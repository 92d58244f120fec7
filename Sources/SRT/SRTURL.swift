import Foundation
import SafeText

/// An SRT destination in caller mode: `srt://host:port?streamid=...&passphrase=...&latency=MS`.
/// The stream id and the passphrase are secrets: `description` shows `****` for them,
/// `srt://host:port?streamid=****&passphrase=****&latency=120`.
public struct SRTURL: Equatable, Sendable, CustomStringConvertible {
    public let host: String
    public let port: UInt16
    /// What the listener uses to pick the stream (often the stream key); nil when not given.
    public let streamID: String?
    /// AES passphrase, 10 to 79 characters; nil for no encryption.
    public let passphrase: String?
    /// The receiver's buffer in ms (SRT's latency); 120 by default.
    public let latencyMs: Int

    public static let defaultLatencyMs = 120
    public static let latencyMsRange = 20...8000
    public static let passphraseLengthRange = 10...79

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case notSRT(String)
        case missingHost
        case missingPort
        case badPort(String)
        case badLatency(String)
        case badPassphraseLength(Int)
        case notCaller(String)
        case unknownParameter(String)
        /// `srt://user:password@host:port`: the user information is never echoed.
        case credentialsInURL

        public var description: String {
            switch self {
            case .notSRT(let scheme) where scheme.isEmpty:
                return "the URL has no scheme; use srt://host:port?streamid=...&passphrase=..."
            case .notSRT(let scheme): return "'\(scheme)' is not an SRT URL; use srt://host:port?streamid=...&passphrase=..."
            case .missingHost: return "the SRT URL has no host; use srt://host:port"
            case .missingPort: return "the SRT URL needs a port: srt://host:port (SRT has no default port)"
            case .badPort(let port):
                // Only digits are echoed: anything else there may be a mistyped key or password.
                guard !port.isEmpty, port.allSatisfy(\.isASCII), port.allSatisfy(\.isNumber) else {
                    return "the port (after the host's ':') is not a number from 1 to 65535"
                }
                return "port '\(port)' is not a number from 1 to 65535"
            case .badLatency(let text):
                return "latency '\(text)' is not a number of ms from \(latencyMsRange.lowerBound) to \(latencyMsRange.upperBound)"
            case .badPassphraseLength(let count):
                return "the SRT passphrase has \(count) characters; it needs \(passphraseLengthRange.lowerBound) to "
                    + "\(passphraseLengthRange.upperBound)"
            case .notCaller(let mode):
                return "mode '\(mode)' is not supported: LivePush connects to the server (mode=caller, the default)"
            case .credentialsInURL:
                return "the SRT URL has a user name or password before the host (srt://****@host:port); put the "
                    + "secret in passphrase=... (and the stream's name in streamid=...)"
            case .unknownParameter(let name):
                return "unknown SRT URL parameter '\(name)'; the parameters are streamid, passphrase, latency and mode"
            }
        }
    }

    public init(_ text: String) throws(ParseError) {
        // Without "://" there is no scheme to name; nothing of the text is echoed (it may hold the key).
        guard let schemeEnd = text.range(of: "://") else { throw .notSRT("") }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "srt" else { throw .notSRT(scheme) }
        let rest = text[schemeEnd.upperBound...]
        let parts = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var authority = parts.first ?? ""
        if authority.hasSuffix("/") { authority = authority.dropLast() }
        guard !authority.contains("@") else { throw .credentialsInURL }
        guard let colon = authority.lastIndex(of: ":") else {
            if authority.isEmpty { throw .missingHost }
            throw .missingPort
        }
        let portText = String(authority[authority.index(after: colon)...])
        guard let port = UInt16(portText), port > 0 else { throw .badPort(portText) }
        let hostPart = authority[..<colon]
        guard !hostPart.isEmpty else { throw .missingHost }
        host = hostPart.hasPrefix("[") && hostPart.hasSuffix("]") ? String(hostPart.dropFirst().dropLast()) : String(hostPart)
        self.port = port
        var streamID: String?
        var passphrase: String?
        var latencyMs = Self.defaultLatencyMs
        for pair in parts.count > 1 ? parts[1].split(separator: "&") : [] {
            let field = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(field[0]).lowercased()
            let raw = field.count > 1 ? String(field[1]) : ""
            let value = raw.removingPercentEncoding ?? raw
            switch name {
            case "streamid": streamID = value
            case "passphrase": passphrase = value
            case "latency":
                guard let ms = Int(value), Self.latencyMsRange.contains(ms) else { throw .badLatency(value) }
                latencyMs = ms
            case "mode":
                guard value.lowercased() == "caller" else { throw .notCaller(value) }
            default:
                throw .unknownParameter(name)
            }
        }
        if let passphrase, !Self.passphraseLengthRange.contains(passphrase.count) {
            throw .badPassphraseLength(passphrase.count)
        }
        self.streamID = streamID
        self.passphrase = passphrase
        self.latencyMs = latencyMs
    }

    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        var query = [String]()
        // Percent-encoded first, so that a '#' or '&' in a secret is read as part of its value.
        func encoded(_ value: String) -> String { value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "" }
        if let streamID { query.append("streamid=\(encoded(streamID))") }
        if let passphrase { query.append("passphrase=\(encoded(passphrase))") }
        query.append("latency=\(latencyMs)")
        return Redaction.redactURL("srt://\(shownHost):\(port)?" + query.joined(separator: "&"))
    }
}
