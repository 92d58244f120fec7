import CommandLineSupport
import Control
import Dashboard
import Foundation
import LivePush

/// How a run is steered and watched: its control socket's name, the JSON events file, the log level.
struct WatchOptions {
    var name: String?
    var eventsPath: String?
    var logLevel: LivePushLogLevel?
    var dashboard: (address: String, port: UInt16)?
    /// `--dashboard-control all`: the dashboard's /api/control takes every command, not only its buttons'.
    var dashboardAllCommands = false
    var reportPath: String?
    /// `--preview` (PreviewOptions.swift).
    var preview: PreviewConfig?

    static let specs: [OptionSpec] = PreviewOptions.specs + [
        .value("name", valueName: "NAME",
               help: "Name for 'livepush ctl NAME' (the control socket; default: the group)."),
        .value("events", valueName: "FILE|-",
               help: "Write every event and the statistics once a second as JSON lines (docs/events.md); - is stdout."),
        .value("log-level", valueName: "LEVEL",
               help: "quiet, error, warning, info (default) or debug; FFmpeg's own log follows it."),
        .value("dashboard", valueName: "[ADDR:]PORT",
               help: "Serve a live dashboard (charts, picture, buttons) on 127.0.0.1:PORT (0: any free port); "
                   + "its URL, with a token, is printed once. Only the page at that address and port may use it."),
        .flag("dashboard-remote",
              help: "Allow --dashboard on an address other machines reach (not 127.x.x.x): the page, its token and "
                  + "the picture then travel in clear text (plain HTTP); prefer ssh -L to a 127.0.0.1 dashboard."),
        .value("dashboard-control", valueName: "buttons|all",
               help: "What the dashboard may do: its buttons' commands (pause, resume, mute, volume, bitrate, "
                   + "reconnect, restart, the settings; the default) or all, every command of 'livepush ctl' "
                   + "(add, snapshot, bgm start, ...)."),
        .value("report", valueName: "FILE.html",
               help: "At the end, write the session report: charts, summary and timeline in one HTML file."),
    ]

    /// The options `parsed` gives; throws for a name or level that cannot be used.
    static func parse(_ parsed: ParsedArguments) throws(ArgumentError) -> WatchOptions {
        var options = WatchOptions()
        if let name = parsed.value("name") {
            guard (try? ControlSocket.path(name: name)) != nil else {
                throw .invalidValue(option: "name", value: name, reason: "use 1 to 64 of the characters A-Z a-z 0-9 . _ -")
            }
            options.name = name
        }
        options.eventsPath = parsed.value("events")
        if let text = parsed.value("log-level") {
            guard let level = LivePushLogLevel(rawValue: text) else {
                throw .invalidValue(option: "log-level", value: text, reason: "use quiet, error, warning, info or debug")
            }
            options.logLevel = level
        }
        options.reportPath = parsed.value("report")
        options.preview = try PreviewOptions.parse(parsed)
        if let text = parsed.value("dashboard") {
            guard let address = Dashboard.parseAddress(text) else {
                throw .invalidValue(option: "dashboard", value: text, reason: "use PORT or IPV4ADDRESS:PORT, e.g. 8080")
            }
            // A page and a token in clear text on the network: only when the user says so (issue 30).
            guard Dashboard.isLoopback(address.address) || parsed.has("dashboard-remote") else {
                throw .invalidValue(option: "dashboard", value: text, reason: "\(address.address) is not a loopback "
                    + "address: the page and its token would travel in clear text over the network; add "
                    + "--dashboard-remote to serve it there anyway")
            }
            options.dashboard = address
        }
        if let text = parsed.value("dashboard-control") {
            guard text == "buttons" || text == "all" else {
                throw .invalidValue(option: "dashboard-control", value: text, reason: "use buttons or all")
            }
            options.dashboardAllCommands = text == "all"
        }
        return options
    }
}

/// The watching side of one run: the event hub between the pusher and the session, the control
/// socket, the events file. Nothing here can stop the broadcast: what fails is a warning.
final class SessionWatch: @unchecked Sendable {
    let options: WatchOptions
    let hub: EventHub
    private var server: ControlServer?
    private var fileSink: FileEventSink?
    private var dashboard: Dashboard?
    private var collector: CollectingEventSink?

    init(options: WatchOptions, downstream: any LivePusherObserver) {
        self.options = options
        hub = EventHub(forwardingTo: downstream)
        if let level = options.logLevel { LivePush.setLogLevel(level) }
    }

    /// Opens the events file (before the pusher starts, so that no event is missed); an error
    /// names the file and the reason.
    func openEvents() throws(ArgumentError) {
        if let path = options.reportPath {
            // Checked now, not after an hour of broadcasting.
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
            guard access(directory, W_OK) == 0 else {
                throw .invalidValue(option: "report", value: path, reason: "cannot write in \(directory)")
            }
            let collector = CollectingEventSink()
            self.collector = collector
            hub.add(collector)
        }
        guard let path = options.eventsPath else { return }
        guard let sink = FileEventSink(path: path) else {
            throw .invalidValue(option: "events", value: path, reason: "cannot write there (\(String(cString: strerror(errno))))")
        }
        fileSink = sink
        hub.add(sink)
    }

    /// Whether events go to standard output (then the run's summary goes to stderr).
    var eventsOnStdout: Bool { options.eventsPath == "-" }

    /// Starts the control socket and the dashboard for `pusher`; returns notes for the user (the
    /// dashboard's URL is one: printed whatever the log level), and warnings for what could not
    /// start (the broadcast goes on without it).
    func start(pusher: LivePusher, group: String, config: LivePushConfig) -> (notes: [String], warnings: [String]) {
        hub.pusher = pusher
        let name = options.name ?? group
        hub.emit("session", [
            "event": "start", "name": name, "group": group, "version": LivePush.version,
            "width": config.videoWidth, "height": config.videoHeight, "fps": config.fps,
            "targetVideoBitrateKbps": pusher.status.targetVideoBitrateKbps,
            "minVideoBitrateKbps": pusher.status.minVideoBitrateKbps,
        ])
        let handler = ControlHandler(pusher: pusher, hub: hub, info: ["name": name, "group": group])
        var notes: [String] = [], warnings: [String] = []
        do {
            let server = try ControlServer(name: name, handler: handler)
            server.start()
            self.server = server
            notes.append("control: livepush ctl \(name) status  (socket \(server.path))")
        } catch {
            warnings.append("no control socket: \(error); the broadcast goes on without one")
        }
        if let (address, port) = options.dashboard {
            do {
                let dashboard = try Dashboard(handler: handler, hub: hub, address: address, port: port,
                                              allCommands: options.dashboardAllCommands)
                self.dashboard = dashboard
                notes.append("dashboard: \(dashboard.url)")
                if !Dashboard.isLoopback(address) {
                    warnings.append("the dashboard listens on \(address):\(dashboard.port) over plain HTTP: its page, "
                        + "token and picture travel in clear text to anyone on the network path")
                }
                if !Dashboard.chartJSInstalled {
                    warnings.append("Chart.js is not at \(Dashboard.chartJSPath): the dashboard has no charts; "
                        + "apt-get install libjs-chart.js")
                }
            } catch {
                warnings.append("no dashboard: \(error); the broadcast goes on without one")
            }
        }
        if var preview = options.preview {
            preview.title = "LivePush preview: \(name)"
            if pusher.startPreview(preview) == 0, let id = pusher.previewWindowID {
                notes.append("preview: window 0x" + String(id, radix: 16))
            } else {
                warnings.append("no preview window (the error above says why); the broadcast goes on without one")
            }
        }
        return (notes, warnings)
    }

    /// Removes the control socket, closes the events file after the last event, and writes the
    /// report; returns a line for the summary, or the report's error.
    func finish() -> String? {
        dashboard?.stop()
        server?.stop()
        hub.emit("session", ["event": "end"])
        fileSink?.close()
        guard let path = options.reportPath, let collector else { return nil }
        do {
            try SessionReport(lines: collector.collected).write(to: path, title: options.name ?? "session")
            return "Report written to \(path)"
        } catch {
            return "livepush: the report could not be written: \(error)"
        }
    }
}

/// Event lines to a file or standard output, written as they come (a crash loses no line).
final class FileEventSink: EventSink, @unchecked Sendable {
    private let lock = NSLock()
    private var descriptor: Int32
    /// The line and its newline, one write; kept from line to line.
    private var buffer: [UInt8] = []

    init?(path: String) {
        descriptor = path == "-" ? STDOUT_FILENO : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return nil }
    }

    func write(line: String) {
        lock.withLock {
            guard descriptor >= 0 else { return }
            buffer.removeAll(keepingCapacity: true)
            buffer.append(contentsOf: line.utf8)
            buffer.append(UInt8(ascii: "\n"))
            var offset = 0
            while offset < buffer.count {
                let written = buffer.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return }
                offset += written
            }
        }
    }

    func close() {
        lock.withLock {
            if descriptor > STDERR_FILENO { Glibc.close(descriptor) }
            descriptor = -1
        }
    }
}
