// livepush-capture: the capture helper. It will grab the screen (X11 or PipeWire) and hand
// frames to the pusher over the Capture Link protocol (protocol/SPEC.md).
import CommandLineSupport

let options: [OptionSpec] = [
    .flag("help", short: "h", help: "Show this help."),
    .flag("version", help: "Print the version."),
]

let usage = """
    livepush-capture \(LivePushVersion.current): the LivePush capture helper.

    Usage: livepush-capture --help | --version

    Options:
    \(ArgumentParser.optionsHelp(options))

    Not built yet: X11 and PipeWire screen capture, and the Capture Link protocol.
    """

do {
    let parsed = try ArgumentParser.parse(Array(CommandLine.arguments.dropFirst()), options: options)
    if parsed.has("version") {
        print("livepush-capture \(LivePushVersion.current)")
        Terminal.exit(.success)
    }
    if parsed.has("help") {
        print(usage)
        Terminal.exit(.success)
    }
    if let extra = parsed.positionals.first { throw ArgumentError.unexpectedArgument(extra) }
    Terminal.printError("livepush-capture: screen capture is not built yet in this version; see --help")
    Terminal.exit(.failure)
} catch {
    Terminal.printError("livepush-capture: \(error)\nRun 'livepush-capture --help' for usage.")
    Terminal.exit(.usage)
}
