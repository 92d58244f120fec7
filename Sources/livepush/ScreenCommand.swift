import CommandLineSupport
import Dispatch
import Foundation
import LivePush

/// `livepush screen [OUTPUT]` (starts its own capture helper) and `livepush record --group G
/// OUTPUT` (waits for any helper): record the screen to a file until Ctrl-C or --duration.
enum ScreenCommand {
    static let captureOptions: [OptionSpec] = [
        .value("display", valueName: ":N", help: "X display for the capture helper (default: $DISPLAY)."),
        .value("monitor", valueName: "NAME|INDEX", help: "Capture one monitor."),
        .value("region", valueName: "X,Y,W,H", help: "Capture a rectangle of the screen."),
        .value("window", valueName: "ID", help: "Capture one window by id."),
        .value("window-name", valueName: "TEXT", help: "Capture the window whose name contains TEXT."),
        .flag("no-cursor", help: "Leave the pointer out."),
        // PipeWire screen capture: passed through to livepush-capture (docs/capture.md).
        .value("source", valueName: "x11|pipewire|portal", help: "Where frames come from (default x11)."),
        .value("node", valueName: "ID", help: "With --source pipewire: the video node's id."),
        .value("target", valueName: "NAME", help: "With --source pipewire: the video node's node.name."),
        .value("portal-source", valueName: "monitor|window|any", help: "With --source portal: what may be shared."),
        .flag("no-restore", help: "With --source portal: ask again instead of reusing the last choice."),
    ]
    static let runOptions: [OptionSpec] = [
        .value("duration", valueName: "SECONDS", help: "Stop after this long (default: until Ctrl-C)."),
        .flag("quiet", short: "q", help: "No live status line."),
        .flag("help", short: "h", help: "Show this help."),
    ]

    static let recordOption = OptionSpec.value("record", valueName: "FILE", help: "Also record to FILE while pushing.")

    static func usage(_ command: String) -> String {
        let synopsis = command == "push"
            ? "Usage: livepush push URL [URL...] [--record FILE] [options]\n\nPushes the screen to RTMP servers "
                + "(rtmp://host[:port]/app/key; several share one encode) through a capture helper it starts itself; "
                + "keys are never printed."
            : command == "screen"
            ? "Usage: livepush screen [OUTPUT] [options]\n\nRecords the screen through a capture helper it starts itself "
                + "(livepush-capture, on a private group).\nOUTPUT defaults to ./livepush-YYYYMMDD-HHMMSS.mp4; "
                + ".mp4 is written fragmented (a crash leaves a playable file), .mkv and .flv also work."
            : "Usage: livepush record --group NAME OUTPUT [options]\n\nRecords what any capture helper sends on the "
                + "group (start one with livepush-capture --group NAME)."
        var sections = [synopsis, "Run options:\n" + ArgumentParser.optionsHelp(runOptions)]
        if command != "record" { sections.append("Capture options:\n" + ArgumentParser.optionsHelp(captureOptions)) }
        else { sections.append("Group:\n" + ArgumentParser.optionsHelp([groupOption])) }
        if command == "push" { sections.append("Recording:\n" + ArgumentParser.optionsHelp([recordOption])) }
        sections.append("Encoding options:\n" + ArgumentParser.optionsHelp(ConfigOptions.specs))
        return sections.joined(separator: "\n\n")
    }

    static let groupOption = OptionSpec.value("group", valueName: "NAME", help: "The group helpers connect to.")

    static func main(_ command: String, _ arguments: [String]) -> Never {
        let specs = runOptions + ConfigOptions.specs + (command == "record" ? [groupOption] : captureOptions)
            + (command == "push" ? [recordOption] : [])
        let parsed: ParsedArguments
        let config: LivePushConfig
        do {
            parsed = try ArgumentParser.parse(arguments, options: specs)
            if parsed.has("help") {
                print(usage(command))
                Terminal.exit(.success)
            }
            config = try ConfigOptions.config(from: parsed)
            if command != "push" && parsed.positionals.count > 1 {
                throw ArgumentError.unexpectedArgument(parsed.positionals[1])
            }
            if command == "push" && parsed.positionals.isEmpty { throw ArgumentError.missingArgument("URL") }
            if command == "record" {
                guard parsed.value("group") != nil else { throw ArgumentError.missingArgument("--group NAME") }
                guard !parsed.positionals.isEmpty else { throw ArgumentError.missingArgument("OUTPUT") }
            }
            if let text = parsed.value("duration"), (Double(text) ?? -1) <= 0 {
                throw ArgumentError.invalidValue(option: "duration", value: text, reason: "use a number of seconds above 0")
            }
        } catch {
            Terminal.printError("livepush \(command): \(error)\nRun 'livepush \(command) --help' for usage.")
            Terminal.exit(.usage)
        }
        let output = command == "push" ? parsed.value("record") : (parsed.positionals.first ?? defaultOutputPath())
        let pushURLs = command == "push" ? parsed.positionals : []
        let group = parsed.value("group") ?? "screen-\(getpid())"
        let session = RecordingSession(config: config, output: output, pushURLs: pushURLs, group: group,
                                       quiet: parsed.has("quiet"), durationSeconds: parsed.value("duration").flatMap(Double.init))
        let helperArguments = captureOptions.flatMap { spec -> [String] in
            if spec.valueName == nil { return parsed.has(spec.name) ? ["--\(spec.name)"] : [] }
            return parsed.value(spec.name).map { ["--\(spec.name)", $0] } ?? []
        }
        Terminal.exit(session.run(startHelper: command != "record", helperArguments: helperArguments))
    }

    static func defaultOutputPath() -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        return "./livepush-\(formatter.string(from: Date())).mp4"
    }
}
