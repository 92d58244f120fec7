import Foundation
import LivePush

/// The switches of a broadcast that a person at the controls changes (issue 35): the mirrors,
/// the preview window, the microphone's processing, ear monitoring, the log level, and a restart
/// of every push. Each is the SDK call of the same name; `status` shows them under `settings`.
public enum ControlSetting: Equatable, Sendable {
    /// Every destination stopped and started again with new connections (`restartPush`).
    case restart
    case mirror(ControlMirror, on: Bool)
    case denoise(AudioDenoiseLevel)
    case agc(on: Bool)
    case voiceActivity(on: Bool)
    /// Ear monitoring on (to `sink`, nil: the default output) or off.
    case earMonitor(on: Bool, sink: String?)
    /// The preview window opened (with the last settings) or closed.
    case preview(open: Bool)
    case logLevel(LivePushLogLevel)

    /// The verbs, with their arguments and help, for `ControlCommand.verbs`.
    static let verbs: [(verb: String, arguments: String, help: String)] = [
        ("restart", "", "Stop every destination and push to it again with a new connection, at the initial bitrate "
            + "(encoding and the recording go on)."),
        ("mirror", "push|preview on|off",
         "Mirror the stream (viewers and recordings) or the preview window, left to right; the two are independent."),
        ("denoise", "off|low|medium|high", "Noise suppression on the microphone."),
        ("agc", "on|off", "Automatic gain on the microphone (levels the voice)."),
        ("voice-activity", "on|off", "Report when a voice starts and stops on the microphone (voiceActivity events)."),
        ("ear-monitor", "on [SINK] | off", "Play the microphone and the music to SINK (default: the default output), or stop."),
        ("preview", "open|close", "Open the preview window (what viewers get, with the last settings) or close it."),
        ("log-level", LivePushLogLevel.allCases.map(\.rawValue).joined(separator: "|"),
         "How much the broadcast logs from now on; FFmpeg's log follows it."),
    ]

    /// The setting that `verb` and `args` spell; nil when `verb` is none of these.
    static func parse(_ verb: String, _ args: [String]) throws(ControlError) -> ControlSetting? {
        func onOff(_ word: String?, usage: String) throws(ControlError) -> Bool {
            guard let word else { throw .missingValue(command: verb, expected: usage) }
            switch word {
            case "on": return true
            case "off": return false
            default: throw .invalidValue(command: verb, value: word, reason: "use \(usage)")
            }
        }
        func only(_ count: Int, usage: String) throws(ControlError) {
            guard args.count <= count else { throw .invalidValue(command: verb, value: args[count], reason: "use: \(verb) \(usage)") }
        }
        switch verb {
        case "restart":
            try only(0, usage: "(no value)")
            return .restart
        case "mirror":
            let usage = "push|preview on|off"
            guard let what = args.first else { throw .missingValue(command: verb, expected: usage) }
            guard let target = ControlMirror(rawValue: what) else { throw .invalidValue(command: verb, value: what, reason: "use \(usage)") }
            try only(2, usage: usage)
            return .mirror(target, on: try onOff(args.dropFirst().first, usage: "on or off"))
        case "denoise":
            let names = AudioDenoiseLevel.allCases.map(\.rawValue).joined(separator: ", ")
            guard let word = args.first else { throw .missingValue(command: verb, expected: names) }
            try only(1, usage: "off|low|medium|high")
            guard let level = AudioDenoiseLevel(rawValue: word) else { throw .invalidValue(command: verb, value: word, reason: "use \(names)") }
            return .denoise(level)
        case "agc":
            try only(1, usage: "on|off")
            return .agc(on: try onOff(args.first, usage: "on or off"))
        case "voice-activity":
            try only(1, usage: "on|off")
            return .voiceActivity(on: try onOff(args.first, usage: "on or off"))
        case "ear-monitor":
            let on = try onOff(args.first, usage: "on [SINK] or off")
            try only(on ? 2 : 1, usage: "on [SINK] | off")
            let sink = on ? args.dropFirst().first : nil
            if let sink, sink.isEmpty || sink.unicodeScalars.contains(where: { $0.value < 0x20 }) {
                throw .invalidValue(command: verb, value: sink, reason: "a sink is a node name, as 'livepush devices' lists them")
            }
            return .earMonitor(on: on, sink: sink)
        case "preview":
            guard let word = args.first else { throw .missingValue(command: verb, expected: "open or close") }
            try only(1, usage: "open|close")
            guard word == "open" || word == "close" else { throw .invalidValue(command: verb, value: word, reason: "use open or close") }
            return .preview(open: word == "open")
        case "log-level":
            let names = LivePushLogLevel.allCases.map(\.rawValue).joined(separator: ", ")
            guard let word = args.first else { throw .missingValue(command: verb, expected: names) }
            try only(1, usage: names)
            guard let level = LivePushLogLevel(rawValue: word) else { throw .invalidValue(command: verb, value: word, reason: "use \(names)") }
            return .logLevel(level)
        default:
            return nil
        }
    }

    var verb: String {
        switch self {
        case .restart: "restart"
        case .mirror: "mirror"
        case .denoise: "denoise"
        case .agc: "agc"
        case .voiceActivity: "voice-activity"
        case .earMonitor: "ear-monitor"
        case .preview: "preview"
        case .logLevel: "log-level"
        }
    }

    var arguments: [String] {
        func word(_ on: Bool) -> String { on ? "on" : "off" }
        switch self {
        case .restart: return []
        case .mirror(let target, let on): return [target.rawValue, word(on)]
        case .denoise(let level): return [level.rawValue]
        case .agc(let on), .voiceActivity(let on): return [word(on)]
        case .earMonitor(let on, let sink): return [word(on)] + (sink.map { [$0] } ?? [])
        case .preview(let open): return [open ? "open" : "close"]
        case .logLevel(let level): return [level.rawValue]
        }
    }

    /// Carries the setting out on `pusher`; the answer's extra fields, or why nothing changed.
    func execute(on pusher: LivePusher) -> Result<[String: Any], ControlError> {
        switch self {
        case .restart:
            let code = pusher.restartPush()
            guard code == 0 else {
                return .failure(.refused(command: verb, reason: code == -1 ? "there is no destination to restart "
                    + "(add one with 'add URL')" : "a destination could not start again (\(code)): 'status' says which"))
            }
        case .mirror(.push, let on): pusher.setPushMirror(on)
        case .mirror(.preview, let on): pusher.setPreviewMirror(on)
        case .denoise(let level):
            pusher.setAudioDenoise(level, automaticGain: pusher.microphoneProcessing.automaticGain)
        case .agc(let on):
            pusher.setAudioDenoise(pusher.microphoneProcessing.denoise, automaticGain: on)
        case .voiceActivity(let on): pusher.enableVoiceActivityDetection(on)
        case .earMonitor(let on, let sink):
            guard pusher.setEarsBack(on, sink: sink) == 0 else {
                return .failure(.refused(command: verb, reason: "ear monitoring cannot play"
                    + (sink.map { " to '\($0)'" } ?? " to the default output")
                    + ": the events and the broadcast's log say why ('livepush devices' lists the sinks)"))
            }
        case .preview(let open):
            guard open else {
                pusher.stopPreview()
                return .success([:])
            }
            switch pusher.startPreview() {
            case 0: return .success(["previewWindowId": Int(pusher.previewWindowID ?? 0)])
            case -1: return .failure(.refused(command: verb, reason: "the broadcast has no picture yet (screen capture is not running)"))
            default: return .failure(.refused(command: verb, reason: "no window can be opened (no X display reachable, "
                + "or no MIT-SHM): the events say why"))
            }
        case .logLevel(let level): LivePush.setLogLevel(level)
        }
        return .success([:])
    }
}

/// What `mirror` mirrors.
public enum ControlMirror: String, Sendable {
    /// The stream: viewers and recordings.
    case push
    /// The preview window only.
    case preview
}

/// `snapshot FILE [--count N] [--interval MS]`: how many pictures, how far apart.
public struct ControlSnapshotSeries: Equatable, Sendable {
    public var count = 1
    public var intervalMs = 1000

    public init(count: Int = 1, intervalMs: Int = 1000) {
        self.count = count
        self.intervalMs = intervalMs
    }

    /// The options after the file name.
    static func parse(_ options: [String]) throws(ControlError) -> ControlSnapshotSeries {
        let usage = "use: snapshot FILE.png [--count N] [--interval MS]"
        var series = ControlSnapshotSeries()
        var rest = options[...]
        while let option = rest.popFirst() {
            let range: ClosedRange<Int>
            switch option {
            case "--count": range = LivePusher.snapshotCounts
            case "--interval": range = LivePusher.snapshotIntervalsMs
            default: throw .invalidValue(command: "snapshot", value: option, reason: usage)
            }
            guard let text = rest.popFirst() else { throw .missingValue(command: "snapshot", expected: "\(option) N") }
            guard let value = Int(text), range.contains(value) else {
                throw .invalidValue(command: "snapshot", value: text,
                                    reason: "\(option) takes \(range.lowerBound) to \(range.upperBound)"
                                        + (option == "--interval" ? " ms" : ""))
            }
            if option == "--count" { series.count = value } else { series.intervalMs = value }
        }
        return series
    }

    var arguments: [String] { count == 1 ? [] : ["--count", String(count), "--interval", String(intervalMs)] }

    /// Where picture `index` (from 1) of a series goes: FILE itself for one picture, else
    /// `shot-1.png`, `shot-2.png`, ... beside it.
    public func path(_ path: String, index: Int) -> String {
        guard count > 1 else { return path }
        return String(path.dropLast(4)) + "-\(index).png"
    }
}
