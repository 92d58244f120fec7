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

    Commands:
      screen          Record the screen to a file (starts its own capture helper).
      record          Record what a capture helper sends on a group.
      push            Push the screen to an RTMP server (and optionally record it).
      doctor          Check this machine: X display and MIT-SHM, PipeWire, H.264 and AAC encoders.
      check-helper    Run a capture helper and check it against the Capture Link specification.
      devices         List the audio sources (microphones) and sink monitors PipeWire offers.
      ctl             Steer a running broadcast: status, pause, mute, bitrate, add/remove destinations, events.
      report          Write a session report (HTML, charts, summary, timeline) from an --events file.

    Options:
    \(ArgumentParser.optionsHelp(topLevelOptions))

    Not built yet: the microphone.
    Run 'livepush <command> --help' for a command's options.
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
case "ctl":  // ControlCommandLine.swift (issue 14)
    ControlCommandLine.main(Array(arguments.dropFirst()))
case "report":  // ReportCommand.swift (issue 14)
    ReportCommand.main(Array(arguments.dropFirst()))
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
