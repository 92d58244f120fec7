// The --config keys of the session's own options (issue 35): sound, preview and log level. Each key is
// one command-line option under its camelCase name. The file's value is handed to the option when the
// command line does not give it, so the option's own parsing and the start checks judge it as they judge
// the option: the command line wins, and a file cannot say what the command line could not.
import CommandLineSupport
import Foundation
import LivePush
import Media

/// One command-line option that a `--config` file sets by its key.
struct FileOptionKey: Equatable {
    enum Kind: Equatable {
        /// A JSON boolean: true gives the flag, false leaves it out.
        case flag
        /// A JSON string, the option's value as typed.
        case text
        /// A JSON whole number, the option's value in its unit.
        case wholeNumber
    }

    let key: String
    let option: String
    let kind: Kind

    /// The file's keys of the sound, preview, log and recording-split options, in the order docs/guide.md lists them.
    static let all: [FileOptionKey] = [
        FileOptionKey(key: "micVolume", option: "mic-volume", kind: .wholeNumber),
        FileOptionKey(key: "desktopVolume", option: "desktop-volume", kind: .wholeNumber),
        FileOptionKey(key: "bgm", option: "bgm", kind: .text),
        FileOptionKey(key: "bgmVolume", option: "bgm-volume", kind: .wholeNumber),
        FileOptionKey(key: "denoise", option: "denoise", kind: .text),
        FileOptionKey(key: "agc", option: "agc", kind: .flag),
        FileOptionKey(key: "voiceActivity", option: "voice-activity", kind: .flag),
        FileOptionKey(key: "earMonitor", option: "ear-monitor", kind: .text),
        FileOptionKey(key: "preview", option: "preview", kind: .flag),
        FileOptionKey(key: "previewMode", option: "preview-mode", kind: .text),
        FileOptionKey(key: "previewMirror", option: "preview-mirror", kind: .flag),
        FileOptionKey(key: "previewGeometry", option: "preview-geometry", kind: .text),
        FileOptionKey(key: "logLevel", option: "log-level", kind: .text),
        FileOptionKey(key: "recordSplit", option: "record-split", kind: .text),
        FileOptionKey(key: "replayBuffer", option: "replay-buffer", kind: .wholeNumber),
        FileOptionKey(key: "replayDir", option: "replay-dir", kind: .text),
    ]

    /// What the key takes, for a value of the wrong type: "a whole number (--mic-volume PERCENT)".
    var expected: String {
        let valueName = (ScreenCommand.audioOptions + WatchOptions.specs + [ScreenCommand.recordSplitOption] + ReplayChoice.specs)
            .first { $0.name == option }?.valueName
        let typed = "--\(option)" + (valueName.map { " \($0)" } ?? "")
        switch kind {
        case .flag: return "true or false (--\(option))"
        case .text: return "a string (\(typed))"
        case .wholeNumber: return "a whole number (\(typed))"
        }
    }

    /// Reads this key's value from a parsed JSON object into `options`, the file's options as a command
    /// line would give them; a value of the wrong type names the key. `null` is as if the key were missing.
    func read(_ value: Any, into options: inout ParsedArguments) throws(LivePushConfigError) {
        if value is NSNull { return }
        let refused = LivePushConfigError.json("key '\(key)': expected \(expected)")
        switch kind {
        case .flag:
            guard let on = JSONValue.boolean(value) else { throw refused }
            if on { options.flags.insert(option) }
        case .text:
            guard let text = value as? String, !text.isEmpty else { throw refused }
            options.values[option] = [text]
        case .wholeNumber:
            guard JSONValue.boolean(value) == nil, let number = value as? NSNumber,
                  let whole = Int(exactly: number.doubleValue) else { throw refused }
            options.values[option] = [String(whole)]
        }
    }
}

/// Where each option of a run came from when it was the `--config` file's: an error about such an option
/// names the file and the key, so that the user knows which line to change.
struct FileOptionOrigin {
    var configPath: String?
    /// The options taken from the file, with their keys.
    var keysByOption: [String: String] = [:]

    /// `given` (the command line) with the file's options added where the command line does not give them.
    static func merge(_ file: ParsedArguments, into given: ParsedArguments, configPath: String)
        -> (parsed: ParsedArguments, origin: FileOptionOrigin)
    {
        var parsed = given
        var origin = FileOptionOrigin(configPath: configPath)
        for entry in FileOptionKey.all where !given.has(entry.option) && given.values[entry.option] == nil {
            if file.has(entry.option) {
                parsed.flags.insert(entry.option)
                origin.keysByOption[entry.option] = entry.key
            } else if let values = file.values[entry.option] {
                parsed.values[entry.option] = values
                origin.keysByOption[entry.option] = entry.key
            }
        }
        return (parsed, origin)
    }

    /// `error`, or when it is about an option the file set, the same reason said of the file's key:
    /// `invalid value 'studio.json' for '--config': key 'micVolume' (--mic-volume 500): use a percentage ...`.
    func attributed(_ error: any Error) -> any Error {
        guard let configPath, case .invalidValue(let option, let value, let reason)? = error as? ArgumentError,
              let key = keysByOption[option] else { return error }
        let typed = "--\(option)" + (value.isEmpty ? "" : " \(value)")
        return ArgumentError.invalidValue(option: "config", value: configPath,
                                          reason: "key '\(key)' (\(typed)): \(reason)")
    }
}

/// The types JSONSerialization gives.
enum JSONValue {
    /// A JSON true or false. JSONSerialization gives NSNumber for numbers and booleans alike (and
    /// `as? Bool` accepts 0 and 1); a boolean's type encoding is "c".
    static func boolean(_ value: Any) -> Bool? {
        guard let number = value as? NSNumber, String(cString: number.objCType) == "c" else { return nil }
        return number.boolValue
    }
}

extension EffectiveConfiguration {
    /// The sound, preview and log keys of `--print-config`: what the run will use, defaults included,
    /// so that the printed file given to `--config` makes the same run.
    static func optionKeys(sound: SoundChoice, watch: WatchOptions) -> [String: Any] {
        var object: [String: Any] = [
            "micVolume": sound.micVolumePercent ?? 100,
            "desktopVolume": sound.desktopVolumePercent ?? 100,
            "bgmVolume": sound.bgmVolumePercent ?? 100,
            "denoise": sound.denoise.rawValue,
            "agc": sound.automaticGain,
            "voiceActivity": sound.voiceActivity,
            "logLevel": (watch.logLevel ?? LivePush.logLevel).rawValue,
            "preview": watch.preview != nil,
        ]
        if let path = sound.bgmPath { object["bgm"] = path + (sound.bgmLoop ? ",loop" : "") }
        if let sink = sound.earMonitorSink { object["earMonitor"] = sink.isEmpty ? "default" : sink }
        // The preview's own keys only with the preview: without it, they are refused.
        if let preview = watch.preview {
            object["previewMode"] = preview.mode.rawValue
            object["previewMirror"] = preview.previewMirror
            if let width = preview.width, let height = preview.height {
                object["previewGeometry"] = "\(width)x\(height)+\(preview.x)+\(preview.y)"
            }
        }
        return object
    }
}
