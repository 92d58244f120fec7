import Control
import Foundation
import HTTPServer
import LivePush

/// The live dashboard (the reference SDKs' debug view): a page served by libmicrohttpd
/// (`HTTPServer`) on 127.0.0.1 unless told otherwise, behind a random token kept by the page (no
/// cookie) and used only from its own origin (`DashboardAccess`); charts drawn by Debian's
/// Chart.js, served from disk like the page; the outgoing picture as a JPEG; events by
/// Server-Sent Events; buttons that send the control socket's commands (`ControlHandler`), and
/// only those unless `allCommands`.
public final class Dashboard: @unchecked Sendable {
    /// The address to open, token included (printed once at start).
    public let url: String
    public let token: String
    private let server: HTTPServer
    private let routes: DashboardRoutes

    /// Where Debian's libjs-chart.js puts Chart.js.
    public static let chartJSPath = "/usr/share/javascript/chart.js/chart.min.js"

    /// Serves the dashboard of `handler`'s pusher on `address:port` (port 0: any free one); with
    /// `allCommands`, `/api/control` takes every command of the control socket, not only the
    /// buttons'. At most `HTTPServerLimits.dashboard` connections, idle ones closed.
    public init(handler: ControlHandler, hub: EventHub, address: String = "127.0.0.1", port: UInt16,
                allCommands: Bool = false) throws(DashboardError)
    {
        var generator = SystemRandomNumberGenerator()  // getrandom(2)
        token = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        guard let resources = Self.resourcesDirectory else { throw .resourcesMissing }
        let routes = DashboardRoutes(handler: handler, hub: hub, resources: resources)
        self.routes = routes
        do {
            server = try HTTPServer(address: address, port: port, limits: .dashboard) { routes.answer($0) }
        } catch {
            throw .http(error)
        }
        routes.access = DashboardAccess(address: address, port: server.port, token: token, allCommands: allCommands)
        url = "http://\(address == "0.0.0.0" ? "127.0.0.1" : address):\(server.port)/?token=\(token)"
    }

    /// Whether `address` (IPv4) is a loopback address, 127.0.0.0/8: only this machine reaches it.
    public static func isLoopback(_ address: String) -> Bool {
        var probe = in_addr()
        guard inet_pton(AF_INET, address, &probe) == 1 else { return false }
        return UInt32(bigEndian: probe.s_addr) >> 24 == 127
    }

    public var port: UInt16 { server.port }

    /// Whether Chart.js is where the page loads it from (else the page says how to install it).
    public static var chartJSInstalled: Bool { FileManager.default.isReadableFile(atPath: chartJSPath) }

    public func stop() {
        routes.closeStreams()
        server.stop()
    }

    /// The page's files (index.html, dashboard.js, dashboard.css, charts.js, report.html,
    /// report.js): the resource bundle beside the executable (where `swift build` and `make
    /// install` put it), else this source tree's copy. Nil when neither is there (an error, not a
    /// crash as Bundle.module would be).
    public static var resourcesDirectory: String? {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let candidates = [
            executable.appendingPathComponent("LivePush_Dashboard.resources/Resources").path,
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Resources").path,
        ]
        return candidates.first { FileManager.default.fileExists(atPath: $0 + "/index.html") }
    }

    /// `[ADDR:]PORT` of `--dashboard`: the address (default 127.0.0.1) and port.
    public static func parseAddress(_ text: String) -> (address: String, port: UInt16)? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, let port = UInt16(parts.last ?? "") else { return nil }
        let address = parts.count == 2 ? String(parts[0]) : "127.0.0.1"
        var probe = in_addr()
        guard inet_pton(AF_INET, address, &probe) == 1 else { return nil }
        return (address, port)
    }
}

/// Why the dashboard could not start; the broadcast goes on without it.
public enum DashboardError: Error, CustomStringConvertible {
    case http(HTTPServerError)
    case resourcesMissing

    public var description: String {
        switch self {
        case .http(let error): return "\(error)"
        case .resourcesMissing:
            return "the dashboard's page files (LivePush_Dashboard.resources) are not beside the livepush executable; "
                + "reinstall LivePush"
        }
    }
}

/// What each path of the dashboard answers. Every request is first checked by `DashboardAccess`
/// (its Host, its Origin); every one but the page's static files needs the token (header
/// `X-LivePush-Token`, or `token=` in the query of a GET); without it: 403.
final class DashboardRoutes: @unchecked Sendable {
    let handler: ControlHandler
    let hub: EventHub
    let resources: String
    /// Set once, before the server's first request can reach it (the port is known only then).
    private let accessLock = NSLock()
    private var accessValue: DashboardAccess?
    var access: DashboardAccess? {
        get { accessLock.withLock { accessValue } }
        set { accessLock.withLock { accessValue = newValue } }
    }
    private let lock = NSLock()
    private var preview: (bytes: [UInt8], takenNs: UInt64)?
    private var streams: [HTTPStream] = []
    static let staticFiles: [String: String] = [
        "dashboard.js": "text/javascript", "dashboard.css": "text/css", "charts.js": "text/javascript",
    ]

    init(handler: ControlHandler, hub: EventHub, resources: String) {
        self.handler = handler
        self.hub = hub
        self.resources = resources
    }

    func closeStreams() { lock.withLock { streams }.forEach { $0.close() } }

    func answer(_ request: HTTPRequest) -> HTTPResponse {
        var response = route(request)
        let present = Set(response.headers.map { $0.0.lowercased() })
        response.headers += DashboardAccess.headers.filter { !present.contains($0.0.lowercased()) }
        return response
    }

    private func route(_ request: HTTPRequest) -> HTTPResponse {
        guard let access else { return .text(503, "the dashboard is starting") }
        if let refusal = access.refusal(request) { return refusal }
        // The page's own files hold no secret: no token, so that the page can load them.
        switch (request.method, request.path) {
        case ("GET", "/static/chart.min.js"):
            guard let bytes = FileManager.default.contents(atPath: Dashboard.chartJSPath) else {
                return .text(404, "Chart.js is not installed: apt-get install libjs-chart.js")
            }
            return HTTPResponse(status: 200, contentType: "text/javascript", body: [UInt8](bytes))
        case ("GET", let path) where path.hasPrefix("/static/"):
            let name = String(path.dropFirst("/static/".count))
            guard let type = Self.staticFiles[name] else { return .text(404, "no such file") }
            return file(name, type: type)
        default:
            break
        }
        guard access.hasToken(request) else {
            return .text(403, "403 Forbidden: this dashboard needs its token; open the URL that livepush printed "
                + "(http://ADDRESS:PORT/?token=...)")
        }
        switch (request.method, request.path) {
        case ("GET", "/"):
            return file("index.html", type: "text/html; charset=utf-8")
        case ("GET", "/api/status"):
            return json(200, JSONLine.encode(handler.statusObject()))
        case ("GET", "/api/history"):
            return json(200, "[" + hub.recent.joined(separator: ",") + "]")
        case ("POST", "/api/control"):
            let args = (request.query["args"] ?? "").split(separator: ",").map(String.init)
            let verb = request.query["command"] ?? ""
            if let command = try? ControlCommand.parse([verb] + args), let refusal = access.commandRefusal(command) {
                return json(403, ControlHandler.failure(.refused(command: command.verb, reason: refusal)))
            }
            let line = JSONLine.encode(["command": verb, "args": args])
            let (answer, command) = handler.answer(requestLine: line)
            guard command != .events else { return json(400, ControlHandler.failure(.badRequest("use /events"))) }
            let ok = JSONLine.decode(answer)?["ok"] as? Bool ?? false
            return json(ok ? 200 : 400, answer)
        case ("GET", "/events"):
            return events()
        case ("GET", "/preview.jpg"):
            guard let bytes = previewJPEG() else { return .text(503, "no picture yet") }
            return HTTPResponse(status: 200, contentType: "image/jpeg", body: bytes)
        default:
            return .text(404, "no such page")
        }
    }

    /// Server-Sent Events: one `data:` line per event, as the events file has them.
    private func events() -> HTTPResponse {
        let stream = HTTPStream()
        let sink = StreamEventSink(stream: stream)
        stream.onClose = { [weak self, weak sink] in
            guard let self, let sink else { return }
            self.hub.remove(sink)
            self.lock.withLock { self.streams.removeAll { $0 === stream } }
        }
        stream.send("retry: 2000\n\n")
        lock.withLock { streams.append(stream) }
        hub.add(sink)
        return .streaming(stream, contentType: "text/event-stream")
    }

    /// The outgoing picture, encoded at most about three times a second whoever asks.
    private func previewJPEG() -> [UInt8]? {
        let nowNs = DispatchTime.now().uptimeNanoseconds
        if let cached = lock.withLock({ preview }), nowNs - cached.takenNs < 300_000_000 { return cached.bytes }
        guard let bytes = handler.pusher.snapshotJPEG(timeoutMs: 1000) else { return nil }
        lock.withLock { preview = (bytes, nowNs) }
        return bytes
    }

    private func file(_ name: String, type: String) -> HTTPResponse {
        guard let bytes = FileManager.default.contents(atPath: resources + "/" + name) else {
            return .text(404, "missing page file \(name)")
        }
        return HTTPResponse(status: 200, contentType: type, body: [UInt8](bytes))
    }

    private func json(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", body: Array(text.utf8))
    }
}

/// Event lines into one SSE stream.
final class StreamEventSink: EventSink, @unchecked Sendable {
    private let stream: HTTPStream
    init(stream: HTTPStream) { self.stream = stream }
    func write(line: String) { stream.send("data: " + line + "\n\n") }
}
