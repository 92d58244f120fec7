// livepush-capture: the capture helper. It grabs the X11 screen (or a monitor, a region or a
// window), a PipeWire video node or a camera, and hands frames to the pusher over the Capture Link
// protocol (protocol/SPEC.md).
import CommandLineSupport
import LinuxSystem
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
    .value("fps", valueName: "N",
           help: "Frames per second (default: what the pusher asks, 30); with --source camera, the camera's nearest rate."),
    .value("scale", valueName: "render|yuv|crop",
           help: "X11: how frames shrink to the pusher's CONFIG maximum (adaptive resolution): render (the X server "
               + "scales, default), yuv (libyuv scales a full grab) or crop (cut from the top-left corner; the "
               + "pusher is not told that this helper scales, and scales itself)."),
    .value("connect-timeout-ms", valueName: "N", help: "How long to wait for the pusher (default 10000)."),
    .flag("stats", help: "On exit, print frames sent and dropped and grab times to stderr."),
    .flag("desktop-audio", help: "Also send what plays on the default audio sink (PipeWire), as AUDIO."),
    .flag("list", help: "List the monitors and top-level windows, then exit."),
    // PipeWire screen capture (Wayland desktops, any PipeWire video node) and cameras: PipeWireRequest.swift.
] + pipeWireOptions + [
    .flag("help", short: "h", help: "Show this help."),
    .flag("version", help: "Print the version."),
    .value("generate-docs", valueName: "man|bash|zsh",
           help: "Print the man page or a shell completion script, made from these option tables."),
]

let program = ProgramSpec(
    name: "livepush-capture",
    summary: "the LivePush capture helper: the screen or a camera to a livepush pusher through shared memory",
    description: """
        livepush-capture grabs the screen through MIT-SHM straight into the pusher's shared memory and
        sends each frame over the Capture Link protocol (protocol/SPEC.md) to the pusher listening on
        the group. With --desktop-audio it also sends what plays on the default PipeWire sink (its
        monitor). On Wayland it captures a PipeWire video node, or what the desktop's ScreenCast portal
        grants. With --source camera it captures a webcam (a PipeWire camera node, or what the Camera
        portal grants) in the mode nearest --size and --fps: YUY2, NV12 and I420 converted, MJPEG
        decoded, straight into the pusher's shared memory. livepush screen starts it by itself; start
        it by hand (or from a hotkey) for a pusher waiting with livepush push --group NAME.
        """,
    globalOptions: [],
    commands: [CommandSpec(
        name: "livepush-capture",
        summary: "Capture the screen or a camera for a pusher.",
        synopsis: [
            "livepush-capture --group NAME [--monitor NAME|INDEX | --region X,Y,W,H | --window ID |",
            "                 --window-name TEXT] [--no-cursor] [--damage] [--fps N] [--display :N] [--desktop-audio]",
            "livepush-capture --list [--display :N]",
            "livepush-capture --group NAME --source pipewire (--node ID | --target NAME) [--no-cursor]",
            "livepush-capture --group NAME --source portal [--portal-source monitor|window|any] [--no-restore]",
            "livepush-capture --group NAME --source camera [--camera NODE] [--size WxH] [--fps N]",
            "                 [--camera-format yuy2|mjpeg|nv12|i420] [--camera-portal]",
            "livepush-capture --list --source pipewire|camera",
        ],
        description: "",
        sections: [OptionSection("Options", options)],
        examples: [
            Example("livepush-capture --group desk", "Sends the whole X screen to the pusher waiting on group desk."),
            Example("livepush-capture --group desk --window-name Firefox --desktop-audio",
                    "Sends one window, following it, and the desktop's sound."),
            Example("livepush-capture --list", "Lists the monitors and top-level windows it can capture."),
            Example("livepush-capture --group desk --source camera --size 1280x720 --fps 30",
                    "Sends the first camera in its mode nearest 1280x720 at 30 fps (livepush-capture --list --source "
                        + "camera shows what it offers)."),
        ])],
    exitStatus: [
        Entry("0", "The session ended as planned: the pusher sent STOP, or the captured window closed."),
        Entry("1", "A failure at run time: no pusher came, the display or PipeWire could not be used, the session was lost."),
        Entry("2", "A bad command line: the message says which option, and what to do."),
        Entry("78", "The configuration cannot work (no such display, monitor, window, region, PipeWire node or camera; "
            + "a camera with no mode in a format it takes; no PipeWire daemon): the message says what; a supervisor does "
            + "not restart it (protocol/SPEC.md §13.5)."),
    ],
    environment: [
        Entry("DISPLAY", "The X display to capture when --display is not given."),
        Entry("XDG_RUNTIME_DIR", "Where the pusher's group socket is: $XDG_RUNTIME_DIR/livepush/GROUP.sock."),
        Entry("PIPEWIRE_REMOTE", "The PipeWire daemon's socket (--source pipewire|portal|camera, --desktop-audio)."),
    ],
    seeAlso: ["livepush(1)"],
    valueCommands: ["camera": "livepush devices --camera-names"])

let usage = "livepush-capture \(LivePushVersion.current): the LivePush capture helper (X11, PipeWire, the ScreenCast "
    + "portal, cameras).\n\n" + program.commands[0].help

let parsed: ParsedArguments
let request: CaptureRequest
do {
    parsed = try ArgumentParser.parse(Array(CommandLine.arguments.dropFirst()), options: options)
    if let format = parsed.value("generate-docs") {
        Terminal.exit(DocumentationOutput.print(program, format: format, command: "livepush-capture"))
    }
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
    if parsed.has("list") {
        Terminal.exit(request.source == .camera ? CameraCaptureLoop.list() : PipeWireCaptureLoop.list())
    }
    Terminal.exit(PipeWireCaptureLoop.run(request))
}
if parsed.has("list") {
    Terminal.exit(Inventory.print(displayName: request.displayName))
}
Terminal.exit(CaptureLoop.run(request))
