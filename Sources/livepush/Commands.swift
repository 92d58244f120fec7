import CommandLineSupport

/// livepush as one table: every command with its options and examples. `--help`, the man page
/// and the bash and zsh completions are all rendered from it (`livepush --generate-docs
/// man|bash|zsh`), so a new option shows up in all of them at once.
enum Commands {
    static let topLevelOptions: [OptionSpec] = [
        .flag("help", short: "h", help: "Show this help."),
        .flag("version", help: "Print the version."),
        .value("generate-docs", valueName: "man|bash|zsh",
               help: "Print the man page or a shell completion script, made from these option tables."),
    ]

    static let program = ProgramSpec(
        name: "livepush",
        summary: "broadcast a Linux screen and microphone to RTMP, RTMPS and SRT servers and recordings",
        description: """
            livepush broadcasts a Linux desktop: the screen, the microphone and optionally the
            desktop's own sound, to RTMP servers and to local recordings. The screen comes from a
            capture helper (livepush-capture, or any program that speaks the Capture Link
            protocol) through shared memory; livepush captures the microphone itself through
            PipeWire, encodes H.264 and AAC, and publishes with its own RTMP client. Stream keys
            are never printed: URLs show as rtmp://host/app/****.
            """,
        globalOptions: topLevelOptions,
        commands: [ScreenCommand.spec("screen"), ScreenCommand.spec("push"), ScreenCommand.spec("record"),
                   Devices.spec, Doctor.spec, CheckHelper.spec, ControlCommandLine.spec, ReportCommand.spec],
        exitStatus: [
            Entry("0", "Success: the broadcast or recording ended as asked (Ctrl-C, --duration), or a check passed."),
            Entry("1", "A failure at run time: nothing could be recorded or pushed, a check failed, "
                + "or the capture helper kept failing."),
            Entry("2", "A bad command line: the message says which option or argument, and what to do."),
            Entry("130", "A second Ctrl-C during shutdown: the helper was killed and livepush left at once."),
        ],
        environment: [
            Entry("LIVEPUSH_URL", "Destinations to push to, separated by spaces, so that no stream key is on the "
                + "command line (also --url-file FILE)."),
            Entry("DISPLAY", "The X display the capture helper grabs when --display is not given."),
            Entry("XDG_RUNTIME_DIR", "Where the group sockets are: $XDG_RUNTIME_DIR/livepush/GROUP.sock "
                + "(else /tmp/livepush-UID)."),
            Entry("PIPEWIRE_REMOTE", "The PipeWire daemon's socket, for the microphone and PipeWire screen capture "
                + "(default: pipewire-0 in XDG_RUNTIME_DIR)."),
        ],
        files: [
            Entry("$XDG_RUNTIME_DIR/livepush/GROUP.sock", "The rendezvous socket capture helpers connect to "
                + "(directory mode 0700, socket 0600)."),
            Entry("/usr/share/doc/livepush/guide.md", "The user guide: every option, configuration key and event."),
            Entry("/usr/lib/systemd/user/livepush@.service", "A user service that pushes what any helper sends on "
                + "the group named after the @ (see the guide, \"Run in the background\")."),
        ],
        seeAlso: ["livepush-capture(1)", "ffmpeg(1)", "systemctl(1)"],
        valueCommands: ["mic": "livepush devices --names", "camera": "livepush devices --camera-names"])

    /// Prints what `--generate-docs FORMAT` asks for and exits; a bad format is a usage error.
    static func generateDocs(_ format: String) -> Never {
        Terminal.exit(DocumentationOutput.print(program, format: format, command: "livepush"))
    }
}
