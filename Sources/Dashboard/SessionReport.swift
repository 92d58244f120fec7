import Control
import Foundation
import Media

/// The session report: one self-contained HTML file (Chart.js and the page's script inlined,
/// the statistics embedded) with the charts over the whole session, a summary and every warning
/// and error on the timeline. Built from event lines, live (`--report`) or from a saved file
/// (`livepush report EVENTS.jsonl OUT.html`).
public struct SessionReport {
    /// The figures of the summary table, by the key the page shows them under (`data-key`).
    public private(set) var summary: [(key: String, label: String, value: String)] = []
    public private(set) var eventCount = 0
    /// Lines that were not events (not JSON, or without type/seq/monotonicNs).
    public private(set) var skippedLines = 0
    private var events: [[String: Any]] = []

    /// Why no report was written.
    public enum Failure: Error, CustomStringConvertible {
        case noEvents(skipped: Int)
        case resourcesMissing(String)
        case cannotWrite(path: String, reason: String)

        public var description: String {
            switch self {
            case .noEvents(let skipped):
                return "no LivePush events in the input (\(skipped) lines were not events); "
                    + "write them with --events FILE"
            case .resourcesMissing(let what): return "cannot build the report: \(what)"
            case .cannotWrite(let path, let reason): return "cannot write '\(path)': \(reason)"
            }
        }
    }

    public init(lines: [String]) {
        for line in lines where !line.allSatisfy(\.isWhitespace) {
            guard let event = JSONLine.decode(line), event["type"] is String, event["seq"] is Int,
                  event["monotonicNs"] is NSNumber
            else {
                skippedLines += 1
                continue
            }
            events.append(event)
        }
        let ordered = events.sorted { ($0["seq"] as? Int ?? 0) < ($1["seq"] as? Int ?? 0) }
        events = ordered
        eventCount = events.count
        summary = computeSummary()
    }

    private func seq(_ event: [String: Any]) -> Int { event["seq"] as? Int ?? 0 }
    private func type(_ event: [String: Any]) -> String { event["type"] as? String ?? "" }
    private func int(_ event: [String: Any], _ key: String) -> Int { (event[key] as? NSNumber)?.intValue ?? 0 }
    private var startNs: UInt64 { (events.first?["monotonicNs"] as? NSNumber)?.uint64Value ?? 0 }
    private func seconds(_ event: [String: Any]) -> Double {
        Double(((event["monotonicNs"] as? NSNumber)?.uint64Value ?? startNs) &- startNs) / 1e9
    }
    private var statistics: [[String: Any]] { events.filter { type($0) == "statistics" } }

    /// min / mean / max, rounded; zeros when empty.
    static func spread(_ values: [Int]) -> (min: Int, mean: Int, max: Int) {
        guard !values.isEmpty else { return (0, 0, 0) }
        return (values.min()!, Int((Double(values.reduce(0, +)) / Double(values.count)).rounded()), values.max()!)
    }

    private func computeSummary() -> [(key: String, label: String, value: String)] {
        let stats = statistics
        let durationS = events.last.map(seconds) ?? 0
        let encoder = Self.spread(stats.map { int($0, "encoderBitrateKbps") })
        let audio = Self.spread(stats.map { int($0, "micLevel") })
        let desktop = Self.spread(stats.map { int($0, "desktopLevel") })
        let app = Self.spread(stats.map { int($0, "appCpu") }), system = Self.spread(stats.map { int($0, "systemCpu") })
        let reconnects = events.filter { type($0) == "pushStatus" && $0["status"] as? String == "reconnecting" }.count
        return [
            ("durationS", "duration (s)", String(format: "%.1f", durationS)),
            ("framesSent", "frames sent (encoded)", String(stats.reduce(0) { $0 + int($1, "fps") })),
            ("framesRepeated", "frames repeated (nothing new from the screen)", String(stats.map { int($0, "framesRepeated") }.max() ?? 0)),
            ("framesSkipped", "frames skipped (a newer one came first)", String(stats.map { int($0, "framesSkipped") }.max() ?? 0)),
            ("framesDropped", "frames dropped for congestion", String(stats.reduce(0) { $0 + int($1, "framesDropped") })),
            ("reconnects", "reconnections", String(reconnects)),
            ("bytesSent", "bytes sent", String(stats.reduce(0) { $0 + int($1, "bytesSent") })),
            ("encoderKbps", "encoder bitrate min / mean / max (kbps)", "\(encoder.min) / \(encoder.mean) / \(encoder.max)"),
            ("micLevel", "mic level as sent min / mean / max (0-100)", "\(audio.min) / \(audio.mean) / \(audio.max)"),
            ("desktopLevel", "desktop audio level min / mean / max (0-100)", "\(desktop.min) / \(desktop.mean) / \(desktop.max)"),
            ("appCpu", "LivePush CPU min / mean / max (% of all cores)", "\(app.min) / \(app.mean) / \(app.max)"),
            ("systemCpu", "system CPU min / mean / max (%)", "\(system.min) / \(system.mean) / \(system.max)"),
            ("warnings", "warnings", String(events.filter { type($0) == "warning" }.count)),
            ("errors", "errors", String(events.filter { type($0) == "error" }.count)),
            ("statistics", "statistics samples (1 Hz)", String(stats.count)),
        ]
    }

    /// Each destination (by index and redacted URL): its samples while publishing.
    private func destinations() -> [(label: String, samples: [(s: Double, destination: [String: Any])])] {
        var order: [String] = []
        var samples: [String: [(Double, [String: Any])]] = [:]
        for event in statistics {
            for destination in event["destinations"] as? [[String: Any]] ?? [] {
                // Its label, or its key's fingerprint: two destinations on one server differ by it.
                let name = destination["label"] as? String
                    ?? (destination["keyFingerprint"] as? String).map { "key " + $0 } ?? ""
                let label = "#\(int(destination, "index")) \(destination["url"] as? String ?? "")"
                    + (name.isEmpty ? "" : " (\(name))")
                if samples[label] == nil { order.append(label) }
                samples[label, default: []].append((seconds(event), destination))
            }
        }
        return order.map { ($0, samples[$0] ?? []) }
    }

    /// The HTML page. `chartJS` is Chart.js's source (Debian's chart.min.js by default).
    public func html(title: String, chartJSPath: String = Dashboard.chartJSPath) throws(Failure) -> String {
        guard eventCount > 0 else { throw .noEvents(skipped: skippedLines) }
        guard let resources = Dashboard.resourcesDirectory,
              let template = try? String(contentsOfFile: resources + "/report.html", encoding: .utf8),
              let script = try? String(contentsOfFile: resources + "/report.js", encoding: .utf8),
              let common = try? String(contentsOfFile: resources + "/charts.js", encoding: .utf8)
        else { throw .resourcesMissing("the page files (report.html, report.js, charts.js) are missing; reinstall LivePush") }
        guard let chartJS = try? String(contentsOfFile: chartJSPath, encoding: .utf8) else {
            throw .resourcesMissing("Chart.js is not at \(chartJSPath); apt-get install libjs-chart.js")
        }
        let text = HTMLEscaping.text, attribute = HTMLEscaping.attribute
        let summaryRows = summary.map { row in
            "<tr><th>\(text(row.label))</th>"
                + "<td class=\"number\" data-key=\"\(attribute(row.key))\">\(text(row.value))</td></tr>"
        }.joined(separator: "\n")
        let destinationList = destinations()
        let destinationRows = destinationList.enumerated().map { index, item in
            let publishing = item.samples.filter { $0.destination["status"] as? String == "connectSuccess" }
            let rate = Self.spread(publishing.map { int($0.destination, "sendBitrateKbps") })
            let bytes = item.samples.reduce(0) { $0 + int($1.destination, "bytesSent") }
            let dropped = item.samples.reduce(0) { $0 + int($1.destination, "framesDropped") }
            let cells = [("Min", rate.min), ("Mean", rate.mean), ("Max", rate.max), ("Bytes", bytes), ("Dropped", dropped)]
                .map { "<td class=\"number\" data-key=\"\(attribute("destination\(index)\($0.0)"))\">\($0.1)</td>" }
                .joined()
            return "<tr><td>\(text(item.label))</td>\(cells)</tr>"
        }.joined(separator: "\n")
        let timeline = events.filter { ["warning", "error", "pushStatus", "control", "captureStarted", "captureStopped",
                                        "recordBegin", "recordComplete", "replaySaved", "session"].contains(type($0)) }
            .map { event in
                let line = String(format: "%.1f s ", seconds(event)) + (event["time"] as? String ?? "") + " "
                    + describe(event)
                return "<li class=\"\(attribute(type(event)))\">\(text(line))</li>"
            }.joined(separator: "\n")
        let data = chartData(destinationList)
        let session = events.first { type($0) == "session" && $0["event"] as? String == "start" }
        let subtitle = session.map { "\($0["name"] as? String ?? "") · LivePush \($0["version"] as? String ?? "") · "
            + "\(int($0, "width"))x\(int($0, "height")) at \(int($0, "fps")) fps · started \($0["time"] as? String ?? "")" }
            ?? "from \(eventCount) events"
        // One pass over the template: a value is never searched for placeholders (issue 30).
        do {
            return try PageTemplate(template: template).fill([
                "CHARTJS": .scriptCode(chartJS), "REPORTJS": .scriptCode(script), "CHARTSJS": .scriptCode(common),
                "DATA": .scriptJSON(data), "TITLE": .text(title), "SUBTITLE": .text(subtitle),
                "SUMMARY": .markup(summaryRows), "DESTINATIONS": .markup(destinationRows),
                "TIMELINE": .markup(timeline),
            ])
        } catch {
            throw .resourcesMissing("the page file report.html does not fit this livepush (\(error)); "
                + "reinstall LivePush")
        }
    }

    /// Writes `html(title:)` to `path`, mode 0600 (a report names destinations and shows the
    /// session: only its owner reads it, as the events file), never opening what is at `path`.
    public func write(to path: String, title: String) throws(Failure) {
        let page = try html(title: title)
        do {
            try RegularFile.write(Array(page.utf8), to: path)
        } catch {
            throw .cannotWrite(path: path, reason: error.reason)
        }
    }

    private func chartData(_ destinationList: [(label: String, samples: [(s: Double, destination: [String: Any])])]) -> String {
        let stats = statistics
        func series(_ key: String) -> [[Any]] { stats.map { [Self.round1(seconds($0)), int($0, key)] } }
        var seriesObject: [String: Any] = [:]
        for key in ["encoderBitrateKbps", "videoBitrateKbps", "sendBitrateKbps", "fps", "queueMs", "framesDropped",
                    "appCpu", "systemCpu", "micLevel", "desktopLevel"] {
            seriesObject[key] = series(key)
        }
        let destinationsObject: [[String: Any]] = destinationList.map { item in
            ["label": item.label,
             "sendBitrateKbps": item.samples.map { [Self.round1($0.s), int($0.destination, "sendBitrateKbps")] },
             "queueMs": item.samples.map { [Self.round1($0.s), int($0.destination, "queueMs")] }]
        }
        let marks: [[String: Any]] = events.filter { ["warning", "error", "control"].contains(type($0)) }
            .map { ["s": Self.round1(seconds($0)), "kind": type($0)] }
        return JSONLine.encode(["series": seriesObject, "destinations": destinationsObject, "marks": marks])
    }

    private func describe(_ event: [String: Any]) -> String {
        switch type(event) {
        case "warning", "error": return "\(type(event)) \(int(event, "code")): \(event["message"] as? String ?? "")"
        case "pushStatus": return "\(event["status"] as? String ?? ""): \(event["message"] as? String ?? "")"
        case "control":
            return "command: \(event["command"] as? String ?? "") \((event["args"] as? [String] ?? []).joined(separator: " "))"
        case "session": return "session \(event["event"] as? String ?? "")"
        case "captureStopped": return "capture stopped (reason \(int(event, "reason")))"
        case "recordBegin", "recordComplete": return "\(type(event)) \(int(event, "code")) \(event["path"] as? String ?? "")"
        case "replaySaved":
            return "replay saved \(int(event, "code")) \(event["path"] as? String ?? "") (\(int(event, "durationMs")) ms)"
        default: return type(event)
        }
    }

    private static func round1(_ value: Double) -> Double { (value * 10).rounded() / 10 }
}

/// Keeps every event line of a run, for `--report` at its end.
public final class CollectingEventSink: EventSink, @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    public init() {}
    public func write(line: String) { lock.withLock { lines.append(line) } }
    public var collected: [String] { lock.withLock { lines } }
}
