import Foundation

/// An RTMP publishing address, `rtmp://host[:port]/app[/instance]/key[?query]`. The stream key
/// (the last path segment, with its query) never appears in `description`: `rtmp://host/app/****`.
public struct RTMPURL: Equatable, Sendable, CustomStringConvertible {
    public let host: String
    public let port: UInt16
    /// The application, with its instance when there is one (`live`, `live/room1`).
    public let app: String
    /// The stream key and any query string: the secret part.
    public let streamKey: String

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case notRTMP(String)
        case rtmpsNotSupported
        case missingHost
        case badPort(String)
        case missingAppOrKey

        public var description: String {
            switch self {
            case .notRTMP(let scheme): return "'\(scheme)' is not an RTMP URL; use rtmp://host[:port]/app/key"
            case .rtmpsNotSupported: return "rtmps:// (RTMP over TLS) is not supported yet; use rtmp://"
            case .missingHost: return "the URL has no host; use rtmp://host[:port]/app/key"
            case .badPort(let port): return "port '\(port)' is not a number from 1 to 65535"
            case .missingAppOrKey: return "the URL needs an application and a stream key: rtmp://host/app/key"
            }
        }
    }

    public init(_ text: String) throws(ParseError) {
        guard let schemeEnd = text.range(of: "://") else { throw .notRTMP(String(text.prefix(16))) }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        if scheme == "rtmps" { throw .rtmpsNotSupported }
        guard scheme == "rtmp" else { throw .notRTMP(scheme) }
        let rest = text[schemeEnd.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { throw .missingAppOrKey }
        let authority = rest[..<slash]
        let hostPart: Substring
        if let colon = authority.lastIndex(of: ":") {
            let portText = String(authority[authority.index(after: colon)...])
            guard let port = UInt16(portText), port > 0 else { throw .badPort(portText) }
            self.port = port
            hostPart = authority[..<colon]
        } else {
            port = 1935
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

    /// The `tcUrl` of the connect command: the URL without the key.
    public var tcURL: String { "rtmp://\(host):\(port)/\(app)" }

    public var description: String { "rtmp://\(host)\(port == 1935 ? "" : ":\(port)")/\(app)/****" }
}
