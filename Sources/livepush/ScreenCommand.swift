import CommandLineSupport
import Control
import Dispatch
import Foundation
import LivePush
import Media
import SafeText

/// `livepush screen [URL|FILE...]` (starts its own capture helper), `livepush push URL...
/// [--group G]` and `livepush record --group G FILE`: record the screen to a file and push it to
/// RTMP servers until Ctrl-C or --duration. An argument with `://` is a push URL; the other one
/// (at most one) is the recording.
enum ScreenCommand {
    static let captureOptions: [OptionSpec] = [
        .value("display", valueName: ":N", help: "X display for the capture helper (default: $DISPLAY)."),
        .value("monitor", valueName: "NAME|INDEX", help: "Capture one monitor."),
        .value("region", valueName: "X,Y,W,H", help: "Capture a rectangle of the screen."),
        .value("window", valueName: "ID", help: "Capture one window by id."),
        .value("window-name", valueName: "TEXT", help: "Capture the window whose name contains TEXT."),
        .flag("no-cursor", help: "Leave the pointer out."),
        .flag("damage", help: "X11: skip grabs while nothing changed on screen (XDamage); the last frame is repeated."),
        .flag("desktop-audio", help: "Also send the desktop's sound (the default output's monitor), mixed with the mic."),
        // PipeWire screen capture: passed through to livepush-capture (docs/capture.md).
        .value("source", valueName: "x11|pipewire|portal|camera",
               help: "Where frames come from (default x11; camera: a webcam, docs/capture.md)."),
        .value("node", valueName: "ID", help: "With --source pipewire: the video node's id."),
        .value("target", valueName: "NAME", help: "With --source pipewire: the video node's node.name."),
        .value("portal-source", valueName: "monitor|window|any", help: "With --source portal: what may be shared."),
        .flag("no-restore", help: "With --source portal: ask again instead of reusing the last choice."),
        // Camera capture (issue 32): passed through to livepush-capture (docs/capture.md, "A camera").
        .value("camera", valueName: "NODE",
               help: "With --source camera: the camera's node.name or id (livepush devices; default: the first)."),
        .value("size", valueName: "WxH",
               help: "With --source camera: the camera picture's size; its nearest mode is taken (default 1280x720)."),
        .value("camera-format", valueName: "yuy2|mjpeg|nv12|i420", help: "With --source camera: only modes in this format."),
        .flag("camera-portal", help: "With --source camera: ask the desktop's Camera portal for access."),
        // Issue 35: private on lock, passed through to livepush-capture (docs/guide.md, "When the screen locks").
        .value("on-lock", valueName: "pause|mute|ignore",
               help: "While the screen is locked: pause (default: viewers see the pause picture, never the lock "
                   + "screen), mute (pause, and the desktop's sound withheld too) or ignore (send the lock screen)."),
    ]
    static let audioOptions: [OptionSpec] = [
        .value("mic", valueName: "NAME", help: "Capture this PipeWire source (see 'livepush devices'; default: the default source)."),
        .flag("no-mic", help: "No microphone. The helper's sound stays (record and push --group keep it always, "
            + "screen and push with --desktop-audio); with no sound at all, a video-only stream."),
        .value("bgm", valueName: "FILE[,loop]", help: "Mix background music from FILE (MP3, M4A, FLAC, Ogg, Opus, WAV); ',loop' repeats it."),
        .value("bgm-volume", valueName: "PERCENT", help: "Background music volume, 0 to 400 (default 100)."),
        .value("mic-volume", valueName: "PERCENT",
               help: "The microphone's volume at the start, 0 to 400 (default 100; 0 silent, over 100 amplified)."),
        .value("desktop-volume", valueName: "PERCENT",
               help: "The desktop audio's (or the helper's sound's) volume at the start, 0 to 400 (default 100)."),
        .value("denoise", valueName: "off|low|medium|high", help: "Noise suppression on the mic (speexdsp; default off)."),
        .flag("agc", help: "Automatic gain on the mic (levels the voice)."),
        .flag("voice-activity", help: "Print when a voice starts and stops on the mic."),
        .value("ear-monitor", valueName: "SINK|default", help: "Play the mic and the music to this PipeWire sink (ear monitoring)."),
    ]
    static let runOptions: [OptionSpec] = [
        .value("duration", valueName: "SECONDS", help: "Stop after this long (default: until Ctrl-C)."),
        .flag("quiet", short: "q", help: "No live status line."),
        .flag("print-config", help: "Print the effective configuration (the file, then the options) as JSON, "
            + "stream keys as ****, and exit."),
        .flag("allow-core-dump", help: "Stay dumpable while holding a stream key, so that a crash leaves a core "
            + "for a bug report (use a test key: the core holds it). By default a run holding a key is not dumpable."),
        .flag("help", short: "h", help: "Show this help."),
    ]

    static let recordOption = OptionSpec.value("record", valueName: "FILE", help: "Also record to FILE while pushing.")
    static let overwriteOption = OptionSpec.flag(
        "overwrite", help: "Replace the recording's file if it exists (without it, an existing file is refused before "
            + "anything starts).")
    static let recordSplitOption = OptionSpec.value(
        "record-split", valueName: "DURATION|SIZE",
        help: "Go on in a new file after this long or this big (10s, 30m, 2h, 500MB, 2GB), at the next keyframe: "
            + "the files are numbered (talk.mkv: talk-001.mkv, talk-002.mkv...), each reported as it ends.")
    static let helperOption = OptionSpec.value(
        "helper", valueName: "PATH",
        help: "Run this capture helper instead of livepush-capture (it gets --group NAME and the capture options; "
            + "docs/helpers.md). It is restarted like livepush-capture when it dies.")

    /// The command's table: its synopsis, description, option sections and examples (`Commands`).
    static func spec(_ command: String) -> CommandSpec {
        let synopsis: String, summary: String, description: String, examples: [Example]
        switch command {
        case "push":
            summary = "Push the screen to RTMP, RTMPS or SRT servers (and optionally record it)."
            synopsis = "livepush push URL [URL...] [--record FILE] [--group NAME] [options]"
            description = "Pushes the screen to RTMP servers (rtmp://host[:port]/app/key, rtmps://host[:port]/app/key over "
                + "TLS) or SRT listeners (srt://host:port?streamid=...&passphrase=...&latency=MS); several share one "
                + "encode. It captures through a capture helper it starts itself, or from any helper on --group NAME. "
                + "Keys, stream ids and passphrases are never printed; to keep them off the command line too, put the "
                + "URLs in a private file (--url-file FILE) or in $LIVEPUSH_URL (several separated by spaces). "
                + "LABEL=URL names a destination (letters, digits, '.', '_', '-'); without a label it is named by its "
                + "key's fingerprint (the first 6 hex digits of its SHA-256), in status, events, the dashboard and "
                + "the report."
            examples = [Example("livepush push rtmp://live.example.com/app/KEY --record talk.mkv",
                                "Pushes the screen and the microphone, and records the same stream to talk.mkv."),
                        Example("livepush push main=rtmp://live.example.com/app/KEY1 backup=rtmp://live.example.com/app/KEY2",
                                "Pushes to two keys on one server, named main and backup in 'livepush ctl status'."),
                        Example("livepush push --group desk rtmp://live.example.com/app/KEY",
                                "Waits for any capture helper on group desk (livepush-capture --group desk) and pushes it.")]
        case "screen":
            summary = "Record the screen to a file and push it to RTMP servers (starts its own capture helper)."
            synopsis = "livepush screen [URL...] [OUTPUT] [options]"
            description = "Records the screen and pushes it to every URL given (rtmp://, rtmps://, srt://, LABEL=URL to "
                + "name one; also --url-file FILE and $LIVEPUSH_URL), through a capture helper it starts itself (livepush-capture, on "
                + "a private group).\n"
                + "With no argument it records to ./livepush-YYYYMMDD-HHMMSS.mp4; .mp4 is written fragmented "
                + "(a crash leaves a playable file), .mkv and .flv also work."
            examples = [Example("livepush screen talk.mp4", "Records the screen and the microphone to talk.mp4 until Ctrl-C."),
                        Example("livepush screen rtmp://live.example.com/app/KEY talk.mp4 --region 0,0,1280,720",
                                "Pushes and records the top-left 1280x720 of the screen."),
                        Example("livepush screen rtmp://live.example.com/app/KEY --source camera --size 1280x720",
                                "Pushes the first webcam (livepush devices lists them; --camera NAME picks one) in its "
                                + "mode nearest 1280x720.")]
        default:
            summary = "Record what a capture helper sends on a group."
            synopsis = "livepush record --group NAME OUTPUT [URL...] [options]"
            description = "Records what any capture helper sends on the group (start one with livepush-capture "
                + "--group NAME)."
            examples = [Example("livepush record --group game game.mkv",
                                "Records whatever helper connects to group game, such as livepush-capture --group game.")]
        }
        var sections = [OptionSection("Run options", runOptions)]
        if command != "record" { sections.append(OptionSection("Capture options", captureOptions + [helperOption])) }
        if command != "screen" { sections.append(OptionSection("Group", [groupOption])) }
        sections.append(OptionSection("Audio options", audioOptions))
        sections.append(OptionSection("Recording", (command == "push" ? [recordOption] : []) + [overwriteOption, recordSplitOption]
            + ReplayChoice.specs))
        sections.append(OptionSection("Encoding options", ConfigOptions.specs))
        sections.append(OptionSection("Steer and watch (docs/control.md, docs/events.md)", WatchOptions.specs))
        return CommandSpec(name: command, summary: summary, synopsis: [synopsis], description: description,
                           sections: sections, arguments: command == "push" ? .words : .file, examples: examples)
    }

    static func usage(_ command: String) -> String { spec(command).help }

    /// `--record-split`'s value: a duration or a size, with its unit.
    static func recordSplit(_ text: String) throws(ArgumentError) -> RecordingSplit {
        do throws(RecordingSplitError) {
            return try RecordingSplit(parsing: text)
        } catch {
            throw .invalidValue(option: "record-split", value: text, reason: error.reason)
        }
    }

    static let groupOption = OptionSpec.value("group", valueName: "NAME", help: "The group helpers connect to.")

    static func main(_ command: String, _ arguments: [String]) -> Never {
        let specs = runOptions + ConfigOptions.specs + audioOptions + WatchOptions.specs + [overwriteOption, recordSplitOption]
            + ReplayChoice.specs
            + (command == "record" ? [groupOption] : captureOptions + [helperOption])
            + (command == "push" ? [recordOption, groupOption] : [])
        var parsed: ParsedArguments
        let config: LivePushConfig
        var fromFile = BroadcastSettings()
        // Which options the file gave (its sound, preview and log keys): their errors name the key.
        var origin = FileOptionOrigin()
        var pushURLs: [String] = []
        var recordSplit: RecordingSplit?
        let watch: WatchOptions
        do {
            parsed = try ArgumentParser.parse(arguments, options: specs)
            if parsed.has("help") {
                print(usage(command))
                Terminal.exit(.success)
            }
            let loaded = try parsed.value("config").map(BroadcastFile.load)
            if let loaded, let path = parsed.value("config") {
                fromFile = loaded.broadcast
                (parsed, origin) = FileOptionOrigin.merge(fromFile.options, into: parsed, configPath: path)
            }
            config = try ConfigOptions.config(from: parsed, file: loaded?.encoding)
            watch = try WatchOptions.parse(parsed)
            let files = parsed.positionals.filter { !isURL($0) }
            // A mistyped URL ("rtmp:/host/app/KEY", "rtmp:KEY") may hold a key: only its scheme is shown.
            for word in files {
                if let advice = StartChecks.misspelledURL(word) {
                    throw ArgumentError.invalidArgument(value: String(word.prefix { $0 != ":" }) + ":...", reason: advice)
                }
            }
            if command == "push", let file = files.first {
                // A key on its own may be secret: a file name is shown only when it looks like one.
                let isRecording = ["mp4", "mkv", "flv"].contains((file as NSString).pathExtension.lowercased())
                let looksLikeFile = file.hasPrefix("/") || file.hasPrefix(".") || file.contains(".")
                let shown = file.contains(":") ? String(file.prefix { $0 != ":" }) + ":..."
                    : looksLikeFile ? file : "**** (not shown: it may be a stream key)"
                throw ArgumentError.invalidArgument(value: shown, reason: "push takes rtmp://, rtmps:// or srt:// URLs"
                    + (isRecording ? "; to record to a file as well, give it with --record FILE" : ""))
            }
            if files.count > 1 { throw ArgumentError.unexpectedArgument(files[1]) }
            // The command line wins over the file: its URLs (with --url-file's and $LIVEPUSH_URL's)
            // replace the file's destinations.
            pushURLs = parsed.positionals.filter(isURL)
            if let path = config.urlFile { pushURLs += try PushURLSources.fromFile(path) }
            pushURLs += PushURLSources.fromEnvironment()
            // Read: no child of this run (helpers, anyone's --helper) gets it from the environment.
            unsetenv(PushURLSources.environmentVariable)
            if pushURLs.isEmpty { pushURLs = fromFile.destinations }
            if command == "push" && pushURLs.isEmpty {
                throw ArgumentError.missingArgument("URL (or --url-file FILE, or $\(PushURLSources.environmentVariable))")
            }
            if command == "record" {
                guard parsed.value("group") != nil else { throw ArgumentError.missingArgument("--group NAME") }
                guard !files.isEmpty || fromFile.recordingPath != nil else { throw ArgumentError.missingArgument("OUTPUT") }
            }
            try CameraOptions.check(parsed, file: fromFile)
            if let text = parsed.value("on-lock") ?? fromFile.captureValues["on-lock"] { _ = try LockPolicy.parse(text) }
            if let text = parsed.value("duration"), (Double(text) ?? -1) <= 0 {
                throw ArgumentError.invalidValue(option: "duration", value: text, reason: "use a number of seconds above 0")
            }
            recordSplit = try parsed.value("record-split").map(ScreenCommand.recordSplit)
            _ = try ReplayChoice.parse(parsed, checkingDirectory: false)  // the values; the directory at the start checks
        } catch {
            Terminal.printError("livepush \(command): \(origin.attributed(error))\n"
                + "Run 'livepush \(command) --help' for usage.")
            Terminal.exit(.usage)
        }
        // The command line wins over the file: its FILE (or --record) the file's recordingPath, each
        // option the file's value.
        let positionalFile = parsed.positionals.first { !isURL($0) }
        let output = command == "push"
            ? parsed.value("record") ?? fromFile.recordingPath
            : positionalFile ?? fromFile.recordingPath ?? (pushURLs.isEmpty ? defaultOutputPath() : nil)
        let group = parsed.value("group") ?? "screen-\(getpid())"
        // A helper on a group the user named (record, push --group) may send its own sound (AUDIO):
        // it is kept, with or without the mic, unless the file says desktopAudio false. The audio
        // track then exists from the start (silent while the helper sends none).
        let helperOnGroup = parsed.value("group") != nil
        var audio = AudioChoice(microphone: !parsed.has("no-mic") && (fromFile.microphone != false || parsed.value("mic") != nil),
                                microphoneName: parsed.value("mic") ?? fromFile.microphoneName,
                                desktop: parsed.has("desktop-audio") || (fromFile.desktopAudio ?? helperOnGroup))
        do {
            audio.sound = try SoundChoice(parsed)
        } catch {
            Terminal.printError("livepush \(command): \(origin.attributed(error))\n"
                + "Run 'livepush \(command) --help' for usage.")
            Terminal.exit(.usage)
        }
        let helperArguments = captureOptions.flatMap { spec -> [String] in
            if spec.name == "desktop-audio" { return audio.desktop ? ["--desktop-audio"] : [] }
            if spec.valueName == nil {
                return parsed.has(spec.name) || fromFile.captureFlags.contains(spec.name) ? ["--\(spec.name)"] : []
            }
            return (parsed.value(spec.name) ?? fromFile.captureValues[spec.name]).map { ["--\(spec.name)", $0] } ?? []
        }
        // The keys are in memory from here on (issue 30): no core, no ptrace by the user's other processes.
        if parsed.has("allow-core-dump") { KeyCustody.allowCoreDumps() }
        if pushURLs.contains(where: Redaction.holdsSecret) { KeyCustody.holdKey() }
        if parsed.has("print-config") {
            print(EffectiveConfiguration.json(config: config, destinations: pushURLs, recordingPath: output,
                                              helperArguments: helperOnGroup ? [] : helperArguments,
                                              audio: audio, watch: watch, recordSplit: recordSplit,
                                              replayBufferSeconds: parsed.value("replay-buffer").flatMap { Int($0) },
                                              replayDirectory: parsed.value("replay-dir")))
            Terminal.exit(.success)
        }
        if let problem = CameraOptions.cameraProblem(parsed, file: fromFile) {
            Terminal.printError("livepush \(command): \(problem)")
            Terminal.exit(.usage)
        }
        var replay: ReplayChoice?
        do {
            // Where it goes, what the run reads and writes (files, the mic), before anything starts
            // (after --print-config, which shows a configuration as it is).
            try StartChecks.pushURLs(pushURLs)
            if let output {
                // Split: the files are numbered, the first is what must be new.
                try StartChecks.recordingPath(recordSplit == nil ? output : RecordingSplit.numberedPath(output, number: 1),
                                              option: command == "push" ? "record" : nil, overwrite: parsed.has("overwrite"))
                if config.recordTracks && RecordingContainer(path: output) == .flv {
                    throw ArgumentError.invalidValue(option: "record-tracks", value: output,
                                                     reason: "FLV holds one audio track: record to .mkv or .mp4 for a track per source")
                }
            } else if let recordSplit {
                throw ArgumentError.invalidValue(option: "record-split", value: recordSplit.description,
                                                 reason: "nothing is recorded: give --record FILE too")
            }
            try StartChecks.inputs(config: config, audio: audio, helper: parsed.value("helper"))
            replay = try ReplayChoice.parse(parsed)
        } catch {
            Terminal.printError("livepush \(command): \(origin.attributed(error))\n"
                + "Run 'livepush \(command) --help' for usage.")
            Terminal.exit(.usage)
        }
        let session = RecordingSession(config: config, output: output, overwrite: parsed.has("overwrite"), split: recordSplit,
                                       pushURLs: pushURLs,
                                       group: group, audio: audio, quiet: parsed.has("quiet"), durationSeconds: parsed.value("duration").flatMap(Double.init),
                                       watch: watch, replay: replay)
        Terminal.exit(session.run(startHelper: parsed.value("group") == nil, helperArguments: helperArguments,
                                  helperExecutable: parsed.value("helper")))
    }

    /// `rtmp://...` and every other `scheme://` (refused later with a reason) are push URLs.
    static func isURL(_ text: String) -> Bool { text.contains("://") }

    static func defaultOutputPath() -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        return "./livepush-\(formatter.string(from: Date())).mp4"
    }
}
