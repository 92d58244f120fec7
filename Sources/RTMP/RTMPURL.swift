import Foundation
import SafeText

/// An RTMP publishing address, `rtmp://host[:port]/app[/instance]/key[?query]`, or
/// `rtmps://` for RTMP over TLS (default port 443). The stream key (the last path segment, with
/// its query) never appears in `description`: `rtmp://host/app/****`.
public struct RTMPURL: Equatable, Sendable, CustomStringConvertible {
    /// True for rtmps://: the connection is TLS, verified against the CA store.
    public let isSecure: Bool
    public let host: String
    public let port: UInt16
    /// The application, with its instance when there is one (`live`, `live/room1`).
    public let app: String
    /// The stream key and any query string: the secret part.
    public let streamKey: String

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case notRTMP(String)
        case missingHost
        case badPort(String)
        case missingAppOrKey
        /// `rtmp://user:password@host/...`: the user information is never echoed.
        case credentialsInURL

        public var description: String {
            switch self {
            case .notRTMP(let scheme) where scheme.isEmpty:
                return "the URL has no scheme; use rtmp://host[:port]/app/key or rtmps://host[:port]/app/key"
            case .notRTMP(let scheme):
                return "'\(scheme)' is not an RTMP URL; use rtmp://host[:port]/app/key or rtmps://host[:port]/app/key"
            case .missingHost: return "the URL has no host; use rtmp://host[:port]/app/key"
            case .badPort(let port):
                // Only digits are echoed: anything else there may be a mistyped key or password.
                guard !port.isEmpty, port.allSatisfy(\.isASCII), port.allSatisfy(\.isNumber) else {
                    return "the port (after the host's ':') is not a number from 1 to 65535"
                }
                return "port '\(port)' is not a number from 1 to 65535"
            case .missingAppOrKey: return "the URL needs an application and a stream key: rtmp://host/app/key"
            case .credentialsInURL:
                return "the URL has a user name or password before the host (rtmp://****@host/...), which RTMP does "
                    + "not take there; use the stream key your server gives (rtmp://host/app/KEY), or the query it documents"
            }
        }
    }

    public init(_ text: String) throws(ParseError) {
        // Without "://" there is no scheme to name; nothing of the text is echoed (it may hold the key).
        guard let schemeEnd = text.range(of: "://") else { throw .notRTMP("") }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "rtmp" || scheme == "rtmps" else { throw .notRTMP(scheme) }
        isSecure = scheme == "rtmps"
        let rest = text[schemeEnd.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { throw .missingAppOrKey }
        let authority = rest[..<slash]
        guard !authority.contains("@") else { throw .credentialsInURL }
        let hostPart: Substring
        if let colon = authority.lastIndex(of: ":") {
            let portText = String(authority[authority.index(after: colon)...])
            guard let port = UInt16(portText), port > 0 else { throw .badPort(portText) }
            self.port = port
            hostPart = authority[..<colon]
        } else {
            port = isSecure ? 443 : 1935
            hostPart = authority
        }
        guard !hostPart.isEmpty else { throw .missingHost }
        host = String(hostPart)
        let path = rest[rest.index(after: slash)...]
        // The key is the last segment (and its query); the app is everything before it.
        let pathOnly = path.split(separator: "?", maxSplits: 1).first ?? ""
        guard let keySlash = pathOnly.lastIndex(of: "/") else { throw .missingAppOrKey }
        app = String(pathOnly[..<keySlash])
        streamKey = String(path[path.index(after: keySlash)...])
        guard !app.isEmpty, !streamKey.isEmpty else { throw .missingAppOrKey }
    }

    private var scheme: String { isSecure ? "rtmps" : "rtmp" }
    private var defaultPort: UInt16 { isSecure ? 443 : 1935 }

    /// The `tcUrl` of the connect command: the URL without the key.
    public var tcURL: String { "\(scheme)://\(host):\(port)/\(app)" }

    /// Through the one rule (Redaction.redactURL), without the key's query.
    public var description: String {
        let key = String(streamKey.split(separator: "?", maxSplits: 1).first ?? "")
        // Percent-encoded first, so that a '#' in the key is read as part of it.
        let encodedKey = key.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        return Redaction.redactURL("\(scheme)://\(host)\(port == defaultPort ? "" : ":\(port)")/\(app)/\(encodedKey)")
    }
}
