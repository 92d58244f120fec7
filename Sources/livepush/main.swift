// livepush: the pusher's command-line face. Each subcommand lives in its own file.
import CLinuxShim
import CommandLineSupport
import LinuxSystem

// Memory (issue 22): libx264 madvises its frame buffers for transparent huge pages, which makes
// each resident in whole 2 MiB pages (about 7 MiB more at 1080p, the encoder's output unchanged
// without them). Where the kernel leaves THP to madvise (Debian's default), turn it off for us.
_ = CLinuxShim_disable_transparent_hugepages()

// Descriptors (issue 30): the soft limit up to the hard one, so that a burst of connections to the
// dashboard or the control socket, which are bounded, leaves room for pushes, helpers and files.
DescriptorLimit.raiseToHard()

let arguments = Array(CommandLine.arguments.dropFirst())

let topLevelOptions = Commands.topLevelOptions
let usage = "livepush \(LivePushVersion.current): broadcast a Linux screen and microphone to RTMP servers and recordings.\n\n"
    + Commands.program.help

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
        if let format = parsed.value("generate-docs") {
            Commands.generateDocs(format)
        } else if parsed.has("version") {
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
