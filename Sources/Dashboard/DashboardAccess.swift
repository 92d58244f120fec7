import Control
import Foundation
import HTTPServer

/// Who may use the dashboard (issue 30): only its own page, at its own address, holding its token.
///
/// - **No cookie.** Browsers scope cookies by host, not by port, and SameSite treats every port of
///   127.0.0.1 as the same site: a cookie set here is sent to any other local server the browser
///   visits (any user's), which then holds the token. So the page keeps the token it was opened
///   with (`/?token=...`, the URL livepush printed) and sends it in the `X-LivePush-Token` header;
///   only GETs that cannot carry a header (the picture, the event stream) may give it in the query.
///   A page of another origin cannot send that header without a CORS preflight, which is refused.
/// - **Host.** A request must name the address the dashboard listens on (or `localhost` for a
///   loopback one, or any IPv4 address for 0.0.0.0), with its port: a name that some DNS resolves
///   to 127.0.0.1 (DNS rebinding) gets 421.
/// - **Origin.** A request a page sends (Origin, or Sec-Fetch-Site) must come from the dashboard's
///   own origin: 403 otherwise.
/// - **Commands.** `/api/control` runs what the page's buttons send, unless the user started the
///   run with `--dashboard-control all`.
struct DashboardAccess: Sendable {
    /// The address the server listens on and its port.
    let address: String
    let port: UInt16
    let token: String
    let allCommands: Bool

    /// The verbs of the page's buttons (Pause, Resume, Mute mic, Mute all, Unmute, Bitrate, Reconnect,
    /// the volumes), and status.
    static let buttonVerbs: Set<String> = ["status", "pause", "resume", "mute", "unmute", "bitrate", "reconnect", "volume"]

    /// Whether the page's buttons send `command`: the verbs above, the recording's Pause, Resume,
    /// Split and Stop, Save replay (`replay save` with no FILE), the music's loop and volume, and the
    /// settings (restart, mirrors, preview, noise
    /// suppression, gain, voice activity, ear monitoring to the default output, log level).
    /// Nothing that names a file or a device: `record start FILE`, `bgm start FILE`, `snapshot`,
    /// `watermark add`, `add URL` and `ear-monitor on SINK` are not buttons.
    static func isButtonCommand(_ command: ControlCommand) -> Bool {
        switch command {
        case .record(.stop), .record(.pause), .record(.resume), .record(.split): true
        case .replay(.save(let path)): path == nil  // Save replay: to its own name, never one the page chose
        case .bgm(.loop), .bgm(.volume): true
        case .setting(.earMonitor(_, let sink)): sink == nil
        case .setting: true
        default: buttonVerbs.contains(command.verb)
        }
    }

    /// Why `request` may not be answered (the response to send instead), or nil.
    func refusal(_ request: HTTPRequest) -> HTTPResponse? {
        let host = request.headers["host"] ?? ""
        guard acceptsHost(host) else {
            return .text(421, "421 Misdirected Request: this dashboard answers only as http://\(shownHost)/, not as "
                + "'\(host)' (a name that leads here is not this dashboard's; open the URL livepush printed)")
        }
        if let origin = request.headers["origin"], origin != "http://" + host {
            return .text(403, "403 Forbidden: a page of another origin (Origin \(origin)) may not use this dashboard")
        }
        if let site = request.headers["sec-fetch-site"], site != "same-origin" && site != "none" {
            return .text(403, "403 Forbidden: a page of another origin (Sec-Fetch-Site: \(site)) may not use this "
                + "dashboard")
        }
        return nil
    }

    /// Whether `request` carries the token where it may: the header, or the query of a GET.
    func hasToken(_ request: HTTPRequest) -> Bool {
        if let given = request.headers["x-livepush-token"] { return Self.same(given, token) }
        guard request.method == "GET", let given = request.query["token"] else { return false }
        return Self.same(given, token)
    }

    /// Why `/api/control` may not run `command`, or nil.
    func commandRefusal(_ command: ControlCommand) -> String? {
        guard !allCommands, !Self.isButtonCommand(command) else { return nil }
        return "the dashboard takes only its buttons' commands (pause, resume, mute, unmute, volume, bitrate, "
            + "reconnect, record stop|pause|resume, replay save (no FILE), bgm loop|volume, and the settings: restart, mirror, preview, "
            + "denoise, agc, voice-activity, ear-monitor on|off, log-level); "
            + "'\(command.verb)' needs livepush started with --dashboard-control all"
    }

    private var shownHost: String { "\(address == "0.0.0.0" ? "127.0.0.1" : address):\(port)" }

    /// `ADDRESS:PORT` for the address listened on; `localhost:PORT` too for a loopback address;
    /// any IPv4 address with the port for 0.0.0.0 (an address, never a name: no DNS rebinding).
    func acceptsHost(_ host: String) -> Bool {
        guard let colon = host.lastIndex(of: ":"), host[host.index(after: colon)...] == String(port) else {
            return false
        }
        let name = String(host[..<colon])
        if name == address { return true }
        if name == "localhost" { return Dashboard.isLoopback(address) || address == "0.0.0.0" }
        if address == "0.0.0.0" {
            var probe = in_addr()
            return inet_pton(AF_INET, name, &probe) == 1
        }
        return false
    }

    /// Compares in time that does not depend on where the first difference is.
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// Headers every answer carries: no referrer (the token is in page URLs), no framing by
    /// another page, no type guessing, nothing cached.
    static let headers: [(String, String)] = [
        ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY"),
        ("Content-Security-Policy", "frame-ancestors 'none'"), ("X-Content-Type-Options", "nosniff"),
        ("Cache-Control", "no-store"),
    ]
}
