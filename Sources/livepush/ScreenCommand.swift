import CommandLineSupport
import Dispatch
import Foundation
import LivePush

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
        .flag("desktop-audio", help: "Also send the desktop's sound (the default output's monitor), mixed with the mic."),
        // PipeWire screen capture: passed through to livepush-capture (docs/capture.md).
        .value("source", valueName: "x11|pipewire|portal", help: "Where frames come from (default x11)."),
        .value("node", valueName: "ID", help: "With --source pipewire: the video node's id."),
        .value("target", valueName: "NAME", help: "With --source pipewire: the video node's node.name."),
        .value("portal-source", valueName: "monitor|window|any", help: "With --source portal: what may be shared."),
        .flag("no-restore", help: "With --source portal: ask again instead of reusing the last choice."),
    ]
    static let audioOptions: [OptionSpec] = [
        .value("mic", valueName: "NAME", help: "Capture this PipeWire source (see 'livepush devices'; default: the default source)."),
        .flag("no-mic", help: "No microphone: a video-only stream (with --desktop-audio: the desktop's sound only)."),
    ]
    static let runOptions: [OptionSpec] = [
        .value("duration", valueName: "SECONDS", help: "Stop after this long (default: until Ctrl-C)."),
        .flag("quiet", short: "q", help: "No live status line."),
        .flag("help", short: "h", help: "Show this help."),
    ]

    static let recordOption = OptionSpec.value("record", valueName: "FILE", help: "Also record to FILE while pushing.")
    static let helperOption = OptionSpec.value(
        "helper", valueName: "PATH",
        help: "Run this capture helper instead of livepush-capture (it gets --group NAME and the capture options; "
            + "docs/helpers.md). It is restarted like livepush-capture when it dies.")

    static func usage(_ command: String) -> String {
        let synopsis = command == "push"
            ? "Usage: livepush push URL [URL...] [--record FILE] [--group NAME] [options]\n\nPushes the screen to RTMP "
                + "servers (rtmp://host[:port]/app/key; several share one encode) through a capture helper it starts "
                + "itself, or from any helper on --group NAME; keys are never printed."
            : command == "screen"
            ? "Usage: livepush screen [URL...] [OUTPUT] [options]\n\nRecords the screen and pushes it to every RTMP URL "
                + "given, through a capture helper it starts itself (livepush-capture, on a private group).\n"
                + "With no argument it records to ./livepush-YYYYMMDD-HHMMSS.mp4; .mp4 is written fragmented "
                + "(a crash leaves a playable file), .mkv and .flv also work."
            : "Usage: livepush record --group NAME OUTPUT [URL...] [options]\n\nRecords what any capture helper sends on "
                + "the group (start one with livepush-capture --group NAME)."
        var sections = [synopsis, "Run options:\n" + ArgumentParser.optionsHelp(runOptions)]
        if command != "record" {
            sections.append("Capture options:\n" + ArgumentParser.optionsHelp(captureOptions + [helperOption]))
        }
        if command != "screen" { sections.append("Group:\n" + ArgumentParser.optionsHelp([groupOption])) }
        sections.append("Audio options:\n" + ArgumentParser.optionsHelp(audioOptions))
        if command == "push" { sections.append("Recording:\n" + ArgumentParser.optionsHelp([recordOption])) }
        sections.append("Encoding options:\n" + ArgumentParser.optionsHelp(ConfigOptions.specs))
        sections.append("Steer and watch (docs/control.md, docs/events.md):\n" + ArgumentParser.optionsHelp(WatchOptions.specs))
        return sections.joined(separator: "\n\n")
    }

    static let groupOption = OptionSpec.value("group", valueName: "NAME", help: "The group helpers connect to.")

    static func main(_ command: String, _ arguments: [String]) -> Never {
        let specs = runOptions + ConfigOptions.specs + audioOptions + WatchOptions.specs
            + (command == "record" ? [groupOption] : captureOptions + [helperOption])
            + (command == "push" ? [recordOption, groupOption] : [])
        let parsed: ParsedArguments
        let config: LivePushConfig
        let watch: WatchOptions
        do {
            parsed = try ArgumentParser.parse(arguments, options: specs)
            if parsed.has("help") {
                print(usage(command))
                Terminal.exit(.success)
            }
            config = try ConfigOptions.config(from: parsed)
            watch = try WatchOptions.parse(parsed)
            let files = parsed.positionals.filter { !isURL($0) }
            if command == "push", let file = files.first {
                throw ArgumentError.invalidValue(option: "URL", value: file,
                                                 reason: "push takes rtmp:// URLs; record to a file with --record FILE")
            }
            if files.count > 1 { throw ArgumentError.unexpectedArgument(files[1]) }
            if command == "push" && parsed.positionals.isEmpty { throw ArgumentError.missingArgument("URL") }
            if command == "record" {
                guard parsed.value("group") != nil else { throw ArgumentError.missingArgument("--group NAME") }
                guard !files.isEmpty else { throw ArgumentError.missingArgument("OUTPUT") }
            }
            if let text = parsed.value("duration"), (Double(text) ?? -1) <= 0 {
                throw ArgumentError.invalidValue(option: "duration", value: text, reason: "use a number of seconds above 0")
            }
        } catch {
            Terminal.printError("livepush \(command): \(error)\nRun 'livepush \(command) --help' for usage.")
            Terminal.exit(.usage)
        }
        let pushURLs = parsed.positionals.filter(isURL)
        let file = parsed.positionals.first { !isURL($0) }
        let output = command == "push" ? parsed.value("record") : (file ?? (pushURLs.isEmpty ? defaultOutputPath() : nil))
        let group = parsed.value("group") ?? "screen-\(getpid())"
        let audio = AudioChoice(microphone: !parsed.has("no-mic"), microphoneName: parsed.value("mic"),
                                desktop: parsed.has("desktop-audio"))
        let session = RecordingSession(config: config, output: output, pushURLs: pushURLs, group: group, audio: audio,
                                       quiet: parsed.has("quiet"), durationSeconds: parsed.value("duration").flatMap(Double.init),
                                       watch: watch)
        let helperArguments = captureOptions.flatMap { spec -> [String] in
            if spec.valueName == nil { return parsed.has(spec.name) ? ["--\(spec.name)"] : [] }
            return parsed.value(spec.name).map { ["--\(spec.name)", $0] } ?? []
        }
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
