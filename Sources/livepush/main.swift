// livepush: the pusher's command-line face. Each subcommand lives in its own file.
import CommandLineSupport

let arguments = Array(CommandLine.arguments.dropFirst())

let topLevelOptions: [OptionSpec] = [
    .flag("help", short: "h", help: "Show this help."),
    .flag("version", help: "Print the version."),
]

let usage = """
    livepush \(LivePushVersion.current): broadcast a Linux screen and microphone to RTMP servers and recordings.

    Usage: livepush <command> [options]
           livepush --help | --version

    Commands (each with an example; 'livepush <command> --help' for its options):
      screen          Record the screen and push it to RTMP servers; starts its own capture helper.
                        livepush screen rtmp://live.example.com/app/KEY talk.mp4 --duration 600
      push            Push the screen to RTMP servers (optionally recording it) from its own helper or a group's.
                        livepush push rtmp://127.0.0.1/live/KEY --record talk.mp4
      record          Record (and push) what any capture helper sends on a group.
                        livepush record --group studio talk.mkv
      devices         List the audio sources (microphones) and sink monitors PipeWire offers.
                        livepush devices
      doctor          Check this machine: X display and MIT-SHM, PipeWire, H.264 and AAC encoders.
                        livepush doctor
      check-helper    Run a capture helper and check it against the Capture Link specification.
                        livepush check-helper -- ./my-helper --group {group}

    Options:
    \(ArgumentParser.optionsHelp(topLevelOptions))

    The microphone is sent by default (--mic NAME, --no-mic); --desktop-audio adds the desktop's sound.
    """

guard let first = arguments.first else {
    print(usage)
    Terminal.exit(.usage)
}

switch first {
case "doctor":
    Doctor.main(Array(arguments.dropFirst()))
case "screen", "record", "push":
    ScreenCommand.main(first, Array(arguments.dropFirst()))
case "check-helper":
    CheckHelper.main(Array(arguments.dropFirst()))
case "devices":  // Devices.swift (audio capture)
    Devices.main(Array(arguments.dropFirst()))
case let option where option.hasPrefix("-"):
    do {
        let parsed = try ArgumentParser.parse(arguments, options: topLevelOptions)
        if parsed.has("version") {
            print("livepush \(LivePushVersion.current)")
        } else if parsed.has("help") {
            print(usage)
        } else {
            throw ArgumentError.unexpectedArgument(parsed.positionals.first ?? option)
        }
        Terminal.exit(.success)
    } catch {
        Terminal.printError("livepush: \(error)\nRun 'livepush --help' for usage.")
        Terminal.exit(.usage)
    }
default:
    Terminal.printError("livepush: unknown command '\(first)'\nRun 'livepush --help' for the commands.")
    Terminal.exit(.usage)
}
