// The --config FILE of a whole broadcast: the encoding keys of LivePushConfig plus where the
// stream goes, what is captured and which audio is sent. Command-line options override it.
import CommandLineSupport
import Control
import Foundation
import LivePush
import Media
import SafeText

/// The keys of a `--config` file beside LivePushConfig's: destinations, the recording, the capture
/// target (passed to the capture helper), the audio sources, and the sound, preview and log options
/// (`FileOptionKey`).
struct BroadcastSettings: Equatable {
    /// Push URLs (the `destinations` key); command-line URLs replace them.
    var destinations: [String] = []
    var recordingPath: String?
    /// Capture helper options by their option name (`region`, `window-name`, ...), and its flags
    /// (`no-cursor`, `damage`, `no-restore`).
    var captureValues: [String: String] = [:]
    var captureFlags: Set<String> = []
    /// `microphone`: a source's node name, true (the default source) or false (none); nil: not given.
    var microphoneName: String?
    var microphone: Bool?
    var desktopAudio: Bool?
    /// The sound, preview and log options the file sets, as a command line would give them (`FileOptionKey`).
    var options = ParsedArguments()

    /// The file's keys, in the order docs/guide.md's tables list them.
    static let keys = ["destinations", "recordingPath", "capture", "microphone", "desktopAudio"]
        + FileOptionKey.all.map(\.key)

    /// The `capture` object's keys: each is the helper option of the same meaning.
    static let captureValueKeys: [(key: String, option: String)] = [
        ("display", "display"), ("monitor", "monitor"), ("region", "region"), ("window", "window"),
        ("windowName", "window-name"), ("source", "source"), ("node", "node"), ("target", "target"),
        ("portalSource", "portal-source"), ("camera", "camera"), ("size", "size"), ("cameraFormat", "camera-format"),
        ("onLock", "on-lock"),
    ]
    /// Booleans of `capture`, and the helper flag each turns on: `cursor` and `restore` are true by
    /// default (false gives `--no-cursor`, `--no-restore`), `damage` false (true gives `--damage`).
    static let captureFlagKeys: [(key: String, option: String, flagWhen: Bool)] = [
        ("cursor", "no-cursor", false), ("damage", "damage", true), ("restore", "no-restore", false),
        ("cameraPortal", "camera-portal", true),
    ]
}

/// A `--config` file, read and checked: unknown keys and values of the wrong type are refused with
/// the key named, as LivePushConfig's own keys are.
enum BroadcastFile {
    static func load(_ path: String) throws(ArgumentError) -> (encoding: LivePushConfig, broadcast: BroadcastSettings) {
        // Without blocking (a FIFO is named, not waited on), and with its mode for the check below.
        let fd: Int32
        do { fd = try RegularFile.openForReading(path) } catch {
            throw .invalidValue(option: "config", value: path, reason: error.description)
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        var status = stat()
        guard fstat(fd, &status) == 0, let data = try? handle.readToEnd() ?? Data() else {
            throw .invalidValue(option: "config", value: path, reason: "cannot read the file")
        }
        let loaded: (encoding: LivePushConfig, broadcast: BroadcastSettings)
        do {
            loaded = try parse(data)
        } catch {
            throw .invalidValue(option: "config", value: path, reason: error.description)
        }
        // A file that holds stream keys is held to --url-file's rule: only its owner may read it.
        let mode = status.st_mode & 0o777
        if mode & 0o077 != 0 && loaded.broadcast.destinations.contains(where: Redaction.holdsSecret) {
            throw .invalidValue(option: "config", value: path, reason: "the config file '\(path)' holds stream keys "
                + "(destinations) and is readable by group or others (mode \(String(mode, radix: 8))): make it private "
                + "with 'chmod 600 \(path)', or keep the URLs in a private --url-file")
        }
        return loaded
    }

    static func parse(_ data: Data) throws(LivePushConfigError)
        -> (encoding: LivePushConfig, broadcast: BroadcastSettings)
    {
        // Not JSON, or not an object: LivePushConfig says so with the line and column.
        guard var object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            return (try LivePushConfig.decodeJSON(data), BroadcastSettings())
        }
        let encodingKeys = LivePushConfig.Field.allCases.map(\.jsonKey)
        let known = encodingKeys + BroadcastSettings.keys
        let unknown = object.keys.filter { !known.contains($0) }.sorted()
        if !unknown.isEmpty {
            throw .json("unknown key\(unknown.count == 1 ? "" : "s") \(named(unknown, near: known)); the keys are: "
                + known.joined(separator: ", "))
        }
        var broadcast = BroadcastSettings()
        if let value = object.removeValue(forKey: "destinations") {
            guard let urls = value as? [String], urls.allSatisfy({ $0.contains("://") }) else {
                throw .json("key 'destinations': expected an array of push URLs such as \"rtmp://host/app/key\"")
            }
            broadcast.destinations = urls
        }
        if let value = object.removeValue(forKey: "recordingPath") {
            guard let path = value as? String, !path.isEmpty else {
                throw .json("key 'recordingPath': expected a file name ending in .mp4, .mkv or .flv")
            }
            broadcast.recordingPath = path
        }
        if let value = object.removeValue(forKey: "capture") {
            try readCapture(value, into: &broadcast)
        }
        if let value = object.removeValue(forKey: "microphone") {
            if let name = value as? String, !name.isEmpty {
                broadcast.microphone = true
                broadcast.microphoneName = name
            } else if let on = JSONValue.boolean(value) {
                broadcast.microphone = on
            } else {
                throw .json("key 'microphone': expected a source's node name (see 'livepush devices'), true or false")
            }
        }
        if let value = object.removeValue(forKey: "desktopAudio") {
            guard let on = JSONValue.boolean(value) else { throw .json("key 'desktopAudio': expected true or false") }
            broadcast.desktopAudio = on
        }
        for entry in FileOptionKey.all {
            if let value = object.removeValue(forKey: entry.key) { try entry.read(value, into: &broadcast.options) }
        }
        let rest: Data
        do { rest = try JSONSerialization.data(withJSONObject: object) } catch { throw .json("\(error)") }
        return (try LivePushConfig.decodeJSON(rest), broadcast)
    }

    private static func readCapture(_ value: Any, into broadcast: inout BroadcastSettings) throws(LivePushConfigError) {
        let valueKeys = BroadcastSettings.captureValueKeys, flagKeys = BroadcastSettings.captureFlagKeys
        let known = valueKeys.map(\.key) + flagKeys.map(\.key)
        guard let capture = value as? [String: Any] else {
            throw .json("key 'capture': expected an object with the keys " + known.joined(separator: ", "))
        }
        let unknown = capture.keys.filter { !known.contains($0) }.sorted()
        if !unknown.isEmpty {
            let list = named(unknown, near: known, prefix: "capture.")
            throw .json("unknown key\(unknown.count == 1 ? "" : "s") \(list) in 'capture'; its keys are: "
                + known.joined(separator: ", "))
        }
        for (key, option) in valueKeys {
            guard let item = capture[key] else { continue }
            if let text = item as? String, !text.isEmpty {
                broadcast.captureValues[option] = text
            } else if let number = item as? Int, JSONValue.boolean(item) == nil {
                broadcast.captureValues[option] = String(number)  // a window or node id
            } else {
                throw .json("key 'capture.\(key)': expected a string, as --\(option) takes")
            }
        }
        for (key, option, flagWhen) in flagKeys {
            guard let item = capture[key] else { continue }
            guard let on = JSONValue.boolean(item) else { throw .json("key 'capture.\(key)': expected true or false") }
            if on == flagWhen { broadcast.captureFlags.insert(option) }
        }
    }

    /// Unknown keys as a message lists them, each with a "did you mean" when a known key is near:
    /// `'micVolum' (did you mean 'micVolume'?), 'x'`.
    private static func named(_ unknown: [String], near known: [String], prefix: String = "") -> String {
        unknown.map { key in
            let near = Suggestion.nearest(to: key, in: known)
            return "'\(prefix)\(key)'" + (near.map { " (did you mean '\(prefix)\($0)'?)" } ?? "")
        }.joined(separator: ", ")
    }
}

/// `--print-config`: the configuration a run would use, as a JSON file of the same keys (so it can
/// be saved and given to `--config`), with every stream key replaced by ****.
enum EffectiveConfiguration {
    static func json(config: LivePushConfig, destinations: [String], recordingPath: String?,
                     helperArguments: [String], audio: AudioChoice, watch: WatchOptions,
                     recordSplit: RecordingSplit? = nil, replayBufferSeconds: Int? = nil, replayDirectory: String? = nil) -> String
    {
        var object = optionKeys(sound: audio.sound, watch: watch)
        if let data = try? JSONEncoder().encode(config),
           let encoding = try? JSONSerialization.jsonObject(with: data) as? [String: Any] {
            object.merge(encoding) { _, encoded in encoded }
        }
        object["destinations"] = destinations.map(redacted)
        if let recordingPath { object["recordingPath"] = recordingPath }
        if let recordSplit { object["recordSplit"] = recordSplit.description }
        if let replayBufferSeconds { object["replayBuffer"] = replayBufferSeconds }
        if let replayDirectory { object["replayDir"] = replayDirectory }
        var capture: [String: Any] = [:]
        var index = 0
        while index < helperArguments.count {
            let option = String(helperArguments[index].dropFirst(2))
            if let flag = BroadcastSettings.captureFlagKeys.first(where: { $0.option == option }) {
                capture[flag.key] = flag.flagWhen
            } else if let value = BroadcastSettings.captureValueKeys.first(where: { $0.option == option }),
                      index + 1 < helperArguments.count {
                capture[value.key] = helperArguments[index + 1]
                index += 1
            }
            index += 1
        }
        if !capture.isEmpty { object["capture"] = capture }
        object["microphone"] = audio.microphone ? (audio.microphoneName.map { $0 as Any } ?? true) : false
        object["desktopAudio"] = audio.desktop
        let options: JSONSerialization.WritingOptions = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: options) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Through the one redaction rule (SafeText.Redaction.redactURL): the key, the query (SRT's stream
    /// id and passphrase), a fragment and a user and password are ****.
    static func redacted(_ url: String) -> String {
        url.contains("://") ? Redaction.redactURL(url) : "****"
    }
}
