import CommandLineSupport
import Foundation
import LivePush
import SafeText

/// One command of the control socket (docs/control.md), parsed from the words a person types
/// after `livepush ctl [NAME]` or from the `command` and `args` of a JSON request.
public enum ControlCommand: Equatable, Sendable {
    case status
    case pause
    case resume
    case mute(ControlAudioTarget)
    case unmute(ControlAudioTarget)
    case volume(ControlAudioSource, percent: Int)
    case bitrate(kbps: Int)
    case minBitrate(kbps: Int)
    case add(url: String)
    /// Background music (issue 17): start a file (looped or not), stop, pause, resume, its volume.
    case bgm(ControlMusicAction)
    case remove(index: Int)
    case reconnect
    /// Streams the JSON events (docs/events.md) until the client hangs up.
    case events
    /// Watermarks (issue 16): add one from a file, or remove one by its id.
    case watermark(ControlWatermarkAction)
    /// Writes the next outgoing picture to a PNG file (issue 16), or a series of them (issue 35).
    case snapshot(path: String, series: ControlSnapshotSeries = ControlSnapshotSeries())
    /// An SEI message in the video (issue 16): the text, in how many frames, after how long, keyframes only.
    case sei(text: String, repeatCount: Int, delayMs: Int, keyFrameOnly: Bool)
    /// A keyframe now, for a viewer who joined (issue 22), and optionally another one `followUpMs` later.
    case keyframe(followUpMs: Int?)
    /// The local recording (issue 34): start one to a file, stop, pause or resume it.
    case record(ControlRecordAction)
    /// The replay buffer (issue 34): write what it holds to a file (or to a name of its own).
    case replay(ControlReplayAction)
    /// The switches a person changes while live (issue 35): mirrors, preview, mic processing, ear
    /// monitoring, log level, restart (SettingCommands.swift).
    case setting(ControlSetting)

    /// Every verb with its arguments, for help texts and error messages.
    public static let verbs: [(verb: String, arguments: String, help: String)] = [
        ("status", "", "What the broadcast does now: capture, pause, audio, bitrates, every destination, statistics."),
        ("pause", "", "Send the pause picture instead of the screen (audio goes on)."),
        ("resume", "", "The screen again."),
        ("mute", "[mic|desktop|all]", "Silence the microphone, the desktop audio or everything (default all)."),
        ("unmute", "[mic|desktop|all]", "Undo mute."),
        ("volume", "mic|desktop PERCENT", "A source's volume, 0 to 400 (100: as captured)."),
        ("bitrate", "KBPS", "The target video bitrate, 100 to 50000 (auto bitrate climbs back to it)."),
        ("min-bitrate", "KBPS", "The lowest video bitrate auto bitrate goes down to."),
        ("add", "[--label NAME] URL | [--label NAME] --url-file FILE",
         "Push to one more destination; --label NAME (or LABEL=URL) names it in status, events, the dashboard and the report."),
        ("remove", "N", "Stop pushing to destination N (as 'status' numbers them, from 0)."),
        ("reconnect", "", "Drop every connection and connect again; destinations that gave up start again too."),
        ("events", "", "Stream the JSON events (one per line) until Ctrl-C."),
        ("bgm", "start FILE [loop] | stop | pause | resume | volume PERCENT | loop on|off",
         "Background music: play FILE (looped with 'loop', else as 'bgm loop' set), stop, pause, resume, set its "
             + "volume (0 to 400), or loop this track and the next ones (or not)."),
        ("watermark", "add FILE@X,Y,W[,OPACITY] | remove ID",
         "Draw a PNG or JPEG on the stream (X, Y, W fractions of the picture; the answer has its id), or remove one."),
        ("snapshot", "FILE [--count N] [--interval MS]",
         "Write the next picture viewers get (watermarks and placeholders included) to FILE as a PNG; with --count, "
             + "N pictures (1 to 100) MS ms apart (100 to 60000, default 1000) to FILE-1.png, FILE-2.png, ..."),
        ("sei", "TEXT [--repeat N] [--delay MS] [--keyframe-only]",
         "Insert TEXT into the video as an SEI message, in N frames (default 1; keyframes with --keyframe-only) after MS ms (default 0)."),
        ("keyframe", "[--follow-up MS]",
         "Make the next picture a keyframe, for a viewer who just joined (at most one a second; none after a recent "
             + "one); with --follow-up, another one MS ms later (100 to 10000)."),
        ("record", "start FILE | stop | pause | resume",
         "Record the broadcast to FILE (.mkv, .mp4 or .flv) while it goes on, stop, pause (nothing is written) or resume "
             + "(from the next keyframe, with no gap in the file's timestamps)."),
        ("replay", "save [FILE]",
         "Write the replay buffer (--replay-buffer SECONDS: the last seconds of the stream) to FILE (.mkv, .mp4 or "
             + ".flv, a new file), from a keyframe, while the broadcast goes on; with no FILE, "
             + "replay-YYYYMMDD-HHMMSS.mkv in the --replay-dir."),
    ] + ControlSetting.verbs

    /// The command that `words` spell: a verb and its arguments. Throws `ControlError` naming the
    /// word that is wrong and what would be right.
    public static func parse(_ words: [String]) throws(ControlError) -> ControlCommand {
        guard let verb = words.first else { throw .unknownCommand("", known: verbNames) }
        let args = Array(words.dropFirst())
        func noArguments(_ command: ControlCommand) throws(ControlError) -> ControlCommand {
            guard args.isEmpty else { throw .invalidValue(command: verb, value: args[0], reason: "'\(verb)' takes no value") }
            return command
        }
        func one(_ what: String) throws(ControlError) -> String {
            guard let value = args.first else { throw .missingValue(command: verb, expected: what) }
            guard args.count == 1 else { throw .invalidValue(command: verb, value: args[1], reason: "only one value: \(what)") }
            return value
        }
        func number(_ text: String, _ range: ClosedRange<Int>, _ unit: String) throws(ControlError) -> Int {
            guard let value = Int(text), range.contains(value) else {
                throw .invalidValue(command: verb, value: text,
                                    reason: "use a whole number of \(unit) from \(range.lowerBound) to \(range.upperBound)")
            }
            return value
        }
        switch verb {
        case "status": return try noArguments(.status)
        case "pause": return try noArguments(.pause)
        case "resume": return try noArguments(.resume)
        case "reconnect": return try noArguments(.reconnect)
        case "events": return try noArguments(.events)
        case "mute", "unmute":
            let target: ControlAudioTarget
            if args.isEmpty {
                target = .all
            } else {
                let text = try one("mic, desktop or all")
                guard let parsed = ControlAudioTarget(rawValue: text) else {
                    throw .invalidValue(command: verb, value: text, reason: "use mic, desktop or all")
                }
                target = parsed
            }
            return verb == "mute" ? .mute(target) : .unmute(target)
        case "volume":
            guard args.count == 2 else {
                if args.count > 2 { throw .invalidValue(command: verb, value: args[2], reason: "use: volume mic|desktop PERCENT") }
                throw .missingValue(command: verb, expected: "mic|desktop PERCENT")
            }
            guard let source = ControlAudioSource(rawValue: args[0]) else {
                throw .invalidValue(command: verb, value: args[0], reason: "use mic or desktop")
            }
            return .volume(source, percent: try number(args[1], 0...400, "percent"))
        case "bitrate": return .bitrate(kbps: try number(try one("KBPS"), 100...50000, "kbps"))
        case "min-bitrate": return .minBitrate(kbps: try number(try one("KBPS"), 100...50000, "kbps"))
        case "add":
            // `add --label NAME URL` is `add NAME=URL`: one text form for a labelled destination.
            var words = args
            var label: String?
            if let at = words.firstIndex(of: "--label") {
                guard at + 1 < words.count else { throw .missingValue(command: verb, expected: "--label NAME") }
                label = words[at + 1]
                words.removeSubrange(at...(at + 1))
            }
            guard words.count == 1 else {
                if words.isEmpty { throw .missingValue(command: verb, expected: "URL") }
                throw .invalidValue(command: verb, value: Redaction.redact(words[1]), reason: "add takes one URL")
            }
            let url = words[0]
            guard url.contains("://") else {
                throw .invalidValue(command: verb, value: "****",
                                    reason: "use rtmp://host[:port]/app/key, rtmps://... or srt://host:port?... (LABEL=URL to name it)")
            }
            if let label {
                if let problem = LabelledPushURL.problem(label: label) { throw .invalidValue(command: verb, value: "--label", reason: problem) }
                return .add(url: label + "=" + url)
            }
            return .add(url: url)
        case "remove": return .remove(index: try number(try one("N"), 0...999, "destination indexes"))
        case "bgm":
            let usage = "use: bgm start FILE [loop] | stop | pause | resume | volume PERCENT | loop on|off"
            guard let action = args.first else { throw .missingValue(command: verb, expected: "start, stop, pause, resume or volume") }
            let rest = Array(args.dropFirst())
            switch action {
            case "start":
                guard let path = rest.first else { throw .missingValue(command: verb, expected: "start FILE [loop]") }
                guard rest.count == 1 || (rest.count == 2 && rest[1] == "loop") else {
                    throw .invalidValue(command: verb, value: rest.last ?? "", reason: usage)
                }
                return .bgm(.start(path: path, loop: rest.count == 2 ? true : nil))
            case "loop":
                guard rest.count == 1, rest[0] == "on" || rest[0] == "off" else {
                    if rest.isEmpty { throw .missingValue(command: verb, expected: "loop on|off") }
                    throw .invalidValue(command: verb, value: rest[rest.count == 1 ? 0 : 1], reason: "use: bgm loop on|off")
                }
                return .bgm(.loop(rest[0] == "on"))
            case "stop", "pause", "resume":
                guard rest.isEmpty else { throw .invalidValue(command: verb, value: rest[0], reason: "'bgm \(action)' takes no value") }
                return .bgm(action == "stop" ? .stop : action == "pause" ? .pause : .resume)
            case "volume":
                guard rest.count == 1 else {
                    if rest.isEmpty { throw .missingValue(command: verb, expected: "volume PERCENT") }
                    throw .invalidValue(command: verb, value: rest[1], reason: usage)
                }
                return .bgm(.volume(percent: try number(rest[0], 0...400, "percent")))
            default:
                throw .invalidValue(command: verb, value: action, reason: usage)
            }
        case "watermark":
            let usage = "use: watermark add FILE@X,Y,W[,OPACITY] | remove ID"
            guard args.count == 2 else {
                if args.count < 2 { throw .missingValue(command: verb, expected: "add FILE@X,Y,W[,OPACITY] or remove ID") }
                throw .invalidValue(command: verb, value: args[2], reason: usage)
            }
            switch args[0] {
            case "add":
                do {
                    return .watermark(.add(try WatermarkFile(parsing: args[1])))
                } catch {
                    throw .invalidValue(command: verb, value: args[1], reason: error.description)
                }
            case "remove": return .watermark(.remove(id: try number(args[1], 1...Int(Int32.max), "ids")))
            default: throw .invalidValue(command: verb, value: args[0], reason: usage)
            }
        case "snapshot":
            guard let path = args.first else { throw .missingValue(command: verb, expected: "FILE") }
            guard path.hasSuffix(".png") else { throw .invalidValue(command: verb, value: path, reason: "the file name must end in .png") }
            return .snapshot(path: path, series: try ControlSnapshotSeries.parse(Array(args.dropFirst())))
        case "sei": return try parseSEI(args)
        case "record": return .record(try ControlRecordAction.parse(args))
        case "replay": return .replay(try ControlReplayAction.parse(args))
        case "keyframe":
            guard !args.isEmpty else { return .keyframe(followUpMs: nil) }
            guard args[0] == "--follow-up" else {
                throw .invalidValue(command: verb, value: args[0], reason: "use: keyframe [--follow-up MS]")
            }
            guard args.count == 2 else {
                if args.count < 2 { throw .missingValue(command: verb, expected: "--follow-up MS") }
                throw .invalidValue(command: verb, value: args[2], reason: "use: keyframe [--follow-up MS]")
            }
            return .keyframe(followUpMs: try number(args[1], 100...10000, "ms"))
        default:
            guard let setting = try ControlSetting.parse(verb, args) else { throw .unknownCommand(verb, known: verbNames) }
            return .setting(setting)
        }
    }

    /// The verb, as typed.
    public var verb: String {
        switch self {
        case .status: "status"
        case .pause: "pause"
        case .resume: "resume"
        case .mute: "mute"
        case .unmute: "unmute"
        case .volume: "volume"
        case .bitrate: "bitrate"
        case .minBitrate: "min-bitrate"
        case .add: "add"
        case .remove: "remove"
        case .reconnect: "reconnect"
        case .events: "events"
        case .bgm: "bgm"
        case .watermark: "watermark"
        case .snapshot: "snapshot"
        case .sei: "sei"
        case .keyframe: "keyframe"
        case .record: "record"
        case .replay: "replay"
        case .setting(let setting): setting.verb
        }
    }

    /// The arguments, as typed (a URL's key replaced by ****).
    public var arguments: [String] {
        switch self {
        case .status, .pause, .resume, .reconnect, .events: []
        case .mute(let target), .unmute(let target): [target.rawValue]
        case .volume(let source, let percent): [source.rawValue, String(percent)]
        case .bitrate(let kbps), .minBitrate(let kbps): [String(kbps)]
        case .add(let url): [Redaction.redact(url)]
        case .remove(let index): [String(index)]
        case .bgm(let action): action.arguments
        case .watermark(let action): action.arguments
        case .snapshot(let path, let series): [path] + series.arguments
        case .sei(let text, let repeatCount, let delayMs, let keyFrameOnly):
            [text, "--repeat", String(repeatCount), "--delay", String(delayMs)] + (keyFrameOnly ? ["--keyframe-only"] : [])
        case .keyframe(let followUpMs): followUpMs.map { ["--follow-up", String($0)] } ?? []
        case .record(let action): action.arguments
        case .replay(let action): action.arguments
        case .setting(let setting): setting.arguments
        }
    }

    static var verbNames: [String] { verbs.map(\.verb) }

    /// `sei TEXT [--repeat N] [--delay MS] [--keyframe-only]`, the options in any order after the text.
    private static func parseSEI(_ args: [String]) throws(ControlError) -> ControlCommand {
        let usage = "use: sei TEXT [--repeat N] [--delay MS] [--keyframe-only]"
        guard let text = args.first, !text.hasPrefix("--") else { throw .missingValue(command: "sei", expected: "TEXT") }
        guard !text.isEmpty else { throw .invalidValue(command: "sei", value: text, reason: "the text is empty") }
        var repeatCount = 1, delayMs = 0, keyFrameOnly = false
        var rest = args.dropFirst()
        func number(_ option: String, _ range: ClosedRange<Int>, _ unit: String) throws(ControlError) -> Int {
            guard let value = rest.popFirst() else { throw .missingValue(command: "sei", expected: "\(option) \(unit.uppercased())") }
            guard let number = Int(value), range.contains(number) else {
                throw .invalidValue(command: "sei", value: value,
                                    reason: "\(option) takes \(range.lowerBound) to \(range.upperBound) \(unit)")
            }
            return number
        }
        while let word = rest.popFirst() {
            switch word {
            case "--repeat": repeatCount = try number(word, 1...1000, "frames")
            case "--delay": delayMs = try number(word, 0...600_000, "ms")
            case "--keyframe-only": keyFrameOnly = true
            default: throw .invalidValue(command: "sei", value: word, reason: usage)
            }
        }
        guard text.utf8.count <= 4096 else {
            throw .invalidValue(command: "sei", value: String(text.prefix(20)) + "...",
                                reason: "the text has \(text.utf8.count) bytes; at most 4096")
        }
        return .sei(text: text, repeatCount: repeatCount, delayMs: delayMs, keyFrameOnly: keyFrameOnly)
    }
}

/// What `bgm` does.
public enum ControlMusicAction: Equatable, Sendable {
    /// `loop` nil: as the loop setting is (`bgm loop on|off`).
    case start(path: String, loop: Bool?)
    /// Loop the track playing and the next ones, or not.
    case loop(Bool)
    case stop
    case pause
    case resume
    case volume(percent: Int)

    /// The words after `bgm`, as typed.
    var arguments: [String] {
        switch self {
        case .start(let path, let loop): ["start", path] + (loop == true ? ["loop"] : [])
        case .loop(let on): ["loop", on ? "on" : "off"]
        case .stop: ["stop"]
        case .pause: ["pause"]
        case .resume: ["resume"]
        case .volume(let percent): ["volume", String(percent)]
        }
    }
}

/// What `watermark` does.
public enum ControlWatermarkAction: Equatable, Sendable {
    case add(WatermarkFile)
    case remove(id: Int)

    /// The words after `watermark`, as typed.
    var arguments: [String] {
        switch self {
        case .add(let file):
            let position = file.position
            return ["add", "\(file.path)@\(position.x),\(position.y),\(position.width),\(position.opacity)"]
        case .remove(let id): return ["remove", String(id)]
        }
    }
}

/// What `mute` and `unmute` act on.
public enum ControlAudioTarget: String, Sendable {
    case mic, desktop, all
}

/// A source whose volume `volume` sets.
public enum ControlAudioSource: String, Sendable {
    case mic, desktop
}

/// Why a control command was not carried out. Nothing was changed.
public enum ControlError: Error, Equatable, CustomStringConvertible, Sendable {
    case unknownCommand(String, known: [String])
    case missingValue(command: String, expected: String)
    case invalidValue(command: String, value: String, reason: String)
    /// The request line is not a JSON object with a string `command` (and an array `args`).
    case badRequest(String)
    /// The pusher refused the value (e.g. a bitrate below the minimum).
    case refused(command: String, reason: String)
    case noBroadcast(directory: String)
    case severalBroadcasts([String])
    case cannotConnect(path: String, reason: String)
    case peerRefused(uid: UInt32)

    /// Its code in the JSON answer: -1500 to -1519 (docs/control.md).
    public var code: Int32 {
        switch self {
        case .unknownCommand: -1500
        case .missingValue: -1501
        case .invalidValue: -1502
        case .badRequest: -1503
        case .refused: -1504
        case .noBroadcast: -1506
        case .severalBroadcasts: -1507
        case .cannotConnect: -1508
        case .peerRefused: -1509
        }
    }

    public var description: String {
        switch self {
        case .unknownCommand(let verb, let known):
            return verb.isEmpty ? "no command given; use one of: \(known.joined(separator: ", "))"
                : "unknown command '\(verb)'; "
                    + (Suggestion.nearest(to: verb, in: known).map { "did you mean '\($0)'? " } ?? "")
                    + "use one of: \(known.joined(separator: ", "))"
        case .missingValue(let command, let expected): return "'\(command)' needs \(expected)"
        case .invalidValue(let command, let value, let reason):
            return "'\(command)': invalid value '\(Redaction.redact(value))': \(reason)"
        case .badRequest(let reason):
            return "bad request: \(reason); send one JSON object per line, e.g. {\"command\":\"bitrate\",\"args\":[\"800\"]}"
        case .refused(let command, let reason): return "'\(command)' refused: \(reason)"
        case .noBroadcast(let directory):
            return "no broadcast is running (no control socket in \(directory)); start one with 'livepush screen ...'"
        case .severalBroadcasts(let names):
            return "several broadcasts are running: \(names.joined(separator: ", ")); name one: livepush ctl NAME COMMAND"
        case .cannotConnect(let path, let reason): return "cannot reach the control socket \(path): \(reason)"
        case .peerRefused(let uid): return "refused a control connection from uid \(uid): only this user may steer it"
        }
    }
}
