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
}

/// A push URL that cannot be used; `reason` says why and how to write one.
public struct PushURLError: Error, Equatable, CustomStringConvertible {
    public let reason: String
    public init(reason: String) { self.reason = reason }
    public var description: String { reason }
}
