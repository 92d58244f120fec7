// livepush-capture: the capture helper. It grabs the X11 screen (or a monitor, a region or a
// window) and hands frames to the pusher over the Capture Link protocol (protocol/SPEC.md).
import CommandLineSupport
import ScreenCapture

let options: [OptionSpec] = [
    .value("group", valueName: "NAME", help: "The pusher's group to send frames to (required)."),
    .value("display", valueName: ":N", help: "X display to capture (default: $DISPLAY)."),
    .value("monitor", valueName: "NAME|INDEX", help: "Capture one monitor (RandR output name or index)."),
    .value("region", valueName: "X,Y,W,H", help: "Capture a rectangle of the screen."),
    .value("window", valueName: "ID", help: "Capture one window by id (0x3a00007), following it."),
    .value("window-name", valueName: "TEXT", help: "Capture the top-level window whose name contains TEXT."),
    .flag("no-cursor", help: "Leave the mouse pointer out of the frames."),
    .flag("damage", help: "Skip grabs when nothing changed (XDamage); the pusher repeats its last frame."),
    .value("fps", valueName: "N", help: "Frames per second (default: what the pusher asks, 30)."),
    .value("connect-timeout-ms", valueName: "N", help: "How long to wait for the pusher (default 10000)."),
    .flag("stats", help: "On exit, print frames sent and dropped and grab times to stderr."),
    .flag("desktop-audio", help: "Also send what plays on the default audio sink (PipeWire), as AUDIO."),
    .flag("list", help: "List the monitors and top-level windows, then exit."),
    // PipeWire screen capture (Wayland desktops, any PipeWire video node): PipeWireRequest.swift.
] + pipeWireOptions + [
    .flag("help", short: "h", help: "Show this help."),
    .flag("version", help: "Print the version."),
]

let usage = """
    livepush-capture \(LivePushVersion.current): the LivePush capture helper (X11, PipeWire, the ScreenCast portal).

    Usage: livepush-capture --group NAME [--monitor NAME|INDEX | --region X,Y,W,H | --window ID |
                            --window-name TEXT] [--no-cursor] [--damage] [--fps N] [--display :N]
                            [--desktop-audio]
           livepush-capture --list [--display :N]
           livepush-capture --group NAME --source pipewire (--node ID | --target NAME) [--no-cursor]
           livepush-capture --group NAME --source portal [--portal-source monitor|window|any] [--no-restore]
           livepush-capture --list --source pipewire

    Grabs the screen through MIT-SHM straight into the pusher's shared memory and sends each
    frame over the Capture Link protocol to the pusher listening on the group. With
    --desktop-audio it also sends what plays on the default PipeWire sink (its monitor).

    Options:
    \(ArgumentParser.optionsHelp(options))
    """

let parsed: ParsedArguments
let request: CaptureRequest
do {
    parsed = try ArgumentParser.parse(Array(CommandLine.arguments.dropFirst()), options: options)
    if parsed.has("version") {
        print("livepush-capture \(LivePushVersion.current)")
        Terminal.exit(.success)
    }
    if parsed.has("help") {
        print(usage)
        Terminal.exit(.success)
    }
    if let extra = parsed.positionals.first { throw ArgumentError.unexpectedArgument(extra) }
    request = try CaptureRequest(parsed)
} catch {
    Terminal.printError("livepush-capture: \(error)\nRun 'livepush-capture --help' for usage.")
    Terminal.exit(.usage)
}

if request.source != .x11 {
    if parsed.has("list") { Terminal.exit(PipeWireCaptureLoop.list()) }
    Terminal.exit(PipeWireCaptureLoop.run(request))
}
if parsed.has("list") {
    Terminal.exit(Inventory.print(displayName: request.displayName))
}
Terminal.exit(CaptureLoop.run(request))
