import Foundation
import LivePush
import Media
import SafeText

/// Carries out control commands on one pusher: the same meaning for the control socket, the
/// dashboard's buttons and anything else that steers a broadcast. A command either succeeds and
/// answers with the pusher's status, or changes nothing and says why.
public final class ControlHandler: @unchecked Sendable {
    public let pusher: LivePusher
    public let hub: EventHub?
    /// Fixed facts every status answer carries (name, group, version).
    public let info: [String: String]
    private let startedNs = DispatchTime.now().uptimeNanoseconds

    public init(pusher: LivePusher, hub: EventHub?, info: [String: String] = [:]) {
        self.pusher = pusher
        self.hub = hub
        self.info = info
    }

    /// Runs `command` (not `events`, which the server streams); the answer's `result`.
    public func execute(_ command: ControlCommand) -> Result<[String: Any], ControlError> {
        var extra: [String: Any] = [:]
        switch command {
        case .status, .events:
            break
        case .pause:
            pusher.pause()
        case .resume:
            pusher.resume()
        case .mute(let target), .unmute(let target):
            var muted = false
            if case .mute = command { muted = true }
            switch target {
            case .all:
                pusher.setMute(muted)
                if !muted { for source in AudioSourceKind.allCases { pusher.setMute(false, source: source) } }
            case .mic: pusher.setMute(muted, source: .microphone)
            case .desktop: pusher.setMute(muted, source: .desktop)
            }
        case .volume(let source, let percent):
            if source == .mic { pusher.setCaptureVolume(percent) } else { pusher.setDesktopAudioVolume(percent) }
        case .bitrate(let kbps):
            guard pusher.setTargetVideoBitrate(kbps: kbps) == 0 else {
                let minKbps = pusher.status.minVideoBitrateKbps
                return .failure(.refused(command: command.verb, reason: "\(kbps) kbps is below the minimum bitrate "
                    + "(\(minKbps) kbps); lower it first with 'min-bitrate'"))
            }
        case .minBitrate(let kbps):
            guard pusher.setMinVideoBitrate(kbps: kbps) == 0 else {
                let targetKbps = pusher.status.targetVideoBitrateKbps
                return .failure(.refused(command: command.verb, reason: "\(kbps) kbps is above the target bitrate "
                    + "(\(targetKbps) kbps); raise it first with 'bitrate'"))
            }
        case .add(let text):
            // Checked here first: the pusher would report a bad URL as an error of the broadcast.
            let url: PushDestination
            let written: LabelledPushURL
            do throws(PushURLError) {
                written = try LabelledPushURL(text)
                url = try PushDestination(written.url)
            } catch {
                return .failure(.invalidValue(command: command.verb, value: text, reason: "\(error)"))
            }
            if let label = written.label, let index = pusher.status.destinations.first(where: { $0.label == label })?.index {
                return .failure(.refused(command: command.verb,
                                         reason: "the label '\(label)' already names destination \(index): choose another one"))
            }
            if Redaction.holdsSecret(text) { KeyCustody.holdKey() }
            guard pusher.addPushDestination(url: text) == 0 else {
                return .failure(.refused(command: command.verb, reason: "already pushing to \(url) (same URL and key)"))
            }
        case .remove(let index):
            let count = pusher.pushURLs.count
            guard pusher.removePushDestination(index: index) == 0 else {
                return .failure(.invalidValue(command: command.verb, value: String(index), reason: count == 0
                    ? "there is no destination" : "destinations are numbered 0 to \(count - 1) ('status' lists them)"))
            }
        case .reconnect:
            // Also after every destination gave up: they start again with full retries.
            let code = pusher.reconnectPush()
            guard code == 0 else {
                return .failure(.refused(command: command.verb, reason: code == -1
                    ? "there is no destination (add one with 'add URL')"
                    : "a destination could not start again (\(code)): 'status' and the events say why"))
            }
        case .bgm(let action):
            switch action {
            case .start(let path, let loop):
                // Named at once, without blocking: a FIFO or a device (the decoder checks again, issue 30).
                if let problem = RegularFile.problem(readingFrom: path) {
                    return .failure(.refused(command: command.verb, reason: problem))
                }
                let code = pusher.startBGM(path: path, loop: loop)
                guard code == 0 else {
                    return .failure(.refused(command: command.verb, reason: code == -1
                        ? "the broadcast has no audio to mix music into"
                        : "cannot play '\(path)' (\(code)): the events and the broadcast's log say why"))
                }
            case .stop: pusher.stopBGM()
            case .pause: pusher.pauseBGM()
            case .resume: pusher.resumeBGM()
            case .volume(let percent): pusher.setBGMVolume(percent)
            case .loop(let on): pusher.setBGMLoop(on)
            }
        case .watermark(let action):
            switch PictureCommands.watermark(action, pusher: pusher, verb: command.verb) {
            case .success(let fields): extra = fields
            case .failure(let error): return .failure(error)
            }
        case .snapshot(let path, let series):
            switch PictureCommands.snapshots(path: path, series: series, pusher: pusher, verb: command.verb) {
            case .success(let fields): extra = fields
            case .failure(let error): return .failure(error)
            }
        case .sei(let text, let repeatCount, let delayMs, let keyFrameOnly):
            let code = pusher.sendMessage(text, repeatCount: repeatCount, delayMs: delayMs, keyFrameOnly: keyFrameOnly)
            guard code == 0 else {
                let reason = LivePushSEI.problem(text: text, repeatCount: repeatCount, delayMs: delayMs)
                    ?? "the broadcast has no video yet (screen capture is not running)"
                return .failure(.refused(command: command.verb, reason: reason))
            }
        case .record(let action):
            switch RecordCommands.execute(action, pusher: pusher, verb: command.verb) {
            case .success(let fields): extra = fields
            case .failure(let error): return .failure(error)
            }
        case .replay(let action):
            switch ReplayCommands.execute(action, pusher: pusher, verb: command.verb) {
            case .success(let fields): extra = fields
            case .failure(let error): return .failure(error)
            }
        case .setting(let setting):
            switch setting.execute(on: pusher) {
            case .success(let fields): extra = fields
            case .failure(let error): return .failure(error)
            }
        case .keyframe(let followUpMs):
            let result = pusher.requestKeyframe(followUpMs: followUpMs)
            guard result != .noVideo else { return .failure(.refused(command: command.verb, reason: result.explanation)) }
            extra = ["keyframe": ["forced": result.isForced, "reason": result.explanation]]
        }
        if command != .status && command != .events {
            hub?.emit("control", ["command": command.verb, "args": command.arguments])
        }
        return .success(statusObject().merging(extra) { _, new in new })
    }

    /// `status`'s answer: the pusher's status plus the broadcast's name, version and uptime.
    public func statusObject() -> [String: Any] {
        var object = ControlJSON.object(pusher.status)
        for (key, value) in info { object[key] = value }
        object["version"] = LivePush.version
        object["uptimeMs"] = Int((DispatchTime.now().uptimeNanoseconds - startedNs) / 1_000_000)
        object["logLevel"] = LivePush.logLevel.rawValue
        return object
    }

    /// The answer to one request line of the wire format (docs/control.md), and the command it
    /// asked for when it was valid.
    public func answer(requestLine line: String) -> (answer: String, command: ControlCommand?) {
        let command: ControlCommand
        do {
            command = try Self.parseRequest(line)
        } catch {
            return (Self.failure(error), nil)
        }
        if command == .events { return (JSONLine.encode(["ok": true, "command": "events"]), command) }
        switch execute(command) {
        case .success(let result): return (JSONLine.encode(["ok": true, "command": command.verb, "result": result]), command)
        case .failure(let error): return (Self.failure(error, command: command.verb), command)
        }
    }

    /// A request: `{"command": VERB, "args": [..]}`, the args strings (numbers are taken too).
    public static func parseRequest(_ line: String) throws(ControlError) -> ControlCommand {
        guard let object = JSONLine.decode(line) else { throw .badRequest("the line is not a JSON object") }
        guard let verb = object["command"] as? String else { throw .badRequest("no \"command\" string") }
        var words = [verb]
        if let args = object["args"] {
            guard let array = args as? [Any] else { throw .badRequest("\"args\" is not an array") }
            for arg in array {
                switch arg {
                case let text as String: words.append(text)
                case let number as NSNumber: words.append(number.stringValue)
                default: throw .badRequest("\"args\" holds something that is neither a string nor a number")
                }
            }
        }
        return try ControlCommand.parse(words)
    }

    /// The JSON answer for a command that failed.
    public static func failure(_ error: ControlError, command: String? = nil) -> String {
        var object: [String: Any] = ["ok": false, "error": ["code": Int(error.code), "message": error.description]]
        if let command { object["command"] = command }
        return JSONLine.encode(object)
    }
}
